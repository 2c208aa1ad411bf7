// CudaDevice: device.h on one NVIDIA GPU, through the driver API (CudaDriver, loaded at run time).
//
// Works in the device's primary context (retained for the device's lifetime) on a private
// non-blocking stream, so gpuprof's copies never order against the application's streams. Every
// driver call runs under ScopedInternalWork (scoped_internal_work.h): the profile and the
// inventory never see it (C1).
//
// - QueryPointer: cuPointerGetAttributes (range start/size, memory type, managed, ordinal).
// - The snapshot arena (B2), one per storage tier, kept until released, grown geometrically
//   (max(need, 2x what it held), in whole chunks):
//     kDevice       one cuMemAlloc block, grown only while `device_reserve_bytes` stays free;
//     kPinnedHost   one cuMemHostAlloc(DEVICEMAP | PORTABLE) block up to `pinned_limit_bytes`,
//                   reached by the kernel through its mapped device address (zero-copy);
//     kPageableHost one anonymous mmap;
//     kFile         one spill file in `spill_directory`, created 0600 with O_EXCL and unlinked at
//                   once (nothing is left behind, even after a crash), read and written with
//                   pread/pwrite.
//   Every tier's saved chunk hashes live on the device (one u64 per slot), where the kernel
//   reads and writes them. MakeRoomFor frees the device tier when an application allocation
//   would not fit beside it.
// - RunChunkOp (B1, B3): one launch of gpuprof_chunk_op (chunk_kernels.cu) over the whole table on
//   the private stream, after one upload of the table; counters and (when asked) the hashes come
//   back in one copy, and the call waits once. The kernel copies device- and pinned-tier chunks
//   itself. Pageable and file tiers are out of the kernel's reach: it hashes their chunks and
//   flags the ones to copy, and the host then copies those (adjacent chunks coalesced into runs)
//   through pinned staging: the slow path, several copies and waits per staging buffer's worth.
// - HashChunks (B1): gpuprof_hash_chunks on the private stream, only the hashes copied back; where
//   the PTX does not load, the same hash (ChunkHashReference) on the host over pinned staging
//   copies, so hashes never depend on which path ran. (RunChunkOp has no host fallback: it is
//   Unavailable when the kernels do not load.)
// - EnumerateModuleVariables: the module variables registered through RegisterModuleVariables
//   (the replay hook resolves them for every module loaded on the device, R7) and not yet
//   unregistered by the module's unload.
// - Synchronize: cuCtxSynchronize on a helper thread (started at the first call, then reused),
//   waited for at most `timeout` (R14). While a drain that a caller gave up on is still running,
//   later calls fail with DeadlineExceeded at once instead of queueing behind it.
// - SmClockKhz: NVML's current SM clock (C3), found by the device's PCI bus id.
//
// Errors: every driver failure is a Status naming the call and the driver's error; nothing
// aborts. Thread-safety: all methods may be called from any thread; one mutex serializes the
// private stream, the staging buffers and the arena.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/cuda/cuda_driver.h"
#include "device/cuda/sm_clock.h"
#include "device/device.h"
#include "device/range.h"

namespace gpuprof::device::cuda {

// The arena's bounds (device.h's ArenaOptions: device_reserve_bytes, pinned_limit_bytes,
// spill_directory) plus the CUDA backend's own buffer.
struct CudaDeviceOptions : ArenaOptions {
  // Pinned staging: the host-hash fallback and the pageable and file tiers' copies.
  std::uint64_t staging_bytes = std::uint64_t{64} << 20;
  // Called on the issuing thread right before each launch of a re-issued timing pass
  // (ReissueRange), with the application's launch it repeats and the pass: a tracer can then tell
  // which launch its kernel record is (the CUPTI layer's RangePassTags). Empty: none.
  std::function<void(std::uint64_t application_launch_id, int pass)> before_reissued_launch;
};

class CudaDevice final : public Device {
 public:
  // `driver` must outlive the device and its drain helper (CudaDriver::Get's table lives for the
  // process). Unavailable/Internal naming the failed call when the device cannot be set up.
  static StatusOr<std::unique_ptr<CudaDevice>> Create(const CudaDriver& driver, int ordinal,
                                                      CudaDeviceOptions options = {});
  // Frees the arena and the buffers, best effort (the driver may be shutting down at exit).
  ~CudaDevice() override;

  int ordinal() const noexcept override { return ordinal_; }
  std::string name() const override { return name_; }
  StatusOr<PointerInfo> QueryPointer(DevicePtr ptr) override;
  Status CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) override;
  Status CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) override;
  Status CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) override;
  Status HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                    std::span<std::uint64_t> out) override;

  // kDevice: what the arena holds plus the free device memory above the reserve; kPinnedHost: the
  // pool's limit; kPageableHost: what it holds plus half the host memory available now
  // (/proc/meminfo MemAvailable); kFile: what it holds plus the spill directory's free space less
  // 1 GiB, 0 without a spill directory.
  std::uint64_t ArenaLimit(StorageTier tier) override;
  Status ReserveArena(const TierBytes& bytes, std::uint64_t chunk_size) override;
  void ReleaseArena() override;
  // Frees the device tier (and its saved hashes) when less than `bytes` + 64 MiB of device memory
  // is free. Cheap when the device tier holds nothing: one atomic load.
  bool MakeRoomFor(std::uint64_t bytes) override;
  ArenaStats arena_stats() override;
  StatusOr<ChunkOpResult> RunChunkOp(ChunkOp op, std::span<const ArenaRegion> regions,
                                     std::uint64_t chunk_size, std::span<std::uint64_t> hashes) override;

  StatusOr<std::vector<ModuleVariable>> EnumerateModuleVariables() override;
  // Range replay (W4, cuda_device_range.cc): the recorded ops on gpuprof's own non-blocking
  // streams, one per application stream (made once, kept), with gpuprof's events in place of the
  // application's; copies into host memory land in pinned scratch; each launch timed by an event
  // pair on its stream. Launches must be CudaIssuableLaunch (cuda_recorded_launch.h).
  StatusOr<RangePassTiming> ReissueRange(std::span<const RangeOp> ops, int pass,
                                         const ReissueOptions& options) override;
  Status Synchronize(std::chrono::nanoseconds timeout) override;

  // Bytes the device-tier arena holds now, without locking: the replay hook asks it at every
  // application allocation to decide whether MakeRoomFor is worth a call.
  std::uint64_t device_arena_bytes() const noexcept {
    return device_arena_bytes_.load(std::memory_order_relaxed);
  }

  // Adds module variables (deduplicated by address) for EnumerateModuleVariables.
  void RegisterModuleVariables(const std::vector<ModuleVariable>& variables);
  // Forgets the variables of an unloaded module (ModuleVariable::module_id), before its memory goes.
  void UnregisterModule(std::uint64_t module_id);

  // The current SM clock in kHz through NVML (C3); 0 when NVML cannot say.
  std::uint32_t SmClockKhz() const noexcept { return sm_clock_ != nullptr ? sm_clock_->ReadKhz() : 0; }

  // Writes `bytes` of scratch device memory, evicting the L2 cache (B7). Bytes: 2x the L2 size.
  Status FlushL2(CUstream stream);

  // The start and end events that time a replay pass (C3), made at the first call and reused: the
  // caller holds the device's replay window, so one pass at a time uses them.
  StatusOr<std::array<CUevent, 2>> PassEvents();

  CUcontext context() const noexcept { return context_; }
  const CudaDriver& driver() const noexcept { return driver_; }

 private:
  // One tier's arena: `capacity` bytes (a multiple of the arena's chunk size), and the saved hash
  // of each of its capacity / chunk_size slots in device memory.
  struct Arena {
    std::uint64_t capacity = 0;
    CUdeviceptr device = 0;        // kDevice: the block; kPinnedHost: the block's mapped address
    void* host = nullptr;          // kPinnedHost: cuMemHostAlloc; kPageableHost: mmap
    int fd = -1;                   // kFile: the (unlinked) spill file
    CUdeviceptr saved_hashes = 0;  // capacity / chunk_size u64
  };
  // A region of a RunChunkOp table whose copy the host makes (pageable and file tiers).
  struct HostCopyRegion {
    DevicePtr base = 0;
    std::uint64_t size = 0;
    StorageTier tier = StorageTier::kPageableHost;
    std::uint64_t arena_offset = 0;
    std::uint64_t first_chunk = 0;  // in the table
  };
  // Drain requests for the helper thread; shared with it, so it may outlive the device.
  struct DrainState;
  // ReissueRange's streams, events and scratch (cuda_device_internal.h).
  struct RangeResources;
  // Frees them, best effort (the destructor, with the context current).
  void ReleaseRangeResources() noexcept;

  CudaDevice(const CudaDriver& driver, int ordinal, CudaDeviceOptions options);
  Status Init();
  Status Copy(const char* what, CUresult result);
  Status LoadChunkKernels();  // under mu_
  // Device scratch of at least `bytes` for HashChunks' output; under mu_.
  Status EnsureKernelOutput(std::uint64_t bytes);
  // RunChunkOp's table and results buffers (device and pinned, one layout) of at least `bytes`;
  // under mu_.
  Status EnsureOpBuffers(std::uint64_t bytes);
  // The arena (all under mu_, with the context current).
  std::uint64_t ArenaLimitLocked(StorageTier tier);
  Status GrowArena(StorageTier tier, std::uint64_t bytes);
  bool FreeArena(StorageTier tier);  // true when it held something; counts nothing
  bool FreeArenas();                 // every tier; true when one held something; counts nothing
  Status CreateSpillFile(int* fd);
  // The pageable and file tiers' part of RunChunkOp, after the kernel: copies the chunks `flags`
  // marks (every chunk for kCapture and kRestoreAll; `flags` is indexed by table chunk) between
  // the device and the arena through pinned staging, and counts them into `result`.
  Status CopyHostTierChunks(ChunkOp op, std::span<const HostCopyRegion> regions, const std::uint8_t* flags,
                            std::uint64_t chunk_size, ChunkOpResult* result);

  const CudaDriver& driver_;
  const int ordinal_;
  const CudaDeviceOptions options_;
  std::string name_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::mutex mu_;  // serializes the private stream, the staging and op buffers and the arena
  void* staging_ = nullptr;
  CUfunction hash_kernel_ = nullptr;  // guarded by mu_
  CUfunction op_kernel_ = nullptr;    // guarded by mu_
  bool chunk_kernels_failed_ = false;
  std::uint64_t hash_grid_limit_ = 1;  // SMs x resident blocks of each kernel
  std::uint64_t op_grid_limit_ = 1;
  CUdeviceptr hashes_ = 0;  // HashChunks' output, grown as needed
  std::uint64_t hashes_capacity_ = 0;
  CUdeviceptr op_device_ = 0;  // RunChunkOp: table, counters, hashes, flags (guarded by mu_)
  void* op_host_ = nullptr;    // its pinned mirror
  std::uint64_t op_capacity_ = 0;
  std::array<Arena, kStorageTierCount> arenas_;       // by StorageTier; guarded by mu_
  std::uint64_t arena_chunk_size_ = 0;                // guarded by mu_; 0 before the first ReserveArena
  ArenaStats arena_stats_;                            // guarded by mu_ (capacity filled in when read)
  std::atomic<std::uint64_t> device_arena_bytes_{0};  // arenas_[kDevice].capacity
  CUdeviceptr l2_scratch_ = 0;
  std::uint64_t l2_scratch_bytes_ = 0;
  std::unique_ptr<SmClock> sm_clock_;
  std::mutex events_mu_;
  std::array<CUevent, 2> pass_events_{};  // guarded by events_mu_; null until PassEvents
  std::mutex variables_mu_;
  std::vector<ModuleVariable> variables_;  // guarded by variables_mu_
  std::shared_ptr<DrainState> drain_;
  std::unique_ptr<RangeResources> range_;
};

}  // namespace gpuprof::device::cuda
