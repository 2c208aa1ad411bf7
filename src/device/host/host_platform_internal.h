// Internals of HostPlatform shared by host_platform.cc, host_stream.cc and host_device.cc. Not a
// public header: only files of this component include it.
//
// Lock order (a thread holding one may take only those after it):
//   modules_ -> registry_ ; streams_ -> Stream::mu_ ; faults and the restore hook are leaves.
// No platform lock is held while a stream op (kernel body, copy, memset, release) runs, and no
// lock is held across a call through the api table (a tool's wrapper may call back into us).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/synchronized.h"
#include "device/host/host_platform.h"
#include "device/range.h"

namespace gpuprof::device::host {

// ---- raw memory ---------------------------------------------------------------------------------

// Device allocations, module variables and the snapshot arena are host memory: 256-byte aligned,
// zero-filled operator new below this size (so ASan sees use-after-free), and an untouched
// MAP_NORESERVE mapping at or above it (a > 1 GiB variable costs no resident memory).
inline constexpr std::uint64_t kMmapThreshold = std::uint64_t{256} << 20;
inline constexpr std::size_t kAllocationAlignment = 256;

struct RawBlock {
  void* data = nullptr;
  std::uint64_t size = 0;
  bool mapped = false;  // mmap'ed (released with munmap) rather than operator new
};

// Null data on failure (never throws). `zero_fill` is false for the arena, whose bytes are
// always overwritten before they are read.
RawBlock AllocateRaw(std::uint64_t size, bool zero_fill) noexcept;
void ReleaseRaw(const RawBlock& block) noexcept;

// A DevicePtr is a host address by design.
inline void* ToHost(DevicePtr ptr) noexcept {
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr));
}
inline DevicePtr ToDevicePtr(const void* ptr) noexcept {
  return static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(ptr));
}

// "0x7f12..." and "(+4096 bytes)" for messages.
std::string Hex(DevicePtr ptr);
std::string PlusBytes(std::uint64_t bytes);

// ---- registry -----------------------------------------------------------------------------------

enum class EntryOrigin : std::uint8_t { kAllocation, kModuleVariable };

struct RegistryEntry {
  RawBlock block;  // block.size == the allocation's size
  MemoryKind kind = MemoryKind::kUnknown;
  int owner_device = -1;
  EntryOrigin origin = EntryOrigin::kAllocation;
  bool free_pending = false;  // FreeAsync queued; released when its stream reaches it
};

// base address -> entry. Entries never overlap and never have size 0.
using Registry = std::map<DevicePtr, RegistryEntry>;

// The entry whose [base, base+size) contains `ptr`, or null.
const RegistryEntry* FindContaining(const Registry& registry, DevicePtr ptr, DevicePtr* base);

// ---- fault injection ----------------------------------------------------------------------------

inline constexpr std::size_t kFaultPointCount = static_cast<std::size_t>(FaultPoint::kSpillFileWrite) + 1;

class FaultInjector {
 public:
  FaultInjector();
  void Inject(FaultPoint point, int count, int skip);
  void Clear();
  int Fired(FaultPoint point) const;
  // True when this call at `point` must fail (and counts it). One acquire load when unarmed.
  bool ShouldFail(FaultPoint point);

 private:
  struct PointState {
    int skip = 0;
    int fail = 0;
    int fired = 0;
  };
  static std::size_t Index(FaultPoint point) noexcept { return static_cast<std::size_t>(point); }

  std::array<std::atomic<bool>, kFaultPointCount> armed_;
  base::Synchronized<std::array<PointState, kFaultPointCount>> state_;
};

// ---- streams ------------------------------------------------------------------------------------

// One FIFO queue served by its own worker thread. Ops run in order, one at a time, with no lock
// held. Thread-safe.
class Stream {
 public:
  using Op = std::function<void()>;
  using Clock = std::chrono::steady_clock;

  Stream(StreamId id, int device);
  ~Stream();  // stops and joins the worker (after draining the queue)
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  StreamId id() const noexcept { return id_; }
  int device() const noexcept { return device_; }

  void Enqueue(Op op);
  // Waits until the queue is empty and no op runs; false when `deadline` passed first.
  // Clock::time_point::max() waits without limit.
  bool WaitIdle(Clock::time_point deadline);
  void SetStalled(bool stalled);
  // Drains the queue (stalls released) and joins the worker. Idempotent.
  void Shutdown();

  void set_capturing(bool capturing) noexcept { capturing_.store(capturing, std::memory_order_relaxed); }
  bool capturing() const noexcept { return capturing_.load(std::memory_order_relaxed); }

  // The stream's runtime pools (kernel arguments, executable code), freed by the platform.
  void SetPools(DevicePtr kernarg, DevicePtr internal);
  std::array<DevicePtr, 2> pools() const;

 private:
  void Run();

  const StreamId id_;
  const int device_;
  std::atomic<bool> capturing_{false};

  // A bare mutex rather than base::Synchronized: the condition variables below need it.
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // an op was queued, the stall was released, or stop
  std::condition_variable idle_cv_;  // the stream became idle
  std::deque<Op> queue_;
  bool running_ = false;
  bool stalled_ = false;
  bool stop_ = false;
  std::array<DevicePtr, 2> pools_{};
  std::thread worker_;
};

// ---- modules ------------------------------------------------------------------------------------

struct LoadedVariable {
  ModuleVariableSpec spec;
  DevicePtr address = 0;  // 0 until loaded, and for size-0 variables
};

struct Module {
  std::string name;
  int device = 0;
  bool lazy = false;
  bool loaded = false;
  std::vector<LoadedVariable> variables;
};

struct ModuleTable {
  std::map<ModuleId, Module> modules;
  ModuleId next_id = 1;
};

// ---- the snapshot arena -------------------------------------------------------------------------

// One tier's arena of a HostDevice: host memory (or, for StorageTier::kFile, a spill file) plus the
// saved hash of each chunk-sized slot.
struct HostArenaTier {
  RawBlock block;    // kDevice, kPinnedHost, kPageableHost
  int fd = -1;       // kFile: the spill file, mode 0600
  std::string path;  // kFile: its name (unlinked when released)
  std::uint64_t capacity = 0;
  std::vector<std::uint64_t> saved_hashes;  // one per slot
};

struct HostDevice::Arena {
  explicit Arena(ArenaOptions opts) : options(std::move(opts)) {}
  ~Arena();  // releases every tier
  void ReleaseTier(StorageTier tier) noexcept;

  const ArenaOptions options;
  mutable std::mutex mu;  // everything below
  std::array<HostArenaTier, kStorageTierCount> tiers;
  std::uint64_t chunk_size = 0;
  ArenaStats stats;
};

std::unique_ptr<HostDevice::Arena> MakeArena(const ArenaOptions& options);

// ---- events and range replay (host_range.cc) ----------------------------------------------------

// An event (HostPlatform::CreateEvent): records are numbered as they are issued; a wait issued
// after record n blocks its stream until record n has been reached on the recording stream.
struct HostEvent {
  int device = 0;
  std::mutex mu;
  std::condition_variable reached_cv;
  std::uint64_t issued = 0;   // guarded by mu
  std::uint64_t reached = 0;  // guarded by mu
};

// A launch recorded for range replay (device/range.h): the kernels' bodies, and the duration of
// the application's own execution, written by the stream op that runs it.
class HostRecordedLaunch final : public RecordedLaunch {
 public:
  using BodyList = std::vector<std::function<void(const KernelContext&)>>;
  HostRecordedLaunch(std::string name, std::shared_ptr<const BodyList> bodies,
                     std::optional<LaunchShape> shape)
      : name_(std::move(name)), bodies_(std::move(bodies)), shape_(std::move(shape)) {}
  StatusOr<LaunchShape> shape() const override {
    if (!shape_.has_value())
      return UnimplementedError("host kernel '" + name_ + "' was launched without a shape");
    return *shape_;
  }
  const std::string& kernel_name() const noexcept override { return name_; }
  std::uint64_t original_duration_ns() const noexcept override {
    return original_ns_.load(std::memory_order_acquire);
  }
  const BodyList& bodies() const noexcept { return *bodies_; }
  // Runs the bodies in `context`; returns how long they took.
  std::uint64_t Run(const KernelContext& context) const;
  void set_original_duration_ns(std::uint64_t ns) noexcept {
    original_ns_.store(ns, std::memory_order_release);
  }

 private:
  std::string name_;
  std::shared_ptr<const BodyList> bodies_;
  std::optional<LaunchShape> shape_;
  std::atomic<std::uint64_t> original_ns_{0};
};

// ---- the platform -------------------------------------------------------------------------------

// An executable graph (HostPlatform::CreateGraph). The specs are immutable after creation; the
// allocation state changes under `mu` at every launch and free.
struct HostGraph {
  GraphId id = 0;
  int device = 0;
  std::vector<GraphNodeSpec> nodes;
  std::vector<std::uint64_t> node_ids;                  // per node, unique in the process
  std::vector<std::size_t> order;                       // a topological order of node indexes
  std::vector<std::unique_ptr<std::uint8_t[]>> memory;  // per node: kMemAlloc's memory, else null
  std::mutex mu;
  std::vector<bool> allocated;  // per node: kMemAlloc memory allocated now (guarded by mu)
};

struct HostPlatform::Impl {
  explicit Impl(HostPlatformOptions opts);
  ~Impl();  // Shutdown()
  // Releases stalls, drains and joins every worker, frees the stream pools through the api
  // table, then releases all remaining memory. Idempotent; the owner's thread only.
  void Shutdown();

  bool ValidDevice(int device) const noexcept {
    return device >= 0 && device < static_cast<int>(devices.size());
  }
  // Null when `id` names no stream.
  Stream* FindStream(StreamId id) const;
  std::vector<Stream*> StreamsOf(int device) const;
  StatusOr<StreamId> CreateStream(int device);

  // Waits for every stream of `device` (all devices when -1) until `deadline`.
  bool WaitDeviceIdle(int device, Stream::Clock::time_point deadline) const;

  // Checks that [ptr, ptr+bytes) lies inside one registered allocation or variable; the message
  // names `call`, `role` ("source", "destination"), the range and `device`.
  static Status CheckDeviceRange(const Registry& registry, std::string_view call, std::string_view role,
                                 DevicePtr ptr, std::uint64_t bytes, int device);
  // For application copies: a range that starts inside a registered entry must end inside it;
  // any other non-null address is plain host memory.
  static Status CheckApplicationRange(const Registry& registry, std::string_view call, std::string_view role,
                                      DevicePtr ptr, std::uint64_t bytes);

  // The device whose memory an application copy or memset writes: the owner of `dst`, else of
  // `src` (a device-to-host copy reads device memory mid-window otherwise), else -1 (host only).
  int WrittenDevice(DevicePtr dst, DevicePtr src) const;

  // Device memory of `device` in use by the application: its device-local allocations and module
  // variables (the registry's read lock is taken).
  std::uint64_t ApplicationDeviceBytes(int device) const;

  // Unregisters the allocation at `base` and releases its memory (FreeAsync's stream op).
  void ReleaseAllocation(DevicePtr base);
  // Allocates and initializes the variables of `module` if it is not loaded yet.
  Status EnsureModuleLoaded(ModuleId module);

  // The original api-table entries (what a tool chains to).
  static Status OriginalAllocate(RuntimeApiTable& table, const AllocateArgs& args, DevicePtr* out);
  static Status OriginalFree(RuntimeApiTable& table, const FreeArgs& args);
  static Status OriginalTransfer(RuntimeApiTable& table, const TransferArgs& args);
  static Status OriginalLaunch(RuntimeApiTable& table, const LaunchRequest& request,
                               LaunchExecutor& executor);

  Status Allocate(const AllocateArgs& args, DevicePtr* out);
  Status FreeNow(const FreeArgs& args);
  Status FreeStreamOrdered(const FreeArgs& args);
  Status Transfer(const TransferArgs& args);
  Status LaunchKernels(std::string_view call, StreamId stream, LaunchKind kind,
                       std::span<const Kernel> kernels, CompletionSignal* signal);
  Status LaunchGraph(StreamId stream, GraphId graph, CompletionSignal* signal);
  std::shared_ptr<HostGraph> FindGraph(GraphId graph) const;
  // Events (host_range.cc).
  static Status OriginalEvent(RuntimeApiTable& table, const EventArgs& args);
  Status EventOp(const EventArgs& args);
  std::shared_ptr<HostEvent> FindEvent(std::uint64_t event) const;
  // Allocates, initializes and registers the variables of `module` (modules' write lock held).
  Status LoadVariables(ModuleId id, Module& module);

  const HostPlatformOptions options;
  RuntimeApiTable api_table;
  FaultInjector faults;
  base::Synchronized<Registry> registry;
  base::Synchronized<ModuleTable> modules;
  base::Synchronized<std::vector<std::unique_ptr<Stream>>> streams;  // id = index + 1
  base::Synchronized<std::shared_ptr<const std::function<void(DevicePtr)>>> restore_hook;
  base::Synchronized<std::map<GraphId, std::shared_ptr<HostGraph>>> graphs;
  std::atomic<std::uint64_t> next_graph_id{1};
  base::Synchronized<std::map<std::uint64_t, std::shared_ptr<HostEvent>>> events;
  std::atomic<std::uint64_t> next_event_id{1};
  std::atomic<std::uint64_t> next_graph_node_id{1};
  std::vector<StreamId> default_streams;  // per device; written only by the constructor
  std::vector<std::unique_ptr<HostDevice>> devices;
  bool shut_down = false;  // touched only by the destroying thread
};

}  // namespace gpuprof::device::host
