// Helpers for the ProfileWriter tests: a scratch directory, a writer run over a record stream, and
// queries that return rows as "a|b|c" text (NULL spelled NULL) for golden comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "db/profile_writer.h"
#include "db/sqlite_util.h"
#include "trace/records.h"

namespace gpuprof::db::testing {

// 2024-01-02 03:04:05.678 UTC.
inline constexpr std::int64_t kStartNs = 1704164645678000000;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuprof_writer_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add,
                                 ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline WriterOptions TestOptions(const std::string& out_dir, std::int32_t rank = 0) {
  WriterOptions options;
  options.out_dir = out_dir;
  options.run.hostname = "testhost";
  options.run.pid = 100;
  options.run.rank = rank;
  options.run.device = 0;
  options.run.start_ns = kStartNs;
  options.run.devices = {{0, "NVIDIA H200"}};
  options.run.config_json = R"({"activities": ["cpu", "cuda"], "record_shapes": true})";
  return options;
}

// Writes `records` (one Submit per element of `batches`) and finalizes; returns the DB path.
inline std::string WriteProfile(const WriterOptions& options, std::vector<std::vector<trace::Record>> batches,
                                std::int64_t end_ns = kStartNs + 1'000'000'000) {
  auto writer = ProfileWriter::Create(options);
  EXPECT_TRUE(writer.ok()) << writer.status().ToString();
  if (!writer.ok()) return "";
  for (auto& batch : batches) (*writer)->Submit(std::move(batch));
  auto path = (*writer)->Finalize(end_ns);
  EXPECT_TRUE(path.ok()) << path.status().ToString();
  return path.ok() ? *path : "";
}

// Each result row as its columns joined by '|'; NULL as "NULL". Read through db's SQLite wrapper,
// on a read-only connection of its own.
inline std::vector<std::string> Query(const std::string& db_path, const std::string& sql) {
  std::vector<std::string> rows;
  StatusOr<Connection> db = Connection::OpenReadOnly(db_path, nullptr);
  if (!db.ok()) {
    ADD_FAILURE() << db.status().message();
    return rows;
  }
  StatusOr<Statement> query = Statement::Prepare(*db, sql, Statement::Use::kTransient);
  if (!query.ok()) {
    ADD_FAILURE() << query.status().message();
    return rows;
  }
  while (true) {
    StatusOr<bool> row = query->Step();
    if (!row.ok()) ADD_FAILURE() << row.status().message();
    if (!row.ok() || !*row) break;
    std::string text;
    for (int c = 0; c < query->ColumnCount(); ++c) {
      if (c > 0) text += '|';
      text += query->IsNull(c) ? std::string_view("NULL") : query->Text(c);
    }
    rows.push_back(std::move(text));
  }
  return rows;
}

// The single value of a one-row, one-column query ("" when there is no row).
inline std::string QueryOne(const std::string& db_path, const std::string& sql) {
  auto rows = Query(db_path, sql);
  EXPECT_LE(rows.size(), 1u) << sql;
  return rows.empty() ? "" : rows.front();
}

// The synthetic run most golden tests share (times in ns from 0; pid 100):
//
//   tid 101  ProfilerStep#3 [1000, 9000]
//              nn.Module: Linear_0 (python trace) [1050, 2100]
//              aten::linear [1100, 2000]  seq 7, forward; dtypes, shapes, stack S
//                aten::mm [1200, 1900]    stack S again (shares the callchain)
//                  cudaLaunchKernel [1300, 1350] corr 11 -> gemm kernel
//                  cudaMemcpyAsync  [1400, 1450] corr 12 -> HtoD copy
//                  cudaStreamSynchronize [1500, 1600] corr 14 (no device work)
//   tid 102  LinearBackward0 [5000, 6000] seq 7, backward (fwd thread 101)
//              cudaLaunchKernel [5100, 5150] corr 13 -> bwd kernel
//   memset corr 15 with no launch; allocator events out of time order; one GC pause; two marks;
//   one replayed kernel (2 passes, 3 metrics, one of them launch__), one declined launch and one
//   replayed launch whose counters were refused (counter_status).
inline std::vector<std::vector<trace::Record>> SyntheticRun() {
  using trace::ApiCall;
  using trace::DeviceTask;
  using trace::TaskKind;
  using trace::TorchOp;
  std::vector<trace::Record> host;
  host.reserve(16);
  auto op = [](std::string name, std::uint32_t tid, std::int64_t start, std::int64_t end) {
    TorchOp o;
    o.name = std::move(name);
    o.pid = 100;
    o.tid = tid;
    o.start_ns = start;
    o.end_ns = end;
    return o;
  };
  TorchOp step = op("ProfilerStep#3", 101, 1000, 9000);
  host.emplace_back(step);
  TorchOp module = op("nn.Module: Linear_0", 101, 1050, 2100);
  module.type = TorchOp::Type::kTrace;
  host.emplace_back(module);
  TorchOp linear = op("aten::linear", 101, 1100, 2000);
  linear.sequence_number = 7;
  linear.input_dtypes = "float;\r\nfloat";
  linear.input_shapes = "8,16;\r\n16,32";
  linear.call_stack = {"model.py(12): forward", "train.py(40): step"};
  linear.external_id = 77;  // CUPTI tagged the memcpy (corr 12) with it: see the device records
  host.emplace_back(linear);
  TorchOp mm = op("aten::mm", 101, 1200, 1900);
  mm.call_stack = linear.call_stack;
  host.emplace_back(mm);
  TorchOp backward = op("LinearBackward0", 102, 5000, 6000);
  backward.sequence_number = 7;
  backward.fwd_thread_id = 101;
  host.emplace_back(backward);

  auto api = [](std::string name, std::uint32_t tid, std::int64_t start, std::int64_t end, std::uint64_t corr,
                bool launches) {
    ApiCall a;
    a.name = std::move(name);
    a.pid = 100;
    a.tid = tid;
    a.start_ns = start;
    a.end_ns = end;
    a.correlation_id = corr;
    a.launches_device_work = launches;
    return a;
  };
  host.emplace_back(api("cudaLaunchKernel", 101, 1300, 1350, 11, true));
  host.emplace_back(api("cudaMemcpyAsync", 101, 1400, 1450, 12, true));
  host.emplace_back(api("cudaStreamSynchronize", 101, 1500, 1600, 14, false));
  host.emplace_back(api("cudaLaunchKernel", 102, 5100, 5150, 13, true));

  std::vector<trace::Record> device;
  device.emplace_back(trace::ExternalCorrelation{77, 12});
  DeviceTask gemm;
  gemm.kind = TaskKind::kKernel;
  gemm.start_ns = 2000;
  gemm.end_ns = 2500;
  gemm.stream = 7;
  gemm.context = 1;
  gemm.correlation_id = 11;
  gemm.pid = 100;
  gemm.name = "void gemm_kernel<float>(float*, int)";
  gemm.short_name = "gemm_kernel";
  gemm.grid[0] = 4;
  gemm.grid[1] = 2;
  gemm.block[0] = 128;
  device.emplace_back(gemm);
  DeviceTask copy;
  copy.kind = TaskKind::kMemcpy;
  copy.start_ns = 2600;
  copy.end_ns = 2700;
  copy.stream = 7;
  copy.context = 1;
  copy.correlation_id = 12;
  copy.pid = 100;
  copy.bytes = 4096;
  copy.memcpy_operation = 1;
  copy.src_memory_kind = 1;  // pageable
  copy.dst_memory_kind = 3;  // device
  device.emplace_back(copy);
  DeviceTask bwd;
  bwd.kind = TaskKind::kKernel;
  bwd.start_ns = 6000;
  bwd.end_ns = 6100;
  bwd.stream = 8;
  bwd.context = 1;
  bwd.correlation_id = 13;
  bwd.pid = 100;
  bwd.name = "bwd_kernel";
  bwd.block[0] = 32;
  device.emplace_back(bwd);
  DeviceTask memset;
  memset.kind = TaskKind::kMemset;
  memset.start_ns = 7000;
  memset.end_ns = 7010;
  memset.stream = 7;
  memset.context = 1;
  memset.correlation_id = 15;
  memset.pid = 100;
  memset.bytes = 128;
  device.emplace_back(memset);

  std::vector<trace::Record> memory;
  auto alloc = [](std::int64_t t, std::uint32_t tid, std::uint64_t ptr, trace::AllocatorEvent::Action action,
                  std::uint64_t allocated, std::uint64_t reserved, std::optional<std::uint64_t> active) {
    trace::AllocatorEvent e;
    e.time_ns = t;
    e.pid = 100;
    e.tid = tid;
    e.ptr = ptr;
    e.bytes = 512;
    e.action = action;
    e.total_allocated = allocated;
    e.total_reserved = reserved;
    e.total_active = active;
    e.stream_ptr = 0x7000;
    return e;
  };
  using Action = trace::AllocatorEvent::Action;
  memory.emplace_back(alloc(1800, 101, 0x1000, Action::kFree, 0, 2048, 512));
  memory.emplace_back(alloc(1250, 101, 0x1000, Action::kMalloc, 512, 2048, 512));
  memory.emplace_back(alloc(5050, 102, 0x2000, Action::kMalloc, 512, 2048, std::nullopt));
  memory.emplace_back(alloc(1850, 101, 0x1000, Action::kBlockFree, 0, 2048, 0));

  memory.emplace_back(trace::GcEvent{3000, 3500, 100});
  trace::Mark marker;
  marker.type = trace::Mark::Type::kMarkerEx;
  marker.start_ns = marker.end_ns = 1500;
  marker.pid = 100;
  marker.tid = 101;
  marker.message = "checkpoint";
  memory.emplace_back(marker);
  trace::Mark range;
  range.type = trace::Mark::Type::kPushPop;
  range.start_ns = 1100;
  range.end_ns = 2000;
  range.pid = 100;
  range.tid = 101;
  range.end_tid = 101;
  range.range_id = 1;
  range.message = "Linear";
  range.domain = "Module";
  memory.emplace_back(range);

  trace::ReplayResult replayed;
  replayed.time_ns = 2000;
  replayed.pid = 100;
  replayed.tid = 101;
  replayed.correlation_id = 11;
  replayed.record.kernel_name = "void gemm_kernel<float>(float*, int)";
  replayed.record.replayed = true;
  replayed.record.restore_mode = replay::RestoreMode::kAuto;
  replayed.record.snapshot_regions = 2;
  replayed.record.snapshot_bytes = 1 << 20;
  replayed.record.snapshot_device_bytes = 1 << 19;
  replayed.record.snapshot_ns = 5000;
  replayed.record.replay_ns = 7000;
  replayed.record.deterministic = false;
  replayed.record.mismatched_passes = {2};
  replayed.record.passes = {
      replay::PassRecord{1, 2000, 500, 1980000, 1980000, 0, 0, 0, 0x0123456789abcdefull, {}},
      replay::PassRecord{2, 2600, 480, 1980000, 1965000, 65536, 1, 1, 0xfedcba9876543210ull, {}}};
  replayed.record.counter_passes = 3;
  replayed.record.clock_control = replay::ClockControl::kBase;
  replayed.record.caches_flushed = true;
  replayed.record.metrics = {
      replay::MetricValue{"dram__bytes_read.sum", "byte", 1.5e9, 1},
      replay::MetricValue{"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", 61.25, 2},
      replay::MetricValue{"launch__grid_size", "", 8, 0}};  // from the launch: no unit, no pass
  memory.emplace_back(replayed);
  trace::ReplayResult declined;
  declined.time_ns = 6000;
  declined.pid = 100;
  declined.tid = 102;
  declined.record.launch_index = 1;
  declined.record.kernel_name = "bwd_kernel";
  declined.record.decline_reason = replay::DeclineReason::kGraphLaunch;
  declined.record.decline_detail = "launched from a CUDA graph";
  declined.record.passes = {replay::PassRecord{1, 6000, 100, 0, 0, 0, 0, 0, 0, {}}};
  memory.emplace_back(declined);
  trace::ReplayResult no_counters;  // replayed and timed, but the counters were refused
  no_counters.time_ns = 6200;
  no_counters.pid = 100;
  no_counters.tid = 102;
  no_counters.record.launch_index = 2;
  no_counters.record.kernel_name = "bwd_kernel";
  no_counters.record.replayed = true;
  no_counters.record.passes = {replay::PassRecord{1, 6200, 90, 0, 0, 0, 0, 0, 0, {}}};
  no_counters.record.caches_flushed = true;
  no_counters.record.counter_status =
      "counters not permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): run as root or set "
      "NVreg_RestrictProfilingToAdminUsers=0";
  memory.emplace_back(no_counters);

  std::vector<std::vector<trace::Record>> batches;
  batches.push_back(std::move(host));
  batches.push_back(std::move(device));
  batches.push_back(std::move(memory));
  return batches;
}

inline bool Exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace gpuprof::db::testing
