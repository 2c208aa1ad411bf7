#include "replay/snapshot.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <new>
#include <sstream>
#include <tuple>
#include <utility>

#include "base/hash.h"
#include "base/logging.h"

namespace gpuprof::replay {
namespace {

using device::ArenaRegion;
using device::ChunkOp;
using device::DevicePtr;
using device::StorageTier;
using device::TierBytes;

constexpr std::size_t kTiers = device::kStorageTierCount;

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Hex(DevicePtr p) {
  std::ostringstream out;
  out << "0x" << std::hex << p;
  return out.str();
}

std::string DescribeRegion(const SnapshotRegion& region) {
  std::string out = region.source == RegionSource::kAllocation ? "allocation " : "module variable ";
  if (!region.name.empty()) out += "'" + region.name + "' ";
  out += "at " + Hex(region.base) + " (" + std::to_string(region.size) + " bytes)";
  return out;
}

std::uint64_t RoundUp(std::uint64_t bytes, std::uint64_t unit) { return (bytes + unit - 1) / unit * unit; }

// What makes two captures' regions the same region (R10 for allocations).
using RegionKey = std::tuple<RegionSource, DevicePtr, std::uint64_t, std::uint64_t>;
RegionKey KeyOf(const SnapshotRegion& region) {
  return {region.source, region.base, region.size,
          region.source == RegionSource::kAllocation ? region.generation : region.module_id};
}

ArenaRegion TableEntry(const SnapshotRegion& region) {
  return ArenaRegion{region.base, region.size, region.tier, region.arena_offset};
}

// Places regions into the tiers from `fastest` on: kept regions stay where they are, new ones go
// into the first gap (between kept regions, or after the last) of the first tier whose limit has
// room. `end` receives each tier's last used byte. False when a region fits nowhere.
bool Place(std::pmr::vector<SnapshotRegion>& regions, const std::vector<bool>& kept, StorageTier fastest,
           const TierBytes& limit, std::uint64_t chunk_size, TierBytes* end) {
  // Per tier, the used [begin, end) intervals, sorted.
  std::array<std::vector<std::pair<std::uint64_t, std::uint64_t>>, kTiers> used;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    if (!kept[i]) continue;
    used[static_cast<std::size_t>(regions[i].tier)].emplace_back(
        regions[i].arena_offset, regions[i].arena_offset + RoundUp(regions[i].size, chunk_size));
  }
  for (auto& intervals : used) std::sort(intervals.begin(), intervals.end());
  for (std::size_t i = 0; i < regions.size(); ++i) {
    if (kept[i]) continue;
    const std::uint64_t need = RoundUp(regions[i].size, chunk_size);
    bool placed = false;
    for (auto t = static_cast<std::size_t>(fastest); t < kTiers && !placed; ++t) {
      std::vector<std::pair<std::uint64_t, std::uint64_t>>& intervals = used[t];
      // Gaps are searched only while few regions are kept; a first capture appends.
      std::uint64_t at = intervals.empty() ? 0 : intervals.back().second;
      std::size_t insert_at = intervals.size();
      std::uint64_t previous_end = 0;
      for (std::size_t k = 0; k < intervals.size(); ++k) {
        if (intervals[k].first - previous_end >= need) {
          at = previous_end;
          insert_at = k;
          break;
        }
        previous_end = intervals[k].second;
      }
      if (at > limit[t] || need > limit[t] - at) continue;
      regions[i].tier = static_cast<StorageTier>(t);
      regions[i].arena_offset = at;
      intervals.insert(intervals.begin() + static_cast<std::ptrdiff_t>(insert_at), {at, at + need});
      placed = true;
    }
    if (!placed) return false;
  }
  for (std::size_t t = 0; t < kTiers; ++t) (*end)[t] = used[t].empty() ? 0 : used[t].back().second;
  return true;
}

std::uint64_t ChunksOf(const std::vector<ArenaRegion>& table, std::uint64_t chunk_size) {
  std::uint64_t chunks = 0;
  for (const ArenaRegion& region : table) chunks += base::ChunkCount(region.size, chunk_size);
  return chunks;
}

}  // namespace

Snapshot::Snapshot(device::Device& device) : device_(device), regions_(device.metadata_resource()) {}

bool Snapshot::Fail(std::string why) {
  failure_ = std::move(why);
  Invalidate();
  GPUPROF_LOG(kDebug) << "snapshot of device " << device_.ordinal() << " incomplete: " << failure_;
  return false;
}

void Snapshot::Invalidate() noexcept {
  valid_ = false;
  regions_.clear();
  table_.clear();
  total_bytes_ = 0;
  tier_bytes_ = {};
  chunk_count_ = 0;
  input_hash_ = 0;
}

bool Snapshot::Capture(const Inventory& inventory, const SnapshotOptions& options) {
  failure_.clear();
  last_capture_ = CaptureStats{};
  if (options.chunk_size == 0) return Fail("chunk size is 0");
  if (inventory.finalizing()) return Fail("process finalization has begun");
  const std::int64_t start = NowNs();
  try {
    std::uint64_t inventory_version = 0;
    std::vector<TrackedAllocation> allocations =
        inventory.SnapshotInventory(device_.ordinal(), &inventory_version);
    StatusOr<std::vector<device::ModuleVariable>> variables = device_.EnumerateModuleVariables();
    if (!variables.ok()) {
      // A __device__ global never discovered is one never restored: passes 2..N would read
      // pass 1's state. Decline rather than replay on different inputs.
      return Fail("module-variable enumeration failed: " + variables.status().ToString());
    }
    std::pmr::vector<SnapshotRegion> next(device_.metadata_resource());
    try {
      next.reserve(allocations.size() + variables->size());
    } catch (const std::bad_alloc&) {
      return Fail("reserving snapshot metadata for " +
                  std::to_string(allocations.size() + variables->size()) +
                  " regions failed (out of host memory)");
    }
    for (const TrackedAllocation& allocation : allocations) {
      SnapshotRegion region;
      region.source = RegionSource::kAllocation;
      region.base = allocation.base;
      region.size = allocation.size;
      region.generation = allocation.generation;
      next.push_back(std::move(region));
    }
    std::uint64_t skipped = 0;
    for (device::ModuleVariable& variable : *variables) {
      if (variable.address == 0 || variable.size == 0) continue;
      if (variable.size > options.max_symbol_bytes) {
        ++skipped;
        GPUPROF_LOG(kWarning) << "snapshot: module variable '" << variable.name << "' (" << variable.size
                              << " bytes) is above the " << options.max_symbol_bytes
                              << "-byte cap and is not captured; raise the cap to include it";
        continue;
      }
      SnapshotRegion region;
      region.source = RegionSource::kModuleVariable;
      region.base = variable.address;
      region.size = variable.size;
      region.module_id = variable.module_id;
      region.name = std::move(variable.name);
      next.push_back(std::move(region));
    }
    symbols_skipped_ = skipped;
    last_capture_.inventory_ns = static_cast<std::uint64_t>(NowNs() - start);

    // B3: carry over what the arena still holds.
    const device::ArenaStats before = device_.arena_stats();
    const bool reuse = valid_ && before.generation == arena_generation_ && chunk_size_ == options.chunk_size;
    std::vector<bool> kept(next.size(), false);
    if (reuse) {
      // Mostly nothing was allocated or freed since: the same regions in the same order. Else
      // match them by identity.
      bool same_order = next.size() == regions_.size();
      for (std::size_t i = 0; same_order && i < next.size(); ++i)
        same_order = KeyOf(next[i]) == KeyOf(regions_[i]);
      std::map<RegionKey, std::size_t> previous;
      if (!same_order) {
        for (std::size_t i = 0; i < regions_.size(); ++i) previous.emplace(KeyOf(regions_[i]), i);
      }
      for (std::size_t i = 0; i < next.size(); ++i) {
        std::size_t match = i;
        if (!same_order) {
          auto it = previous.find(KeyOf(next[i]));
          if (it == previous.end()) continue;
          match = it->second;
        }
        SnapshotRegion& old = regions_[match];
        if (static_cast<std::size_t>(old.tier) < static_cast<std::size_t>(options.fastest_tier)) continue;
        next[i].tier = old.tier;
        next[i].arena_offset = old.arena_offset;
        next[i].chunk_hashes = std::move(old.chunk_hashes);
        kept[i] = true;
      }
    }
    const std::uint64_t chunk_size = options.chunk_size;
    std::uint64_t live_bytes = 0;
    for (const SnapshotRegion& region : next) live_bytes += RoundUp(region.size, chunk_size);

    // B2: place new regions in the fastest tier that has room, growing the arenas; when a tier
    // cannot grow, cap it at what it holds and lay everything out again.
    TierBytes limit{};
    for (std::size_t t = static_cast<std::size_t>(options.fastest_tier); t < kTiers; ++t) {
      limit[t] = device_.ArenaLimit(static_cast<StorageTier>(t));
    }
    TierBytes end{};
    bool placed = Place(next, kept, options.fastest_tier, limit, chunk_size, &end);
    std::uint64_t used = 0;
    for (std::uint64_t e : end) used += e;
    if (!placed || used > 2 * live_bytes + (std::uint64_t{64} << 20)) {
      // Fragmented or full: start the arena's layout afresh (every region captured in full).
      std::fill(kept.begin(), kept.end(), false);
      placed = Place(next, kept, options.fastest_tier, limit, chunk_size, &end);
    }
    // Room past the snapshot for range replay's kept output (KeepChanged), in the fastest tier
    // that can hold it; asked for once, so a tier that cannot grow is capped as before.
    TierBytes wanted = end;
    for (std::size_t t = static_cast<std::size_t>(options.fastest_tier); keep_room_ > 0 && t < kTiers; ++t) {
      if (static_cast<StorageTier>(t) != StorageTier::kDevice &&
          static_cast<StorageTier>(t) != StorageTier::kPinnedHost)
        continue;
      if (end[t] + keep_room_ > limit[t]) continue;
      wanted[t] += keep_room_;
      break;
    }
    Status reserved = OkStatus();
    for (std::size_t attempt = 0; placed && attempt < kTiers; ++attempt) {
      reserved = device_.ReserveArena(attempt == 0 ? wanted : end, chunk_size);
      if (reserved.ok()) break;
      GPUPROF_LOG(kDebug) << "snapshot: " << reserved.ToString() << "; trying slower tiers";
      // Cap the first tier that had to grow at what it holds now, and lay out again.
      const device::ArenaStats now = device_.arena_stats();
      bool capped = false;
      for (std::size_t t = 0; t < kTiers && !capped; ++t) {
        if (end[t] > now.capacity[t] && limit[t] > now.capacity[t]) {
          limit[t] = now.capacity[t];
          capped = true;
        }
      }
      if (!capped) break;
      std::fill(kept.begin(), kept.end(), false);
      placed = Place(next, kept, options.fastest_tier, limit, chunk_size, &end);
    }
    if (!placed) {
      return Fail("no storage tier has room for the snapshot's " + std::to_string(live_bytes) + " bytes in " +
                  std::to_string(next.size()) + " regions");
    }
    if (!reserved.ok()) return Fail("reserving the snapshot arena failed: " + reserved.ToString());
    const device::ArenaStats after = device_.arena_stats();
    last_capture_.arena_allocation_ns = after.allocation_ns - before.allocation_ns;
    for (std::size_t i = 0; i < next.size(); ++i) {
      // A regrown tier lost what it held.
      const auto t = static_cast<std::size_t>(next[i].tier);
      if (kept[i] && after.capacity[t] != before.capacity[t]) kept[i] = false;
    }

    // Two batched operations at most: refresh what was kept, capture what is new.
    const std::int64_t copy_start = NowNs();
    std::vector<ArenaRegion> kept_table;
    std::vector<ArenaRegion> new_table;
    std::uint64_t kept_chunks = 0;
    std::uint64_t new_chunks = 0;
    for (std::size_t i = 0; i < next.size(); ++i) {
      const std::uint64_t chunks = base::ChunkCount(next[i].size, chunk_size);
      (kept[i] ? kept_table : new_table).push_back(TableEntry(next[i]));
      (kept[i] ? kept_chunks : new_chunks) += chunks;
    }
    std::vector<std::uint64_t> kept_hashes(kept_chunks);
    std::vector<std::uint64_t> new_hashes(new_chunks);
    if (!kept_table.empty()) {
      StatusOr<device::ChunkOpResult> refreshed =
          device_.RunChunkOp(ChunkOp::kRefreshChanged, kept_table, chunk_size, kept_hashes);
      if (!refreshed.ok()) return Fail("refreshing the snapshot failed: " + refreshed.status().ToString());
      last_capture_.chunks_copied += refreshed->copied_chunks;
      last_capture_.bytes_copied += refreshed->copied_bytes;
    }
    if (!new_table.empty()) {
      StatusOr<device::ChunkOpResult> captured =
          device_.RunChunkOp(ChunkOp::kCapture, new_table, chunk_size, new_hashes);
      if (!captured.ok())
        return Fail("capturing " + std::to_string(new_table.size()) +
                    " region(s) failed: " + captured.status().ToString());
      last_capture_.chunks_copied += captured->copied_chunks;
      last_capture_.bytes_copied += captured->copied_bytes;
    }
    last_capture_.copy_ns = static_cast<std::uint64_t>(NowNs() - copy_start);

    // The window is held and the device drained: the bytes just saved are the bytes hashed.
    std::uint64_t kept_at = 0;
    std::uint64_t new_at = 0;
    total_bytes_ = 0;
    tier_bytes_ = {};
    chunk_count_ = 0;
    std::vector<std::uint64_t> all_hashes;
    all_hashes.reserve(kept_chunks + new_chunks);
    table_.clear();
    table_.reserve(next.size());
    for (std::size_t i = 0; i < next.size(); ++i) {
      SnapshotRegion& region = next[i];
      const std::uint64_t chunks = base::ChunkCount(region.size, chunk_size);
      const std::vector<std::uint64_t>& source = kept[i] ? kept_hashes : new_hashes;
      std::uint64_t& at = kept[i] ? kept_at : new_at;
      region.chunk_hashes.assign(source.begin() + static_cast<std::ptrdiff_t>(at),
                                 source.begin() + static_cast<std::ptrdiff_t>(at + chunks));
      at += chunks;
      all_hashes.insert(all_hashes.end(), region.chunk_hashes.begin(), region.chunk_hashes.end());
      table_.push_back(TableEntry(region));
      total_bytes_ += region.size;
      tier_bytes_[static_cast<std::size_t>(region.tier)] += region.size;
      chunk_count_ += chunks;
      if (kept[i]) {
        ++last_capture_.regions_kept;
      } else {
        ++last_capture_.regions_added;
      }
    }
    last_capture_.regions_dropped =
        regions_.size() > last_capture_.regions_kept ? regions_.size() - last_capture_.regions_kept : 0;
    last_capture_.complete = last_capture_.regions_kept == 0;
    input_hash_ = base::CombineHashes(all_hashes);
    inventory_version_ = inventory_version;
    regions_ = std::move(next);
    chunk_size_ = chunk_size;
    arena_generation_ = after.generation;
    valid_ = true;
  } catch (const std::bad_alloc&) {
    return Fail("out of host memory while building the snapshot");
  } catch (const std::exception& e) {
    return Fail(std::string("unexpected error while building the snapshot: ") + e.what());
  }
  return true;
}

void Snapshot::BuildLiveTable(const Inventory::LockedView& view, std::vector<ArenaRegion>* table,
                              std::uint64_t* skipped) const {
  table->clear();
  *skipped = 0;
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const SnapshotRegion& region = regions_[i];
    if (region.source == RegionSource::kAllocation) {
      const TrackedAllocation* allocation = view.Find(region.base);
      if (allocation == nullptr || allocation->generation != region.generation ||
          allocation->size < region.size) {
        ++*skipped;
        GPUPROF_LOG(kWarning) << "restore: " << DescribeRegion(region)
                              << " was freed, reallocated or shrunk since the snapshot; not written back";
        continue;
      }
    }
    table->push_back(TableEntry(region));
  }
}

StatusOr<std::uint64_t> Snapshot::Inspect(const Inventory& inventory) {
  if (!valid_) return FailedPreconditionError("no complete snapshot to compare with");
  Status status = OkStatus();
  std::uint64_t output = 0;
  inventory.WithAllocationsLocked([&](const Inventory::LockedView& view) {
    std::vector<ArenaRegion> live;
    std::uint64_t skipped = 0;
    const bool all_live = view.version() == inventory_version_;
    if (!all_live) BuildLiveTable(view, &live, &skipped);
    const std::vector<ArenaRegion>& table = all_live ? table_ : live;
    std::vector<std::uint64_t> hashes(all_live ? chunk_count_ : ChunksOf(table, chunk_size_));
    StatusOr<device::ChunkOpResult> hashed = device_.RunChunkOp(ChunkOp::kHash, table, chunk_size_, hashes);
    if (!hashed.ok()) {
      status = hashed.status().WithContext("hashing the device's bytes");
      return;
    }
    output = base::CombineHashes(hashes);
  });
  GPUPROF_RETURN_IF_ERROR(status);
  return output;
}

RestoreStats Snapshot::Restore(const Inventory& inventory, RestoreMode mode, std::uint64_t* output_hash) {
  RestoreStats stats;
  if (output_hash != nullptr) *output_hash = 0;
  if (!valid_) {
    stats.regions_failed = regions_.size();
    return stats;
  }
  inventory.WithAllocationsLocked([&](const Inventory::LockedView& view) {
    std::vector<ArenaRegion> live;
    const bool all_live = view.version() == inventory_version_;
    if (!all_live) BuildLiveTable(view, &live, &stats.regions_skipped);
    const std::vector<ArenaRegion>& table = all_live ? table_ : live;
    std::vector<std::uint64_t> hashes(
        output_hash != nullptr ? (all_live ? chunk_count_ : ChunksOf(table, chunk_size_)) : 0);
    const ChunkOp op = mode == RestoreMode::kFull    ? ChunkOp::kRestoreAll
                       : mode == RestoreMode::kExact ? ChunkOp::kRestoreDiffering
                                                     : ChunkOp::kRestoreChanged;
    ++stats.device_ops;
    StatusOr<device::ChunkOpResult> restored = device_.RunChunkOp(op, table, chunk_size_, hashes);
    if (restored.ok() && output_hash != nullptr) *output_hash = base::CombineHashes(hashes);
    // A failed batch may have written part of the table: only a complete restore repairs that.
    constexpr int kFullAttempts = 3;
    for (int attempt = 0; !restored.ok() && attempt < kFullAttempts; ++attempt) {
      GPUPROF_LOG(kWarning) << "restore: " << device::ChunkOpName(op) << " of " << table.size()
                            << " region(s) failed (" << restored.status().ToString()
                            << "); writing every region back";
      stats.fell_back_to_full = true;
      ++stats.device_ops;
      restored = device_.RunChunkOp(ChunkOp::kRestoreAll, table, chunk_size_, {});
    }
    if (!restored.ok()) {
      GPUPROF_LOG(kWarning) << "restore: writing back " << table.size()
                            << " region(s) failed, skipped: " << restored.status().ToString();
      stats.regions_failed = table.size();
      return;
    }
    stats.regions_restored = table.size();
    stats.dirty_chunks = restored->copied_chunks;
    stats.bytes_restored = restored->copied_bytes;
  });
  return stats;
}

StatusOr<Snapshot::KeptChunks> Snapshot::KeepChanged(const Inventory& inventory, std::uint64_t* output_hash) {
  if (!valid_) return FailedPreconditionError("no complete snapshot to compare with");
  std::vector<std::uint64_t> hashes(chunk_count_);
  Status status = OkStatus();
  inventory.WithAllocationsLocked([&](const Inventory::LockedView& view) {
    if (view.version() != inventory_version_) {
      // A range that allocated or freed tracked memory is declined before this point.
      status = FailedPreconditionError("tracked memory was allocated or freed since the snapshot");
      return;
    }
    status = device_.RunChunkOp(ChunkOp::kHash, table_, chunk_size_, hashes).status();
  });
  GPUPROF_RETURN_IF_ERROR(status.WithContext("hashing the range's output"));
  if (output_hash != nullptr) *output_hash = base::CombineHashes(hashes);
  // The changed runs, and the arena's room past what the snapshot uses in each tier.
  std::vector<ArenaRegion> runs;
  std::size_t at = 0;
  TierBytes used{};
  for (const SnapshotRegion& region : regions_) {
    std::uint64_t& end = used[static_cast<std::size_t>(region.tier)];
    end = std::max(end, region.arena_offset + RoundUp(region.size, chunk_size_));
    const std::uint64_t chunks = region.chunk_hashes.size();
    for (std::uint64_t c = 0; c < chunks;) {
      if (hashes[at + c] == region.chunk_hashes[c]) {
        ++c;
        continue;
      }
      std::uint64_t end_chunk = c + 1;
      while (end_chunk < chunks && hashes[at + end_chunk] != region.chunk_hashes[end_chunk]) ++end_chunk;
      const std::uint64_t offset = c * chunk_size_;
      runs.push_back(
          {.base = region.base + offset, .size = std::min(end_chunk * chunk_size_, region.size) - offset});
      c = end_chunk;
    }
    at += chunks;
  }
  const device::ArenaStats arena = device_.arena_stats();
  KeptChunks kept;
  kept.arena_generation = arena.generation;
  keep_room_ = 0;
  for (ArenaRegion& run : runs) {
    const std::uint64_t room = RoundUp(run.size, chunk_size_);
    keep_room_ += room;
    kept.bytes += run.size;
    bool placed = false;
    for (StorageTier tier : {StorageTier::kDevice, StorageTier::kPinnedHost}) {
      std::uint64_t& end = used[static_cast<std::size_t>(tier)];
      if (end + room > arena.capacity[static_cast<std::size_t>(tier)]) continue;
      run.tier = tier;
      run.arena_offset = end;
      end += room;
      kept.arena_runs.push_back(run);
      placed = true;
      break;
    }
    if (!placed) {
      kept.host_runs.push_back({.base = run.base, .offset = kept.host_bytes, .bytes = run.size});
      kept.host_bytes += run.size;
    }
  }
  if (!kept.arena_runs.empty()) {
    GPUPROF_RETURN_IF_ERROR(device_.RunChunkOp(ChunkOp::kCapture, kept.arena_runs, chunk_size_, {})
                                .status()
                                .WithContext("keeping the range's output in the arena"));
  }
  if (kept_buffer_.size() < kept.host_bytes) kept_buffer_.resize(kept.host_bytes);  // grows, never shrinks
  for (const KeptChunks::Run& run : kept.host_runs) {
    GPUPROF_RETURN_IF_ERROR(device_.CopyDeviceToHost(kept_buffer_.data() + run.offset, run.base, run.bytes));
  }
  return kept;
}

Status Snapshot::PutBack(const KeptChunks& kept) {
  if (!kept.arena_runs.empty()) {
    if (device_.arena_stats().generation != kept.arena_generation) {
      return FailedPreconditionError("the arena holding the kept output was released or regrown");
    }
    GPUPROF_RETURN_IF_ERROR(
        device_.RunChunkOp(ChunkOp::kRestoreAll, kept.arena_runs, chunk_size_, {}).status());
  }
  if (kept_buffer_.size() < kept.host_bytes) return FailedPreconditionError("the kept output is gone");
  for (const KeptChunks::Run& run : kept.host_runs) {
    GPUPROF_RETURN_IF_ERROR(device_.CopyHostToDevice(run.base, kept_buffer_.data() + run.offset, run.bytes));
  }
  return OkStatus();
}

}  // namespace gpuprof::replay
