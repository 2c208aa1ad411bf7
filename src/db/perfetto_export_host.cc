// Host-side producers of the export: torch ops, runtime API calls, forward/backward and
// enqueue/dequeue flows, MSTX marks and GC pauses (see perfetto_exporter.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "db/db_constants.h"
#include "db/perfetto_exporter.h"
#include "db/trace_args.h"

namespace gpuprof::db::perfetto_internal {

Status Exporter::ExportOps(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!Require(schema, db, "PYTORCH_API", {"startNs", "endNs", "globalTid", "name"})) return OkStatus();
  auto [name, name_join] = StringJoin(schema, "p.name", "n");
  auto [shapes, shapes_join] = StringJoin(schema, schema.Col("PYTORCH_API", "p", "inputShapes"), "sh");
  auto [dtypes, dtypes_join] = StringJoin(schema, schema.Col("PYTORCH_API", "p", "inputDtypes"), "dt");
  const std::string sql = "SELECT p.startNs, p.endNs, p.globalTid, " + name + ", " +
                          schema.Col("PYTORCH_API", "p", "type") + ", " +
                          schema.Col("PYTORCH_API", "p", "sequenceNumber") + ", " +
                          schema.Col("PYTORCH_API", "p", "fwdThreadId") + ", " + shapes + ", " + dtypes +
                          " FROM PYTORCH_API p" + name_join + shapes_join + dtypes_join;
  return Stream(reader, sql, [&](const Query& q) {
    const std::int64_t global_tid = q.Int(2);
    const std::uint32_t pid = tracks_.HostPid(db, PidOf(global_tid));
    const std::uint32_t tid = TidOf(global_tid);
    tracks_.Thread(pid, tid, "thread");
    // Torch ops and Python functions come from the Python package; an mstx row (50004) may come
    // from a C++ program's NVTX mark.
    if (q.Int(4) == 50001 || q.Int(4) == 50003) tracks_.MarkPython(pid);
    std::string_view category = "cpu_op";
    switch (q.Int(4)) {
      case 50002: category = "queue"; break;
      case 50003: category = "python_function"; break;
      case 50004: category = "mstx_op"; break;
      default: break;
    }
    Event event = NewEvent();
    event.Str("ph", "X").Str("cat", category).Str("name", q.IsNull(3) ? "[unnamed op]" : q.Text(3));
    event.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
    event.BeginArgs();
    if (!q.IsNull(5)) event.Int("Sequence number", q.Int(5));
    if (!q.IsNull(6)) event.Int("Fwd thread id", q.Int(6));
    // As torch's Chrome trace has them: "Input Dims": [[64, 10], [10, 512]], "Input type":
    // ["float", "float"]; a text too long for the trace, or not dims, stays text (then cut).
    if (!q.IsNull(7) && !q.Text(7).empty()) {
      std::optional<std::string> dims;
      if (q.Text(7).size() <= kMaxTraceStringBytes) dims = InputDimsJson(q.Text(7));
      if (dims.has_value()) {
        event.Json("Input Dims", *dims);
      } else {
        event.Str("Input Dims", q.Text(7));
      }
    }
    if (!q.IsNull(8) && !q.Text(8).empty()) {
      if (q.Text(8).size() <= kMaxTraceStringBytes) {
        event.Json("Input type", InputTypesJson(q.Text(8)));
      } else {
        event.Str("Input type", q.Text(8));
      }
    }
    event.EndArgs();
    ++summary_->slices;
  });
}

Status Exporter::ExportApiCalls(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!Require(schema, db, "CANN_API", {"startNs", "endNs", "globalTid", "name"})) return OkStatus();
  auto [name, name_join] = StringJoin(schema, "a.name", "n");
  const std::string type = schema.Col("CANN_API", "a", "type");
  // CANN_API `node` rows duplicate the runtime call's span: left out.
  const std::string sql =
      "SELECT a.startNs, a.endNs, a.globalTid, " + name + ", " + schema.Col("CANN_API", "a", "connectionId") +
      " FROM CANN_API a" + name_join +
      (type == "NULL" ? ""
                      : " WHERE " + type + " IS NULL OR " + type + " != " + std::to_string(kApiTypeNode));
  return Stream(reader, sql, [&](const Query& q) {
    const std::int64_t global_tid = q.Int(2);
    const std::uint32_t pid = tracks_.HostPid(db, PidOf(global_tid));
    const std::uint32_t tid = TidOf(global_tid);
    tracks_.Thread(pid, tid, "thread");
    Event event = NewEvent();
    event.Str("ph", "X").Str("cat", "cuda_runtime").Str("name", q.IsNull(3) ? "[unnamed API]" : q.Text(3));
    event.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
    event.BeginArgs();
    if (!q.IsNull(4)) event.Int("correlation", q.Int(4));
    event.EndArgs();
    ++summary_->slices;
  });
}

Status Exporter::ExportOpFlows(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!schema.HasAll("CONNECTION_IDS", {"id", "connectionId"}) ||
      !schema.HasAll("PYTORCH_API", {"startNs", "globalTid", "connectionId", "name"})) {
    return OkStatus();
  }
  // fwd/bwd and task-queue pairs: connectionIds shared by more than one op; the lowest index is
  // the first op, the highest the second (msprof-analyze's QUEYR_FWD_BWD_FLOW). One op row per
  // index (the first written, grouped once), so repeated rows give one flow, not their product.
  auto [first_name, first_join] = StringJoin(schema, "a.name", "an");
  const std::string sql =
      "WITH first_op AS MATERIALIZED (SELECT connectionId AS id, MIN(rowid) AS row FROM PYTORCH_API "
      "GROUP BY connectionId) "
      "SELECT a.startNs, a.globalTid, b.startNs, b.globalTid, " +
      first_name +
      " FROM (SELECT connectionId AS cid, MIN(id) AS first_id, MAX(id) AS last_id FROM CONNECTION_IDS "
      "GROUP BY connectionId HAVING COUNT(DISTINCT id) > 1) g "
      "JOIN first_op oa ON oa.id = g.first_id JOIN PYTORCH_API a ON a.rowid = oa.row "
      "JOIN first_op ob ON ob.id = g.last_id JOIN PYTORCH_API b ON b.rowid = ob.row" +
      first_join + " ORDER BY g.cid";
  return Stream(reader, sql, [&](const Query& q) {
    std::string_view first = q.Text(4);
    const bool queue = first.rfind("Enqueue", 0) == 0 || first.rfind("Dequeue", 0) == 0;
    std::int64_t a_ns = q.Int(0), b_ns = q.Int(2);
    std::int64_t a_tid = q.Int(1), b_tid = q.Int(3);
    if (b_ns < a_ns) {
      std::swap(a_ns, b_ns);
      std::swap(a_tid, b_tid);
    }
    const std::uint32_t a_pid = tracks_.HostPid(db, PidOf(a_tid));
    const std::uint32_t b_pid = tracks_.HostPid(db, PidOf(b_tid));
    tracks_.Thread(a_pid, TidOf(a_tid), "thread");
    tracks_.Thread(b_pid, TidOf(b_tid), "thread");
    Flow(queue ? "async_task_queue" : "fwdbwd", a_pid, TidOf(a_tid), a_ns, b_pid, TidOf(b_tid), b_ns);
  });
}

Status Exporter::ExportMstx(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!Require(schema, db, "MSTX_EVENTS", {"startNs", "endNs", "eventType", "message", "globalTid"})) {
    return OkStatus();
  }
  auto [message, message_join] = StringJoin(schema, "e.message", "mn");
  auto [domain, domain_join] = StringJoin(schema, schema.Col("MSTX_EVENTS", "e", "domainId"), "dn");
  const std::string sql = "SELECT e.startNs, e.endNs, e.eventType, " + message + ", e.globalTid, " +
                          schema.Col("MSTX_EVENTS", "e", "endGlobalTid") + ", " + domain + ", " +
                          schema.Col("MSTX_EVENTS", "e", "rangeId") + " FROM MSTX_EVENTS e" + message_join +
                          domain_join;
  return Stream(reader, sql, [&](const Query& q) {
    const std::int64_t global_tid = q.Int(4);
    const std::uint32_t pid = tracks_.HostPid(db, PidOf(global_tid));
    const std::uint32_t tid = TidOf(global_tid);
    tracks_.Thread(pid, tid, "thread");
    const std::string_view name = q.IsNull(3) ? std::string_view("[mark]") : q.Text(3);
    const std::int64_t type = q.Int(2);
    if (type == 0 || type == 3) {  // marker, marker_ex
      Event event = NewEvent();
      event.Str("ph", "i").Str("s", "t").Str("cat", "mstx").Str("name", name);
      event.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0));
      event.BeginArgs();
      if (!q.IsNull(6)) event.Str("domain", q.Text(6));
      event.EndArgs();
      ++summary_->instants;
      return;
    }
    // push/pop and start/end ranges: async slices, so ranges that end on another thread or
    // overlap the thread's ops without nesting still draw correctly.
    const std::string id = HexId(++next_async_id_);
    {
      Event begin = NewEvent();
      begin.Str("ph", "b").Str("cat", "mstx").Str("name", name).Str("id", id);
      begin.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0));
      begin.BeginArgs();
      if (!q.IsNull(6)) begin.Str("domain", q.Text(6));
      if (!q.IsNull(7)) begin.Int("range id", q.Int(7));
      begin.EndArgs();
    }
    const std::uint32_t end_tid = q.IsNull(5) ? tid : TidOf(q.Int(5));
    Event end = NewEvent();
    end.Str("ph", "e").Str("cat", "mstx").Str("name", name).Str("id", id);
    end.Uint("pid", pid).Uint("tid", end_tid).Ts(std::max(q.Int(1), q.Int(0)));
    ++summary_->async_ranges;
  });
}

Status Exporter::ExportGc(const ProfileReader& reader, const Schema& schema, DbContext& db) {
  if (!Require(schema, db, "GC_RECORD", {"startNs", "endNs", "globalTid"})) return OkStatus();
  return Stream(reader, "SELECT startNs, endNs, globalTid FROM GC_RECORD", [&](const Query& q) {
    const std::uint32_t pid = tracks_.HostPid(db, PidOf(q.Int(2)));
    tracks_.Thread(pid, kGcTid, "gc");
    Event event = NewEvent();
    event.Str("ph", "X").Str("cat", "gc").Str("name", "GC").Uint("pid", pid).Uint("tid", kGcTid);
    event.Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
    ++summary_->slices;
  });
}

}  // namespace gpuprof::db::perfetto_internal
