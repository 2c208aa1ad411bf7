#include "db/writer_rows.h"

#include <sqlite3.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "db/db_constants.h"

namespace gpuprof::db::internal {

RowSink::RowSink(Connection conn, std::size_t batch_rows, SharedStrings& strings)
    : conn_(std::move(conn)),
      batch_rows_(batch_rows),
      rows_(static_cast<std::uint64_t>(sqlite3_total_changes64(conn_.get()))),
      strings_(strings) {}

Status RowSink::Prepare() {
  GPUPROF_ASSIGN_OR_RETURN(string_ids_, Statement::Prepare(conn_, "INSERT INTO STRING_IDS VALUES (?1, ?2)"));
  GPUPROF_ASSIGN_OR_RETURN(
      replay_kernel_,
      Statement::Prepare(conn_,
                         "INSERT INTO GPUPROF_REPLAY_KERNEL VALUES (?1, ?2, ?3, ?4, "
                         "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
                         "?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)"));
  GPUPROF_RETURN_IF_ERROR(pytorch_api_.Prepare(conn_, kInsertApiHead, kInsertApiRow));
  GPUPROF_RETURN_IF_ERROR(callchains_.Prepare(conn_, "INSERT INTO PYTORCH_CALLCHAINS VALUES ", "(?,?,?)"));
  // OR IGNORE: a repeated correlation id (a collector bug) must not stop the whole profile; it
  // is counted and reported once at Finalize.
  GPUPROF_RETURN_IF_ERROR(
      cann_api_.Prepare(conn_, "INSERT OR IGNORE INTO CANN_API VALUES ", "(?,?,?,?,?,?)"));
  // modelId: no model (DB_INVALID_VALUE).
  GPUPROF_RETURN_IF_ERROR(
      task_.Prepare(conn_, "INSERT INTO TASK VALUES ", "(?,?,?,?,?,?,?,?,?,?,4294967295)"));
  GPUPROF_RETURN_IF_ERROR(memcpy_info_.Prepare(conn_, "INSERT INTO MEMCPY_INFO VALUES ", "(?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(copy_memory_.Prepare(conn_, "INSERT INTO GPUPROF_COPY_MEMORY VALUES ", "(?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(gc_record_.Prepare(conn_, "INSERT INTO GC_RECORD VALUES ", "(?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(mstx_.Prepare(conn_, "INSERT INTO MSTX_EVENTS VALUES ", "(?,?,?,?,?,?,?,?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(
      replay_pass_.Prepare(conn_, "INSERT INTO GPUPROF_REPLAY_PASS VALUES ", "(?,?,?,?,?,?,?,?,?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(
      replay_metric_.Prepare(conn_, "INSERT INTO GPUPROF_REPLAY_METRIC VALUES ", "(?,?,?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(
      replay_graph_node_.Prepare(conn_, "INSERT INTO GPUPROF_REPLAY_GRAPH_NODE VALUES ", "(?,?,?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(
      memory_record_.Prepare(conn_, "INSERT INTO MEMORY_RECORD VALUES ", "(?,?,?,?,?,?,?)"));
  GPUPROF_RETURN_IF_ERROR(
      op_memory_.Prepare(conn_, "INSERT INTO OP_MEMORY VALUES ", "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  return OkStatus();
}

Status RowSink::Begin() {
  rows_in_txn_ = 0;
  return conn_.Exec("BEGIN");
}

Status RowSink::Commit() {
  for (BatchInserter* inserter : Inserters()) GPUPROF_RETURN_IF_ERROR(inserter->Flush());
  return conn_.Exec("COMMIT");
}

Status RowSink::MaybeCommit() {
  if (rows_in_txn_ < batch_rows_) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(Commit());
  return Begin();
}

// Finalize's rows on the main connection, in this order: the derived tables' (writer_derived.cc),
// the collectives' (writer_collectives.cc), then the per-run tables (writer_run_info.cc).
Status RowSink::WriteFinal(const Derived& derived, const OpLane& lane, std::size_t api_rows,
                           const trace::RunInfo& run, std::int64_t end_ns) {
  GPUPROF_RETURN_IF_ERROR(WriteDerivedRows(derived, lane, api_rows));
  if (alloc_events_.empty()) {
    // No allocator event recorded (profile_memory off, or no device memory): one row at the
    // session's start with zero totals, so that the consumers' MAX(totalReserved) is 0, not NULL
    // (msprof-analyze's compare divides it: overall_metrics_parser.py calculate_memory_usage_peak).
    trace::AllocatorEvent zero;
    zero.time_ns = run.start_ns;
    zero.total_active = 0;
    zero.device = run.device < 0 ? 0 : run.device;
    GPUPROF_RETURN_IF_ERROR(WriteMemoryRecord(zero));
  }
  GPUPROF_RETURN_IF_ERROR(WriteCollectives(lane.collectives(), lane.ops(), derived.connections, run));
  for (BatchInserter* inserter : Inserters()) GPUPROF_RETURN_IF_ERROR(inserter->Flush());
  GPUPROF_RETURN_IF_ERROR(FillRangePassDurations());
  GPUPROF_RETURN_IF_ERROR(WriteDeviceRanges());
  return WriteRunTables(run, end_ns);
}

Status RowSink::WriteRecord(trace::ReplayRangeTask& task) {
  if (!range_pass_times_ready_) {
    // Held aside until the finalize: the pass rows of the launch may not have been written yet.
    GPUPROF_RETURN_IF_ERROR(
        conn_.Exec("CREATE TEMP TABLE gpuprof_range_pass_times (connectionId INTEGER, pass INTEGER, "
                   "durationNs INTEGER)"));
    GPUPROF_ASSIGN_OR_RETURN(
        range_pass_times_,
        Statement::Prepare(conn_, "INSERT INTO gpuprof_range_pass_times VALUES (?1, ?2, ?3)"));
    range_pass_times_ready_ = true;
  }
  range_pass_times_.BindU64(1, task.correlation_id);
  range_pass_times_.BindInt(2, task.pass);
  range_pass_times_.BindU64(3, task.duration_ns);
  GPUPROF_RETURN_IF_ERROR(range_pass_times_.Run());
  ++rows_in_txn_;
  return OkStatus();
}

Status RowSink::FillRangePassDurations() {
  // W6 on CUDA: each pass of a replayed range's launch is timed by CUPTI's kernel record, pass 1
  // by the application's own (TASK), passes 2..N by gpuprof's re-issued launch's; both joined by the
  // application launch's correlation id, once every row is in. A pass without its record keeps the
  // collector's own timing.
  if (!replay_range_rows_) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(
      conn_.Exec("UPDATE GPUPROF_REPLAY_PASS AS p SET durationNs = t.endNs - t.startNs "
                 "FROM GPUPROF_REPLAY_KERNEL AS k JOIN TASK AS t ON t.connectionId = k.connectionId "
                 "WHERE p.kernelId = k.id AND p.pass = 1 AND p.durationNs = 0 AND k.replayMode = 'range' "
                 "AND k.connectionId IS NOT NULL AND t.endNs > t.startNs"));
  if (!range_pass_times_ready_) return OkStatus();
  range_pass_times_ = {};
  range_pass_times_ready_ = false;
  GPUPROF_RETURN_IF_ERROR(conn_.Exec(
      "UPDATE GPUPROF_REPLAY_PASS AS p SET durationNs = r.durationNs "
      "FROM GPUPROF_REPLAY_KERNEL AS k JOIN gpuprof_range_pass_times AS r ON r.connectionId = k.connectionId "
      "WHERE p.kernelId = k.id AND p.pass = r.pass AND p.pass > 1 AND k.replayMode = 'range' AND "
      "r.durationNs > 0"));
  return conn_.Exec("DROP TABLE gpuprof_range_pass_times");
}

Status RowSink::Write(trace::Record& record) {
  GPUPROF_RETURN_IF_ERROR(std::visit([this](auto& r) { return WriteRecord(r); }, record));
  return MaybeCommit();
}

Status RowSink::WriteLaneRows(const LaneRows& rows) {
  for (const auto& [id, value] : rows.strings) {
    string_ids_.BindU64(1, id);
    string_ids_.BindStaticText(2, value);
    GPUPROF_RETURN_IF_ERROR(string_ids_.Run());
    ++rows_;
    ++rows_in_txn_;
  }
  for (const auto& row : rows.callchains) {
    for (int c = 0; c < 3; ++c) callchains_.SetU64(c, row[static_cast<std::size_t>(c)]);
    GPUPROF_RETURN_IF_ERROR(Pushed(callchains_));
  }
  return OkStatus();
}

void RowSink::ReleaseStatements() {
  string_ids_ = {};
  replay_kernel_ = {};
  range_pass_times_ = {};
  for (BatchInserter* inserter : Inserters()) inserter->Release();
}

StatusOr<std::uint64_t> RowSink::Id(StringSpace space, std::string_view value) {
  return Written(strings_.Intern(space, value));
}

StatusOr<std::uint64_t> RowSink::EmptyId(StringSpace space) { return Written(strings_.InternEmpty(space)); }

StatusOr<std::uint64_t> RowSink::Written(const StringTable::Interned& interned) {
  if (interned.is_new) {
    string_ids_.BindU64(1, interned.id);
    string_ids_.BindStaticText(2, interned.value);
    GPUPROF_RETURN_IF_ERROR(string_ids_.Run());
    ++rows_;
    ++rows_in_txn_;
  }
  return interned.id;
}

Status RowSink::WriteRecord(trace::ExternalCorrelation& link) {
  external_launches_[link.external_id].push_back(link.correlation_id);
  return OkStatus();
}

Status RowSink::WriteRecord(trace::TorchOp& op) {
  lane_batch_.push_back(std::move(op));
  return OkStatus();
}

Status RowSink::WriteCannApi(std::int64_t start, std::int64_t end, std::int64_t type, std::int64_t global_tid,
                             std::uint64_t connection_id, std::uint64_t name_id) {
  BatchInserter& s = cann_api_;
  s.Set(0, start);
  s.Set(1, end);
  s.Set(2, type);
  s.Set(3, global_tid);
  s.SetU64(4, connection_id);
  s.SetU64(5, name_id);
  return Pushed(s);
}

Status RowSink::WriteRecord(trace::ApiCall& call) {
  std::int64_t global_tid = GlobalTid(call.pid, call.tid);
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t name_id, Id(StringSpace::kDevice, call.name));
  GPUPROF_RETURN_IF_ERROR(WriteCannApi(call.start_ns, call.end_ns, kApiTypeRuntime, global_tid,
                                       call.correlation_id + kRuntimeConnectionOffset, name_id));
  if (call.launches_device_work) {
    if (launch_name_id_ == kInvalidStringId) {
      GPUPROF_ASSIGN_OR_RETURN(launch_name_id_, Id(StringSpace::kDevice, "launch"));
    }
    GPUPROF_RETURN_IF_ERROR(WriteCannApi(call.start_ns, call.end_ns, kApiTypeNode, global_tid,
                                         call.correlation_id, launch_name_id_));
    launches_.push_back(LaunchSpan{call.start_ns, call.end_ns, call.tid, call.correlation_id});
  }
  return OkStatus();
}

StatusOr<std::uint64_t> RowSink::TaskTypeId(trace::TaskKind kind) {
  auto index = static_cast<std::size_t>(kind);
  if (task_type_ids_[index] == kInvalidStringId) {
    // cluster_time_summary keys on MEMCPY_ASYNC (DB_SPEC §7).
    constexpr std::string_view kNames[] = {"KERNEL", "MEMCPY_ASYNC", "MEMSET"};
    GPUPROF_ASSIGN_OR_RETURN(task_type_ids_[index], Id(StringSpace::kDevice, kNames[index]));
  }
  return task_type_ids_[index];
}

Status RowSink::WriteRecord(trace::DeviceTask& task) {
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t type_id, TaskTypeId(task.kind));
  std::uint64_t global_task_id = next_global_task_id_++;
  BatchInserter& s = task_;
  s.Set(0, task.start_ns);
  s.Set(1, task.end_ns);
  s.Set(2, task.device);
  s.SetU64(3, task.correlation_id);
  s.SetU64(4, global_task_id);
  s.Set(5, task.pid);
  s.SetU64(6, type_id);
  s.Set(7, task.context);
  s.Set(8, task.stream);
  s.SetU64(9, global_task_id);  // taskId: CUDA has no per-stream hardware task id
  GPUPROF_RETURN_IF_ERROR(Pushed(s));

  switch (task.kind) {
    case trace::TaskKind::kKernel: return OkStatus();  // COMPUTE_TASK_INFO: KernelSink
    case trace::TaskKind::kMemcpy: {
      BatchInserter& m = memcpy_info_;
      m.SetU64(0, global_task_id);
      m.SetU64(1, task.bytes);
      m.Set(2, task.memcpy_operation);
      GPUPROF_RETURN_IF_ERROR(Pushed(m));
      if (task.src_memory_kind == 0 && task.dst_memory_kind == 0) return OkStatus();
      BatchInserter& kinds = copy_memory_;
      kinds.SetU64(0, global_task_id);
      kinds.Set(1, task.src_memory_kind);
      kinds.Set(2, task.dst_memory_kind);
      return Pushed(kinds);
    }
    case trace::TaskKind::kMemset: return OkStatus();
  }
  return OkStatus();
}

Status RowSink::WriteRecord(trace::AllocatorEvent& event) {
  // MEMORY_RECORD is written sorted by time at Finalize, from the same list OP_MEMORY needs.
  alloc_events_.push_back(std::move(event));
  return OkStatus();
}

Status RowSink::WriteRecord(trace::ThreadName& thread) {
  // One META_DATA row of them all at Finalize (WriteRunTables); the latest name of a tid wins.
  thread_names_[thread.tid] = std::move(thread.name);
  return OkStatus();
}

Status RowSink::WriteRecord(trace::GcEvent& gc) {
  BatchInserter& s = gc_record_;
  s.Set(0, gc.start_ns);
  s.Set(1, gc.end_ns);
  s.Set(2, GlobalTid(gc.pid, gc.pid));  // torch_npu records the pid in both halves (§3.10)
  return Pushed(s);
}

Status RowSink::WriteRecord(trace::Mark& mark) {
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t message_id, Id(StringSpace::kDevice, mark.message));
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t domain_id,
                           Id(StringSpace::kDevice, mark.domain.empty() ? "default" : mark.domain));
  BatchInserter& s = mstx_;
  s.Set(0, mark.start_ns);
  s.Set(1, mark.end_ns);
  s.Set(2, static_cast<std::int64_t>(mark.type));
  s.SetU64(3, mark.range_id);
  s.SetU64(4, kInvalidStringId);  // category: not recorded
  s.SetU64(5, message_id);
  s.Set(6, GlobalTid(mark.pid, mark.tid));
  s.Set(7, GlobalTid(mark.pid, mark.end_tid != 0 ? mark.end_tid : mark.tid));
  s.SetU64(8, domain_id);
  // A host-only range keeps 4294967295, as msprof writes it: mstx_sum skips those (a range with an
  // id but no TASK row makes it subtract NULLs and drop the rank). A device-linked range gets an id
  // of its own (4 << 32 + n); WriteDeviceRanges gives it its TASK row at Finalize, or puts
  // 4294967295 back when its thread launched nothing inside it. A host-only mark gets an id of its
  // own and, as torch_npu records an mstx call, a PYTORCH_API row of type mstx (50004) at its time
  // on its thread, which CONNECTION_IDS ties to that id: mstx_sum reads every mark's framework time
  // through CONNECTION_IDS and fails on a mark without one (prof_exports/mstx_event_export.py,
  // mstx_sum.py's astype), a mark outside every torch op included.
  std::uint64_t connection_id = kInvalidStringId;
  const bool instant = mark.start_ns == mark.end_ns &&
                       (mark.type == trace::Mark::Type::kMarker || mark.type == trace::Mark::Type::kMarkerEx);
  if (mark.device && !instant) {
    connection_id = kMstxConnectionBase + next_mstx_connection_++;
    device_ranges_.push_back(DeviceRange{mark.start_ns, mark.end_ns, mark.tid, mark.stream, connection_id});
  } else if (instant) {
    connection_id = kMstxConnectionBase + next_mstx_connection_++;
    trace::TorchOp op;
    op.type = trace::TorchOp::Type::kMstx;
    op.name = mark.message;
    op.start_ns = mark.start_ns;
    op.end_ns = mark.start_ns;
    op.pid = mark.pid;
    op.tid = mark.tid;
    op.correlation_ids.push_back(connection_id);
    lane_batch_.push_back(std::move(op));
  }
  s.SetU64(9, connection_id);
  return Pushed(s);
}

Status RowSink::WriteRecord(trace::ReplayGraphNodeTask& task) {
  auto replay = graph_replay_by_correlation_.find(task.correlation_id);
  if (replay != graph_replay_by_correlation_.end()) return WriteGraphNode(replay->second, task);
  // Its replay's row has not come yet. Kept for it, within a bound (records of a replay whose row
  // never comes would otherwise pile up).
  constexpr std::size_t kMaxEarlyGraphNodes = std::size_t{1} << 20;
  if (early_graph_node_count_ >= kMaxEarlyGraphNodes) return OkStatus();
  early_graph_nodes_[task.correlation_id].push_back(std::move(task));
  ++early_graph_node_count_;
  return OkStatus();
}

Status RowSink::WriteGraphNode(std::uint64_t kernel_id, const trace::ReplayGraphNodeTask& task) {
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t name_id, Id(StringSpace::kDevice, task.name));
  const int pass = ++graph_node_passes_[{kernel_id, task.graph_node_id}];
  BatchInserter& g = replay_graph_node_;
  g.SetU64(0, kernel_id);
  g.Set(1, pass);
  g.SetU64(2, task.graph_node_id);
  g.SetU64(3, name_id);
  g.SetU64(4, task.duration_ns);
  return Pushed(g);
}

Status RowSink::WriteRecord(trace::ReplayResult& result) {
  const replay::ReplayRecord& r = result.record;
  std::uint64_t kernel_id = next_replay_id_++;
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t name_id, Id(StringSpace::kDevice, r.kernel_name));
  Statement& k = replay_kernel_;
  k.BindU64(1, kernel_id);
  k.BindInt(2, result.time_ns);
  k.BindInt(3, GlobalTid(result.pid, result.tid));
  k.BindInt(4, r.device);
  k.BindU64(5, name_id);
  if (result.correlation_id != 0) {
    k.BindU64(6, result.correlation_id);
  } else {
    k.BindNull(6);
  }
  k.BindU64(7, r.launch_index);
  k.BindInt(8, r.replayed ? 1 : 0);
  if (r.decline_reason == replay::DeclineReason::kNone) {
    k.BindNull(9);
  } else {
    k.BindStaticText(9, replay::DeclineReasonName(r.decline_reason));
  }
  if (r.decline_detail.empty()) {
    k.BindNull(10);
  } else {
    k.BindStaticText(10, r.decline_detail);
  }
  k.BindStaticText(11, replay::RestoreModeName(r.restore_mode));
  k.BindInt(12, static_cast<std::int64_t>(r.passes.size()));
  k.BindInt(13, r.deterministic ? 1 : 0);
  k.BindU64(14, r.snapshot_regions);
  k.BindU64(15, r.snapshot_bytes);
  k.BindU64(16, r.snapshot_ns);
  k.BindU64(17, r.untracked_writable_bytes);
  k.BindU64(18, r.snapshot_device_bytes);
  k.BindU64(19, r.replay_ns);
  k.BindInt(20, r.counter_passes);
  if (r.counter_status.empty()) {
    k.BindNull(21);
  } else {
    k.BindStaticText(21, r.counter_status);
  }
  k.BindStaticText(22, replay::ClockControlName(r.clock_control));
  k.BindStaticText(23, r.caches_flushed ? "all" : "none");
  k.BindStaticText(24, replay::ReplayModeName(r.replay_mode));
  if (r.replay_mode == replay::ReplayMode::kGraph || r.replay_mode == replay::ReplayMode::kNode) {
    k.BindU64(25, r.graph_id);
  } else {
    k.BindNull(25);
  }
  if (r.replay_mode == replay::ReplayMode::kNode && r.graph_node_id != 0) {
    k.BindU64(26, r.graph_node_id);
  } else {
    k.BindNull(26);
  }
  if (r.graph_fallback.empty()) {
    k.BindNull(27);
  } else {
    k.BindStaticText(27, r.graph_fallback);
  }
  if (r.replay_mode == replay::ReplayMode::kRange) {
    replay_range_rows_ = true;
    k.BindU64(28, r.range_id);
    k.BindInt(29, r.range_launch);
  } else {
    k.BindNull(28);
    k.BindNull(29);
  }
  GPUPROF_RETURN_IF_ERROR(k.Run());
  ++rows_;
  ++rows_in_txn_;
  if (r.replay_mode == replay::ReplayMode::kGraph && r.replayed && result.correlation_id != 0) {
    graph_replay_by_correlation_[result.correlation_id] = kernel_id;
    if (auto early = early_graph_nodes_.find(result.correlation_id); early != early_graph_nodes_.end()) {
      for (const trace::ReplayGraphNodeTask& task : early->second) {
        GPUPROF_RETURN_IF_ERROR(WriteGraphNode(kernel_id, task));
      }
      early_graph_node_count_ -= early->second.size();
      early_graph_nodes_.erase(early);
    }
  }

  BatchInserter& p = replay_pass_;
  for (const replay::PassRecord& pass : r.passes) {
    bool mismatched = std::find(r.mismatched_passes.begin(), r.mismatched_passes.end(), pass.pass) !=
                      r.mismatched_passes.end();
    p.SetU64(0, kernel_id);
    p.Set(1, pass.pass);
    p.Set(2, pass.start_ns);
    p.SetU64(3, pass.duration_ns);
    p.Set(4, pass.sm_clock_before_khz);
    p.Set(5, pass.sm_clock_after_khz);
    p.SetU64(6, pass.bytes_restored);
    p.SetU64(7, pass.regions_restored);
    p.SetU64(8, pass.dirty_chunks);
    if (pass.output_hash == 0) {
      p.SetNull(9);  // not computed
      p.SetNull(10);
    } else {
      p.SetU64(9, pass.output_hash);  // two's complement of the u64 (docs/db_gpuprof_tables.md)
      p.Set(10, mismatched ? 0 : 1);
    }
    GPUPROF_RETURN_IF_ERROR(Pushed(p));
    for (const replay::GraphNodeDuration& node : pass.kernel_nodes) {
      GPUPROF_ASSIGN_OR_RETURN(std::uint64_t node_name, Id(StringSpace::kDevice, node.kernel_name));
      BatchInserter& g = replay_graph_node_;
      g.SetU64(0, kernel_id);
      g.Set(1, pass.pass);
      g.SetU64(2, node.node_id);
      g.SetU64(3, node_name);
      g.SetU64(4, node.duration_ns);
      GPUPROF_RETURN_IF_ERROR(Pushed(g));
    }
  }

  for (const replay::MetricValue& metric : r.metrics) {
    // Names and units repeat across launches: STRING_IDS holds each once (device space).
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t metric_id, Id(StringSpace::kDevice, metric.name));
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t unit_id, Id(StringSpace::kDevice, metric.unit));
    BatchInserter& m = replay_metric_;
    m.SetU64(0, kernel_id);
    m.SetU64(1, metric_id);
    if (unit_id == kInvalidStringId) {
      m.SetNull(2);  // no unit
    } else {
      m.SetU64(2, unit_id);
    }
    m.SetDouble(3, metric.value);
    m.Set(4, metric.passes);
    GPUPROF_RETURN_IF_ERROR(Pushed(m));
  }
  return OkStatus();
}

}  // namespace gpuprof::db::internal
