// The abstract device ("agent" in the replay seed) that the replay engine talks to, and the
// runtime entry-point table that a tool patches to observe allocations, frees, copies and launches.
//
// Implementations: device/host (HostDevice: device memory simulated in host memory, with fault
// injection; the engine's tests run on it) and device/cuda (CudaDevice, driver API).
//
// Thread-safety: every Device method may be called from any thread; implementations synchronize
// internally. Errors: methods return Status/StatusOr and never throw; a failed call leaves device
// memory as it was or reports what it wrote.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::device {

// Range replay's operations (device/range.h).
class RecordedLaunch;
struct RangeOp;
struct RangePassTiming;
struct ReissueOptions;

// An address in the process's unified device address space (CUdeviceptr on CUDA). 0 is null.
using DevicePtr = std::uint64_t;
// Identifies a stream within a runtime; 0 is the default stream of the device.
using StreamId = std::uint64_t;

// What a pointer refers to. Replay tracks only kDeviceLocal (rule R6); every other kind is
// excluded and counted.
enum class MemoryKind : std::uint8_t {
  kDeviceLocal,      // coarse-grained device memory (cudaMalloc, pools, VMM): tracked, snapshotted
  kHost,             // host memory the device cannot write
  kHostMapped,       // pinned host memory mapped into the device's address space
  kFineGrained,      // fine-grained / coherent device memory
  kManaged,          // unified (managed) memory
  kKernelArgument,   // kernel-argument (kernarg) buffers: restoring them would tear live launches
  kRuntimeInternal,  // runtime/tool-internal executable pools (per-stream kernarg pools, traces)
  kIpcImported,      // memory imported from another process
  kUnknown,
};

std::string_view MemoryKindName(MemoryKind kind) noexcept;

// Excluded memory that a kernel can still write: replay cannot undo such writes, so the bytes
// are reported with each replay and strict mode declines while any is live (rule R6).
constexpr bool IsKernelWritableUntracked(MemoryKind kind) noexcept {
  return kind == MemoryKind::kHostMapped || kind == MemoryKind::kManaged || kind == MemoryKind::kIpcImported;
}

// The allocation that contains a pointer, as the device reports it.
struct PointerInfo {
  DevicePtr base = 0;
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::kUnknown;
  int owner_device = -1;  // ordinal of the owning device; -1 for host memory
};

// A module-scope __device__ or __constant__ variable of a loaded module.
struct ModuleVariable {
  std::string name;
  DevicePtr address = 0;
  std::uint64_t size = 0;
  std::uint64_t module_id = 0;
  bool is_constant = false;
};

// Where a snapshot's bytes live (B2). Replay prefers the fastest tier that has room.
enum class StorageTier : std::uint8_t { kDevice, kPinnedHost, kPageableHost, kFile };
inline constexpr std::size_t kStorageTierCount = 4;

std::string_view StorageTierName(StorageTier tier) noexcept;

// Bytes per storage tier, indexed by StorageTier.
using TierBytes = std::array<std::uint64_t, kStorageTierCount>;

// ---------------------------------------------------------------------------------------------
// The snapshot arena and the batched operations over it (B1-B3)
//
// A device keeps one arena per storage tier: storage for a whole snapshot, kept across replayed
// launches and grown geometrically, with one saved hash per chunk-sized slot of it. The engine
// places every region of a snapshot at a chunk-aligned offset of one tier's arena (chunk c of a
// region at arena_offset o is slot o / chunk_size + c of that tier) and then acts on the whole
// table at once: RunChunkOp is a fixed number of launches and batched copies on the backend's
// own stream with at most one host wait, whatever the number of regions or changed chunks. The
// changed chunks are found on the device and copied there; per-chunk hashes cross to the host
// only when the caller asks for them, in one copy.

// One region of a snapshot table: device memory [base, base + size) and where its copy lives.
struct ArenaRegion {
  DevicePtr base = 0;
  std::uint64_t size = 0;
  StorageTier tier = StorageTier::kDevice;
  std::uint64_t arena_offset = 0;  // in the tier's arena; a multiple of the chunk size
  friend bool operator==(const ArenaRegion&, const ArenaRegion&) = default;
};

enum class ChunkOp : std::uint8_t {
  kCapture,           // every chunk: device -> arena; saved hash := hash of its bytes
  kRefreshChanged,    // B3: chunks whose hash differs from the saved one: device -> arena, saved := new
  kRestoreChanged,    // B1: chunks whose hash differs from the saved one: arena -> device
  kRestoreDiffering,  // B1, exact: device-tier chunks that differ in any byte from their copy
                      // (host tiers: by hash, as kRestoreChanged): arena -> device
  kRestoreAll,        // every chunk: arena -> device
  kHash,              // nothing written (a pass's output hashes)
};

std::string_view ChunkOpName(ChunkOp op) noexcept;

struct ChunkOpResult {
  std::uint64_t chunks = 0;         // chunks in the table
  std::uint64_t copied_chunks = 0;  // chunks written (every chunk for kCapture and kRestoreAll)
  std::uint64_t copied_bytes = 0;
};

struct ArenaStats {
  TierBytes capacity{};             // bytes each tier's arena holds now
  std::uint64_t generation = 0;     // changes whenever an arena loses its contents (regrown or released)
  std::uint64_t allocations = 0;    // arena allocations made so far (growths included)
  std::uint64_t allocation_ns = 0;  // time those took: a one-time cost, shown apart from snapshots
  std::uint64_t releases = 0;       // ReleaseArena / MakeRoomFor calls that freed something
};

// How a backend's arena is bounded (B2). Set by the session from the replay settings.
struct ArenaOptions {
  // The device-tier arena only grows while this much device memory stays free.
  std::uint64_t device_reserve_bytes = std::uint64_t{2} << 30;
  // The pinned host pool's limit (allocated once per process, grown geometrically up to this).
  std::uint64_t pinned_limit_bytes = std::uint64_t{64} << 30;
  // Where the file tier's spill file is created (mode 0600, unlinked when released). Empty: the
  // file tier is unavailable.
  std::string spill_directory;
};

// A contiguous byte range relative to some base.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual int ordinal() const noexcept = 0;
  virtual std::string name() const = 0;

  // The allocation containing `ptr`, classified. NotFound when no allocation contains it.
  virtual StatusOr<PointerInfo> QueryPointer(DevicePtr ptr) = 0;

  virtual Status CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) = 0;
  virtual Status CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) = 0;
  virtual Status CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) = 0;

  // Hashes device memory [src, src+bytes) in chunks of `chunk_size`;
  // out.size() must be base::ChunkCount(bytes, chunk_size). Equal bytes give equal hashes on
  // the same device; the hash function is the backend's own.
  virtual Status HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                            std::span<std::uint64_t> out) = 0;

  // ---- the snapshot arena (see above) ----
  // How many bytes `tier`'s arena may hold in all now: what it holds plus what it could still
  // grow by (kDevice: free device memory above the reserve; kPinnedHost: up to the pool's
  // limit; kFile: 0 without a spill directory).
  virtual std::uint64_t ArenaLimit(StorageTier tier) = 0;
  // Makes each tier's arena hold at least `bytes[tier]`, in slots of `chunk_size` bytes. Growth is
  // geometric; an arena that grows (or changes chunk size) is reallocated and loses what it held
  // (arena_stats().generation changes). ResourceExhausted naming the tier when one cannot grow.
  virtual Status ReserveArena(const TierBytes& bytes, std::uint64_t chunk_size) = 0;
  // Frees every arena (at exit or when the application needs the memory).
  virtual void ReleaseArena() = 0;
  // The application is about to allocate `bytes` of device memory: frees the device-tier arena
  // when the allocation would not fit beside it. True when something was freed.
  virtual bool MakeRoomFor(std::uint64_t bytes) = 0;
  virtual ArenaStats arena_stats() = 0;
  // Runs `op` over every region of `regions` (placed in arenas that ReserveArena made, with the
  // same chunk size), batched as described above. `hashes`, when not empty, receives the hash of
  // each chunk's device bytes as they were before anything was written, in table order (region by
  // region, chunk by chunk); its size must then be the table's chunk count. On failure nothing is
  // promised about which chunks were written: callers restore with kRestoreAll, or capture again.
  virtual StatusOr<ChunkOpResult> RunChunkOp(ChunkOp op, std::span<const ArenaRegion> regions,
                                             std::uint64_t chunk_size, std::span<std::uint64_t> hashes) = 0;

  // Module-scope variables of every module loaded on this device now, addresses and sizes
  // (the bytes are read by whoever snapshots them). Unavailable/Internal when enumeration fails.
  virtual StatusOr<std::vector<ModuleVariable>> EnumerateModuleVariables() = 0;

  // Waits until all work queued on the device has finished. DeadlineExceeded when it has not
  // drained within `timeout` (nothing is cancelled).
  virtual Status Synchronize(std::chrono::nanoseconds timeout) = 0;

  // Range replay (W4): runs a recorded range once more (device/range.h) on the backend's own
  // streams and waits for it; `pass` counts from 2. Unimplemented where the backend cannot.
  virtual StatusOr<RangePassTiming> ReissueRange(std::span<const RangeOp> ops, int pass,
                                                 const ReissueOptions& options);

  // Host memory resource for snapshot metadata (region tables, hash arrays). Backends may
  // return one that fails on purpose to exercise the metadata-reservation failure path.
  virtual std::pmr::memory_resource* metadata_resource() noexcept { return std::pmr::get_default_resource(); }
};

// ---------------------------------------------------------------------------------------------
// Launches

enum class LaunchKind : std::uint8_t {
  kKernel,             // one kernel, one dispatch
  kCooperativeKernel,  // one cooperative kernel, one dispatch
  kBatch,              // a submission holding several dispatches
  kGraph,              // a graph launch
};

std::string_view LaunchKindName(LaunchKind kind) noexcept;

// What a backend knows about a launch when it is intercepted.
struct LaunchRequest {
  int device = 0;
  StreamId stream = 0;
  LaunchKind kind = LaunchKind::kKernel;
  std::uint32_t dispatch_count = 1;  // dispatches in this submission (1 for a single kernel)
  std::string kernel_name;           // mangled or plain name of the (first) kernel
  bool stream_capturing = false;     // the stream (or the process, in global mode) is capturing
  bool uses_device_printf = false;   // side effects replay would repeat (rule C2)
  bool uses_device_malloc = false;
  // Device state the snapshot cannot cover: CUDA arrays live on the device (their contents are
  // not captured, C2), and peer access from this device to another one's memory (R14).
  std::uint32_t live_arrays = 0;
  bool peer_access = false;
};

// What the launch itself says about its shape, for Nsight Compute's launch__* metrics (no
// counter pass needed). Zero where the backend does not know.
struct LaunchShape {
  std::uint32_t grid[3] = {0, 0, 0};
  std::uint32_t block[3] = {0, 0, 0};
  std::uint32_t registers_per_thread = 0;
  std::uint64_t static_shared_bytes = 0;   // per block
  std::uint64_t dynamic_shared_bytes = 0;  // per block
  std::uint32_t active_blocks_per_sm = 0;  // the occupancy API's answer for this shape
  std::uint32_t max_warps_per_sm = 0;      // the device's limit (theoretical occupancy's denominator)
  std::uint32_t sm_count = 0;
};

// ---------------------------------------------------------------------------------------------
// Graph launches (issue 24, B8)
//
// A graph launch (LaunchKind::kGraph) is replayed either as one unit, the whole graph per pass
// (ReplayMode kGraph), or node by node (kNode): the nodes run one at a time as standalone
// operations on the launch's stream, in a topological order, and each selected kernel node is
// replayed in place with the inputs it sees at its position in the graph.

enum class GraphNodeType : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kEventRecord,
  kEventWait,
  kEmpty,
  kMemAlloc,           // a memory-allocation node: the graph owns the memory from here
  kMemFree,            // a memory-free node
  kHost,               // a host function: runs on the CPU, not a standalone stream operation
  kChildGraph,         // a graph inside the graph
  kConditional,        // if / while / switch: which body runs is decided on the device
  kExternalSemaphore,  // signals or waits on an external semaphore
  kOther,
};

std::string_view GraphNodeTypeName(GraphNodeType type) noexcept;

struct GraphNode {
  std::uint64_t id = 0;  // the node's id (CUPTI's graph node id on CUDA, its kernel records carry it)
  GraphNodeType type = GraphNodeType::kEmpty;
  std::string kernel_name;          // kKernel: as the selector sees it (C4)
  bool uses_device_printf = false;  // kKernel: side effects (C2)
  bool uses_device_malloc = false;
};

// What a backend knows of a launched graph.
struct GraphDescription {
  std::uint64_t graph_id = 0;    // the executable graph's id (CUPTI's graph id on CUDA)
  std::vector<GraphNode> nodes;  // in a topological order: every node after those it depends on
  // Why the nodes cannot run one by one as standalone operations faithfully ("a host node", "a
  // memory-allocation node", ...); empty when they can. Node-by-node replay then falls back to
  // whole-graph replay, with this reason in the record.
  std::string node_blocker;
  // Why the graph cannot be launched again inside the window ("it frees memory allocated outside
  // the graph"); empty when it can. Such a launch is declined: it runs once.
  std::string relaunch_blocker;
};

// One kernel node's duration in a whole-graph pass, where the backend measures it with the pass
// (the host backend). The CUDA backend's come from CUPTI's kernel records, which carry the node id.
struct NodeTiming {
  std::uint64_t node_id = 0;
  std::uint64_t duration_ns = 0;
};

// Per-pass timing that a backend measures.
struct PassTiming {
  std::uint64_t duration_ns = 0;
  std::uint32_t sm_clock_before_khz = 0;  // 0 where the backend has no SM clock
  std::uint32_t sm_clock_after_khz = 0;
  std::vector<NodeTiming> kernel_nodes;  // whole-graph passes: per kernel node, where measured here
};

// The backend's handle on one intercepted launch, through which the replay controller runs it.
// Lives for the duration of the intercepting call; not thread-safe.
class LaunchExecutor {
 public:
  virtual ~LaunchExecutor() = default;

  // Submits the launch exactly as the application asked (asynchronous where it was), with its
  // completion signalled when it finishes. The unreplayed path.
  virtual Status RunOriginal() = 0;

  // Makes sure everything the launch can touch exists before a snapshot: loads the kernel's
  // module when modules load lazily, so a module loaded by the launch itself cannot escape the
  // snapshot (rule R7).
  virtual Status PrepareForSnapshot() { return OkStatus(); }

  // Runs the kernel once, waits for it to finish, and reports its timing. Does not signal the
  // application's completion. `pass` counts from 1.
  virtual StatusOr<PassTiming> RunPass(int pass) = 0;

  // Signals the application's completion; called exactly once, after the last pass.
  virtual void SignalCompletion() = 0;

  // True when the application's own launch still runs after the intercepting call returns (a
  // CUPTI API-entry callback cannot skip the call it reports): every pass is then a copy the
  // executor submits itself, RunOriginal submits nothing, and the controller restores the
  // snapshot after the last pass, so that the application's launch reads the inputs it would
  // have read unprofiled and leaves the state one unreplayed run leaves.
  virtual bool original_runs_after_return() const noexcept { return false; }

  // A counter pass (issue 19) in two steps, so that the counters see the kernel alone: what goes
  // before it (the L2 flush of B7, finished), then, between the counter backend's BeginPass and
  // EndPass, the launch, waited for.
  virtual Status PrepareCounterPass() { return OkStatus(); }
  virtual Status RunCounterPass(int pass) { return RunPass(pass).status(); }

  // True when each pass starts with the L2 cache flushed (B7, --cache-control all).
  virtual bool flushes_caches() const noexcept { return false; }

  // The launch's shape (grid, block, registers, shared memory, occupancy) for launch__* metrics.
  virtual StatusOr<LaunchShape> DescribeLaunch() {
    return UnimplementedError("this backend does not describe launches");
  }

  // Range replay (W3): the launch as the application asked for it, copied so that it can be issued
  // again after the application's call has returned. Unimplemented where the backend cannot
  // (the range is then declined).
  virtual StatusOr<std::shared_ptr<const RecordedLaunch>> RecordForRange();

  // ---- graph launches (LaunchKind::kGraph) ----
  // For a graph launch RunPass runs the whole graph once and waits for it; RunOriginal submits it
  // as the application asked.
  // The graph's nodes. Unimplemented where the backend cannot list them (the launch is declined).
  virtual StatusOr<GraphDescription> DescribeGraph() {
    return UnimplementedError("this backend does not describe graphs");
  }
  // Runs node `index` of DescribeGraph's list alone, as a standalone operation on the launch's
  // stream, and waits for it. `pass` is 0 when the node only brings the state to where the next
  // node runs; else the replay pass of a selected kernel node (1-based), timed.
  virtual StatusOr<PassTiming> RunGraphNode(std::size_t index, int pass) {
    static_cast<void>(index);
    static_cast<void>(pass);
    return UnimplementedError("this backend does not run graph nodes one by one");
  }
  // Called after the last pass when original_runs_after_return: frees the memory the passes'
  // memory-allocation nodes left allocated (no free node in the graph), so that the application's
  // own launch can allocate it again. The backend frees what pass p left before pass p + 1 itself.
  virtual Status EndGraphPasses() { return OkStatus(); }
};

// ---------------------------------------------------------------------------------------------
// Runtime entry points

struct AllocateArgs {
  int device = 0;
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::kDeviceLocal;
  StreamId stream = 0;
  bool stream_ordered = false;  // cudaMallocAsync-style: valid in stream order
};

struct FreeArgs {
  DevicePtr ptr = 0;
  StreamId stream = 0;
  bool stream_ordered = false;
};

enum class TransferKind : std::uint8_t { kCopy, kMemset };

struct TransferArgs {
  TransferKind kind = TransferKind::kCopy;
  int device = 0;  // the device whose memory is written (the window this must wait for)
  DevicePtr dst = 0;
  DevicePtr src = 0;       // kCopy
  std::uint8_t value = 0;  // kMemset
  std::uint64_t bytes = 0;
  StreamId stream = 0;
  bool asynchronous = false;
};

// An event operation (cudaEventRecord, cudaStreamWaitEvent): the cross-stream order a recorded
// range must keep (W3).
enum class EventOpKind : std::uint8_t { kRecord, kWait };

struct EventArgs {
  EventOpKind kind = EventOpKind::kRecord;
  int device = 0;  // the device of `stream`
  StreamId stream = 0;
  std::uint64_t event = 0;
};

// The runtime's allocate/free/transfer/launch entry points as a table of function pointers, the
// way HSA exposes its API table. The runtime calls every entry through the table; a tool saves
// the originals and installs wrappers (replay::Interceptor does, at most once per table).
// `hook_context` belongs to whoever installed the wrappers (null when none is installed).
// The table is owned by the runtime and outlives every tool that patches it.
struct RuntimeApiTable {
  using AllocateFn = Status (*)(RuntimeApiTable& table, const AllocateArgs& args, DevicePtr* out);
  using FreeFn = Status (*)(RuntimeApiTable& table, const FreeArgs& args);
  using TransferFn = Status (*)(RuntimeApiTable& table, const TransferArgs& args);
  using LaunchFn = Status (*)(RuntimeApiTable& table, const LaunchRequest& request, LaunchExecutor& executor);
  using EventFn = Status (*)(RuntimeApiTable& table, const EventArgs& args);

  void* runtime = nullptr;  // the runtime's own state, for the original entries
  AllocateFn allocate = nullptr;
  FreeFn free = nullptr;
  TransferFn transfer = nullptr;
  LaunchFn launch = nullptr;
  EventFn event = nullptr;  // null in a runtime without events
  void* hook_context = nullptr;
};

}  // namespace gpuprof::device
