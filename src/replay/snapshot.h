// Snapshot and restore of one device's replayable memory (rules R7, R8, R10, B1).
//
// Snapshot::Capture copies every tracked allocation owned by the device and every module-scope
// variable of every module loaded on it into backing buffers, and records per-chunk hashes of
// what it copied. Capture never fails fatally: any failure leaves ok() == false with the reason,
// and the caller must then not replay (R9).
//
// After a pass, Inspect() hashes the device's current bytes chunk by chunk: the combination is
// the pass's output hash (B6) and the differing chunks are what a dirty restore writes back (B1).
// Restore() writes captured bytes back (all of them in kFull mode; only differing chunks,
// coalesced into runs, in kAuto mode: found by comparing with the snapshot on the device when it
// is stored there, else by comparing chunk hashes). Tracked regions are re-validated against the inventory
// under its read lock, lookup and copy together: a region freed, reallocated (generation changed)
// or shrunk since capture is skipped with a warning. A failed copy is logged and skipped.
//
// Not thread-safe: one snapshot is used by the one thread that holds the device's replay window.
#pragma once

#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string>
#include <vector>

#include "device/device.h"
#include "gpuprof/replay.h"
#include "replay/inventory.h"

namespace gpuprof::replay {

struct SnapshotOptions {
  std::uint64_t chunk_size = 64 * 1024;
  std::uint64_t max_symbol_bytes = 1ull << 30;
  // B2: the device's own memory first (the backend falls back to pinned, then pageable host
  // memory when the region does not fit under its reserve).
  device::StorageTier preferred_tier = device::StorageTier::kDevice;
};

enum class RegionSource : std::uint8_t { kAllocation, kModuleVariable };

struct SnapshotRegion {
  RegionSource source = RegionSource::kAllocation;
  device::DevicePtr base = 0;
  std::uint64_t size = 0;
  std::uint64_t generation = 0;  // kAllocation only
  std::string name;              // kModuleVariable only
  std::unique_ptr<device::BackingBuffer> backing;
  std::vector<std::uint64_t> chunk_hashes;  // of the captured bytes
};

// The device's bytes after a pass, as chunk hashes per region (same order as the snapshot).
struct OutputState {
  std::vector<std::vector<std::uint64_t>> chunk_hashes;
  std::uint64_t output_hash = 0;
};

struct RestoreStats {
  std::uint64_t regions_restored = 0;  // regions fully written back (or already clean)
  std::uint64_t regions_skipped = 0;   // freed / reallocated / shrunk since capture
  std::uint64_t regions_failed = 0;    // a copy failed
  std::uint64_t bytes_restored = 0;
  std::uint64_t dirty_chunks = 0;      // kAuto: chunks that differed; kFull: all chunks
  std::uint64_t runs = 0;              // copies issued after coalescing adjacent chunks
  std::uint64_t regions_compared = 0;  // kAuto: regions compared exactly with a device-resident snapshot
};

class Snapshot {
 public:
  // Captures `device`'s replayable memory. Never fails fatally; check ok().
  static Snapshot Capture(device::Device& device, const Inventory& inventory, const SnapshotOptions& options);

  Snapshot(Snapshot&&) noexcept = default;
  Snapshot& operator=(Snapshot&&) noexcept = default;

  bool ok() const noexcept { return failure_.empty(); }
  // Why the snapshot is incomplete ("" when ok()).
  const std::string& failure() const noexcept { return failure_; }

  const std::pmr::vector<SnapshotRegion>& regions() const noexcept { return regions_; }
  std::uint64_t total_bytes() const noexcept { return total_bytes_; }
  // Of total_bytes(), those held in the device's own memory (B2; the rest is in host memory).
  std::uint64_t device_bytes() const noexcept { return device_bytes_; }
  std::uint64_t chunk_size() const noexcept { return chunk_size_; }
  std::uint64_t symbols_skipped() const noexcept { return symbols_skipped_; }
  // Hash of the captured bytes (what every pass must see as input).
  std::uint64_t input_hash() const noexcept { return input_hash_; }

  // Hashes the device's current bytes of every region. Tracked regions are re-validated under
  // the inventory's read lock like Restore; a region gone since capture hashes as empty.
  StatusOr<OutputState> Inspect(device::Device& device, const Inventory& inventory) const;

  // Writes captured bytes back. In kAuto mode `current` (from Inspect after the pass) decides
  // which chunks differ; if it is null, kAuto inspects first. Never aborts on a failed region.
  RestoreStats Restore(device::Device& device, const Inventory& inventory, RestoreMode mode,
                       const OutputState* current) const;

 private:
  explicit Snapshot(std::pmr::memory_resource* metadata) : regions_(metadata) {}
  Status CaptureRegion(device::Device& device, SnapshotRegion region, device::StorageTier tier);

  // Allocated from the device's metadata resource, whose failure is an incomplete snapshot (R8).
  std::pmr::vector<SnapshotRegion> regions_;
  std::string failure_;
  std::uint64_t total_bytes_ = 0;
  std::uint64_t device_bytes_ = 0;
  std::uint64_t chunk_size_ = 0;
  std::uint64_t symbols_skipped_ = 0;
  std::uint64_t input_hash_ = 0;
};

// Coalesces the indices of differing chunks into byte runs over a region of `region_size`
// (adjacent chunks merge; the last run is clipped to the region). `dirty` must be sorted.
std::vector<device::ByteRange> CoalesceDirtyChunks(const std::vector<std::uint64_t>& dirty,
                                                   std::uint64_t chunk_size, std::uint64_t region_size);

}  // namespace gpuprof::replay
