#include "device/cuda/cuda_device.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>

#include "base/clock.h"
#include "base/errno_text.h"
#include "base/logging.h"
#include "device/cuda/chunk_hash_reference.h"
#include "device/cuda/chunk_kernels_ptx.h"
#include "device/cuda/chunk_op_abi.h"
#include "device/cuda/cuda_device_internal.h"
#include "device/cuda/scoped_internal_work.h"

namespace gpuprof::device::cuda {
namespace {

// The table layout RunChunkOp writes and gpuprof_chunk_op reads (chunk_op_abi.h).
static_assert(sizeof(ChunkOpRegion) == 48 && alignof(ChunkOpRegion) == 8, "ChunkOpRegion's layout changed");
static_assert(offsetof(ChunkOpRegion, first_chunk) == 32 && offsetof(ChunkOpRegion, access) == 40,
              "ChunkOpRegion's layout changed");
static_assert(sizeof(CUdeviceptr) == sizeof(unsigned long long), "device pointers are 64-bit");

// MakeRoomFor frees the device tier unless the application's allocation leaves at least this much
// free beside it: the driver and the allocation's own rounding need some room.
constexpr std::uint64_t kMakeRoomSlackBytes = std::uint64_t{64} << 20;
// The file tier leaves this much of its filesystem free.
constexpr std::uint64_t kSpillFreeMarginBytes = std::uint64_t{1} << 30;
// Pinned mirror of RunChunkOp's table and results: allocated in multiples of this.
constexpr std::uint64_t kOpBufferGranule = std::uint64_t{64} << 10;
// cuCtxSynchronize is waited for at most this long, whatever the caller asks (and the deadline
// arithmetic of a wait of nanoseconds::max() would overflow).
constexpr std::chrono::hours kLongestDrainWait{24};

// Host memory the kernel could still hand out without swapping: /proc/meminfo's MemAvailable,
// else the free pages. 0 when neither can be read.
std::uint64_t HostMemoryAvailable() noexcept {
  if (std::FILE* meminfo = std::fopen("/proc/meminfo", "re"); meminfo != nullptr) {
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof(line), meminfo) != nullptr) {
      found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    }
    std::fclose(meminfo);
    if (found) return static_cast<std::uint64_t>(kib) * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

// Bytes an unprivileged writer may still put into the filesystem holding `directory`; 0 when it
// cannot be asked.
std::uint64_t FileSpaceAvailable(const std::string& directory) noexcept {
  struct statvfs fs {};
  if (statvfs(directory.c_str(), &fs) != 0) return 0;
  return static_cast<std::uint64_t>(fs.f_bavail) * static_cast<std::uint64_t>(fs.f_frsize);
}

ChunkOpCode KernelOpCode(ChunkOp op) noexcept {
  switch (op) {
    case ChunkOp::kCapture: return kChunkOpCapture;
    case ChunkOp::kRefreshChanged: return kChunkOpRefreshChanged;
    case ChunkOp::kRestoreChanged: return kChunkOpRestoreChanged;
    case ChunkOp::kRestoreDiffering: return kChunkOpRestoreDiffering;
    case ChunkOp::kRestoreAll: return kChunkOpRestoreAll;
    case ChunkOp::kHash: return kChunkOpHash;
  }
  return kChunkOpHash;
}

// The ops whose host-tier chunks the kernel chooses (the others copy every chunk, or none).
bool OpChooses(ChunkOp op) noexcept {
  return op == ChunkOp::kRefreshChanged || op == ChunkOp::kRestoreChanged || op == ChunkOp::kRestoreDiffering;
}

}  // namespace

// Requests from Synchronize to the helper thread that calls cuCtxSynchronize. A drain started
// after request r was made covers it: `finished >= r` means every piece of work queued before
// request r was made has completed.
struct CudaDevice::DrainState {
  const CudaDriver* driver = nullptr;
  CUcontext context = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool thread_started = false;     // guarded by mu, as is everything below
  bool stop = false;               // the device is gone: the helper exits after its current drain
  std::uint64_t requested = 0;     // requests made
  std::uint64_t started = 0;       // requests covered by the drain in progress (or the last one)
  std::uint64_t finished = 0;      // requests covered by finished drains
  CUresult result = CUDA_SUCCESS;  // of the last finished drain
  bool abandoned = false;          // a caller stopped waiting for a drain that has not finished
  std::int64_t drain_started_ns = 0;

  static void Run(const std::shared_ptr<DrainState>& state) {
    DrainState& s = *state;
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
      s.cv.wait(lock, [&s] { return s.stop || s.requested > s.started; });
      if (s.stop) return;
      const std::uint64_t covers = s.requested;
      s.started = covers;
      s.drain_started_ns = base::MonotonicNowNs();
      lock.unlock();
      CUresult result = CUDA_SUCCESS;
      {
        InternalScope scope(*s.driver, s.context);
        result = scope.ok() ? s.driver->CtxSynchronize() : CUDA_ERROR_INVALID_CONTEXT;
      }
      lock.lock();
      s.finished = covers;
      s.result = result;
      s.abandoned = false;
      s.cv.notify_all();
    }
  }
};

CudaDevice::CudaDevice(const CudaDriver& driver, int ordinal, CudaDeviceOptions options)
    : driver_(driver),
      ordinal_(ordinal),
      options_(std::move(options)),
      drain_(std::make_shared<DrainState>()) {
  drain_->driver = &driver_;
}

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create(const CudaDriver& driver, int ordinal,
                                                         CudaDeviceOptions options) {
  std::unique_ptr<CudaDevice> device(new CudaDevice(driver, ordinal, std::move(options)));
  GPUPROF_RETURN_IF_ERROR(device->Init().WithContext("CUDA device " + std::to_string(ordinal)));
  return device;
}

Status CudaDevice::Init() {
  ScopedInternalWork internal;
  if (options_.staging_bytes == 0) return InvalidArgumentError("CudaDeviceOptions::staging_bytes is 0");
  GPUPROF_RETURN_IF_ERROR(driver_.Check("cuDeviceGet", driver_.DeviceGet(&device_, ordinal_)));
  char name[256] = {};
  if (driver_.DeviceGetName(name, sizeof(name) - 1, device_) == CUDA_SUCCESS) name_ = name;
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuDevicePrimaryCtxRetain", driver_.DevicePrimaryCtxRetain(&context_, device_)));
  drain_->context = context_;
  char pci[64] = {};
  sm_clock_ = std::make_unique<SmClock>(
      driver_.DeviceGetPCIBusId(pci, sizeof(pci) - 1, device_) == CUDA_SUCCESS ? std::string(pci)
                                                                               : std::string());
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return InternalError("cuCtxPushCurrent failed");
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuStreamCreate", driver_.StreamCreate(&stream_, CU_STREAM_NON_BLOCKING)));
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuMemHostAlloc(staging)", driver_.MemHostAlloc(&staging_, options_.staging_bytes, 0)));
  int l2 = 0;
  if (driver_.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device_) == CUDA_SUCCESS && l2 > 0) {
    l2_scratch_bytes_ = std::uint64_t{2} * static_cast<std::uint64_t>(l2);
    if (driver_.MemAlloc(&l2_scratch_, l2_scratch_bytes_) != CUDA_SUCCESS) {
      l2_scratch_ = 0;
      l2_scratch_bytes_ = 0;
    }
  }
  return OkStatus();
}

CudaDevice::~CudaDevice() {
  {
    // A helper stuck in cuCtxSynchronize exits when the driver returns; it holds its own state.
    std::lock_guard<std::mutex> lock(drain_->mu);
    drain_->stop = true;
    drain_->cv.notify_all();
  }
  // The driver may already be shutting down at process exit: best effort, no checks.
  if (context_ == nullptr) return;
  InternalScope scope(driver_, context_);
  std::lock_guard<std::mutex> lock(mu_);
  // Even without the context: the pageable mapping and the spill file are the host's.
  for (std::size_t tier = 0; tier < kStorageTierCount; ++tier) FreeArena(static_cast<StorageTier>(tier));
  if (!scope.ok()) return;
  if (l2_scratch_ != 0) driver_.MemFree(l2_scratch_);
  for (CUevent event : pass_events_) {
    if (event != nullptr) driver_.EventDestroy(event);
  }
  if (hashes_ != 0) driver_.MemFree(hashes_);
  if (op_device_ != 0) driver_.MemFree(op_device_);
  if (op_host_ != nullptr) driver_.MemFreeHost(op_host_);
  if (staging_ != nullptr) driver_.MemFreeHost(staging_);
}

StatusOr<PointerInfo> CudaDevice::QueryPointer(DevicePtr ptr) {
  InternalScope scope(driver_, context_);
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned int memory_type = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  unsigned int managed = 0;
  int owner = -1;
  void* values[] = {&memory_type, &start, &size, &managed, &owner};
  CUresult result = driver_.PointerGetAttributes(5, attributes, values, static_cast<CUdeviceptr>(ptr));
  if (result != CUDA_SUCCESS) return NotFoundError(driver_.Error("cuPointerGetAttributes", result));
  if (memory_type == 0) return NotFoundError("no allocation contains address " + std::to_string(ptr));
  PointerInfo info;
  info.base = start;
  info.size = size;
  info.owner_device = owner;
  if (managed != 0) {
    info.kind = MemoryKind::kManaged;
  } else if (memory_type == CU_MEMORYTYPE_DEVICE) {
    info.kind = MemoryKind::kDeviceLocal;
  } else if (memory_type == CU_MEMORYTYPE_HOST) {
    info.kind = MemoryKind::kHostMapped;
  } else {
    info.kind = MemoryKind::kUnknown;
  }
  return info;
}

Status CudaDevice::Copy(const char* what, CUresult result) {
  GPUPROF_RETURN_IF_ERROR(driver_.Check(what, result));
  return driver_.Check("cuStreamSynchronize", driver_.StreamSynchronize(stream_));
}

Status CudaDevice::CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return Copy("cuMemcpyDtoHAsync", driver_.MemcpyDtoHAsync(dst, src, bytes, stream_));
}

Status CudaDevice::CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return Copy("cuMemcpyHtoDAsync", driver_.MemcpyHtoDAsync(dst, src, bytes, stream_));
}

Status CudaDevice::CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return Copy("cuMemcpyDtoDAsync", driver_.MemcpyDtoDAsync(dst, src, bytes, stream_));
}

Status CudaDevice::LoadChunkKernels() {
  if (hash_kernel_ != nullptr && op_kernel_ != nullptr) return OkStatus();
  if (chunk_kernels_failed_) return UnavailableError("the chunk kernels did not load earlier");
  CUmodule module = nullptr;
  CUresult result = driver_.ModuleLoadData(&module, kChunkKernelsPtx);
  if (result == CUDA_SUCCESS)
    result = driver_.ModuleGetFunction(&hash_kernel_, module, kHashChunksKernelName);
  if (result == CUDA_SUCCESS) result = driver_.ModuleGetFunction(&op_kernel_, module, kChunkOpKernelName);
  if (result != CUDA_SUCCESS) {
    chunk_kernels_failed_ = true;
    hash_kernel_ = nullptr;
    op_kernel_ = nullptr;
    return UnavailableError(driver_.Error("loading the chunk kernels", result));
  }
  int sms = 0;
  if (driver_.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_) != CUDA_SUCCESS ||
      sms <= 0) {
    sms = 1;
  }
  // The launch contract's grid: SMs x resident blocks (chunk_kernels.cu). The kernels' launch
  // bounds ask for 8 and 4 resident blocks; those are the fallbacks when the driver cannot say.
  auto resident = [&](CUfunction kernel, int fallback) {
    int blocks = 0;
    if (driver_.OccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, kernel, static_cast<int>(kChunkKernelBlockSize), 0) != CUDA_SUCCESS ||
        blocks <= 0) {
      blocks = fallback;
    }
    return static_cast<std::uint64_t>(sms) * static_cast<std::uint64_t>(blocks);
  };
  hash_grid_limit_ = resident(hash_kernel_, 8);
  op_grid_limit_ = resident(op_kernel_, 4);
  return OkStatus();
}

Status CudaDevice::HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                              std::span<std::uint64_t> out) {
  if (chunk_size == 0) return InvalidArgumentError("HashChunks: chunk_size is 0");
  const std::uint64_t chunks = bytes == 0 ? 0 : ChunksOf(bytes, chunk_size);
  if (out.size() < chunks) return InvalidArgumentError("HashChunks: output span too small");
  if (chunks == 0) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  // B1: hashed on the device (chunk_kernels.cu), only the hashes cross to the host.
  if (Status loaded = LoadChunkKernels(); loaded.ok()) {
    const std::uint64_t hash_bytes = chunks * sizeof(std::uint64_t);
    if (EnsureKernelOutput(hash_bytes).ok()) {
      CUdeviceptr source = src;
      unsigned long long length = bytes;
      unsigned long long chunk = chunk_size;
      CUdeviceptr target = hashes_;
      void* params[] = {&source, &length, &chunk, &target};
      const auto grid = static_cast<unsigned>(std::min(chunks, hash_grid_limit_));
      CUresult launched = driver_.LaunchKernel(hash_kernel_, grid, 1, 1, kChunkKernelBlockSize, 1, 1, 0,
                                               stream_, params, nullptr);
      if (launched == CUDA_SUCCESS) {
        return Copy("cuMemcpyDtoHAsync(hashes)",
                    driver_.MemcpyDtoHAsync(out.data(), hashes_, hash_bytes, stream_));
      }
      GPUPROF_LOG(kWarning) << driver_.Error("launching the chunk-hash kernel", launched)
                            << "; hashing on the host instead";
    }
  }
  // Fallback: chunks copied to pinned staging and hashed on the host.
  const std::uint64_t per_fill = std::max<std::uint64_t>(1, options_.staging_bytes / chunk_size) * chunk_size;
  std::size_t chunk = 0;
  for (std::uint64_t offset = 0; offset < bytes; offset += per_fill) {
    const std::uint64_t n = std::min(per_fill, bytes - offset);
    if (n > options_.staging_bytes)
      return InvalidArgumentError("HashChunks: chunk larger than the staging buffer");
    GPUPROF_RETURN_IF_ERROR(
        Copy("cuMemcpyDtoHAsync(hash)", driver_.MemcpyDtoHAsync(staging_, src + offset, n, stream_)));
    for (std::uint64_t at = 0; at < n; at += chunk_size, ++chunk) {
      out[chunk] = ChunkHashReference(std::span<const std::byte>(static_cast<const std::byte*>(staging_) + at,
                                                                 std::min(chunk_size, n - at)));
    }
  }
  return OkStatus();
}

Status CudaDevice::EnsureKernelOutput(std::uint64_t bytes) {
  if (bytes <= hashes_capacity_) return OkStatus();
  if (hashes_ != 0) driver_.MemFree(hashes_);
  hashes_ = 0;
  hashes_capacity_ = 0;
  CUdeviceptr grown = 0;
  GPUPROF_RETURN_IF_ERROR(driver_.Check("cuMemAlloc(chunk kernel output)", driver_.MemAlloc(&grown, bytes)));
  hashes_ = grown;
  hashes_capacity_ = bytes;
  return OkStatus();
}

Status CudaDevice::EnsureOpBuffers(std::uint64_t bytes) {
  if (bytes <= op_capacity_) return OkStatus();
  const std::uint64_t doubled =
      op_capacity_ <= std::numeric_limits<std::uint64_t>::max() / 2 ? 2 * op_capacity_ : 0;
  std::uint64_t capacity = 0;
  if (!RoundUp(std::max(bytes, doubled), kOpBufferGranule, &capacity)) {
    return ResourceExhaustedError("RunChunkOp: a " + std::to_string(bytes) +
                                  "-byte table does not fit in memory");
  }
  // Nothing is in flight on the private stream here: every operation waits for its work before
  // it returns (or, failing, before it lets go of mu_).
  if (op_device_ != 0) driver_.MemFree(op_device_);
  if (op_host_ != nullptr) driver_.MemFreeHost(op_host_);
  op_device_ = 0;
  op_host_ = nullptr;
  op_capacity_ = 0;
  CUdeviceptr device = 0;
  if (CUresult r = driver_.MemAlloc(&device, capacity); r != CUDA_SUCCESS) {
    return ResourceExhaustedError(driver_.Error("cuMemAlloc(RunChunkOp table)", r) + " for " +
                                  std::to_string(capacity) + " bytes");
  }
  void* host = nullptr;
  if (CUresult r = driver_.MemHostAlloc(&host, capacity, 0); r != CUDA_SUCCESS) {
    driver_.MemFree(device);
    return ResourceExhaustedError(driver_.Error("cuMemHostAlloc(RunChunkOp table)", r) + " for " +
                                  std::to_string(capacity) + " bytes");
  }
  op_device_ = device;
  op_host_ = host;
  op_capacity_ = capacity;
  return OkStatus();
}

// ---- the snapshot arena ----

std::uint64_t CudaDevice::ArenaLimit(StorageTier tier) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return ArenaLimitLocked(tier);
}

std::uint64_t CudaDevice::ArenaLimitLocked(StorageTier tier) {
  if (TierIndex(tier) >= kStorageTierCount) return 0;
  const std::uint64_t held = arenas_[TierIndex(tier)].capacity;
  switch (tier) {
    case StorageTier::kDevice: {
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      if (driver_.MemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS) return held;
      const std::uint64_t above_reserve =
          free_bytes > options_.device_reserve_bytes ? free_bytes - options_.device_reserve_bytes : 0;
      return SaturatingAdd(held, above_reserve);
    }
    case StorageTier::kPinnedHost: return std::max(held, options_.pinned_limit_bytes);
    case StorageTier::kPageableHost: return SaturatingAdd(held, HostMemoryAvailable() / 2);
    case StorageTier::kFile: {
      if (options_.spill_directory.empty()) return 0;
      const std::uint64_t space = FileSpaceAvailable(options_.spill_directory);
      return SaturatingAdd(held, space > kSpillFreeMarginBytes ? space - kSpillFreeMarginBytes : 0);
    }
  }
  return 0;
}

Status CudaDevice::ReserveArena(const TierBytes& bytes, std::uint64_t chunk_size) {
  if (chunk_size == 0) return InvalidArgumentError("ReserveArena: chunk_size is 0");
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return InternalError("ReserveArena: cuCtxPushCurrent failed");
  if (chunk_size != arena_chunk_size_) {
    // Slots change size: every saved hash is void. Start over in the new chunk size.
    bool freed = false;
    for (std::size_t tier = 0; tier < kStorageTierCount; ++tier) {
      freed = FreeArena(static_cast<StorageTier>(tier)) || freed;
    }
    if (freed) ++arena_stats_.generation;
    arena_chunk_size_ = chunk_size;
  }
  for (std::size_t tier = 0; tier < kStorageTierCount; ++tier) {
    if (bytes[tier] > arenas_[tier].capacity) {
      GPUPROF_RETURN_IF_ERROR(GrowArena(static_cast<StorageTier>(tier), bytes[tier]));
    }
  }
  return OkStatus();
}

Status CudaDevice::GrowArena(StorageTier tier, std::uint64_t bytes) {
  const std::uint64_t chunk = arena_chunk_size_;
  Arena& arena = arenas_[TierIndex(tier)];
  const std::string what = TierName(tier) + "-tier arena";
  std::uint64_t need = 0;
  if (!RoundUp(bytes, chunk, &need) || need / chunk > std::numeric_limits<std::uint64_t>::max() / 8) {
    return ResourceExhaustedError(what + ": " + std::to_string(bytes) + " bytes cannot be addressed");
  }
  const std::uint64_t old = arena.capacity;
  // Geometric growth, in whole chunks (old is a multiple of chunk, so 2 * old is too).
  std::uint64_t grown = std::max(need, old <= std::numeric_limits<std::uint64_t>::max() / 2 ? 2 * old : need);
  const std::int64_t start_ns = base::MonotonicNowNs();

  switch (tier) {
    case StorageTier::kDevice: {
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      if (CUresult r = driver_.MemGetInfo(&free_bytes, &total_bytes); r != CUDA_SUCCESS) {
        return InternalError(driver_.Error("cuMemGetInfo", r) + " (growing the " + what + ")");
      }
      // The old block and its hashes are freed first: they count as free for the new ones.
      const std::uint64_t available =
          SaturatingAdd(free_bytes, old == 0 ? 0 : old + old / chunk * sizeof(std::uint64_t));
      const std::uint64_t usable =
          available > options_.device_reserve_bytes ? available - options_.device_reserve_bytes : 0;
      // A capacity c costs c bytes plus c / chunk saved hashes.
      const std::uint64_t most = usable / (chunk + sizeof(std::uint64_t)) * chunk;
      if (need > most) {
        return ResourceExhaustedError(what + ": " + std::to_string(need) + " bytes needed, " +
                                      std::to_string(most) + " available above the " +
                                      std::to_string(options_.device_reserve_bytes) + "-byte device reserve");
      }
      grown = std::min(grown, most);
      if (FreeArena(tier)) ++arena_stats_.generation;
      CUdeviceptr block = 0;
      CUresult r = driver_.MemAlloc(&block, grown);
      if (r != CUDA_SUCCESS && grown > need) {
        grown = need;
        r = driver_.MemAlloc(&block, grown);
      }
      if (r != CUDA_SUCCESS) {
        return ResourceExhaustedError(driver_.Error("cuMemAlloc", r) + " for the " + what + " (" +
                                      std::to_string(grown) + " bytes)");
      }
      arena.device = block;
      break;
    }
    case StorageTier::kPinnedHost: {
      const std::uint64_t limit = RoundDown(options_.pinned_limit_bytes, chunk);
      if (need > limit) {
        return ResourceExhaustedError(what + ": " + std::to_string(need) +
                                      " bytes needed, the pinned pool's limit is " +
                                      std::to_string(options_.pinned_limit_bytes));
      }
      grown = std::min(grown, limit);
      if (FreeArena(tier)) ++arena_stats_.generation;
      // DEVICEMAP: the chunk kernel reads and writes it through its device address (zero-copy);
      // PORTABLE: pinned for every context, not only the primary one that allocates it.
      constexpr unsigned kFlags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
      void* host = nullptr;
      CUresult r = driver_.MemHostAlloc(&host, grown, kFlags);
      if (r != CUDA_SUCCESS && grown > need) {
        grown = need;
        r = driver_.MemHostAlloc(&host, grown, kFlags);
      }
      if (r != CUDA_SUCCESS) {
        return ResourceExhaustedError(driver_.Error("cuMemHostAlloc(DEVICEMAP | PORTABLE)", r) + " for the " +
                                      what + " (" + std::to_string(grown) + " bytes)");
      }
      CUdeviceptr mapped = 0;
      if (r = driver_.MemHostGetDevicePointer(&mapped, host, 0); r != CUDA_SUCCESS) {
        driver_.MemFreeHost(host);
        return InternalError(driver_.Error("cuMemHostGetDevicePointer", r) + " for the " + what);
      }
      arena.host = host;
      arena.device = mapped;
      break;
    }
    case StorageTier::kPageableHost: {
      const std::uint64_t limit = ArenaLimitLocked(tier);
      if (need > limit) {
        return ResourceExhaustedError(what + ": " + std::to_string(need) + " bytes needed, about " +
                                      std::to_string(limit) + " available");
      }
      grown = std::min(grown, std::max(need, RoundDown(limit, chunk)));
      if (FreeArena(tier)) ++arena_stats_.generation;
      // Anonymous pages: zero and untouched until a capture writes them, and returned to the
      // system whole by munmap.
      void* host = mmap(nullptr, grown, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (host == MAP_FAILED && grown > need) {
        grown = need;
        host = mmap(nullptr, grown, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      }
      if (host == MAP_FAILED) {
        return ResourceExhaustedError(what + ": mmap of " + std::to_string(grown) +
                                      " bytes failed: " + base::ErrnoText(errno));
      }
      arena.host = host;
      break;
    }
    case StorageTier::kFile: {
      if (options_.spill_directory.empty()) {
        return ResourceExhaustedError(what + ": no spill directory is configured");
      }
      const std::uint64_t limit = ArenaLimitLocked(tier);
      if (need > limit) {
        return ResourceExhaustedError(what + ": " + std::to_string(need) + " bytes needed, " +
                                      std::to_string(limit) + " available in " + options_.spill_directory);
      }
      grown = std::min(grown, std::max(need, RoundDown(limit, chunk)));
      // The file is kept and only lengthened; its saved hashes are made anew, so what it held is
      // forgotten all the same.
      int fd = arena.fd;
      arena.fd = -1;
      if (FreeArena(tier)) ++arena_stats_.generation;
      if (fd < 0) GPUPROF_RETURN_IF_ERROR(CreateSpillFile(&fd));
      int truncated = ftruncate(fd, static_cast<off_t>(grown));
      if (truncated != 0 && grown > need) {
        grown = need;
        truncated = ftruncate(fd, static_cast<off_t>(grown));
      }
      if (truncated != 0) {
        const int err = errno;
        close(fd);
        return ResourceExhaustedError(what + ": cannot make the spill file " + std::to_string(grown) +
                                      " bytes long: " + base::ErrnoText(err));
      }
      arena.fd = fd;
      break;
    }
  }

  // Every tier's saved hashes, one per slot, on the device (the kernel compares and updates them).
  const std::uint64_t hash_bytes = grown / chunk * sizeof(std::uint64_t);
  CUdeviceptr saved = 0;
  CUresult r = driver_.MemAlloc(&saved, hash_bytes);
  if (r == CUDA_SUCCESS) r = driver_.MemsetD8Async(saved, 0, hash_bytes, stream_);
  if (r != CUDA_SUCCESS) {
    if (saved != 0) driver_.MemFree(saved);
    arena.capacity = grown;  // so that FreeArena releases the block just made
    FreeArena(tier);
    ++arena_stats_.generation;
    return ResourceExhaustedError(driver_.Error("cuMemAlloc/cuMemsetD8Async", r) + " for the " + what +
                                  "'s " + std::to_string(hash_bytes) + " bytes of saved hashes");
  }
  arena.saved_hashes = saved;
  arena.capacity = grown;
  if (tier == StorageTier::kDevice) device_arena_bytes_.store(grown, std::memory_order_relaxed);
  ++arena_stats_.allocations;
  const auto took_ns =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, base::MonotonicNowNs() - start_ns));
  arena_stats_.allocation_ns += took_ns;
  if (tier != StorageTier::kDevice) {
    // Host arenas are slow to make (pinning 8 GiB takes seconds) and kept for the process: say so
    // once per growth, so a first replayed launch's time is not a mystery.
    GPUPROF_LOG(kInfo) << "replay: the " << TierName(tier) << " snapshot arena of device " << ordinal_
                       << " grew to " << (grown >> 20) << " MiB in " << took_ns / 1000000
                       << " ms (a one-time cost: it is kept and reused by later replayed launches)";
  }
  return OkStatus();
}

Status CudaDevice::CreateSpillFile(int* fd) {
  // mkostemp opens with O_RDWR | O_CREAT | O_EXCL and mode 0600: a fresh file nobody else can read,
  // never one that an attacker placed there. It is unlinked at once, so it vanishes with the
  // last descriptor, at exit or crash alike.
  std::string path = options_.spill_directory;
  if (path.back() != '/') path += '/';
  path += "gpuprof-spill-" + std::to_string(getpid()) + "-" + std::to_string(ordinal_) + "-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int created = mkostemp(name.data(), O_CLOEXEC);
  if (created < 0) {
    return ResourceExhaustedError("file-tier arena: cannot create a spill file in " +
                                  options_.spill_directory + ": " + base::ErrnoText(errno));
  }
  if (unlink(name.data()) != 0) {
    const int err = errno;
    close(created);
    return InternalError(std::string("file-tier arena: cannot unlink the spill file ") + name.data() + ": " +
                         base::ErrnoText(err));
  }
  *fd = created;
  return OkStatus();
}

bool CudaDevice::FreeArena(StorageTier tier) {
  Arena& arena = arenas_[TierIndex(tier)];
  const bool held = arena.capacity != 0 || arena.fd >= 0;
  if (arena.saved_hashes != 0) driver_.MemFree(arena.saved_hashes);
  switch (tier) {
    case StorageTier::kDevice:
      if (arena.device != 0) driver_.MemFree(arena.device);
      device_arena_bytes_.store(0, std::memory_order_relaxed);
      break;
    case StorageTier::kPinnedHost:
      if (arena.host != nullptr) driver_.MemFreeHost(arena.host);
      break;
    case StorageTier::kPageableHost:
      if (arena.host != nullptr) munmap(arena.host, arena.capacity);
      break;
    case StorageTier::kFile:
      if (arena.fd >= 0) close(arena.fd);
      break;
  }
  arena = Arena{};
  return held;
}

void CudaDevice::ReleaseArena() {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  bool freed = false;
  for (std::size_t tier = 0; tier < kStorageTierCount; ++tier) {
    freed = FreeArena(static_cast<StorageTier>(tier)) || freed;
  }
  if (freed) {
    ++arena_stats_.generation;
    ++arena_stats_.releases;
  }
}

bool CudaDevice::MakeRoomFor(std::uint64_t bytes) {
  if (device_arena_bytes() == 0) return false;  // the common case: one load, no lock
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (arenas_[TierIndex(StorageTier::kDevice)].capacity == 0) return false;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (driver_.MemGetInfo(&free_bytes, &total_bytes) != CUDA_SUCCESS) return false;
  if (free_bytes >= SaturatingAdd(bytes, kMakeRoomSlackBytes)) return false;
  const std::uint64_t released = arenas_[TierIndex(StorageTier::kDevice)].capacity;
  FreeArena(StorageTier::kDevice);
  ++arena_stats_.generation;
  ++arena_stats_.releases;
  GPUPROF_LOG(kInfo) << "device " << ordinal_ << ": released the " << released
                     << "-byte device-tier snapshot arena for an application allocation of " << bytes
                     << " bytes";
  return true;
}

ArenaStats CudaDevice::arena_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  ArenaStats stats = arena_stats_;
  for (std::size_t tier = 0; tier < kStorageTierCount; ++tier) stats.capacity[tier] = arenas_[tier].capacity;
  return stats;
}

// ---- RunChunkOp ----

StatusOr<ChunkOpResult> CudaDevice::RunChunkOp(ChunkOp op, std::span<const ArenaRegion> regions,
                                               std::uint64_t chunk_size, std::span<std::uint64_t> hashes) {
  const std::string what = "RunChunkOp(" + std::string(ChunkOpName(op)) + ")";
  if (chunk_size == 0) return InvalidArgumentError(what + ": chunk_size is 0");
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return InternalError(what + ": cuCtxPushCurrent failed");

  // Check the table and count its chunks (chunk_op_abi.h's first_chunk), before anything runs.
  const bool any_bytes =
      std::any_of(regions.begin(), regions.end(), [](const ArenaRegion& r) { return r.size != 0; });
  if (any_bytes && chunk_size != arena_chunk_size_) {
    return FailedPreconditionError(what + ": chunk size " + std::to_string(chunk_size) + ", the arena's is " +
                                   std::to_string(arena_chunk_size_) + " (ReserveArena first)");
  }
  std::uint64_t total_chunks = 0;
  std::uint64_t entries = 0;
  std::vector<HostCopyRegion> host_regions;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const ArenaRegion& region = regions[i];
    if (region.size == 0) continue;
    // Only a failure pays for the message (a table may have thousands of regions).
    auto where = [&] {
      return what + ": region " + std::to_string(i) + " (" + std::to_string(region.size) + " bytes at " +
             std::to_string(region.base) + ")";
    };
    if (TierIndex(region.tier) >= kStorageTierCount)
      return InvalidArgumentError(where() + ": no such storage tier");
    const Arena& arena = arenas_[TierIndex(region.tier)];
    if (region.arena_offset % chunk_size != 0) {
      return InvalidArgumentError(where() + ": arena offset " + std::to_string(region.arena_offset) +
                                  " is not a multiple of the chunk size");
    }
    if (region.arena_offset > arena.capacity || region.size > arena.capacity - region.arena_offset) {
      return FailedPreconditionError(where() + ": arena offset " + std::to_string(region.arena_offset) +
                                     " is past the end of the " + TierName(region.tier) + "-tier arena (" +
                                     std::to_string(arena.capacity) + " bytes; released or never reserved?)");
    }
    if (region.base > std::numeric_limits<std::uint64_t>::max() - region.size) {
      return InvalidArgumentError(where() + ": the region wraps around the address space");
    }
    if (region.tier == StorageTier::kPageableHost || region.tier == StorageTier::kFile) {
      host_regions.push_back({region.base, region.size, region.tier, region.arena_offset, total_chunks});
    }
    total_chunks += ChunksOf(region.size, chunk_size);
    ++entries;
  }
  if (!hashes.empty() && hashes.size() != total_chunks) {
    return InvalidArgumentError(what + ": " + std::to_string(hashes.size()) + " hashes for a table of " +
                                std::to_string(total_chunks) + " chunks");
  }
  ChunkOpResult result;
  result.chunks = total_chunks;
  if (total_chunks == 0) return result;
  if (entries > std::numeric_limits<unsigned>::max()) {
    return InvalidArgumentError(what + ": " + std::to_string(entries) + " regions in one table");
  }
  GPUPROF_RETURN_IF_ERROR(LoadChunkKernels().WithContext(what));

  // One buffer, mirrored on the device and in pinned memory:
  //   [table | counters (chunk_op_abi.h) | hashes (when asked) | flags (when host tiers choose)]
  // table and counters go up in one copy; counters and hashes come back in one, flags in another.
  const bool want_hashes = !hashes.empty();
  const bool want_flags = !host_regions.empty() && OpChooses(op);
  const std::uint64_t table_offset = 0;
  const std::uint64_t counters_offset = entries * sizeof(ChunkOpRegion);
  const std::uint64_t hashes_offset = counters_offset + kChunkOpCounters * sizeof(std::uint64_t);
  const std::uint64_t flags_offset = hashes_offset + (want_hashes ? total_chunks * sizeof(std::uint64_t) : 0);
  const std::uint64_t buffer_bytes = flags_offset + (want_flags ? total_chunks : 0);
  GPUPROF_RETURN_IF_ERROR(EnsureOpBuffers(buffer_bytes).WithContext(what));

  auto* host = static_cast<unsigned char*>(op_host_);
  auto* table = reinterpret_cast<ChunkOpRegion*>(host + table_offset);
  std::uint64_t first_chunk = 0;
  std::size_t entry = 0;
  for (const ArenaRegion& region : regions) {
    if (region.size == 0) continue;
    const Arena& arena = arenas_[TierIndex(region.tier)];
    ChunkOpRegion& e = table[entry++];
    e.base = region.base;
    e.size = region.size;
    e.saved = arena.saved_hashes + region.arena_offset / chunk_size * sizeof(std::uint64_t);
    e.first_chunk = first_chunk;
    e.reserved = 0;
    switch (region.tier) {
      case StorageTier::kDevice:
        e.access = kChunkAccessDevice;
        e.copy = arena.device + region.arena_offset;
        break;
      case StorageTier::kPinnedHost:
        e.access = kChunkAccessMapped;
        e.copy = arena.device + region.arena_offset;  // the pinned block's mapped address
        break;
      case StorageTier::kPageableHost:
      case StorageTier::kFile:
        e.access = kChunkAccessHost;
        e.copy = 0;
        break;
    }
    first_chunk += ChunksOf(region.size, chunk_size);
  }
  auto* counters = reinterpret_cast<std::uint64_t*>(host + counters_offset);
  std::fill(counters, counters + kChunkOpCounters, std::uint64_t{0});

  // From the first enqueue on, a failure must still wait for what was enqueued: the buffers are
  // reused (or freed) by the next call.
  auto fail = [&](Status status) {
    driver_.StreamSynchronize(stream_);
    return status.WithContext(what);
  };
  CUresult r = driver_.MemcpyHtoDAsync(op_device_, host, hashes_offset, stream_);
  if (r != CUDA_SUCCESS) return fail(driver_.Check("cuMemcpyHtoDAsync(table)", r));
  CUdeviceptr table_arg = op_device_ + table_offset;
  auto count_arg = static_cast<unsigned>(entries);
  unsigned long long chunks_arg = total_chunks;
  unsigned long long chunk_arg = chunk_size;
  unsigned op_arg = KernelOpCode(op);
  CUdeviceptr hashes_arg = want_hashes ? op_device_ + hashes_offset : 0;
  CUdeviceptr flags_arg = want_flags ? op_device_ + flags_offset : 0;
  CUdeviceptr counters_arg = op_device_ + counters_offset;
  void* params[] = {&table_arg, &count_arg,  &chunks_arg, &chunk_arg,
                    &op_arg,    &hashes_arg, &flags_arg,  &counters_arg};
  const auto grid = static_cast<unsigned>(
      std::min({total_chunks, op_grid_limit_, static_cast<std::uint64_t>(std::numeric_limits<int>::max())}));
  r = driver_.LaunchKernel(op_kernel_, grid, 1, 1, kChunkKernelBlockSize, 1, 1, 0, stream_, params, nullptr);
  if (r != CUDA_SUCCESS) return fail(driver_.Check("cuLaunchKernel(gpuprof_chunk_op)", r));
  r = driver_.MemcpyDtoHAsync(host + counters_offset, op_device_ + counters_offset,
                              flags_offset - counters_offset, stream_);
  if (r != CUDA_SUCCESS) return fail(driver_.Check("cuMemcpyDtoHAsync(counters, hashes)", r));
  if (want_flags) {
    // Only the span of chunks the host regions cover.
    const std::uint64_t begin = host_regions.front().first_chunk;
    const std::uint64_t end =
        host_regions.back().first_chunk + ChunksOf(host_regions.back().size, chunk_size);
    r = driver_.MemcpyDtoHAsync(host + flags_offset + begin, op_device_ + flags_offset + begin, end - begin,
                                stream_);
    if (r != CUDA_SUCCESS) return fail(driver_.Check("cuMemcpyDtoHAsync(flags)", r));
  }
  r = driver_.StreamSynchronize(stream_);
  if (r != CUDA_SUCCESS) return driver_.Check("cuStreamSynchronize", r).WithContext(what);

  if (want_hashes) std::memcpy(hashes.data(), host + hashes_offset, total_chunks * sizeof(std::uint64_t));
  result.copied_chunks = counters[kChunkOpCopiedChunks];
  result.copied_bytes = counters[kChunkOpCopiedBytes];
  if (!host_regions.empty() && op != ChunkOp::kHash) {
    GPUPROF_RETURN_IF_ERROR(
        CopyHostTierChunks(op, host_regions, want_flags ? host + flags_offset : nullptr, chunk_size, &result)
            .WithContext(what));
  }
  return result;
}

// ---- module variables, synchronization, caches ----

void CudaDevice::RegisterModuleVariables(const std::vector<ModuleVariable>& variables) {
  std::lock_guard<std::mutex> lock(variables_mu_);
  for (const ModuleVariable& v : variables) {
    bool known = std::any_of(variables_.begin(), variables_.end(),
                             [&v](const ModuleVariable& k) { return k.address == v.address; });
    if (!known) variables_.push_back(v);
  }
}

void CudaDevice::UnregisterModule(std::uint64_t module_id) {
  std::lock_guard<std::mutex> lock(variables_mu_);
  std::erase_if(variables_, [module_id](const ModuleVariable& v) { return v.module_id == module_id; });
}

StatusOr<std::vector<ModuleVariable>> CudaDevice::EnumerateModuleVariables() {
  std::lock_guard<std::mutex> lock(variables_mu_);
  return variables_;
}

Status CudaDevice::Synchronize(std::chrono::nanoseconds timeout) {
  // cuCtxSynchronize cannot be bounded: the helper thread calls it, and this waits at most
  // `timeout`. A device that never drains leaves the helper blocked in the driver; until it
  // returns, every call fails at once (R14: the launch is declined, never hangs).
  DrainState& s = *drain_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.abandoned) {
    const std::int64_t running_ms = (base::MonotonicNowNs() - s.drain_started_ns) / 1000000;
    return DeadlineExceededError("device " + std::to_string(ordinal_) +
                                 " has not drained: an earlier drain " + "is still waiting after " +
                                 std::to_string(running_ms) + " ms");
  }
  if (!s.thread_started) {
    try {
      std::thread([state = drain_] { DrainState::Run(state); }).detach();
    } catch (const std::system_error& e) {
      return UnavailableError(std::string("cannot start the drain thread: ") + e.what());
    }
    s.thread_started = true;
  }
  const std::uint64_t ticket = ++s.requested;
  s.cv.notify_all();
  const auto wait = std::min<std::chrono::nanoseconds>(timeout, kLongestDrainWait);
  if (!s.cv.wait_for(lock, wait, [&s, ticket] { return s.finished >= ticket; })) {
    s.abandoned = true;
    return DeadlineExceededError(
        "device " + std::to_string(ordinal_) + " did not drain within " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms");
  }
  return driver_.Check("cuCtxSynchronize", s.result);
}

StatusOr<std::array<CUevent, 2>> CudaDevice::PassEvents() {
  std::lock_guard<std::mutex> lock(events_mu_);
  if (pass_events_[0] == nullptr || pass_events_[1] == nullptr) {
    InternalScope scope(driver_, context_);
    if (!scope.ok()) return InternalError("PassEvents: cuCtxPushCurrent failed");
    for (CUevent& event : pass_events_) {
      if (event == nullptr)
        GPUPROF_RETURN_IF_ERROR(
            driver_.Check("cuEventCreate", driver_.EventCreate(&event, CU_EVENT_DEFAULT)));
    }
  }
  return pass_events_;
}

Status CudaDevice::FlushL2(CUstream stream) {
  if (l2_scratch_ == 0) return OkStatus();
  InternalScope scope(driver_, context_);
  static std::atomic<unsigned char> value{0};
  return driver_.Check("cuMemsetD8Async(L2 flush)",
                       driver_.MemsetD8Async(l2_scratch_, value.fetch_add(1), l2_scratch_bytes_, stream));
}

}  // namespace gpuprof::device::cuda
