// Device-side producers of the export: kernels, copies and memsets, op -> task launch flows,
// memory counters and replay results (see perfetto_exporter.h).
#include <cstdint>
#include <string>
#include <string_view>

#include "db/device_work.h"
#include "db/perfetto_exporter.h"
#include "db/task_op_link.h"

namespace gpuprof::db::perfetto_internal {

Status Exporter::ExportTasks(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!Require(schema, db, "TASK", {"startNs", "endNs", "deviceId", "streamId", "globalTaskId"}))
    return OkStatus();
  auto [task_type, type_join] = StringJoin(schema, schema.Col("TASK", "t", "taskType"), "tt");
  std::string select = "SELECT t.startNs, t.endNs, t.deviceId, t.streamId, " +
                       schema.Col("TASK", "t", "connectionId") + ", " + task_type;
  std::string from = " FROM TASK t" + type_join;
  if (schema.HasAll("COMPUTE_TASK_INFO", {"globalTaskId", "name"})) {
    auto [kernel, kernel_join] = StringJoin(schema, "c.name", "kn");
    // gpuprof stores gridDim/blockDim as STRING_IDS of "x,y,z" (docs/db_gpuprof_tables.md);
    // a value that is no string id is shown as it is.
    const std::string grid = schema.Col("COMPUTE_TASK_INFO", "c", "gridDim");
    const std::string block = schema.Col("COMPUTE_TASK_INFO", "c", "blockDim");
    auto [grid_text, grid_join] = StringJoin(schema, grid, "gd");
    auto [block_text, block_join] = StringJoin(schema, block, "bd");
    select += ", " + kernel + ", COALESCE(" + grid_text + ", " + grid + "), COALESCE(" + block_text + ", " +
              block + "), " + schema.Col("COMPUTE_TASK_INFO", "c", "blockNum");
    from += " LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId" + kernel_join + grid_join +
            block_join;
  } else {
    select += ", NULL, NULL, NULL, NULL";
  }
  if (schema.HasAll("MEMCPY_INFO", {"globalTaskId", "size", "memcpyOperation"})) {
    // MEMCPY_INFO has no index on globalTaskId; SQLite builds a transient one for this join.
    select += ", m.size, ";
    if (schema.HasAll("ENUM_MEMCPY_OPERATION", {"id", "name"})) {
      select += "COALESCE(e.name, CAST(m.memcpyOperation AS TEXT))";
      from +=
          " LEFT JOIN MEMCPY_INFO m ON m.globalTaskId = t.globalTaskId"
          " LEFT JOIN ENUM_MEMCPY_OPERATION e ON e.id = m.memcpyOperation";
    } else {
      select += "CAST(m.memcpyOperation AS TEXT)";
      from += " LEFT JOIN MEMCPY_INFO m ON m.globalTaskId = t.globalTaskId";
    }
  } else {
    select += ", NULL, NULL";
  }
  // The replayed launch (pass 1 is the application's own execution) whose counters go into the
  // kernel's args: one id per connectionId, so no task row is repeated.
  const std::string counter_filter = counters_.LaunchFilter();
  if (!counter_filter.empty() && schema.Has("GPUPROF_REPLAY_KERNEL", "connectionId") &&
      schema.Has("TASK", "connectionId")) {
    select += ", rk.rid";
    from +=
        " LEFT JOIN (SELECT connectionId AS cid, MIN(id) AS rid FROM GPUPROF_REPLAY_KERNEL WHERE "
        "connectionId IS NOT NULL AND replayed != 0 AND (" +
        counter_filter + ") GROUP BY connectionId) rk ON rk.cid = t.connectionId";
  } else {
    select += ", NULL";
  }
  GPUPROF_ASSIGN_OR_RETURN(const std::string device_work, DeviceWorkTaskSql(reader, "t"));
  return Stream(reader, select + from + " WHERE " + device_work, [&](const Query& q) -> Status {
    const std::uint32_t pid = tracks_.DevicePid(db, q.Int(2));
    const auto stream = static_cast<std::uint32_t>(q.Int(3));
    tracks_.Thread(pid, stream, "stream");
    const std::string_view type = q.Text(5);
    std::string_view category = "device_task";
    std::string name;
    if (!q.IsNull(6)) {
      category = "kernel";
      name = q.Text(6);
    } else {
      if (type.rfind("MEMCPY", 0) == 0) category = "gpu_memcpy";
      if (type.rfind("MEMSET", 0) == 0) category = "gpu_memset";
      name = type.empty() ? "[device task]" : std::string(type);
      if (!q.IsNull(11)) name += " (" + std::string(q.Text(11)) + ")";
    }
    Event event = NewEvent();
    event.Str("ph", "X").Str("cat", category).Str("name", name);
    event.Uint("pid", pid).Uint("tid", stream).Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
    event.BeginArgs().Int("device", q.Int(2)).Int("stream", q.Int(3));
    if (!q.IsNull(4)) event.Int("correlation", q.Int(4));
    if (!q.IsNull(7)) event.Str("grid", q.Text(7));
    if (!q.IsNull(8)) event.Str("block", q.Text(8));
    if (!q.IsNull(9)) event.Int("blocks", q.Int(9));
    if (!q.IsNull(10)) event.Int("bytes", q.Int(10));
    if (!q.IsNull(6) && !q.IsNull(12)) GPUPROF_RETURN_IF_ERROR(counters_.AppendArgs(q.Int(12), &event));
    event.EndArgs();
    ++summary_->slices;
    return OkStatus();
  });
}

Status Exporter::ExportTaskFlows(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!schema.HasAll("CONNECTION_IDS", {"id", "connectionId"}) ||
      !schema.HasAll("PYTORCH_API", {"startNs", "globalTid", "name", "connectionId"}) ||
      !schema.HasAll("TASK", {"startNs", "deviceId", "streamId", "connectionId"})) {
    return OkStatus();
  }
  // One flow per task, from the op that launched it (task_op_link.h).
  GPUPROF_ASSIGN_OR_RETURN(const TaskOpLinks links, TaskOpLinks::Read(reader));
  if (links.empty()) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const std::string device_work, DeviceWorkTaskSql(reader, ""));
  const std::string sql =
      "SELECT connectionId, startNs, deviceId, streamId FROM TASK WHERE connectionId IS NOT NULL AND " +
      device_work + " ORDER BY connectionId, startNs, rowid";
  return Stream(reader, sql, [&](const Query& q) {
    const LinkedOp* op = links.Find(q.Int(0));
    if (op == nullptr) return;
    const std::uint32_t from_pid = tracks_.HostPid(db, PidOf(op->tid));
    const std::uint32_t to_pid = tracks_.DevicePid(db, q.Int(2));
    const auto stream = static_cast<std::uint32_t>(q.Int(3));
    tracks_.Thread(to_pid, stream, "stream");
    Flow("ac2g", from_pid, TidOf(op->tid), op->start_ns.value_or(0), to_pid, stream, q.Int(1));
  });
}

Status Exporter::ExportMemory(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!Require(schema, db, "MEMORY_RECORD", {"timestamp", "deviceId", "totalAllocated", "totalReserved"})) {
    return OkStatus();
  }
  auto [component, component_join] = StringJoin(schema, schema.Col("MEMORY_RECORD", "m", "component"), "cn");
  const std::string sql =
      "SELECT m.timestamp, m.deviceId, " + component + ", m.totalAllocated, m.totalReserved, " +
      schema.Col("MEMORY_RECORD", "m", "totalActive") + " FROM MEMORY_RECORD m" + component_join;
  std::string name;
  return Stream(reader, sql, [&](const Query& q) {
    const std::uint32_t pid = tracks_.DevicePid(db, q.Int(1));
    name.assign("Memory ");
    name.append(q.IsNull(2) ? std::string_view("allocator") : q.Text(2));
    Event event = NewEvent();
    event.Str("ph", "C").Str("cat", "memory").Str("name", name).Uint("pid", pid).Ts(q.Int(0));
    event.BeginArgs().Int("allocated", q.Int(3)).Int("reserved", q.Int(4));
    if (!q.IsNull(5)) event.Int("active", q.Int(5));
    event.EndArgs();
    ++summary_->counters;
  });
}

Status Exporter::ExportReplay(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!schema.HasTable("GPUPROF_REPLAY_KERNEL")) return OkStatus();  // a run without replay
  if (!Require(schema, db, "GPUPROF_REPLAY_KERNEL", {"id", "deviceId", "name", "replayed"}))
    return OkStatus();
  auto [kernel, kernel_join] = StringJoin(schema, "k.name", "kn");
  if (schema.HasAll("GPUPROF_REPLAY_PASS", {"kernelId", "pass", "startNs", "durationNs"})) {
    const std::string sql =
        "SELECT p.startNs, p.durationNs, p.pass, k.deviceId, " + kernel + ", " +
        schema.Col("GPUPROF_REPLAY_PASS", "p", "bytesRestored") + ", " +
        schema.Col("GPUPROF_REPLAY_PASS", "p", "dirtyChunks") + ", " +
        schema.Col("GPUPROF_REPLAY_PASS", "p", "outputHash") + ", " +
        schema.Col("GPUPROF_REPLAY_KERNEL", "k", "launchIndex") + ", " +
        schema.Col("GPUPROF_REPLAY_PASS", "p", "matchesPass1") +
        ", k.id FROM GPUPROF_REPLAY_PASS p JOIN GPUPROF_REPLAY_KERNEL k ON k.id = p.kernelId" + kernel_join;
    auto pass_slice = [&](const Query& q) -> Status {
      const std::uint32_t pid = tracks_.DevicePid(db, q.Int(3));
      tracks_.Thread(pid, kReplayTid, "replay");
      std::string name(q.Text(4));
      name += " [pass " + std::to_string(q.Int(2)) + "]";
      Event event = NewEvent();
      event.Str("ph", "X")
          .Str("cat", "gpuprof_replay")
          .Str("name", name)
          .Uint("pid", pid)
          .Uint("tid", kReplayTid);
      event.Ts(q.Int(0)).Dur(q.Int(1));
      event.BeginArgs().Int("pass", q.Int(2));
      if (!q.IsNull(8)) event.Int("launch", q.Int(8));
      if (!q.IsNull(5)) event.Int("bytes restored", q.Int(5));
      if (!q.IsNull(6)) event.Int("dirty chunks", q.Int(6));
      if (!q.IsNull(7)) event.Str("output hash", HexId(static_cast<std::uint64_t>(q.Int(7))));
      if (!q.IsNull(9)) event.Str("matches pass 1", q.Int(9) != 0 ? "yes" : "no");
      // The launch's counters on its first pass too: a launch whose kernel slice is not in TASK
      // (no correlation id) still shows them.
      if (q.Int(2) == 1) GPUPROF_RETURN_IF_ERROR(counters_.AppendArgs(q.Int(10), &event));
      event.EndArgs();
      ++summary_->slices;
      return OkStatus();
    };
    GPUPROF_RETURN_IF_ERROR(Stream(reader, sql, pass_slice));
  } else if (schema.HasTable("GPUPROF_REPLAY_PASS")) {
    summary_->notes.push_back(db.label +
                              ": GPUPROF_REPLAY_PASS lacks columns this export reads; passes not exported");
  }
  if (schema.HasAll("GPUPROF_REPLAY_KERNEL", {"timestampNs", "declineReason"})) {
    const std::string sql = "SELECT k.timestampNs, k.deviceId, " + kernel + ", k.declineReason, " +
                            schema.Col("GPUPROF_REPLAY_KERNEL", "k", "declineDetail") +
                            " FROM GPUPROF_REPLAY_KERNEL k" + kernel_join + " WHERE k.replayed = 0";
    GPUPROF_RETURN_IF_ERROR(Stream(reader, sql, [&](const Query& q) {
      const std::uint32_t pid = tracks_.DevicePid(db, q.Int(1));
      tracks_.Thread(pid, kReplayTid, "replay");
      std::string name(q.Text(2));
      name += " declined: ";
      name += q.IsNull(3) ? std::string_view("unknown") : q.Text(3);
      Event event = NewEvent();
      event.Str("ph", "i").Str("s", "t").Str("cat", "gpuprof_replay").Str("name", name);
      event.Uint("pid", pid).Uint("tid", kReplayTid).Ts(q.Int(0));
      event.BeginArgs();
      if (!q.IsNull(4) && !q.Text(4).empty()) event.Str("detail", q.Text(4));
      event.EndArgs();
      ++summary_->instants;
    }));
  }
  return OkStatus();
}

}  // namespace gpuprof::db::perfetto_internal
