// Kernel replay: the public configuration and result types.
//
// A replayed launch runs `passes` times; between passes every byte the kernel can touch is put
// back, so each pass sees identical inputs. A launch that cannot be replayed safely is declined:
// it runs exactly once, as the application asked, and its ReplayRecord says why.
// These are plain value types; the engine (src/replay) fills them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuprof::replay {

enum class RestoreMode : std::uint8_t {
  kAuto,   // dirty-chunk restore: chunks whose hash changed, found on the device in one read (B1)
  kExact,  // B1 exact: chunks differing byte for byte from a device-resident copy (two reads; host
           // tiers by hash)
  kFull,   // the seed's baseline: every captured byte written back before every pass
};

// The names below are inline, so every component can name replay results from this header alone:
// db writes them into GPUPROF_REPLAY_KERNEL without linking the engine (base <- trace <- db).

constexpr std::string_view RestoreModeName(RestoreMode mode) noexcept {
  switch (mode) {
    case RestoreMode::kAuto: return "auto";
    case RestoreMode::kExact: return "exact";
    case RestoreMode::kFull: return "full";
  }
  return "unknown";
}

// Parses "auto" / "exact" / "full"; false on anything else.
constexpr bool ParseRestoreMode(std::string_view text, RestoreMode* out) noexcept {
  if (text == "auto") {
    *out = RestoreMode::kAuto;
    return true;
  }
  if (text == "exact") {
    *out = RestoreMode::kExact;
    return true;
  }
  if (text == "full") {
    *out = RestoreMode::kFull;
    return true;
  }
  return false;
}

// The fastest storage a snapshot may use (B2); what does not fit goes to the next slower one.
enum class SnapshotStorage : std::uint8_t {
  kDevice,        // device memory under the reserve, then pinned host, pageable host, spill file
  kPinnedHost,    // pinned host memory first
  kPageableHost,  // pageable host memory first
  kFile,          // a spill file under the output directory only
};

constexpr std::string_view SnapshotStorageName(SnapshotStorage storage) noexcept {
  switch (storage) {
    case SnapshotStorage::kDevice: return "device";
    case SnapshotStorage::kPinnedHost: return "pinned";
    case SnapshotStorage::kPageableHost: return "pageable";
    case SnapshotStorage::kFile: return "file";
  }
  return "unknown";
}

// Parses "device" / "pinned" / "pageable" / "file"; false on anything else.
constexpr bool ParseSnapshotStorage(std::string_view text, SnapshotStorage* out) noexcept {
  for (SnapshotStorage s : {SnapshotStorage::kDevice, SnapshotStorage::kPinnedHost,
                            SnapshotStorage::kPageableHost, SnapshotStorage::kFile}) {
    if (text == SnapshotStorageName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

// C3: whether gpuprof changes clocks for the passes. kNone (the default) never touches them;
// kBase locks SM and memory clocks to base through NVML when asked and permitted, and restores them.
enum class ClockControl : std::uint8_t {
  kNone,
  kBase,
};

constexpr std::string_view ClockControlName(ClockControl control) noexcept {
  switch (control) {
    case ClockControl::kNone: return "none";
    case ClockControl::kBase: return "base";
  }
  return "unknown";
}

// Parses "none" / "base"; false on anything else.
constexpr bool ParseClockControl(std::string_view text, ClockControl* out) noexcept {
  if (text == "none") {
    *out = ClockControl::kNone;
    return true;
  }
  if (text == "base") {
    *out = ClockControl::kBase;
    return true;
  }
  return false;
}

// Graph launches (issue 24; Nsight Compute's --graph-profiling): kOff declines them (R11: each
// runs once); kGraph replays a selected graph launch as one unit, the whole graph per pass; kNode
// runs it node by node and replays each selected kernel node in place (B8), falling back to kGraph
// for graphs whose nodes cannot run standalone (the record says why).
enum class GraphReplay : std::uint8_t {
  kOff,
  kGraph,
  kNode,
};

constexpr std::string_view GraphReplayName(GraphReplay mode) noexcept {
  switch (mode) {
    case GraphReplay::kOff: return "off";
    case GraphReplay::kGraph: return "graph";
    case GraphReplay::kNode: return "node";
  }
  return "unknown";
}

// Parses "off" / "graph" / "node"; false on anything else.
constexpr bool ParseGraphReplay(std::string_view text, GraphReplay* out) noexcept {
  for (GraphReplay mode : {GraphReplay::kOff, GraphReplay::kGraph, GraphReplay::kNode}) {
    if (text == GraphReplayName(mode)) {
      *out = mode;
      return true;
    }
  }
  return false;
}

// What one ReplayRecord replayed: a kernel launch, a whole graph launch, or one kernel node of a
// graph launch run node by node.
enum class ReplayMode : std::uint8_t {
  kKernel,
  kGraph,
  kNode,
  kRange,  // one launch of a replayed range (W6): the range re-issued per pass
};

constexpr std::string_view ReplayModeName(ReplayMode mode) noexcept {
  switch (mode) {
    case ReplayMode::kKernel: return "kernel";
    case ReplayMode::kGraph: return "graph";
    case ReplayMode::kNode: return "node";
    case ReplayMode::kRange: return "range";
  }
  return "unknown";
}

// What delimits a replayed range (W1): cudaProfilerStart/Stop (Nsight Compute's default), an
// NVTX range named by --nvtx-include, or one training step (optimizer step to optimizer step, the
// boundary `gpuprof run` counts).
enum class RangeDelimiter : std::uint8_t {
  kProfilerApi,
  kNvtx,
  kStep,
};
constexpr std::string_view RangeDelimiterName(RangeDelimiter delimiter) noexcept {
  switch (delimiter) {
    case RangeDelimiter::kProfilerApi: return "profiler";
    case RangeDelimiter::kNvtx: return "nvtx";
    case RangeDelimiter::kStep: return "step";
  }
  return "unknown";
}
// Parses "profiler" / "nvtx" / "step"; false on anything else.
constexpr bool ParseRangeDelimiter(std::string_view text, RangeDelimiter* out) noexcept {
  for (RangeDelimiter d : {RangeDelimiter::kProfilerApi, RangeDelimiter::kNvtx, RangeDelimiter::kStep}) {
    if (text == RangeDelimiterName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

// Which launches are replayed (Nsight Compute's -k / -s / -c, rule C4).
struct KernelSelector {
  std::string name;         // empty: every kernel; "regex:PATTERN": ECMAScript regex search;
                            // otherwise the exact kernel name
  std::uint64_t skip = 0;   // matching launches to let through unreplayed first
  std::uint64_t count = 0;  // replay at most this many matching launches (0: unlimited)
};

struct ReplayOptions {
  int passes = 1;  // >= 1; 1 means snapshot-free pass-through
  RestoreMode restore = RestoreMode::kAuto;
  SnapshotStorage storage = SnapshotStorage::kDevice;  // B2
  std::uint64_t chunk_size = 64 * 1024;                // dirty-detection granularity, > 0
  std::uint64_t max_symbol_bytes = 1ull << 30;         // module variables above this are skipped (R7)
  bool strict = false;            // decline while kernel-writable untracked memory is live (R6)
  bool determinism_check = true;  // hash every pass's output and compare (B6)
  // C2: each decides one kind of side effect replay would repeat or could not undo.
  bool replay_printf_kernels = true;     // kernels that call device printf (each pass prints again)
  bool replay_malloc_kernels = false;    // kernels that call device malloc/free
  bool replay_with_live_arrays = false;  // launches while CUDA arrays (not snapshotted) exist
  std::chrono::nanoseconds drain_timeout = std::chrono::seconds(10);  // R14
  KernelSelector selector;
  // Hardware counters (issue 19): the metrics to collect over counter passes that follow the
  // timing passes, in Nsight Compute's names, sections and sets already expanded
  // (replay/metric_catalog.h), each once, in order. Empty: no counter passes. launch__* names are
  // supplied from the launch itself and need no pass.
  std::vector<std::string> metrics;
  int max_counter_passes = 128;  // a metric list needing more passes is refused, with the reason
  ClockControl clock_control = ClockControl::kNone;  // C3; recorded per launch
  // Graph launches (issue 24). With kGraph or kNode a graph launch is selected when any of its
  // kernel nodes passes the name test (every graph when the name is empty), and -s/-c count graph
  // launches as launches; in kNode every kernel node that passes the name test is replayed.
  GraphReplay graph_replay = GraphReplay::kOff;
  // Range replay (REPLAY_SPEC.md W1-W6): with `range_replay` the selector's -s/-c count ranges
  // (BeginRange .. EndRange on one device), every operation of a selected range is recorded as
  // the application runs it (pass 1) and passes 2..N re-issue the recording; kernel launches
  // outside ranges run unreplayed. A range with more operations or captured host bytes than these
  // caps is declined whole.
  bool range_replay = false;
  RangeDelimiter range_delimiter = RangeDelimiter::kProfilerApi;
  std::string range_nvtx_name;  // kNvtx: the NVTX range (push/pop or start/end) named so
  std::uint64_t max_range_operations = std::uint64_t{1} << 20;
  std::uint64_t max_range_host_bytes = std::uint64_t{1} << 30;
  // Whether the command offers --graph-replay (GPUPROF_REPLAY_GRAPH): a declined graph launch's
  // message suggests it only then (`gpuprof demo` has no such option).
  bool graph_replay_offered = true;
};

// One metric's value for one replayed launch.
struct MetricValue {
  std::string name;  // Nsight Compute's name, e.g. "dram__bytes_read.sum"
  std::string unit;  // CUPTI's words: "byte", "percent", "inst", "cycle", "nanosecond", ...; may be empty
  double value = 0;
  int passes = 0;  // counter passes this metric needs on its own (0: from the launch, no pass)
};

enum class DeclineReason : std::uint8_t {
  kNone = 0,
  kIncompleteSnapshot,       // R8/R9: capture failed; details say which region/step
  kGraphLaunch,              // R11
  kStreamCapture,            // R11 (CUDA)
  kMultiDispatch,            // R12: batch or cooperative-group submission of several dispatches
  kUntrackedWritableMemory,  // R6 strict mode
  kCollectiveKernel,         // R14: NCCL kernels
  kDrainTimeout,             // R14
  kSideEffects,              // C2: device printf / malloc
  kFinalizing,               // R5: process teardown has begun
  kRestoreFailed,            // R10: a restore between passes failed; replay stopped early
  kLaunchFailed,             // a pass failed to launch
  // Range replay (W5): the range held something its re-issue could not repeat faithfully.
  kAllocationInRange,  // an allocation, free, unmap or pool trim of tracked memory
  kRangeTooLarge,      // more operations or captured host bytes than the configured cap
  kNotRecordable,      // an operation the backend cannot record (a host function, ...)
};

// The reason as GPUPROF_REPLAY_KERNEL.declineReason and the logs spell it (docs/db_gpuprof_tables.md).
constexpr std::string_view DeclineReasonName(DeclineReason reason) noexcept {
  switch (reason) {
    case DeclineReason::kNone: return "none";
    case DeclineReason::kIncompleteSnapshot: return "incomplete-snapshot";
    case DeclineReason::kGraphLaunch: return "graph-launch";
    case DeclineReason::kStreamCapture: return "stream-capture";
    case DeclineReason::kMultiDispatch: return "multi-dispatch";
    case DeclineReason::kUntrackedWritableMemory: return "untracked-writable-memory";
    case DeclineReason::kCollectiveKernel: return "collective-kernel";
    case DeclineReason::kDrainTimeout: return "drain-timeout";
    case DeclineReason::kSideEffects: return "side-effects";
    case DeclineReason::kFinalizing: return "finalizing";
    case DeclineReason::kRestoreFailed: return "restore-failed";
    case DeclineReason::kLaunchFailed: return "launch-failed";
    case DeclineReason::kAllocationInRange: return "allocation-in-range";
    case DeclineReason::kRangeTooLarge: return "range-too-large";
    case DeclineReason::kNotRecordable: return "not-recordable";
  }
  return "unknown";
}

// One kernel node's duration in one pass of a whole-graph replay.
struct GraphNodeDuration {
  std::uint64_t node_id = 0;
  std::string kernel_name;
  std::uint64_t duration_ns = 0;
};

struct PassRecord {
  int pass = 0;                   // 1-based
  std::int64_t start_ns = 0;      // epoch ns when the pass was submitted
  std::uint64_t duration_ns = 0;  // kernel duration reported by the backend
  std::uint32_t sm_clock_before_khz = 0;
  std::uint32_t sm_clock_after_khz = 0;
  std::uint64_t bytes_restored = 0;  // bytes written back before this pass (0 for pass 1)
  std::uint64_t regions_restored = 0;
  std::uint64_t dirty_chunks = 0;  // chunks found changed before this pass
  std::uint64_t output_hash = 0;   // hash of every captured byte after the pass (0: not computed)
  // Whole-graph replay: each kernel node's duration in this pass, where the backend measured it
  // with the pass (host); the CUDA backend's arrive with CUPTI's kernel records instead.
  std::vector<GraphNodeDuration> kernel_nodes;
};

struct ReplayRecord {
  std::uint64_t launch_index = 0;  // matching launches seen so far on this controller, from 0
  int device = 0;
  std::string kernel_name;
  bool replayed = false;
  DeclineReason decline_reason = DeclineReason::kNone;
  std::string decline_detail;
  RestoreMode restore_mode = RestoreMode::kAuto;
  std::vector<PassRecord> passes;
  bool deterministic = true;           // every pass's output hash equal to pass 1's
  std::vector<int> mismatched_passes;  // passes whose output differs from pass 1
  std::uint64_t snapshot_regions = 0;
  std::uint64_t snapshot_bytes = 0;
  std::uint64_t snapshot_device_bytes =
      0;                          // of snapshot_bytes, held in device memory (B2); the rest in host memory
  std::uint64_t snapshot_ns = 0;  // time to capture
  // Bytes the capture copied: everything at a first capture, only the changed chunks of regions
  // kept from the previous replayed launch's snapshot otherwise (B3).
  std::uint64_t snapshot_copied_bytes = 0;
  std::uint64_t untracked_writable_bytes = 0;  // live host-mapped/managed/IPC bytes (R6)
  // Time the replay held the launch: drain, capture, every pass, the restores and hashes between
  // them and the final restore; what replay adds to the application's wall time for this launch
  // (0 for declines decided before the window).
  std::uint64_t replay_ns = 0;
  // Hardware counters (issue 19). Counter passes come after the timing passes and are not in
  // `passes`; `counter_status` is empty when every asked metric has a value (or none was asked),
  // else why some or all have none (not permitted, held by another tool, unknown metric, ...),
  // naming the fix. A launch without counters is still replayed and timed.
  std::vector<MetricValue> metrics;
  int counter_passes = 0;
  std::string counter_status;
  ClockControl clock_control = ClockControl::kNone;  // C3 policy in force for the passes
  bool caches_flushed = false;                       // B7: L2 flushed before each pass
  // Graph launches (issue 24). kernel_name is the graph's ("graph 7") for kGraph and the node's
  // kernel for kNode.
  ReplayMode replay_mode = ReplayMode::kKernel;
  std::uint64_t graph_id = 0;       // kGraph / kNode: the launched graph's id
  std::uint64_t graph_node_id = 0;  // kNode: the kernel node's id
  std::uint32_t graph_nodes = 0;    // kGraph / kNode: nodes in the graph
  std::uint32_t graph_kernel_nodes = 0;
  // kGraph chosen where kNode was asked: why the nodes could not run one by one (a host node, a
  // memory-allocation node, ...); empty otherwise.
  std::string graph_fallback;
  // Range replay (kRange): the range's number (selected ranges of the device, from 1), this
  // launch's place in it (from 0) and the range's launches. A declined range has one record, with
  // kernel_name "range N" and range_launch 0.
  std::uint64_t range_id = 0;
  std::uint32_t range_launch = 0;
  std::uint32_t range_launches = 0;
  // kRange: the application's launch in the backend's own trace (CUDA: CUPTI's correlation id),
  // where pass 1's duration is read (W6); 0 where the backend measured pass 1 itself.
  std::uint64_t application_launch_id = 0;
};

}  // namespace gpuprof::replay
