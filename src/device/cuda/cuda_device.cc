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

// MakeRoomFor frees the device tier unless the application's allocation leaves at least this much
// free beside it: the driver and the allocation's own rounding need some room.
constexpr std::uint64_t kMakeRoomSlackBytes = std::uint64_t{64} << 20;
// The file tier leaves this much of its filesystem free.
constexpr std::uint64_t kSpillFreeMarginBytes = std::uint64_t{1} << 30;
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
