#include "unit/db/fixture_db.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string_view>
#include <variant>
#include <vector>

#include "db/schema_sql.h"
#include "db/sqlite_util.h"

namespace gpuprof::db::fixture {
namespace {

using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

// A fixture file through db's SQLite wrapper (sqlite_util.h); errors say "fixture".
class Db {
 public:
  Status Open(const std::string& path) {
    StatusOr<Connection> conn = Connection::OpenForWrite(path);
    if (!conn.ok()) return conn.status().WithContext("fixture");
    conn_ = *std::move(conn);
    return OkStatus();
  }
  Status Exec(std::string_view sql) { return conn_.Exec(sql).WithContext("fixture"); }
  Status Insert(const std::string& table, const std::vector<Value>& values) {
    std::string sql = "INSERT INTO " + table + " VALUES (";
    for (std::size_t i = 0; i < values.size(); ++i) sql += i == 0 ? "?" : ", ?";
    sql += ")";
    StatusOr<Statement> insert = Statement::Prepare(conn_, sql, Statement::Use::kTransient);
    if (!insert.ok()) return insert.status().WithContext("fixture");
    for (std::size_t i = 0; i < values.size(); ++i) {
      const int index = static_cast<int>(i) + 1;
      if (const auto* number = std::get_if<std::int64_t>(&values[i])) {
        insert->BindInt(index, *number);
      } else if (const auto* real = std::get_if<double>(&values[i])) {
        insert->BindDouble(index, *real);
      } else if (const auto* text = std::get_if<std::string>(&values[i])) {
        insert->BindText(index, *text);
      } else {
        insert->BindNull(index);
      }
    }
    return insert->Run().WithContext("fixture");
  }

 private:
  Connection conn_;
};

// String ids: device/API strings from 0, framework strings from 1<<28, memory strings from 2<<28.
constexpr std::int64_t kFw = std::int64_t{1} << 28;
constexpr std::int64_t kMem = std::int64_t{2} << 28;
constexpr std::int64_t kFwdBwd = std::int64_t{5} << 28;
constexpr std::int64_t kInvalid = 4294967295;

enum StringId : std::int64_t {
  kKernelType = 0,
  kMemcpyType = 1,
  kLaunch = 2,
  kCudaLaunchKernel = 3,
  kCudaMemcpyAsync = 4,
  kGemmKernel = 5,
  kGemm = 6,
  kReluKernel = 7,
  kRelu = 8,
  kGemmBwdKernel = 9,
  kGemmBwd = 10,
  kGrid = 11,
  kBlock = 12,
  // GPUPROF_REPLAY_METRIC's names and units (WriteReplayRows).
  kDuration = 13,
  kSmThroughput = 14,
  kMemoryThroughput = 15,
  kDramRead = 16,
  kDramWrite = 17,
  kAchievedOccupancy = 18,
  kGridSize = 19,
  kNsecond = 20,
  kPercent = 21,
  kByte = 22,
};
enum FwString : std::int64_t {
  kStep1 = kFw + 0,
  kLinear = kFw + 1,
  kAddmm = kFw + 2,
  kAtenRelu = kFw + 3,
  kAddmmBackward = kFw + 4,
  kMm = kFw + 5,
  kStep2 = kFw + 6,
  kShapes = kFw + 7,
  kDtypes = kFw + 8,
  kFrame = kFw + 9,
  kWeird = kFw + 10,
  kEpoch = kFw + 11,
  kDomain = kFw + 12,
  kCheckpoint = kFw + 13,
};

Status WriteRows(Db& db, const FixtureOptions& o) {
  const std::int64_t pid = o.pid;
  const std::int64_t main_tid = (pid << 32) | pid;
  const std::int64_t bwd_tid = (pid << 32) | (pid + 1);
  auto us = [&o](std::int64_t micros) -> std::int64_t { return o.base_ns + micros * 1000; };

  const std::vector<std::pair<std::int64_t, std::string>> strings = {{kKernelType, "KERNEL"},
                                                                     {kMemcpyType, "MEMCPY_ASYNC"},
                                                                     {kLaunch, "launch"},
                                                                     {kCudaLaunchKernel, "cudaLaunchKernel"},
                                                                     {kCudaMemcpyAsync, "cudaMemcpyAsync"},
                                                                     {kGemmKernel, "gemm_kernel<float>"},
                                                                     {kGemm, "gemm"},
                                                                     {kReluKernel, "relu_kernel"},
                                                                     {kRelu, "relu"},
                                                                     {kGemmBwdKernel, "gemm_bwd_kernel"},
                                                                     {kGemmBwd, "gemm_bwd"},
                                                                     {kGrid, "128,1,1"},
                                                                     {kBlock, "256,1,1"},
                                                                     {kStep1, "ProfilerStep#1"},
                                                                     {kLinear, "aten::linear"},
                                                                     {kAddmm, "aten::addmm"},
                                                                     {kAtenRelu, "aten::relu"},
                                                                     {kAddmmBackward, "AddmmBackward0"},
                                                                     {kMm, "aten::mm"},
                                                                     {kStep2, "ProfilerStep#2"},
                                                                     {kShapes, "8,16;\r\n16,32"},
                                                                     {kDtypes, "float;\r\nfloat"},
                                                                     {kFrame, "train.py(10): forward"},
                                                                     {kWeird, kFixtureWeirdOpName},
                                                                     {kEpoch, "epoch 1"},
                                                                     {kDomain, "default"},
                                                                     {kCheckpoint, "checkpoint"},
                                                                     {kMem, "PTA"}};
  for (const auto& [id, value] : strings) GPUPROF_RETURN_IF_ERROR(db.Insert("STRING_IDS", {id, value}));

  GPUPROF_RETURN_IF_ERROR(db.Exec("INSERT INTO META_DATA VALUES ('gpuprof_version', '0.1.0')"));
  GPUPROF_RETURN_IF_ERROR(db.Insert("SESSION_TIME_INFO", {us(0), us(2000)}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("NPU_INFO", {std::int64_t{0}, std::string("Fixture GPU")}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("RANK_DEVICE_MAP", {std::int64_t{o.rank}, std::int64_t{0}}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("HOST_INFO", {std::string("fixture-uid"), std::string("fixture-host")}));

  // PYTORCH_API: (start, end, globalTid, connectionId, name, seq, fwdThreadId, dtypes, shapes, callchain,
  // type)
  struct Op {
    std::int64_t start, end, tid;
    Value connection;
    std::int64_t name;
    std::int64_t seq, fwd;
    Value dtypes, shapes, callchain;
  };
  const Op ops[] = {
      {0, 1000, main_tid, nullptr, kStep1, -1, 0, nullptr, nullptr, nullptr},
      {100, 400, main_tid, std::int64_t{0}, kLinear, 7, 0, std::int64_t{kDtypes}, std::int64_t{kShapes},
       std::int64_t{0}},
      {150, 350, main_tid, std::int64_t{1}, kAddmm, 8, 0, nullptr, nullptr, nullptr},
      {450, 500, main_tid, std::int64_t{2}, kAtenRelu, 9, 0, nullptr, nullptr, nullptr},
      {600, 650, main_tid, nullptr, kWeird, -1, 0, kInvalid, kInvalid, nullptr},
      {1000, 1900, main_tid, nullptr, kStep2, -1, 0, nullptr, nullptr, nullptr},
      {1100, 1200, main_tid, std::int64_t{3}, kAtenRelu, 10, 0, nullptr, nullptr, nullptr},
      {700, 900, bwd_tid, std::int64_t{4}, kAddmmBackward, 7, pid, nullptr, nullptr, nullptr},
      {720, 880, bwd_tid, std::int64_t{5}, kMm, -1, pid, nullptr, nullptr, nullptr},
  };
  static_assert(sizeof(ops) / sizeof(ops[0]) == kFixtureOps);
  for (const Op& op : ops) {
    GPUPROF_RETURN_IF_ERROR(
        db.Insert("PYTORCH_API", {us(op.start), us(op.end), op.tid, op.connection, op.name, op.seq, op.fwd,
                                  op.dtypes, op.shapes, op.callchain, std::int64_t{50001}}));
  }
  GPUPROF_RETURN_IF_ERROR(
      db.Insert("PYTORCH_CALLCHAINS", {std::int64_t{0}, std::int64_t{kFrame}, std::int64_t{0}}));

  const std::pair<std::int64_t, std::int64_t> connections[] = {{0, kFwdBwd}, {1, 101}, {2, 102}, {3, 103},
                                                               {4, kFwdBwd}, {5, 104}, {5, 105}};
  for (const auto& [id, connection] : connections) {
    GPUPROF_RETURN_IF_ERROR(db.Insert("CONNECTION_IDS", {id, connection}));
  }

  // CANN_API: a runtime row (connectionId corr + 2^32, to share the primary key space) and a
  // node/launch row (connectionId = correlation id) per device launch.
  struct Api {
    std::int64_t start, end, tid, correlation, name;
  };
  const Api apis[] = {{160, 170, main_tid, 101, kCudaLaunchKernel},
                      {460, 465, main_tid, 102, kCudaLaunchKernel},
                      {1110, 1115, main_tid, 103, kCudaLaunchKernel},
                      {730, 740, bwd_tid, 104, kCudaLaunchKernel},
                      {800, 810, bwd_tid, 105, kCudaMemcpyAsync}};
  static_assert(sizeof(apis) / sizeof(apis[0]) == kFixtureRuntimeCalls);
  for (const Api& api : apis) {
    GPUPROF_RETURN_IF_ERROR(db.Insert("CANN_API", {us(api.start), us(api.end), std::int64_t{5000}, api.tid,
                                                   api.correlation + (std::int64_t{1} << 32), api.name}));
    GPUPROF_RETURN_IF_ERROR(db.Insert("CANN_API", {us(api.start), us(api.end), std::int64_t{10000}, api.tid,
                                                   api.correlation, std::int64_t{kLaunch}}));
  }

  // TASK + COMPUTE_TASK_INFO / MEMCPY_INFO.
  struct Task {
    std::int64_t start, end, correlation, task_id, stream;
    std::int64_t type;
    std::int64_t kernel, op_type;  // -1: not a kernel
  };
  const Task tasks[] = {{180, 280, 101, 0, 7, kKernelType, kGemmKernel, kGemm},
                        {470, 490, 102, 1, 7, kKernelType, kReluKernel, kRelu},
                        {1120, 1150, 103, 2, 7, kKernelType, kReluKernel, kRelu},
                        {750, 850, 104, 3, 13, kKernelType, kGemmBwdKernel, kGemmBwd},
                        {820, 830, 105, 4, 13, kMemcpyType, -1, -1}};
  static_assert(sizeof(tasks) / sizeof(tasks[0]) == kFixtureTasks);
  for (const Task& task : tasks) {
    GPUPROF_RETURN_IF_ERROR(
        db.Insert("TASK", {us(task.start), us(task.end), std::int64_t{0}, task.correlation, task.task_id, pid,
                           task.type, std::int64_t{1}, task.stream, task.task_id, kInvalid}));
    if (task.kernel >= 0) {
      std::vector<Value> info = {task.kernel,     task.task_id, std::int64_t{128},
                                 std::int64_t{0}, task.type,    task.op_type};
      for (int i = 0; i < 9; ++i) info.emplace_back(nullptr);  // formats, types, shapes, attrs, state, hf32
      info.emplace_back(std::int64_t{kGrid});   // gridDim: STRING_IDS of "x,y,z" (docs/db_gpuprof_tables.md)
      info.emplace_back(std::int64_t{kBlock});  // blockDim
      GPUPROF_RETURN_IF_ERROR(db.Insert("COMPUTE_TASK_INFO", info));
    } else {
      GPUPROF_RETURN_IF_ERROR(db.Insert("MEMCPY_INFO", {task.task_id, std::int64_t{4096}, std::int64_t{1}}));
    }
  }

  const std::int64_t mib = 1 << 20;
  const std::int64_t memory[][4] = {
      {100, 1 * mib, 2 * mib, 1 * mib}, {200, 3 * mib, 4 * mib, 3 * mib}, {500, 2 * mib, 4 * mib, 2 * mib}};
  for (const auto& row : memory) {
    GPUPROF_RETURN_IF_ERROR(db.Insert(
        "MEMORY_RECORD", {kMem, us(row[0]), row[1], row[2], row[3], std::int64_t{0x7000}, std::int64_t{0}}));
  }
  GPUPROF_RETURN_IF_ERROR(db.Insert(
      "OP_MEMORY", {std::int64_t{kAddmm}, 2 * mib, us(200), us(500), us(510), 300000, 310000, 3 * mib,
                    4 * mib, 3 * mib, 2 * mib, 4 * mib, 2 * mib, std::int64_t{0x7000}, std::int64_t{0}}));
  GPUPROF_RETURN_IF_ERROR(
      db.Insert("OP_MEMORY", {kInvalid, mib, us(100), nullptr, nullptr, nullptr, nullptr, mib, 2 * mib, mib,
                              nullptr, nullptr, nullptr, std::int64_t{0x7000}, std::int64_t{0}}));

  GPUPROF_RETURN_IF_ERROR(db.Insert("STEP_TIME", {std::int64_t{1}, us(0), us(1000)}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("STEP_TIME", {std::int64_t{2}, us(1000), us(1900)}));
  const std::int64_t gc_tid = (pid << 32) | pid;
  GPUPROF_RETURN_IF_ERROR(db.Insert("GC_RECORD", {us(1950), us(1960), gc_tid}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("GC_RECORD", {us(1970), us(1990), gc_tid}));

  // MSTX: a start/end range over most of the run and one marker.
  GPUPROF_RETURN_IF_ERROR(
      db.Insert("MSTX_EVENTS", {us(50), us(1500), std::int64_t{2}, std::int64_t{1}, kInvalid,
                                std::int64_t{kEpoch}, main_tid, main_tid, std::int64_t{kDomain}, kInvalid}));
  GPUPROF_RETURN_IF_ERROR(db.Insert(
      "MSTX_EVENTS", {us(300), us(300), std::int64_t{0}, std::int64_t{0}, kInvalid, std::int64_t{kCheckpoint},
                      main_tid, main_tid, std::int64_t{kDomain}, kInvalid}));
  return OkStatus();
}

Status WriteReplayRows(Db& db, const FixtureOptions& o) {
  auto us = [&o](std::int64_t micros) -> std::int64_t { return o.base_ns + micros * 1000; };
  const std::int64_t main_tid = (std::int64_t{o.pid} << 32) | o.pid;
  // (id, timestampNs, globalTid, deviceId, name, connectionId, launchIndex, replayed, declineReason,
  //  declineDetail, restoreMode, passes, deterministic, snapshotRegions, snapshotBytes, snapshotNs,
  //  untracked, snapshotDeviceBytes, replayNs, counterPasses, counterStatus, clockControl, cacheControl,
  //  replayMode, graphId, graphNodeId, graphFallback, rangeId, rangeLaunch)
  GPUPROF_RETURN_IF_ERROR(db.Insert("GPUPROF_REPLAY_KERNEL", {std::int64_t{1},
                                                              us(175),
                                                              main_tid,
                                                              std::int64_t{0},
                                                              std::int64_t{kGemmKernel},
                                                              std::int64_t{101},
                                                              std::int64_t{0},
                                                              std::int64_t{1},
                                                              nullptr,
                                                              nullptr,
                                                              std::string("auto"),
                                                              std::int64_t{3},
                                                              std::int64_t{1},
                                                              std::int64_t{2},
                                                              std::int64_t{8192},
                                                              std::int64_t{5000},
                                                              std::int64_t{0},
                                                              std::int64_t{8192},
                                                              std::int64_t{41000},
                                                              std::int64_t{4},
                                                              nullptr,
                                                              std::string("base"),
                                                              std::string("all"),
                                                              std::string("kernel"),
                                                              nullptr,
                                                              nullptr,
                                                              nullptr,
                                                              nullptr,
                                                              nullptr}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("GPUPROF_REPLAY_KERNEL", {std::int64_t{2},
                                                              us(1115),
                                                              main_tid,
                                                              std::int64_t{0},
                                                              std::int64_t{kReluKernel},
                                                              std::int64_t{103},
                                                              std::int64_t{1},
                                                              std::int64_t{0},
                                                              std::string("graph-launch"),
                                                              std::string("launched from a CUDA graph"),
                                                              std::string("auto"),
                                                              std::int64_t{1},
                                                              std::int64_t{1},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              nullptr,
                                                              std::string("none"),
                                                              std::string("none"),
                                                              std::string("graph"),
                                                              std::int64_t{7},
                                                              nullptr,
                                                              nullptr,
                                                              nullptr,
                                                              nullptr}));
  GPUPROF_RETURN_IF_ERROR(db.Insert("GPUPROF_REPLAY_KERNEL", {std::int64_t{3},
                                                              us(745),
                                                              main_tid,
                                                              std::int64_t{0},
                                                              std::int64_t{kGemmBwdKernel},
                                                              std::int64_t{104},
                                                              std::int64_t{2},
                                                              std::int64_t{1},
                                                              nullptr,
                                                              nullptr,
                                                              std::string("auto"),
                                                              std::int64_t{2},
                                                              std::int64_t{0},
                                                              std::int64_t{1},
                                                              std::int64_t{4096},
                                                              std::int64_t{3000},
                                                              std::int64_t{0},
                                                              std::int64_t{0},
                                                              std::int64_t{24000},
                                                              std::int64_t{0},
                                                              std::string(kFixtureCounterStatus),
                                                              std::string("none"),
                                                              std::string("all"),
                                                              std::string("kernel"),
                                                              nullptr,
                                                              nullptr,
                                                              nullptr,
                                                              nullptr,
                                                              nullptr}));
  // (kernelId, pass, startNs, durationNs, smClockBefore, smClockAfter, bytesRestored, regionsRestored,
  //  dirtyChunks, outputHash, matchesPass1). The declined launch ran once: one pass, no hash.
  struct Pass {
    std::int64_t kernel, pass, start_us, duration_ns, restored;
    Value hash, matches;
  };
  const Pass passes[] = {{1, 1, 180, 100000, 0, std::int64_t{0x1111}, std::int64_t{1}},
                         {1, 2, 300, 98000, 4096, std::int64_t{0x1111}, std::int64_t{1}},
                         {1, 3, 420, 102000, 4096, std::int64_t{0x1111}, std::int64_t{1}},
                         {2, 1, 1120, 30000, 0, nullptr, nullptr},
                         {3, 1, 750, 100000, 0, std::int64_t{0x2222}, std::int64_t{1}},
                         {3, 2, 870, 110000, 2048, std::int64_t{-0x3333}, std::int64_t{0}}};  // a u64 >= 2^63
  static_assert(sizeof(passes) / sizeof(passes[0]) == kFixtureReplayPasses);
  for (const Pass& p : passes) {
    GPUPROF_RETURN_IF_ERROR(db.Insert(
        "GPUPROF_REPLAY_PASS", {p.kernel, p.pass, us(p.start_us), p.duration_ns, std::int64_t{1980000},
                                std::int64_t{1980000}, p.restored, std::int64_t{p.restored > 0 ? 1 : 0},
                                std::int64_t{p.restored / 2048}, p.hash, p.matches}));
  }

  // The gemm launch's counters (kernel 3 has none: counterStatus says why; kernel 2 was declined).
  const std::pair<std::int64_t, std::string> strings[] = {
      {kDuration, "gpu__time_duration.sum"},
      {kSmThroughput, "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
      {kMemoryThroughput, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"},
      {kDramRead, "dram__bytes_read.sum"},
      {kDramWrite, "dram__bytes_write.sum"},
      {kAchievedOccupancy, "sm__warps_active.avg.pct_of_peak_sustained_active"},
      {kGridSize, "launch__grid_size"},
      {kNsecond, "nanosecond"},  // CUPTI's words, as the H200 run stored them
      {kPercent, "percent"},
      {kByte, "byte"}};
  for (const auto& [id, value] : strings) GPUPROF_RETURN_IF_ERROR(db.Insert("STRING_IDS", {id, value}));
  // (kernelId, name, unit, value, passes)
  struct Metric {
    std::int64_t name;
    Value unit;
    double value;
    std::int64_t passes;
  };
  const Metric metrics[] = {{kDuration, std::int64_t{kNsecond}, 99500.0, 1},
                            {kSmThroughput, std::int64_t{kPercent}, 61.25, 1},
                            {kMemoryThroughput, std::int64_t{kPercent}, 40.5, 2},
                            {kDramRead, std::int64_t{kByte}, 1048576.0, 1},
                            {kDramWrite, std::int64_t{kByte}, 524288.0, 1},
                            {kAchievedOccupancy, std::int64_t{kPercent}, 47.5, 1},
                            {kGridSize, nullptr, 128.0, 0}};
  static_assert(sizeof(metrics) / sizeof(metrics[0]) == kFixtureReplayMetrics);
  for (const Metric& m : metrics) {
    GPUPROF_RETURN_IF_ERROR(
        db.Insert("GPUPROF_REPLAY_METRIC", {std::int64_t{1}, m.name, m.unit, m.value, m.passes}));
  }
  return OkStatus();
}

}  // namespace

std::string FixtureCollectedSql(const FixtureOptions& o, const std::string& lost) {
  const std::int64_t tid = (static_cast<std::int64_t>(o.pid) << 32) | o.pid;
  auto us = [&o](std::int64_t micros) { return std::to_string(o.base_ns + micros * 1000); };
  const std::int64_t domain = kFw + 100;
  const std::int64_t names[] = {kFw + 101, kFw + 102, kFw + 103};
  std::string sql = "INSERT INTO STRING_IDS VALUES (" + std::to_string(domain) + ", 'Module'), (" +
                    std::to_string(names[0]) + ", 'Net'), (" + std::to_string(names[1]) +
                    ", 'net.0 (Linear)'), (" + std::to_string(names[2]) + ", 'net.1 (ReLU)');";
  const std::int64_t ranges[][3] = {{90, 520, 0}, {95, 410, 1}, {440, 510, 2}, {1090, 1210, 2}};
  for (const auto& range : ranges) {
    sql += "INSERT INTO MSTX_EVENTS VALUES (" + us(range[0]) + ", " + us(range[1]) + ", 2, NULL, " +
           std::to_string(kInvalid) + ", " + std::to_string(names[range[2]]) + ", " + std::to_string(tid) +
           ", " + std::to_string(tid) + ", " + std::to_string(domain) + ", " + std::to_string(kInvalid) +
           ");";
  }
  if (!lost.empty()) {
    sql += "INSERT INTO META_DATA VALUES ('gpuprof_lost_records', '" + lost + "');";
  }
  return sql;
}

Status WriteFixtureDb(const std::string& path, const FixtureOptions& options) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  Db db;
  GPUPROF_RETURN_IF_ERROR(db.Open(path));
  GPUPROF_RETURN_IF_ERROR(db.Exec("BEGIN"));
  // The tables, indexes and fixed rows of src/db/schema.sql, the DDL the writer uses (the optional
  // device tables are left out, as a run that did not collect them leaves them out).
  GPUPROF_RETURN_IF_ERROR(db.Exec(SchemaSql(SchemaPart::kFormatTables)));
  GPUPROF_RETURN_IF_ERROR(db.Exec(SchemaSql(SchemaPart::kFormatIndexes)));
  if (options.with_replay_tables) {
    GPUPROF_RETURN_IF_ERROR(db.Exec(SchemaSql(SchemaPart::kGpuprofTables)));
    GPUPROF_RETURN_IF_ERROR(db.Exec(SchemaSql(SchemaPart::kGpuprofIndexes)));
  }
  if (options.with_rows) {
    GPUPROF_RETURN_IF_ERROR(db.Exec(SchemaSql(SchemaPart::kSpecRows)));
    GPUPROF_RETURN_IF_ERROR(db.Exec(SchemaSql(SchemaPart::kMsprofRows)));
    GPUPROF_RETURN_IF_ERROR(WriteRows(db, options));
    if (options.with_replay_tables) GPUPROF_RETURN_IF_ERROR(WriteReplayRows(db, options));
  }
  return db.Exec("COMMIT");
}

StatusOr<std::string> WriteFixtureRun(const std::string& parent, const std::string& worker,
                                      const FixtureOptions& options) {
  const std::filesystem::path dir =
      std::filesystem::path(parent) / (worker + "_ascend_pt") / "ASCEND_PROFILER_OUTPUT";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InternalError("fixture: cannot create " + dir.string() + ": " + ec.message());
  const std::string path =
      (dir / ("ascend_pytorch_profiler_" + std::to_string(options.rank) + ".db")).string();
  GPUPROF_RETURN_IF_ERROR(WriteFixtureDb(path, options));
  return path;
}

Status ExecSql(const std::string& path, const std::string& sql) {
  Db db;
  GPUPROF_RETURN_IF_ERROR(db.Open(path));
  return db.Exec(sql);
}

std::string ReadFileBytes(const std::string& path) {
  std::string bytes;
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return bytes;
  char buffer[65536];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) bytes.append(buffer, n);
  std::fclose(file);
  return bytes;
}

bool WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  return std::fclose(file) == 0 && ok;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "_XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) return "";
  return buffer.data();
}

}  // namespace gpuprof::db::fixture
