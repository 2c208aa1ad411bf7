#include "replay/snapshot.h"

#include <new>
#include <optional>
#include <sstream>
#include <utility>

#include "base/hash.h"
#include "base/logging.h"

namespace gpuprof::replay {
namespace {

using device::ByteRange;
using device::DevicePtr;

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

// Hashes one region's current bytes; empty on failure.
StatusOr<std::vector<std::uint64_t>> HashRegion(device::Device& device, const SnapshotRegion& region,
                                                std::uint64_t chunk_size) {
  std::vector<std::uint64_t> hashes(base::ChunkCount(region.size, chunk_size));
  GPUPROF_RETURN_IF_ERROR(device.HashChunks(region.base, region.size, chunk_size, hashes));
  return hashes;
}

// The chunks of `region` whose device bytes differ from its device-resident snapshot, compared
// exactly on the device (B1); nullopt when the snapshot is not on the device or comparing failed
// (the caller then compares hashes).
std::optional<std::vector<std::uint64_t>> CompareWithSnapshot(device::Device& device,
                                                              const SnapshotRegion& region,
                                                              std::uint64_t chunk_size) {
  if (region.backing == nullptr || region.backing->tier() != device::StorageTier::kDevice)
    return std::nullopt;
  std::vector<std::uint8_t> flags(base::ChunkCount(region.size, chunk_size));
  Status status = device.CompareChunks(region.base, *region.backing, 0, region.size, chunk_size, flags);
  if (!status.ok()) {
    GPUPROF_LOG(kDebug) << "restore: comparing " << DescribeRegion(region)
                        << " with its snapshot failed, comparing hashes instead: " << status.ToString();
    return std::nullopt;
  }
  std::vector<std::uint64_t> dirty;
  for (std::uint64_t c = 0; c < flags.size(); ++c) {
    if (flags[c] != 0) dirty.push_back(c);
  }
  return dirty;
}

// Runs fn() if the tracked region is still the allocation that was captured, holding the
// inventory's read lock across the check and fn (so a concurrent free waits). Module variables
// are always present. Returns false when the region was skipped.
template <typename Fn>
bool WithLiveRegion(const Inventory& inventory, const SnapshotRegion& region, Fn&& fn) {
  if (region.source == RegionSource::kModuleVariable) {
    fn();
    return true;
  }
  bool live = false;
  inventory.WithAllocationLocked(region.base, [&](const TrackedAllocation* allocation) {
    live = allocation != nullptr && allocation->generation == region.generation &&
           allocation->size >= region.size;
    if (live) fn();
  });
  return live;
}

}  // namespace

std::vector<ByteRange> CoalesceDirtyChunks(const std::vector<std::uint64_t>& dirty, std::uint64_t chunk_size,
                                           std::uint64_t region_size) {
  std::vector<ByteRange> runs;
  for (std::uint64_t chunk : dirty) {
    std::uint64_t offset = chunk * chunk_size;
    if (offset >= region_size) break;
    std::uint64_t size = std::min(chunk_size, region_size - offset);
    if (!runs.empty() && runs.back().offset + runs.back().size == offset) {
      runs.back().size += size;
    } else {
      runs.push_back(ByteRange{offset, size});
    }
  }
  return runs;
}

Status Snapshot::CaptureRegion(device::Device& device, SnapshotRegion region, device::StorageTier tier) {
  GPUPROF_ASSIGN_OR_RETURN(region.backing, device.AllocateBacking(region.size, tier));
  GPUPROF_RETURN_IF_ERROR(device.SaveToBacking(*region.backing, 0, region.base, region.size));
  // The window is held and the device drained: the bytes just saved are the bytes hashed.
  GPUPROF_ASSIGN_OR_RETURN(region.chunk_hashes, HashRegion(device, region, chunk_size_));
  total_bytes_ += region.size;
  if (region.backing->tier() == device::StorageTier::kDevice) device_bytes_ += region.size;
  regions_.push_back(std::move(region));
  return OkStatus();
}

Snapshot Snapshot::Capture(device::Device& device, const Inventory& inventory,
                           const SnapshotOptions& options) {
  Snapshot snapshot(device.metadata_resource());
  snapshot.chunk_size_ = options.chunk_size;
  auto fail = [&](std::string why) {
    snapshot.failure_ = std::move(why);
    GPUPROF_LOG(kDebug) << "snapshot of device " << device.ordinal() << " incomplete: " << snapshot.failure_;
    return std::move(snapshot);
  };
  if (options.chunk_size == 0) return fail("chunk size is 0");
  if (inventory.finalizing()) return fail("process finalization has begun");

  try {
    std::vector<TrackedAllocation> allocations = inventory.SnapshotInventory(device.ordinal());
    StatusOr<std::vector<device::ModuleVariable>> variables = device.EnumerateModuleVariables();
    if (!variables.ok()) {
      // A __device__ global never discovered is one never restored: passes 2..N would read
      // pass 1's state. Decline rather than replay on different inputs.
      return fail("module-variable enumeration failed: " + variables.status().ToString());
    }
    try {
      snapshot.regions_.reserve(allocations.size() + variables->size());
    } catch (const std::bad_alloc&) {
      return fail("reserving snapshot metadata for " +
                  std::to_string(allocations.size() + variables->size()) +
                  " regions failed (out of host memory)");
    }

    for (const TrackedAllocation& allocation : allocations) {
      SnapshotRegion region;
      region.source = RegionSource::kAllocation;
      region.base = allocation.base;
      region.size = allocation.size;
      region.generation = allocation.generation;
      std::string what = DescribeRegion(region);
      Status status = snapshot.CaptureRegion(device, std::move(region), options.preferred_tier);
      if (!status.ok()) return fail("capturing " + what + " failed: " + status.ToString());
    }

    for (device::ModuleVariable& variable : *variables) {
      if (variable.address == 0 || variable.size == 0) continue;
      if (variable.size > options.max_symbol_bytes) {
        ++snapshot.symbols_skipped_;
        GPUPROF_LOG(kWarning) << "snapshot: module variable '" << variable.name << "' (" << variable.size
                              << " bytes) is above the " << options.max_symbol_bytes
                              << "-byte cap and is not captured; raise the cap to include it";
        continue;
      }
      SnapshotRegion region;
      region.source = RegionSource::kModuleVariable;
      region.base = variable.address;
      region.size = variable.size;
      region.name = std::move(variable.name);
      std::string what = DescribeRegion(region);
      Status status = snapshot.CaptureRegion(device, std::move(region), options.preferred_tier);
      if (!status.ok()) return fail("capturing " + what + " failed: " + status.ToString());
    }

    std::vector<std::uint64_t> region_hashes;
    region_hashes.reserve(snapshot.regions_.size());
    for (const SnapshotRegion& region : snapshot.regions_) {
      region_hashes.push_back(base::CombineHashes(region.chunk_hashes));
    }
    snapshot.input_hash_ = base::CombineHashes(region_hashes);
  } catch (const std::bad_alloc&) {
    return fail("out of host memory while building the snapshot");
  } catch (const std::exception& e) {
    return fail(std::string("unexpected error while building the snapshot: ") + e.what());
  }
  return snapshot;
}

StatusOr<OutputState> Snapshot::Inspect(device::Device& device, const Inventory& inventory) const {
  OutputState state;
  state.chunk_hashes.resize(regions_.size());
  std::vector<std::uint64_t> region_hashes(regions_.size(), 0);
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const SnapshotRegion& region = regions_[i];
    Status status = OkStatus();
    WithLiveRegion(inventory, region, [&] {
      StatusOr<std::vector<std::uint64_t>> hashes = HashRegion(device, region, chunk_size_);
      if (!hashes.ok()) {
        status = hashes.status().WithContext("hashing " + DescribeRegion(region));
        return;
      }
      state.chunk_hashes[i] = std::move(hashes).value();
      region_hashes[i] = base::CombineHashes(state.chunk_hashes[i]);
    });
    GPUPROF_RETURN_IF_ERROR(status);
  }
  state.output_hash = base::CombineHashes(region_hashes);
  return state;
}

RestoreStats Snapshot::Restore(device::Device& device, const Inventory& inventory, RestoreMode mode,
                               const OutputState* current) const {
  RestoreStats stats;
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const SnapshotRegion& region = regions_[i];
    bool failed = false;
    bool live = WithLiveRegion(inventory, region, [&] {
      std::vector<ByteRange> runs;
      if (mode == RestoreMode::kFull) {
        runs.push_back(ByteRange{0, region.size});
        stats.dirty_chunks += region.chunk_hashes.size();
      } else if (std::optional<std::vector<std::uint64_t>> exact =
                     CompareWithSnapshot(device, region, chunk_size_)) {
        // B1: the snapshot is on the device; compared byte for byte, no hash can collide.
        stats.dirty_chunks += exact->size();
        ++stats.regions_compared;
        runs = CoalesceDirtyChunks(*exact, chunk_size_, region.size);
      } else {
        std::vector<std::uint64_t> hashes;
        const std::vector<std::uint64_t>* now = nullptr;
        if (current != nullptr && i < current->chunk_hashes.size() &&
            current->chunk_hashes[i].size() == region.chunk_hashes.size()) {
          now = &current->chunk_hashes[i];
        } else {
          StatusOr<std::vector<std::uint64_t>> fresh = HashRegion(device, region, chunk_size_);
          if (fresh.ok()) {
            hashes = std::move(fresh).value();
            now = &hashes;
          }
        }
        if (now == nullptr) {
          // Cannot tell what changed: write the whole region back.
          runs.push_back(ByteRange{0, region.size});
          stats.dirty_chunks += region.chunk_hashes.size();
        } else {
          std::vector<std::uint64_t> dirty;
          for (std::uint64_t c = 0; c < region.chunk_hashes.size(); ++c) {
            if ((*now)[c] != region.chunk_hashes[c]) dirty.push_back(c);
          }
          stats.dirty_chunks += dirty.size();
          runs = CoalesceDirtyChunks(dirty, chunk_size_, region.size);
        }
      }
      Status status = device.RestoreRunsFromBacking(region.base, *region.backing, 0, runs);
      if (!status.ok()) {
        failed = true;
        GPUPROF_LOG(kWarning) << "restore: writing back " << DescribeRegion(region)
                              << " failed, skipped: " << status.ToString();
        return;
      }
      for (const ByteRange& run : runs) stats.bytes_restored += run.size;
      stats.runs += runs.size();
    });
    if (!live) {
      ++stats.regions_skipped;
      GPUPROF_LOG(kWarning) << "restore: " << DescribeRegion(region)
                            << " was freed, reallocated or shrunk since the snapshot; not written back";
    } else if (failed) {
      ++stats.regions_failed;
    } else {
      ++stats.regions_restored;
    }
  }
  return stats;
}

}  // namespace gpuprof::replay
