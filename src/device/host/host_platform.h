// HostPlatform: a simulated device runtime whose "device memory" is host memory. It is real
// production code: the replay engine's tests, property tests, benchmark and `gpuprof demo` run on
// it, so it behaves like a GPU runtime in the ways replay depends on:
//
// - several devices sharing one address space (a DevicePtr is the host address of the bytes, so
//   a kernel body dereferences it directly and a write into freed memory is a real
//   use-after-free that ASan reports);
// - allocations of every memory kind of device.h, including the runtime's own per-stream
//   kernel-argument pool and executable pool, all made through the api table;
// - module variables, including zero-size and > 1 GiB ones (the latter reserved lazily, never
//   touched), and modules loaded lazily by the first launch of one of their kernels;
// - streams as FIFO queues each served by its own worker thread, so launches, copies, memsets and
//   stream-ordered frees are really asynchronous;
// - kernels as callables that read and write the simulated memory;
// - fault injection for every failure the replay engine must survive (FaultPoint).
//
// The application-facing calls (Malloc, Free, Memcpy*, Memset*, Launch*) go through api_table(),
// the table that replay::Interceptor patches. Everything is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device/device.h"

namespace gpuprof::device::host {

class HostDevice;

using ModuleId = std::uint64_t;

// What a kernel body gets when it runs.
struct KernelContext {
  int device = 0;
  StreamId stream = 0;
  int pass = 0;  // 0 for an unreplayed run, else the replay pass (1-based)
};

struct Kernel {
  std::string name;
  std::function<void(const KernelContext&)> body;
  ModuleId module = 0;  // 0: belongs to no module; else loaded (lazily) before the kernel runs
  bool uses_device_printf = false;
  bool uses_device_malloc = false;
  // Simulated device state a real backend reports with the launch (device.h LaunchRequest).
  std::uint32_t live_arrays = 0;
  bool peer_access = false;
  // What DescribeLaunch reports (launch__* metrics); nullopt: the executor does not describe it.
  std::optional<LaunchShape> shape = std::nullopt;
};

// A completion signal the application may attach to a launch (like an HSA completion signal or a
// CUDA event recorded after the kernel). Counts how often it was signalled.
class CompletionSignal {
 public:
  void Signal() noexcept { count_.fetch_add(1, std::memory_order_acq_rel); }
  int count() const noexcept { return count_.load(std::memory_order_acquire); }

 private:
  std::atomic<int> count_{0};
};

// ---- graphs (issue 24): the CUDA graph model, nodes and dependency edges ----
using GraphId = std::uint64_t;
inline constexpr std::size_t kNoGraphNode = static_cast<std::size_t>(-1);

// One node of a graph. Addresses are the caller's to get right, as in a kernel body.
struct GraphNodeSpec {
  GraphNodeType type = GraphNodeType::kKernel;
  Kernel kernel;            // kKernel
  DevicePtr dst = 0;        // kMemcpy / kMemset destination; kMemFree: memory allocated outside the graph
  DevicePtr src = 0;        // kMemcpy
  std::uint8_t value = 0;   // kMemset
  std::uint64_t bytes = 0;  // kMemcpy / kMemset / kMemAlloc
  std::size_t allocation = kNoGraphNode;  // kMemFree: the kMemAlloc node whose memory it frees
  std::function<void()> host;             // kHost: runs on the stream's worker
  std::vector<std::size_t> dependencies;  // indexes of the nodes it waits for (acyclic)
};

struct ModuleVariableSpec {
  std::string name;
  std::uint64_t size = 0;
  bool is_constant = false;
  std::vector<std::uint8_t> initial;  // copied into the variable at load; zeros beyond it
};

struct ModuleSpec {
  std::string name;
  std::vector<ModuleVariableSpec> variables;
  bool lazy = false;  // loaded by the first launch of a kernel of this module, not at LoadModule
};

enum class FaultPoint : std::uint8_t {
  kArenaGrowth,          // ReserveArena cannot grow a tier's arena (as if the allocation failed)
  kSaveCopy,             // RunChunkOp kCapture / kRefreshChanged fails after copying half the regions
  kRestoreCopy,          // a restoring RunChunkOp (the scatter) fails after writing half the regions
  kDeviceToHostCopy,     // CopyDeviceToHost fails
  kHashChunks,           // HashChunks and RunChunkOp kHash fail
  kMetadataAllocation,   // metadata_resource() throws std::bad_alloc
  kModuleEnumeration,    // EnumerateModuleVariables fails
  kSynchronizeTimeout,   // Synchronize reports DeadlineExceeded without waiting
  kCompareChunks,        // RunChunkOp kRestoreDiffering's byte compare fails
  kPinnedPoolExhausted,  // the pinned pool cannot grow: ArenaLimit(kPinnedHost) is what it holds
  kSpillFileWrite,       // a write into the spill file fails (as a full disk would)
};

std::string_view FaultPointName(FaultPoint point) noexcept;

struct HostPlatformOptions {
  int device_count = 2;
  // Each stream owns a kernel-argument pool (kind kKernelArgument) and a runtime-internal
  // executable pool (kind kRuntimeInternal) of this size, allocated through the api table when
  // the stream is created and freed through it when the platform is destroyed.
  std::uint64_t stream_pool_bytes = 4096;
  // Device memory per device (device-local allocations, module variables and the device-tier
  // arena together); an allocation beyond it fails with ResourceExhausted. 0: unlimited.
  std::uint64_t device_memory_bytes = 0;
  // The snapshot arena's bounds (device.h). Every tier is host memory here, but the device tier
  // counts against device_memory_bytes, and the file tier is a real spill file.
  ArenaOptions arena{
      .device_reserve_bytes = 0, .pinned_limit_bytes = std::uint64_t{1} << 40, .spill_directory = {}};
};

// Calls the engine made on a HostDevice, for tests that check the batched interface's cost.
struct DeviceCallCounts {
  std::uint64_t calls = 0;       // Device methods that touch memory or the device's queue
  std::uint64_t host_waits = 0;  // of those, how many wait for the device (one per call here)
  std::uint64_t chunk_ops = 0;   // RunChunkOp calls
  std::uint64_t launches = 0;    // simulated device launches issued by those calls
};

class HostPlatform {
 public:
  explicit HostPlatform(HostPlatformOptions options = {});
  ~HostPlatform();  // drains and joins every stream worker; frees everything still allocated
  HostPlatform(const HostPlatform&) = delete;
  HostPlatform& operator=(const HostPlatform&) = delete;

  int device_count() const noexcept;
  HostDevice& device(int ordinal);
  Device& device_interface(int ordinal);

  // The patchable entry points; every application-facing call below goes through it.
  RuntimeApiTable& api_table() noexcept;

  // ---- application-facing runtime API -------------------------------------------------------
  StatusOr<DevicePtr> Malloc(int device, std::uint64_t size, MemoryKind kind = MemoryKind::kDeviceLocal);
  // Stream-ordered allocation: the returned pointer is usable by work queued on `stream`.
  StatusOr<DevicePtr> MallocAsync(StreamId stream, std::uint64_t size);
  Status Free(DevicePtr ptr);                        // waits for the device, like cudaFree
  Status FreeAsync(StreamId stream, DevicePtr ptr);  // freed when the stream reaches it

  // Copies between any two addresses of the platform or plain host memory.
  Status Memcpy(DevicePtr dst, DevicePtr src, std::uint64_t bytes);
  Status MemcpyAsync(StreamId stream, DevicePtr dst, DevicePtr src, std::uint64_t bytes);
  Status Memset(DevicePtr dst, std::uint8_t value, std::uint64_t bytes);
  Status MemsetAsync(StreamId stream, DevicePtr dst, std::uint8_t value, std::uint64_t bytes);

  StatusOr<StreamId> CreateStream(int device);
  // Stream 0 of each device exists from the start; DefaultStream(d) names it.
  StreamId DefaultStream(int device) const noexcept;
  int StreamDevice(StreamId stream) const;

  // Asynchronous single-kernel launch; `signal` (optional) is signalled when it completes.
  Status Launch(StreamId stream, const Kernel& kernel, CompletionSignal* signal = nullptr);
  // Several dispatches in one submission (LaunchKind::kBatch) or as a graph (kGraph).
  Status LaunchBatch(StreamId stream, const std::vector<Kernel>& kernels, CompletionSignal* signal = nullptr);
  // A chain of kernel nodes, created, launched and destroyed in one call.
  Status LaunchGraph(StreamId stream, const std::vector<Kernel>& kernels, CompletionSignal* signal = nullptr);

  // An executable graph on `device`, as cudaGraphInstantiate makes one: InvalidArgument for an
  // out-of-range or cyclic dependency, a kMemFree naming no kMemAlloc node, or an empty graph.
  // Each kMemAlloc node's memory has a fixed address for the graph's life (GraphAllocation), not
  // tracked as an allocation (a CUDA graph's memory pool is not); its contents at the allocation
  // are undefined (filled with 0xCD here). A launch allocates it and a kMemFree node of the same
  // graph frees it; memory the graph leaves allocated must be freed (FreeGraphAllocation) before
  // the graph is launched again, or that launch fails, as cuGraphLaunch does.
  StatusOr<GraphId> CreateGraph(int device, std::vector<GraphNodeSpec> nodes);
  Status DestroyGraph(GraphId graph);
  StatusOr<DevicePtr> GraphAllocation(GraphId graph, std::size_t node) const;
  // Frees what allocation node `node` of `graph` left allocated (cudaFreeAsync on its pointer).
  Status FreeGraphAllocation(GraphId graph, std::size_t node);
  // Launches `graph` on `stream` (whose device must be the graph's); `signal` is signalled when it
  // completes. The nodes run in a topological order on the stream.
  Status LaunchGraph(StreamId stream, GraphId graph, CompletionSignal* signal = nullptr);
  // Events, as cudaEventCreate / cudaEventRecord / cudaStreamWaitEvent: a wait makes `stream`'s
  // later work wait until the event's latest record (at the time of the wait) has been reached.
  // A wait on an event never recorded waits for nothing. Both go through the api table.
  StatusOr<std::uint64_t> CreateEvent(int device);
  Status EventRecord(std::uint64_t event, StreamId stream);
  Status StreamWaitEvent(StreamId stream, std::uint64_t event);
  // Marks a stream as capturing (launches into it report stream_capturing).
  void SetStreamCapturing(StreamId stream, bool capturing);

  Status StreamSynchronize(StreamId stream);
  Status DeviceSynchronize(int device);

  StatusOr<ModuleId> LoadModule(int device, const ModuleSpec& spec);
  bool ModuleLoaded(ModuleId module) const;
  // Address of a module variable; for a lazy module not yet loaded, NotFound.
  StatusOr<DevicePtr> VariableAddress(ModuleId module, std::string_view name) const;

  // ---- fault injection -------------------------------------------------------------------
  // Fails `count` calls at `point` after letting `skip` calls through. Cumulative per point.
  void InjectFault(FaultPoint point, int count = 1, int skip = 0);
  void ClearFaults();
  // How many injected faults at `point` actually fired.
  int FaultsFired(FaultPoint point) const;
  // Runs `hook(dst)` on the calling thread just before a restoring RunChunkOp writes a region (a test uses
  // it to race a free against a restore). Pass an empty function to remove it.
  void SetBeforeRestoreCopyHook(std::function<void(DevicePtr dst)> hook);
  // Makes every op queued on `stream` after this call wait until ReleaseStream (a device that
  // does not drain, like a collective waiting on a peer).
  void StallStream(StreamId stream);
  void ReleaseStream(StreamId stream);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// One simulated device; implements device.h over the platform's memory.
class HostDevice final : public Device {
 public:
  HostDevice(HostPlatform::Impl& platform, int ordinal);
  ~HostDevice() override;

  int ordinal() const noexcept override { return ordinal_; }
  std::string name() const override;
  StatusOr<PointerInfo> QueryPointer(DevicePtr ptr) override;
  Status CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) override;
  Status CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) override;
  Status CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) override;
  Status HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                    std::span<std::uint64_t> out) override;
  std::uint64_t ArenaLimit(StorageTier tier) override;
  Status ReserveArena(const TierBytes& bytes, std::uint64_t chunk_size) override;
  void ReleaseArena() override;
  bool MakeRoomFor(std::uint64_t bytes) override;
  ArenaStats arena_stats() override;
  // One simulated launch over the whole table (every tier is reachable from it here), one copy of
  // the counters and, when asked, one of the hashes: one host wait. kRestoreDiffering compares
  // bytes for device-tier regions.
  StatusOr<ChunkOpResult> RunChunkOp(ChunkOp op, std::span<const ArenaRegion> regions,
                                     std::uint64_t chunk_size, std::span<std::uint64_t> hashes) override;
  StatusOr<std::vector<ModuleVariable>> EnumerateModuleVariables() override;
  // Runs the ops one after another on the calling thread, in the recorded order (a valid order
  // for every stream and event dependency of the range); a copy into host memory goes to scratch.
  StatusOr<RangePassTiming> ReissueRange(std::span<const RangeOp> ops, int pass,
                                         const ReissueOptions& options) override;
  Status Synchronize(std::chrono::nanoseconds timeout) override;
  std::pmr::memory_resource* metadata_resource() noexcept override;

  DeviceCallCounts call_counts() const;
  void ResetCallCounts();
  // Device-tier arena bytes held now (they count against HostPlatformOptions::device_memory_bytes).
  std::uint64_t device_arena_bytes() const;
  // The spill file's path while the file tier holds one ("" otherwise).
  std::string spill_file_path() const;

  struct Arena;

 private:
  void Count(std::uint64_t calls, std::uint64_t waits, std::uint64_t chunk_ops = 0,
             std::uint64_t launches = 0);

  HostPlatform::Impl& platform_;
  int ordinal_;
  std::unique_ptr<std::pmr::memory_resource> metadata_resource_;
  std::unique_ptr<Arena> arena_;
  mutable std::mutex counts_mu_;
  DeviceCallCounts counts_;
};

}  // namespace gpuprof::device::host
