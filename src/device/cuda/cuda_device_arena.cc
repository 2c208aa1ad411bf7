// CudaDevice's snapshot arena (B2): one block per storage tier (device memory, the pinned pool,
// pageable host memory, the spill file), each with its saved chunk hashes on the device, grown
// geometrically and kept across replayed launches; its limits, its release, and MakeRoomFor.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/errno_text.h"
#include "base/logging.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_device_internal.h"

namespace gpuprof::device::cuda {
namespace {

// MakeRoomFor frees the device tier unless the application's allocation leaves at least this much
// free beside it: the driver and the allocation's own rounding need some room.
constexpr std::uint64_t kMakeRoomSlackBytes = std::uint64_t{64} << 20;
// The file tier leaves this much of its filesystem free.
constexpr std::uint64_t kSpillFreeMarginBytes = std::uint64_t{1} << 30;

// Geometric growth is a wish, `need` the requirement: tries allocate(*size) and, when that fails
// with *size above `need`, once more with `need`. *size is left at the size of the last try.
template <typename Allocate>
bool AllocateGrownElseNeed(std::uint64_t need, std::uint64_t* size, Allocate allocate) {
  if (allocate(*size)) return true;
  if (*size <= need) return false;
  *size = need;
  return allocate(*size);
}

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
      return SaturatingAdd(held, SaturatingSub(free_bytes, options_.device_reserve_bytes));
    }
    case StorageTier::kPinnedHost: return std::max(held, options_.pinned_limit_bytes);
    case StorageTier::kPageableHost: return SaturatingAdd(held, HostMemoryAvailable() / 2);
    case StorageTier::kFile: {
      if (options_.spill_directory.empty()) return 0;
      const std::uint64_t space = FileSpaceAvailable(options_.spill_directory);
      return SaturatingAdd(held, SaturatingSub(space, kSpillFreeMarginBytes));
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
    if (FreeArenas()) ++arena_stats_.generation;
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
      const std::uint64_t usable = SaturatingSub(available, options_.device_reserve_bytes);
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
      CUresult r = CUDA_SUCCESS;
      if (!AllocateGrownElseNeed(need, &grown, [&](std::uint64_t size) {
            return (r = driver_.MemAlloc(&block, size)) == CUDA_SUCCESS;
          })) {
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
      CUresult r = CUDA_SUCCESS;
      if (!AllocateGrownElseNeed(need, &grown, [&](std::uint64_t size) {
            return (r = driver_.MemHostAlloc(&host, size, kFlags)) == CUDA_SUCCESS;
          })) {
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
      void* host = MAP_FAILED;
      if (!AllocateGrownElseNeed(need, &grown, [&](std::uint64_t size) {
            host = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            return host != MAP_FAILED;
          })) {
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
      if (!AllocateGrownElseNeed(need, &grown, [fd](std::uint64_t size) {
            return ftruncate(fd, static_cast<off_t>(size)) == 0;
          })) {
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

bool CudaDevice::FreeArenas() {
  bool freed = false;
  for (std::size_t tier = 0; tier < kStorageTierCount; ++tier) {
    freed = FreeArena(static_cast<StorageTier>(tier)) || freed;
  }
  return freed;
}

void CudaDevice::ReleaseArena() {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (FreeArenas()) {
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

}  // namespace gpuprof::device::cuda
