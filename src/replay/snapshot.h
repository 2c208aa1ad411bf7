// Snapshot and restore of one device's replayable memory (rules R7, R8, R10, B1-B3).
//
// A Snapshot belongs to one device and lives as long as the replay engine: it is the engine's
// record of what the device's snapshot arena (device.h) holds. Capture() brings it up to date
// with the device's memory now: every tracked allocation owned by the device and every
// module-scope variable of every module loaded on it (R7). A region seen at the last Capture with
// the same identity (allocations: base, size and generation, R10; module variables: address,
// size and module) keeps its place in the arena and only its changed chunks are copied again
// (B3, found by the batched hash compare on the device); new regions are placed and captured;
// regions gone since are dropped. Whatever the application did between two replayed launches
// (its copies, memsets, unreplayed kernels, frees) shows up in the next Capture.
//
// After a pass, Restore() writes the captured bytes back with one batched operation over the
// whole table (kAuto: chunks whose hash changed; kExact: chunks differing byte for byte from a
// device-resident copy; kFull: everything), hashing the pass's output on the way when asked
// (B6). Tracked regions are re-validated against the inventory under its read lock, held across
// the batched operation (R10): a region freed, reallocated or shrunk since capture is left out
// with a warning. A failed batched restore is retried as a full one; only a failed full restore is
// reported as failed.
//
// Any failure while capturing leaves ok() == false with the reason (the caller then declines,
// R8/R9) and makes the next Capture a complete one. Nothing here is fatal.
//
// Not thread-safe: used only by the thread that holds the device's replay window.
#pragma once

#include <cstdint>
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
  // B2: the fastest tier regions may be placed in; what does not fit goes to the next slower one
  // (device, pinned host, pageable host, spill file).
  device::StorageTier fastest_tier = device::StorageTier::kDevice;
};

// The snapshot options a replay's options ask for (replay.h's SnapshotStorage names device.h's
// tiers in the same order, asserted in controller.cc).
inline SnapshotOptions SnapshotOptionsFrom(const ReplayOptions& options) {
  SnapshotOptions out;
  out.chunk_size = options.chunk_size;
  out.max_symbol_bytes = options.max_symbol_bytes;
  out.fastest_tier = static_cast<device::StorageTier>(options.storage);
  return out;
}

enum class RegionSource : std::uint8_t { kAllocation, kModuleVariable };

struct SnapshotRegion {
  RegionSource source = RegionSource::kAllocation;
  device::DevicePtr base = 0;
  std::uint64_t size = 0;
  std::uint64_t generation = 0;  // kAllocation only
  std::uint64_t module_id = 0;   // kModuleVariable only
  std::string name;              // kModuleVariable only
  device::StorageTier tier = device::StorageTier::kDevice;
  std::uint64_t arena_offset = 0;
  std::vector<std::uint64_t> chunk_hashes;  // of the captured bytes
};

// What the last Capture did.
struct CaptureStats {
  bool complete = false;            // every region copied in full (first capture, or after a reset)
  std::uint64_t regions_kept = 0;   // regions carried over from the previous capture (B3)
  std::uint64_t regions_added = 0;  // regions captured in full
  std::uint64_t regions_dropped = 0;
  std::uint64_t chunks_copied = 0;
  std::uint64_t bytes_copied = 0;
  std::uint64_t arena_allocation_ns = 0;  // time spent growing the arena in this capture
  std::uint64_t inventory_ns = 0;         // inventory walk and module-variable enumeration
  std::uint64_t copy_ns = 0;              // the batched copy and hash operations
};

struct RestoreStats {
  std::uint64_t regions_restored = 0;  // regions written back (or already clean)
  std::uint64_t regions_skipped = 0;   // freed / reallocated / shrunk since capture
  std::uint64_t regions_failed = 0;    // regions left unrestored because even a full restore failed
  std::uint64_t bytes_restored = 0;
  std::uint64_t dirty_chunks = 0;  // chunks written back (every chunk for kFull)
  std::uint64_t device_ops = 0;    // batched device operations issued (retries included)
  bool fell_back_to_full = false;  // the first attempt failed and a full restore followed
};

class Snapshot {
 public:
  explicit Snapshot(device::Device& device);
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  // Brings the snapshot up to date with the device's replayable memory (see above). False on an
  // incomplete snapshot; failure() says why.
  bool Capture(const Inventory& inventory, const SnapshotOptions& options);

  bool ok() const noexcept { return failure_.empty() && valid_; }
  // Why the last capture is incomplete ("" when ok()).
  const std::string& failure() const noexcept { return failure_; }

  const std::pmr::vector<SnapshotRegion>& regions() const noexcept { return regions_; }
  std::uint64_t total_bytes() const noexcept { return total_bytes_; }
  // Of total_bytes(), those held in each tier (B2).
  const device::TierBytes& tier_bytes() const noexcept { return tier_bytes_; }
  std::uint64_t device_bytes() const noexcept { return tier_bytes_[0]; }
  std::uint64_t chunk_size() const noexcept { return chunk_size_; }
  std::uint64_t chunk_count() const noexcept { return chunk_count_; }
  std::uint64_t symbols_skipped() const noexcept { return symbols_skipped_; }
  // Hash of the captured bytes (what every pass must see as input): of every chunk hash, in table
  // order. A pass's output hash is the same function of the live regions' chunks.
  std::uint64_t input_hash() const noexcept { return input_hash_; }
  const CaptureStats& last_capture() const noexcept { return last_capture_; }

  // The hash of the device's current bytes of every region (a pass's output, B6); a region gone
  // since capture hashes as empty.
  StatusOr<std::uint64_t> Inspect(const Inventory& inventory);

  // Writes captured bytes back (see above). When `output_hash` is not null it receives the hash
  // of the bytes before the restore (the pass's output; 0 when it could not be computed).
  RestoreStats Restore(const Inventory& inventory, RestoreMode mode, std::uint64_t* output_hash);

  // Range replay (W4): the chunks the device's bytes differ in from the captured ones (by hash),
  // set aside so that after the passes memory can hold exactly what the application's own
  // execution left. `output_hash` receives the hash of the device's bytes now (the range's
  // pass-1 output, B6).
  // The runs go to the arena's room past the snapshot (device tier first, then pinned host) in one
  // batched copy, and come back in one; a run with no room there goes through the snapshot's host
  // buffer (one, reused from range to range, so a step's output is not paged in afresh every time).
  // Each KeepChanged remembers the room it needed, and the next Capture reserves it.
  // Valid until the next KeepChanged or Capture.
  struct KeptChunks {
    struct Run {
      device::DevicePtr base = 0;
      std::uint64_t offset = 0;  // in the host buffer
      std::uint64_t bytes = 0;
    };
    std::vector<device::ArenaRegion> arena_runs;  // contiguous changed chunks of one region each
    std::vector<Run> host_runs;                   // the same, where the arena had no room
    std::uint64_t bytes = 0;                      // of every run
    std::uint64_t host_bytes = 0;                 // of the host runs
    std::uint64_t arena_generation = 0;           // the arena's, when the runs were placed in it
  };
  StatusOr<KeptChunks> KeepChanged(const Inventory& inventory, std::uint64_t* output_hash);
  // Writes kept chunks back (after a Restore that returned every other byte to the captured one).
  Status PutBack(const KeptChunks& kept);

  // Forgets what the arena holds: the next Capture copies everything.
  void Invalidate() noexcept;

 private:
  bool Fail(std::string why);
  // The live subset of regions_ as a table (under the inventory's read lock), in regions_ order;
  // `skipped` counts the regions left out.
  void BuildLiveTable(const Inventory::LockedView& view, std::vector<device::ArenaRegion>* table,
                      std::uint64_t* skipped) const;

  device::Device& device_;
  std::vector<std::uint8_t> kept_buffer_;  // KeepChanged's host runs, back to back
  std::uint64_t keep_room_ = 0;            // arena bytes the last KeepChanged wanted past the snapshot
  // Allocated from the device's metadata resource, whose failure is an incomplete snapshot (R8).
  std::pmr::vector<SnapshotRegion> regions_;
  // regions_ as the device's table, and the inventory's version it was captured at: while the
  // version holds, every region is live and restores use the table as it is (no lookups).
  std::vector<device::ArenaRegion> table_;
  std::uint64_t inventory_version_ = 0;
  std::string failure_;
  bool valid_ = false;                  // regions_ matches the arena's contents
  std::uint64_t arena_generation_ = 0;  // the arena's generation when regions_ was last valid
  std::uint64_t total_bytes_ = 0;
  device::TierBytes tier_bytes_{};
  std::uint64_t chunk_size_ = 0;
  std::uint64_t chunk_count_ = 0;
  std::uint64_t symbols_skipped_ = 0;
  std::uint64_t input_hash_ = 0;
  CaptureStats last_capture_;
};

}  // namespace gpuprof::replay
