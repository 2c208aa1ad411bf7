// Finalize's derived tables: the derivation (derive.h) over the indexes RowSink and the op lane
// kept while streaming, and the rows it yields: PYTORCH_API with each row's connectionId (half in
// the main file, half from a side thread), CONNECTION_IDS (from a side thread), STEP_TIME,
// MEMORY_RECORD (the allocator events in time order) and OP_MEMORY.
#include <algorithm>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>

#include "base/logging.h"
#include "db/db_constants.h"
#include "db/writer_rows.h"

namespace gpuprof::db::internal {

Derived RowSink::Derive(const OpLane& lane) const {
  Derived out;
  const std::vector<OpSpan>& ops = lane.ops();
  auto side = [this, &out, &lane, &ops] {
    if (lane.any_step()) out.steps = DeriveSteps(ops);
    if (!alloc_events_.empty()) out.op_memory = DeriveOpMemory(alloc_events_, ops);
  };
  std::exception_ptr side_error;
  std::thread helper;
  try {
    helper = std::thread([&side, &side_error]() noexcept {
      try {
        side();
      } catch (...) {
        side_error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    side();  // no second thread: one after the other
  }
  try {
    if (lane.collectives().empty()) {
      out.connections = DeriveConnections(ops, launches_, external_launches_);
    } else {
      // Each collective's COMMUNICATION_OP connectionId joins its work op through CONNECTION_IDS
      // (the innermost op around its start on its thread: the work op itself), as msprof-analyze's
      // module_statistic reads it (prof_exports/module_statistic_export.py QUERY_COMMUNICATION_TASK).
      std::vector<LaunchSpan> links = launches_;
      const std::vector<CollectiveSpan> collectives = CollectivesInIdOrder(lane.collectives());
      for (std::size_t i = 0; i < collectives.size(); ++i) {
        links.push_back(LaunchSpan{collectives[i].start_ns, collectives[i].start_ns, collectives[i].tid,
                                   kCommunicationConnectionBase + i});
      }
      out.connections = DeriveConnections(ops, links, external_launches_);
    }
    if (out.connections.tagged_links + out.connections.contained_links > 0) {
      GPUPROF_LOG(kInfo) << "CONNECTION_IDS: " << out.connections.tagged_links
                         << " device launch(es) linked to their op by external correlation, "
                         << out.connections.contained_links << " by time on the launching thread";
    }
  } catch (...) {
    if (helper.joinable()) helper.join();
    throw;
  }
  if (helper.joinable()) helper.join();
  if (side_error) std::rethrow_exception(side_error);
  return out;
}

void RowSink::SortAllocatorEvents() {
  std::stable_sort(
      alloc_events_.begin(), alloc_events_.end(),
      [](const trace::AllocatorEvent& a, const trace::AllocatorEvent& b) { return a.time_ns < b.time_ns; });
}

// The first `api_rows` PYTORCH_API rows, then STEP_TIME, MEMORY_RECORD and OP_MEMORY.
Status RowSink::WriteDerivedRows(const Derived& derived, const OpLane& lane, std::size_t api_rows) {
  GPUPROF_RETURN_IF_ERROR(PushApiRows(pytorch_api_, derived, lane, 0, api_rows));
  rows_ += api_rows;
  rows_in_txn_ += api_rows;

  // STEP_TIME (§3.9): integer ids. Rare rows: a one-row statement is fine.
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement insert,
                             Statement::Prepare(conn_, "INSERT INTO STEP_TIME VALUES (?1, ?2, ?3)"));
    for (const StepRow& step : derived.steps) {
      insert.BindInt(1, step.id);
      insert.BindInt(2, step.start_ns);
      insert.BindInt(3, step.end_ns);
      GPUPROF_RETURN_IF_ERROR(insert.Run());
      ++rows_;
    }
  }

  // MEMORY_RECORD (§3.6), sorted by time (SortAllocatorEvents), then OP_MEMORY (§3.7).
  for (const trace::AllocatorEvent& event : alloc_events_) GPUPROF_RETURN_IF_ERROR(WriteMemoryRecord(event));
  for (const OpMemoryRow& row : derived.op_memory) {
    BatchInserter& o = op_memory_;
    o.SetU64(0, row.name_id);
    o.SetU64(1, row.size);
    o.Set(2, row.allocation_time);
    o.SetOptional(3, row.release_time);
    o.SetOptional(4, row.active_release_time);
    o.SetOptional(5, row.duration);
    o.SetOptional(6, row.active_duration);
    o.SetU64(7, row.allocation_total_allocated);
    o.SetU64(8, row.allocation_total_reserved);
    o.SetOptional(9, row.allocation_total_active);
    o.SetOptional(10, row.release_total_allocated);
    o.SetOptional(11, row.release_total_reserved);
    o.SetOptional(12, row.release_total_active);
    o.SetU64(13, row.stream_ptr);
    o.Set(14, row.device);
    GPUPROF_RETURN_IF_ERROR(Pushed(o));
  }
  return OkStatus();
}

Status RowSink::WriteMemoryRecord(const trace::AllocatorEvent& event) {
  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t component_id, Id(StringSpace::kMemory, event.component));
  BatchInserter& m = memory_record_;
  m.SetU64(0, component_id);
  m.Set(1, event.time_ns);
  m.SetU64(2, event.total_allocated);
  m.SetU64(3, event.total_reserved);
  m.SetOptional(4, event.total_active);
  m.SetU64(5, event.stream_ptr);
  m.Set(6, event.device);
  return Pushed(m);
}

// PYTORCH_API rows [begin, end) in api_row order, each with its CONNECTION_IDS index (§3.4) where
// it has one, pushed into `s` (an INSERT INTO PYTORCH_API inserter of any connection). Reads only
// the finished derivation and op lane, so two threads may push two ranges.
Status PushApiRows(BatchInserter& s, const Derived& derived, const OpLane& lane, std::size_t begin,
                   std::size_t end) {
  const std::vector<OpSpan>& ops = lane.ops();
  const std::vector<OpIds>& op_ids = lane.op_ids();
  // api_index is in api_row order too, so one cursor walks it alongside.
  const auto& api_index = derived.connections.api_index;
  std::size_t next_index = 0;
  if (begin < end) {
    next_index =
        static_cast<std::size_t>(std::lower_bound(api_index.begin(), api_index.end(), ops[begin].api_row,
                                                  [](const std::pair<std::uint64_t, std::uint64_t>& entry,
                                                     std::uint64_t row) { return entry.first < row; }) -
                                 api_index.begin());
  }
  auto set_id = [&s](int column, std::uint64_t id) {
    if (id == kNullId) {
      s.SetNull(column);
    } else {
      s.SetU64(column, id);
    }
  };
  for (std::size_t i = begin; i < end; ++i) {
    const OpSpan& op = ops[i];
    const OpIds& ids = op_ids[i];
    s.Set(0, op.start_ns);
    s.Set(1, op.end_ns);
    s.Set(2, GlobalTid(op.pid, op.tid));
    while (next_index < api_index.size() && api_index[next_index].first < op.api_row) ++next_index;
    if (next_index < api_index.size() && api_index[next_index].first == op.api_row) {
      s.SetU64(3, api_index[next_index].second);
    } else {
      s.SetNull(3);
    }
    s.SetU64(4, op.name_id);
    if (op.type == trace::TorchOp::Type::kOp) {
      s.Set(5, op.sequence_number);
      s.SetU64(6, op.fwd_thread_id);
    } else {
      s.SetNull(5);
      s.SetNull(6);
    }
    set_id(7, ids.dtypes);
    set_id(8, ids.shapes);
    set_id(9, ids.callchain);
    s.Set(10, static_cast<std::int64_t>(op.type));
    GPUPROF_RETURN_IF_ERROR(s.Push());
  }
  return OkStatus();
}

// PYTORCH_API rows [begin, end) on a side thread.
Status WriteApiRows(const Connection& side, const Derived& derived, const OpLane& lane, std::size_t begin,
                    std::size_t end) {
  BatchInserter insert;
  GPUPROF_RETURN_IF_ERROR(insert.Prepare(side, kInsertApiHead, kInsertApiRow));
  GPUPROF_RETURN_IF_ERROR(PushApiRows(insert, derived, lane, begin, end));
  GPUPROF_RETURN_IF_ERROR(insert.Flush());
  insert.Release();
  return OkStatus();
}

// CONNECTION_IDS (§3.4) from the derivation, on the connection side thread.
Status WriteConnectionRows(const Connection& side, const std::vector<ConnectionRow>& rows) {
  BatchInserter insert;
  GPUPROF_RETURN_IF_ERROR(insert.Prepare(side, "INSERT INTO CONNECTION_IDS VALUES ", "(?,?)"));
  for (const ConnectionRow& row : rows) {
    insert.SetU64(0, row.id);
    insert.SetU64(1, row.connection_id);
    GPUPROF_RETURN_IF_ERROR(insert.Push());
  }
  GPUPROF_RETURN_IF_ERROR(insert.Flush());
  insert.Release();
  return OkStatus();
}

}  // namespace gpuprof::db::internal
