// RowSink: everything the SQLite thread owns: the main connection, the prepared statements, the
// device and memory id spaces (shared with the kernel side thread), and the device-side indexes
// the derivations need at Finalize. Touched by one thread at a time: the SQLite thread while it
// runs, Finalize (or the destructor) after joining it. TorchOps only pass through: they are
// collected for the op lane (TakeLaneBatch).
//
// PYTORCH_API rows are written at Finalize, not while streaming: their connectionId is known only
// once every launch has been seen, and inserting the finished row is much cheaper than inserting
// it with NULL and updating it later. Until then an op lives in the lane's indexes.
//
// Its methods live in one file per job:
//   writer_rows.cc         statements, transactions, and each streamed record's rows
//   writer_derived.cc      Finalize's derivation and the derived tables' rows
//   writer_collectives.cc  the collectives' CANN_API / COMMUNICATION_OP / COMMUNICATION_TASK_INFO rows
//   writer_run_info.cc     the one-per-run tables, last of Finalize's rows
// Private to src/db.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/derive.h"
#include "db/sqlite_util.h"
#include "db/string_table.h"
#include "db/thread_names.h"
#include "db/writer_op_lane.h"
#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::db::internal {

// What Finalize derives from the in-memory indexes (derive.h).
struct Derived {
  Connections connections;
  std::vector<StepRow> steps;
  std::vector<OpMemoryRow> op_memory;
};

class RowSink {
 public:
  // rows() starts at the enum and META_DATA rows Create already wrote on this connection.
  RowSink(Connection conn, std::size_t batch_rows, SharedStrings& strings);

  // ---- While streaming (writer_rows.cc) ----
  Status Prepare();
  Status Begin();
  // Writes every buffered row, then commits.
  Status Commit();
  // Commits when the transaction has reached batch_rows rows.
  Status MaybeCommit();
  // One record; commits and reopens the transaction every batch_rows rows.
  Status Write(trace::Record& record);
  // The op lane's new STRING_IDS and PYTORCH_CALLCHAINS rows.
  Status WriteLaneRows(const LaneRows& rows);

  // TorchOps seen since the last call, for the op lane.
  std::vector<trace::TorchOp> TakeLaneBatch() { return std::exchange(lane_batch_, {}); }
  // The global task id the next device task gets, and the STRING_IDS id of "KERNEL" (once a
  // kernel has been written), for KernelSink.
  std::uint64_t next_global_task_id() const noexcept { return next_global_task_id_; }
  std::uint64_t kernel_type_id() const noexcept {
    return task_type_ids_[static_cast<std::size_t>(trace::TaskKind::kKernel)];
  }

  // ---- At Finalize (writer_derived.cc) ----
  // Pure computation over the in-memory indexes. STEP_TIME and OP_MEMORY are derived on a second
  // thread while CONNECTION_IDS is derived on this one (each walks all ops; they share nothing
  // but read-only inputs). Throws std::bad_alloc.
  Derived Derive(const OpLane& lane) const;
  // MEMORY_RECORD is written in time order; sort before Derive reads the events.
  void SortAllocatorEvents();
  // The first `api_rows` PYTORCH_API rows (PushApiRows), the derived tables but CONNECTION_IDS
  // (WriteConnectionRows), the collectives and the per-run tables (inside the caller's
  // transaction; defined in writer_rows.cc).
  Status WriteFinal(const Derived& derived, const OpLane& lane, std::size_t api_rows,
                    const trace::RunInfo& run, std::int64_t end_ns);
  // Each pass of a replayed range's launch timed by its CUPTI kernel record (W6).
  Status FillRangePassDurations();
  // The device side of the device-linked mstx ranges (writer_mstx_device.cc): one TASK row each
  // over the device work its thread launched inside it; the TASK rows must all be written.
  Status WriteDeviceRanges();

  // ---- Last, after the side files' merge (writer_task_info.cc) ----
  // COMPUTE_TASK_INFO's shape, dtype, format, attr and opState columns (filled, never NULL).
  Status FillComputeTaskOpColumns();

  Connection& connection() { return conn_; }
  // The statements must be finalized before the connection can close cleanly.
  void ReleaseStatements();

  std::uint64_t rows() const noexcept { return rows_ - cann_api_.ignored(); }
  std::uint64_t duplicate_connection_ids() const noexcept { return cann_api_.ignored(); }
  std::uint64_t string_overflows() const { return strings_.overflowed(); }

 private:
  std::array<BatchInserter*, 13> Inserters() {
    return {&pytorch_api_,       &callchains_,    &cann_api_, &task_,        &memcpy_info_,
            &copy_memory_,       &gc_record_,     &mstx_,     &replay_pass_, &replay_metric_,
            &replay_graph_node_, &memory_record_, &op_memory_};
  }

  Status Pushed(BatchInserter& inserter) {
    ++rows_;
    ++rows_in_txn_;
    return inserter.Push();
  }

  // The id of `value`, writing its STRING_IDS row on first sight. Empty -> kInvalidStringId.
  StatusOr<std::uint64_t> Id(StringSpace space, std::string_view value);
  // The id of a STRING_IDS row holding '' (written once).
  StatusOr<std::uint64_t> EmptyId(StringSpace space);
  // The interned string's id, writing its STRING_IDS row on first sight.
  StatusOr<std::uint64_t> Written(const StringTable::Interned& interned);
  // One MEMORY_RECORD row (writer_derived.cc).
  Status WriteMemoryRecord(const trace::AllocatorEvent& event);
  Status WriteCannApi(std::int64_t start, std::int64_t end, std::int64_t type, std::int64_t global_tid,
                      std::uint64_t connection_id, std::uint64_t name_id);
  StatusOr<std::uint64_t> TaskTypeId(trace::TaskKind kind);

  // One record's rows (writer_rows.cc).
  Status WriteRecord(trace::ExternalCorrelation& link);
  Status WriteRecord(trace::TorchOp& op);
  Status WriteRecord(trace::ApiCall& call);
  Status WriteRecord(trace::DeviceTask& task);
  Status WriteRecord(trace::AllocatorEvent& event);
  Status WriteRecord(trace::GcEvent& gc);
  Status WriteRecord(trace::Mark& mark);
  Status WriteRecord(trace::ReplayResult& result);
  Status WriteRecord(trace::ReplayGraphNodeTask& task);
  Status WriteRecord(trace::ReplayRangeTask& task);
  Status WriteRecord(trace::ThreadName& thread);
  // One GPUPROF_REPLAY_GRAPH_NODE row of the whole-graph replay `kernel_id`, the next pass of its node.
  Status WriteGraphNode(std::uint64_t kernel_id, const trace::ReplayGraphNodeTask& task);

  // Finalize's parts, in the order WriteFinal runs them.
  Status WriteDerivedRows(const Derived& derived, const OpLane& lane,
                          std::size_t api_rows);  // writer_derived.cc
  Status WriteCollectives(const std::vector<CollectiveSpan>& collectives, const std::vector<OpSpan>& ops,
                          const Connections& connections,
                          const trace::RunInfo& run);                     // writer_collectives.cc
  Status WriteRunTables(const trace::RunInfo& run, std::int64_t end_ns);  // writer_run_info.cc

  Connection conn_;
  const std::size_t batch_rows_;
  std::size_t rows_in_txn_ = 0;
  std::uint64_t rows_ = 0;

  Statement string_ids_, replay_kernel_;  // rows with text: one at a time
  BatchInserter pytorch_api_, callchains_, cann_api_, task_, memcpy_info_, copy_memory_, gc_record_, mstx_,
      replay_pass_, replay_metric_, replay_graph_node_, memory_record_, op_memory_;

  SharedStrings& strings_;  // device and memory spaces, shared with the kernel side thread
  std::uint64_t launch_name_id_ = kInvalidStringId;
  std::uint64_t task_type_ids_[3] = {kInvalidStringId, kInvalidStringId, kInvalidStringId};
  std::uint64_t next_global_task_id_ = 0;
  std::uint64_t next_replay_id_ = 0;
  bool replay_range_rows_ = false;  // a range replay row was written: FillRangePassDurations
  Statement range_pass_times_;      // prepared at the first ReplayRangeTask
  bool range_pass_times_ready_ = false;

  std::vector<trace::TorchOp> lane_batch_;  // TorchOps on their way to the op lane
  // Device-side indexes for the derivations (derive.h).
  std::vector<LaunchSpan> launches_;
  // Ids of the host-only marks and the device-linked ranges (kMstxConnectionBase + n).
  std::uint64_t next_mstx_connection_ = 0;
  struct DeviceRange {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::uint32_t tid = 0;
    std::optional<std::uint32_t> stream;
    std::uint64_t connection_id = 0;
  };
  std::vector<DeviceRange> device_ranges_;  // trace::Mark::device ranges, for WriteDeviceRanges
  // CUPTI external id -> correlation ids of the launches made under it (trace::ExternalCorrelation).
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> external_launches_;
  std::vector<trace::AllocatorEvent> alloc_events_;
  ThreadNames thread_names_;  // META_DATA gpuprof_thread_names, written at Finalize
  // Whole-graph replays (issue 24) by their graph launch's correlation id, the passes written per
  // (replay, node), and node records that came before their replay's row (bounded).
  std::unordered_map<std::uint64_t, std::uint64_t> graph_replay_by_correlation_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> graph_node_passes_;
  std::unordered_map<std::uint64_t, std::vector<trace::ReplayGraphNodeTask>> early_graph_nodes_;
  std::size_t early_graph_node_count_ = 0;
};

// PYTORCH_API rows [begin, end) in api_row order (writer_derived.cc), for the main connection
// (through RowSink::WriteFinal) and, on a side thread, for the api side file (WriteApiRows).
inline constexpr std::string_view kInsertApiHead = "INSERT INTO PYTORCH_API VALUES ";
inline constexpr std::string_view kInsertApiRow = "(?,?,?,?,?,?,?,?,?,?,?)";
Status PushApiRows(BatchInserter& s, const Derived& derived, const OpLane& lane, std::size_t begin,
                   std::size_t end);
// PYTORCH_API rows [begin, end) on a side thread.
Status WriteApiRows(const Connection& side, const Derived& derived, const OpLane& lane, std::size_t begin,
                    std::size_t end);
// CONNECTION_IDS (§3.4) from the derivation, on the connection side thread.
Status WriteConnectionRows(const Connection& side, const std::vector<ConnectionRow>& rows);

}  // namespace gpuprof::db::internal
