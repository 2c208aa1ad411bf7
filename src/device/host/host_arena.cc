// HostDevice's snapshot arena and its batched chunk operations (device.h, B1-B3).
//
// Every tier is host memory except kFile, a real spill file (mkstemp: mode 0600, unlinked when
// released), so the engine's file-tier path is exercised here too. The device tier counts against
// HostPlatformOptions::device_memory_bytes like the application's allocations, which is what
// MakeRoomFor frees it for.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/errno_text.h"
#include "base/hash.h"
#include "device/host/host_platform.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {
namespace {

constexpr std::uint64_t kUnbounded = std::uint64_t{1} << 62;

std::size_t TierIndex(StorageTier tier) noexcept { return static_cast<std::size_t>(tier); }

std::uint64_t RoundUp(std::uint64_t bytes, std::uint64_t unit) noexcept {
  return unit == 0 ? bytes : (bytes + unit - 1) / unit * unit;
}

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Reads or writes [offset, offset + bytes) of a tier's arena.
Status TierWrite(HostArenaTier& tier, bool inject_failure, std::uint64_t offset, const void* src,
                 std::uint64_t bytes) {
  if (tier.fd < 0) {
    std::memcpy(static_cast<std::uint8_t*>(tier.block.data) + offset, src, bytes);
    return OkStatus();
  }
  if (inject_failure) {
    return ResourceExhaustedError("writing the spill file " + tier.path +
                                  " failed: " + base::ErrnoText(ENOSPC) + " (injected fault)");
  }
  const auto* p = static_cast<const std::uint8_t*>(src);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(tier.fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return InternalError("writing the spill file " + tier.path + " failed: " + base::ErrnoText(errno));
    p += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::uint64_t>(n);
  }
  return OkStatus();
}

Status TierRead(const HostArenaTier& tier, std::uint64_t offset, void* dst, std::uint64_t bytes) {
  if (tier.fd < 0) {
    std::memcpy(dst, static_cast<const std::uint8_t*>(tier.block.data) + offset, bytes);
    return OkStatus();
  }
  auto* p = static_cast<std::uint8_t*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(tier.fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return InternalError("reading the spill file " + tier.path + " failed: " + base::ErrnoText(errno));
    p += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::uint64_t>(n);
  }
  return OkStatus();
}

bool Restores(ChunkOp op) noexcept {
  return op == ChunkOp::kRestoreChanged || op == ChunkOp::kRestoreDiffering || op == ChunkOp::kRestoreAll;
}

}  // namespace

HostDevice::Arena::~Arena() {
  for (std::size_t t = 0; t < kStorageTierCount; ++t) ReleaseTier(static_cast<StorageTier>(t));
}

void HostDevice::Arena::ReleaseTier(StorageTier tier) noexcept {
  HostArenaTier& t = tiers[TierIndex(tier)];
  ReleaseRaw(t.block);
  t.block = RawBlock{};
  if (t.fd >= 0) {
    ::close(t.fd);
    ::unlink(t.path.c_str());
    t.fd = -1;
    t.path.clear();
  }
  t.capacity = 0;
  t.saved_hashes = {};
}

std::unique_ptr<HostDevice::Arena> MakeArena(const ArenaOptions& options) {
  return std::make_unique<HostDevice::Arena>(options);
}

std::uint64_t HostDevice::ArenaLimit(StorageTier tier) {
  const std::uint64_t application = platform_.options.device_memory_bytes != 0 && tier == StorageTier::kDevice
                                        ? platform_.ApplicationDeviceBytes(ordinal_)
                                        : 0;
  std::lock_guard<std::mutex> lock(arena_->mu);
  const HostArenaTier& t = arena_->tiers[TierIndex(tier)];
  switch (tier) {
    case StorageTier::kDevice: {
      const std::uint64_t total = platform_.options.device_memory_bytes;
      if (total == 0) return kUnbounded;
      const std::uint64_t taken = application + arena_->options.device_reserve_bytes;
      return total > taken ? total - taken : 0;
    }
    case StorageTier::kPinnedHost:
      if (platform_.faults.ShouldFail(FaultPoint::kPinnedPoolExhausted)) return t.capacity;
      return std::max(t.capacity, arena_->options.pinned_limit_bytes);
    case StorageTier::kPageableHost: return kUnbounded;
    case StorageTier::kFile: return arena_->options.spill_directory.empty() ? 0 : kUnbounded;
  }
  return 0;
}

Status HostDevice::ReserveArena(const TierBytes& bytes, std::uint64_t chunk_size) {
  Count(1, 1);
  if (chunk_size == 0)
    return InvalidArgumentError("ReserveArena: chunk size 0 (device " + std::to_string(ordinal_) + ")");
  std::lock_guard<std::mutex> lock(arena_->mu);
  Arena& arena = *arena_;
  const bool rechunk = arena.chunk_size != chunk_size;
  for (std::size_t i = 0; i < kStorageTierCount; ++i) {
    const auto tier = static_cast<StorageTier>(i);
    HostArenaTier& t = arena.tiers[i];
    const std::uint64_t need = RoundUp(bytes[i], chunk_size);
    if (need <= t.capacity && !rechunk) continue;
    if (need == 0) {
      if (t.capacity != 0) arena.ReleaseTier(tier);
      continue;
    }
    const std::uint64_t capacity = std::max(need, RoundUp(2 * t.capacity, chunk_size));
    const std::int64_t start = NowNs();
    const std::string what = "ReserveArena: growing the " + std::string(StorageTierName(tier)) +
                             " arena of device " + std::to_string(ordinal_) + " to " +
                             std::to_string(capacity) + " bytes";
    if (platform_.faults.ShouldFail(FaultPoint::kArenaGrowth)) {
      return ResourceExhaustedError(what + " failed (injected fault)");
    }
    if (tier == StorageTier::kDevice && platform_.options.device_memory_bytes != 0) {
      const std::uint64_t application = platform_.ApplicationDeviceBytes(ordinal_);
      if (application + capacity > platform_.options.device_memory_bytes) {
        return ResourceExhaustedError(what + " failed: out of device memory");
      }
    }
    HostArenaTier grown;
    grown.capacity = capacity;
    if (tier == StorageTier::kFile) {
      if (arena.options.spill_directory.empty()) {
        return FailedPreconditionError(what + " failed: no spill directory is set");
      }
      std::string path = arena.options.spill_directory + "/gpuprof-spill-" + std::to_string(::getpid()) +
                         "-dev" + std::to_string(ordinal_) + "-XXXXXX";
      const int fd = ::mkstemp(path.data());  // mode 0600
      if (fd < 0)
        return ResourceExhaustedError(what + " failed: cannot create " + path + ": " +
                                      base::ErrnoText(errno));
      if (::ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
        const int error = errno;
        ::close(fd);
        ::unlink(path.c_str());
        return ResourceExhaustedError(what + " failed: " + base::ErrnoText(error));
      }
      grown.fd = fd;
      grown.path = std::move(path);
    } else {
      grown.block = AllocateRaw(capacity, /*zero_fill=*/false);
      if (grown.block.data == nullptr) return ResourceExhaustedError(what + " failed: out of host memory");
    }
    try {
      grown.saved_hashes.assign(capacity / chunk_size, 0);
    } catch (const std::bad_alloc&) {
      ReleaseRaw(grown.block);
      if (grown.fd >= 0) {
        ::close(grown.fd);
        ::unlink(grown.path.c_str());
      }
      return ResourceExhaustedError(what + " failed: out of host memory for its hashes");
    }
    arena.ReleaseTier(tier);
    t = std::move(grown);
    ++arena.stats.allocations;
    ++arena.stats.generation;
    arena.stats.allocation_ns += static_cast<std::uint64_t>(NowNs() - start);
  }
  arena.chunk_size = chunk_size;
  return OkStatus();
}

void HostDevice::ReleaseArena() {
  std::lock_guard<std::mutex> lock(arena_->mu);
  bool held = false;
  for (std::size_t i = 0; i < kStorageTierCount; ++i) {
    if (arena_->tiers[i].capacity != 0) held = true;
    arena_->ReleaseTier(static_cast<StorageTier>(i));
  }
  if (held) {
    ++arena_->stats.generation;
    ++arena_->stats.releases;
  }
}

bool HostDevice::MakeRoomFor(std::uint64_t bytes) {
  const std::uint64_t total = platform_.options.device_memory_bytes;
  // Every application allocation asks: only a device-tier arena makes the registry walk worth it.
  if (total == 0 || device_arena_bytes() == 0) return false;
  const std::uint64_t application = platform_.ApplicationDeviceBytes(ordinal_);
  std::lock_guard<std::mutex> lock(arena_->mu);
  HostArenaTier& t = arena_->tiers[TierIndex(StorageTier::kDevice)];
  if (t.capacity == 0) return false;
  const std::uint64_t used = application + t.capacity;
  const std::uint64_t free_bytes = total > used ? total - used : 0;
  if (free_bytes >= bytes) return false;
  arena_->ReleaseTier(StorageTier::kDevice);
  ++arena_->stats.generation;
  ++arena_->stats.releases;
  return true;
}

ArenaStats HostDevice::arena_stats() {
  std::lock_guard<std::mutex> lock(arena_->mu);
  ArenaStats stats = arena_->stats;
  for (std::size_t i = 0; i < kStorageTierCount; ++i) stats.capacity[i] = arena_->tiers[i].capacity;
  return stats;
}

std::uint64_t HostDevice::device_arena_bytes() const {
  std::lock_guard<std::mutex> lock(arena_->mu);
  return arena_->tiers[TierIndex(StorageTier::kDevice)].capacity;
}

std::string HostDevice::spill_file_path() const {
  std::lock_guard<std::mutex> lock(arena_->mu);
  return arena_->tiers[TierIndex(StorageTier::kFile)].path;
}

StatusOr<ChunkOpResult> HostDevice::RunChunkOp(ChunkOp op, std::span<const ArenaRegion> regions,
                                               std::uint64_t chunk_size, std::span<std::uint64_t> hashes) {
  // One launch over the table, one copy of the counters (and of the hashes when asked), one wait.
  Count(1, 1, 1, 1);
  const std::string call = "RunChunkOp(" + std::string(ChunkOpName(op)) + ")";
  const std::string where = " on device " + std::to_string(ordinal_);
  std::lock_guard<std::mutex> lock(arena_->mu);
  Arena& arena = *arena_;
  if (chunk_size == 0 || chunk_size != arena.chunk_size) {
    return InvalidArgumentError(call + ": chunk size " + std::to_string(chunk_size) +
                                " is not the arena's (" + std::to_string(arena.chunk_size) + ")" + where);
  }
  std::uint64_t chunks = 0;
  for (const ArenaRegion& region : regions) {
    const HostArenaTier& t = arena.tiers[TierIndex(region.tier)];
    if (region.arena_offset % chunk_size != 0 || region.arena_offset > t.capacity ||
        region.size > t.capacity - region.arena_offset) {
      return InvalidArgumentError(call + ": region " + Hex(region.base) + " " + PlusBytes(region.size) +
                                  " at offset " + std::to_string(region.arena_offset) + " does not fit the " +
                                  std::string(StorageTierName(region.tier)) + " arena of " +
                                  std::to_string(t.capacity) + " bytes" + where);
    }
    chunks += base::ChunkCount(region.size, chunk_size);
  }
  if (!hashes.empty() && hashes.size() != chunks) {
    return InvalidArgumentError(call + ": the hash output holds " + std::to_string(hashes.size()) +
                                " entries but the table has " + std::to_string(chunks) + " chunks" + where);
  }
  ChunkOpResult result;
  result.chunks = chunks;

  // Injected failures: copies fail half-way through the table (a partial write the caller must
  // repair); hashing and comparing fail before anything is written.
  std::size_t stop_after = regions.size();
  bool copy_fails = false;
  const bool writes_arena = op == ChunkOp::kCapture || op == ChunkOp::kRefreshChanged;
  if ((op == ChunkOp::kHash && platform_.faults.ShouldFail(FaultPoint::kHashChunks)) ||
      (op == ChunkOp::kRestoreDiffering &&
       std::any_of(regions.begin(), regions.end(),
                   [](const ArenaRegion& r) { return r.tier == StorageTier::kDevice; }) &&
       platform_.faults.ShouldFail(FaultPoint::kCompareChunks))) {
    return InternalError(call + ": the chunk kernel failed" + where + " (injected fault)");
  }
  if ((writes_arena && platform_.faults.ShouldFail(FaultPoint::kSaveCopy)) ||
      (Restores(op) && platform_.faults.ShouldFail(FaultPoint::kRestoreCopy))) {
    stop_after = regions.size() / 2;
    copy_fails = true;
  }

  // A full disk fails the op's first write into the spill file.
  const bool spill_fails = writes_arena &&
                           std::any_of(regions.begin(), regions.end(),
                                       [](const ArenaRegion& r) { return r.tier == StorageTier::kFile; }) &&
                           platform_.faults.ShouldFail(FaultPoint::kSpillFileWrite);
  const auto hook = Restores(op) ? *platform_.restore_hook.rlock() : nullptr;
  std::uint64_t table_chunk = 0;
  for (std::size_t r = 0; r < regions.size(); ++r) {
    const ArenaRegion& region = regions[r];
    if (copy_fails && r == stop_after) {
      return InternalError(call + ": copying failed after " + std::to_string(r) + " of " +
                           std::to_string(regions.size()) + " regions" + where + " (injected fault)");
    }
    {
      auto registry = platform_.registry.rlock();
      GPUPROF_RETURN_IF_ERROR(HostPlatform::Impl::CheckDeviceRange(*registry, call, "region", region.base,
                                                                   region.size, ordinal_));
    }
    HostArenaTier& t = arena.tiers[TierIndex(region.tier)];
    auto* device_bytes = static_cast<std::uint8_t*>(ToHost(region.base));
    const std::uint64_t region_chunks = base::ChunkCount(region.size, chunk_size);
    bool hooked = false;
    for (std::uint64_t c = 0; c < region_chunks; ++c, ++table_chunk) {
      const std::uint64_t offset = c * chunk_size;
      const std::uint64_t length = std::min(chunk_size, region.size - offset);
      std::uint8_t* current = device_bytes + offset;
      std::uint64_t& saved = t.saved_hashes[region.arena_offset / chunk_size + c];
      const bool need_hash = op != ChunkOp::kRestoreAll || !hashes.empty();
      std::uint64_t hash = 0;
      if (need_hash) hash = base::HashBytes(current, length);
      if (!hashes.empty()) hashes[table_chunk] = hash;
      bool copy = false;
      switch (op) {
        case ChunkOp::kCapture:
        case ChunkOp::kRestoreAll: copy = true; break;
        case ChunkOp::kRefreshChanged:
        case ChunkOp::kRestoreChanged: copy = hash != saved; break;
        case ChunkOp::kRestoreDiffering:
          if (region.tier == StorageTier::kDevice) {
            copy =
                std::memcmp(current, static_cast<std::uint8_t*>(t.block.data) + region.arena_offset + offset,
                            length) != 0;
          } else {
            copy = hash != saved;
          }
          break;
        case ChunkOp::kHash: break;
      }
      if (!copy) continue;
      if (writes_arena) {
        GPUPROF_RETURN_IF_ERROR(TierWrite(t, spill_fails, region.arena_offset + offset, current, length));
        saved = hash;
      } else {
        if (hook != nullptr && !hooked) {
          (*hook)(region.base);
          hooked = true;
        }
        GPUPROF_RETURN_IF_ERROR(TierRead(t, region.arena_offset + offset, current, length));
      }
      ++result.copied_chunks;
      result.copied_bytes += length;
    }
  }
  if (copy_fails) return InternalError(call + ": copying failed" + where + " (injected fault)");
  return result;
}

}  // namespace gpuprof::device::host
