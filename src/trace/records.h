// The vendor-neutral record model: what collectors (CUPTI, torch hooks, Python, the replay
// controller) produce and the DB writer consumes. Plain value types; no CUDA, torch or SQLite.
//
// Times are Unix-epoch nanoseconds. Thread ids are OS thread ids (gettid). Empty strings mean
// "not recorded" (written as NULL or the format's invalid id, as DB_SPEC.md says per column).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gpuprof/replay.h"

namespace gpuprof::trace {

// A runtime or driver API call on the host (CUPTI RUNTIME/DRIVER activity). A call that launched
// device work (a kernel launch, an async copy) is marked so the writer adds the format's
// `node`/`launch` row carrying its correlation id (DB_SPEC §7).
struct ApiCall {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::string name;                  // e.g. cudaLaunchKernel, cuMemcpyAsync
  std::uint64_t correlation_id = 0;  // CUPTI correlation id (< 5<<28)
  bool launches_device_work = false;
};

enum class TaskKind : std::uint8_t { kKernel, kMemcpy, kMemset };

// Work that ran on a device (CUPTI CONCURRENT_KERNEL, MEMCPY, MEMSET activity).
struct DeviceTask {
  TaskKind kind = TaskKind::kKernel;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int32_t device = 0;
  std::uint32_t stream = 0;
  std::uint32_t context = 0;
  std::uint64_t correlation_id = 0;  // joins the launching ApiCall
  std::uint32_t pid = 0;
  // kKernel
  std::string name;        // demangled where available
  std::string short_name;  // opType: the kernel's short (undecorated) name
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t block[3] = {1, 1, 1};
  // kMemcpy / kMemset
  std::uint64_t bytes = 0;
  std::uint32_t memcpy_operation = 65535;  // ENUM_MEMCPY_OPERATION id (1 HtoD, 2 DtoH, 3 DtoD, ...)
  // kMemcpy: the memory each side is in, CUpti_ActivityMemoryKind's values (0 unknown, 1 pageable,
  // 2 pinned, 3 device, ...): a copy from or to pageable host memory blocks the host.
  std::uint8_t src_memory_kind = 0;
  std::uint8_t dst_memory_kind = 0;
  std::uint64_t graph_node_id = 0;  // kKernel launched by a graph: CUPTI's graph node id; 0 otherwise
};

// A framework operator (RecordFunction range), including ProfilerStep#N, or a Python function.
struct TorchOp {
  enum class Type : std::uint16_t { kOp = 50001, kQueue = 50002, kTrace = 50003, kMstx = 50004 };
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;  // the thread the op started on
  std::string name;
  std::int64_t sequence_number = -1;  // autograd sequence number, -1 when none
  std::uint64_t fwd_thread_id = 0;    // 0 for forward / non-autograd ops
  std::string input_dtypes;           // torch_npu string format (§3.3); empty when not recorded
  std::string input_shapes;
  std::vector<std::string> call_stack;         // innermost frame first ("file(line): func"); empty: none
  std::vector<std::uint64_t> correlation_ids;  // device launches tied to this op (CUPTI external correlation)
  std::uint64_t external_id = 0;               // the id the op pushed as CUPTI external correlation; 0: none
  Type type = Type::kOp;
};

// One caching-allocator event with the allocator's totals after it.
struct AllocatorEvent {
  enum class Action : std::uint8_t { kMalloc = 0, kFree = 1, kBlockFree = 2 };
  std::int64_t time_ns = 0;
  std::int32_t device = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::uint64_t ptr = 0;
  std::uint64_t bytes = 0;
  Action action = Action::kMalloc;
  std::uint64_t total_allocated = 0;
  std::uint64_t total_reserved = 0;
  std::optional<std::uint64_t> total_active;  // absent where the allocator has no active figure
  std::uint64_t stream_ptr = 0;
  std::string component = "PTA";
};

// A Python garbage-collection pause that passed the gc_detect_threshold rule.
struct GcEvent {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t pid = 0;
};

// An NVTX / mstx marker or range (MSTX_EVENTS).
struct Mark {
  enum class Type : std::uint8_t { kMarker = 0, kPushPop = 1, kStartEnd = 2, kMarkerEx = 3 };
  Type type = Type::kMarker;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  // == start_ns for a marker
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::uint32_t end_tid = 0;
  std::uint64_t range_id = 0;
  std::string message;
  std::string domain;  // e.g. "default", "Module"
  // A device-linked range (gpuprof.mstx.range_start(..., stream=...) or device=True): its device
  // time is that of the device work its thread launched inside it, on `stream` (CUPTI's stream id)
  // when one is given; the DB writer derives it at Finalize. Otherwise host-only.
  bool device = false;
  std::optional<std::uint32_t> stream;
};

// One replayed (or declined) kernel launch with its passes, from replay::Controller.
struct ReplayResult {
  std::int64_t time_ns = 0;  // when the launch was intercepted
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::uint64_t correlation_id = 0;  // of pass 1's launch, when known
  replay::ReplayRecord record;
};

// CUPTI's EXTERNAL_CORRELATION record: the launch `correlation_id` happened while a framework op
// had `external_id` pushed (its TorchOp::external_id). The DB writer ties the two (CONNECTION_IDS).
struct ExternalCorrelation {
  std::uint64_t external_id = 0;
  std::uint32_t correlation_id = 0;
};

// A kernel node of one whole-graph replay pass (issue 24), from CUPTI's kernel record of gpuprof's
// own graph launch, which carries the application's graph launch's correlation id (the pass runs
// inside that call's callback). The DB writer ties it to the ReplayResult of that correlation id
// (GPUPROF_REPLAY_GRAPH_NODE); the n-th record of a node is its pass n.
struct ReplayGraphNodeTask {
  std::uint64_t correlation_id = 0;
  std::uint64_t graph_node_id = 0;
  std::string name;
  std::uint64_t duration_ns = 0;
};

// A re-issued launch of one range replay pass (REPLAY_SPEC W6), from CUPTI's kernel record of
// gpuprof's own launch: the application's launch it repeats (its correlation id) and the pass.
// The DB writer puts the duration into that launch's GPUPROF_REPLAY_PASS row of the pass.
struct ReplayRangeTask {
  std::uint64_t correlation_id = 0;
  int pass = 0;
  std::uint64_t duration_ns = 0;
};

// The name the program gives the thread `tid` (Python's threading name), for the trace's thread
// names (META_DATA gpuprof_thread_names). A later name of the same tid replaces the earlier one.
struct ThreadName {
  std::uint32_t tid = 0;
  std::string name;
};

using Record = std::variant<ApiCall, DeviceTask, TorchOp, AllocatorEvent, GcEvent, Mark, ReplayResult,
                            ExternalCorrelation, ReplayGraphNodeTask, ReplayRangeTask, ThreadName>;

// Who and where: one per DB.
struct RunInfo {
  std::string hostname;
  std::uint32_t pid = 0;
  std::int32_t rank = -1;        // -1: not set
  std::int32_t device = -1;      // -1: not collected
  std::int32_t world_size = -1;  // ranks in the job (COMMUNICATION_OP.rankSize); -1: unknown
  std::int64_t start_ns = 0;     // session start (names the output directory)
  std::int64_t end_ns = 0;
  std::vector<std::pair<std::int32_t, std::string>> devices;  // NPU_INFO: (id, name)
  std::string config_json;  // the run's configuration, as given (profiler_info json, META_DATA)
  // Records lost before the DB, per source (db/lost_records.h ids), known only at the stop
  // (ProfileWriter::SetLostRecords); the writer adds its own.
  std::vector<std::pair<std::string, std::uint64_t>> lost_records;
};

}  // namespace gpuprof::trace
