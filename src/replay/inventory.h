// The allocation inventory (rules R1, R3–R6): every live device allocation the runtime made,
// recorded by the wrappers over its allocate/free entry points.
//
// Each allocation is classified when recorded (Device::QueryPointer): device-local memory is
// tracked with its owning device and identity (base, size, generation); every other kind is
// excluded and counted, and kernel-writable excluded bytes (host-mapped, managed, IPC-imported)
// are tracked as live so replay can report them and strict mode can decline.
//
// Thread-safety: all methods are thread-safe. State lives behind base::Synchronized; recording
// is gated by a relaxed atomic flag (off until replay is configured) and stops for good once
// finalization has begun (teardown guard, R5).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "base/synchronized.h"
#include "device/device.h"

namespace gpuprof::replay {

// A tracked allocation. Caching allocators hand the same base back, so identity is the triple.
struct TrackedAllocation {
  device::DevicePtr base = 0;
  std::uint64_t size = 0;
  std::uint64_t generation = 0;
  int owner_device = -1;
};

struct ExcludedCounts {
  std::uint64_t allocations = 0;  // ever recorded of this kind
  std::uint64_t bytes = 0;        // ever recorded of this kind
  std::uint64_t live_bytes = 0;   // recorded and not yet freed
};

class Inventory {
 public:
  Inventory() = default;
  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;

  // R3: recording is off until enabled. The flag is read with a relaxed load on every call.
  void EnableRecording(bool enabled) noexcept { recording_.store(enabled, std::memory_order_relaxed); }
  bool recording() const noexcept { return recording_.load(std::memory_order_relaxed); }

  // R5: after this, RecordAlloc/RecordFree/Snapshot* do nothing and take no lock.
  void BeginFinalization() noexcept { finalizing_.store(true, std::memory_order_release); }
  bool finalizing() const noexcept { return finalizing_.load(std::memory_order_acquire); }

  // Records an allocation already classified by the device. No-op unless recording.
  void RecordAlloc(const device::PointerInfo& info) noexcept;
  // Records a free of the allocation starting at `base` (tracked or excluded). No-op unless
  // recording; unknown bases are ignored (allocations made before recording began).
  void RecordFree(device::DevicePtr base) noexcept;

  // Tracked allocations owned by `device`, in address order (empty when finalizing). `version`,
  // when given, receives the tracked set's version (LockedView::version) at that moment.
  std::vector<TrackedAllocation> SnapshotInventory(int device, std::uint64_t* version = nullptr) const;

  // The tracked allocations as a batch restore sees them: Find(base) is the live allocation at
  // `base` or null. Valid only inside WithAllocationsLocked's callback.
  class LockedView {
   public:
    const TrackedAllocation* Find(device::DevicePtr base) const;
    // Changes with every recorded allocation or free of tracked memory: equal versions, the same
    // tracked set.
    std::uint64_t version() const noexcept { return version_; }

   private:
    friend class Inventory;
    LockedView(const std::map<device::DevicePtr, TrackedAllocation>& tracked, std::uint64_t version)
        : tracked_(tracked), version_(version) {}
    const std::map<device::DevicePtr, TrackedAllocation>& tracked_;
    std::uint64_t version_;
  };
  // Calls fn(view) while holding the read lock, so that no free can slip between a restore's
  // check of its regions and its copies (R10): a concurrent free waits until fn returns.
  void WithAllocationsLocked(const std::function<void(const LockedView&)>& fn) const;
  // Owning device of the tracked or excluded allocation at `base`, or -1 when unknown.
  int OwnerOf(device::DevicePtr base) const;

  ExcludedCounts excluded(device::MemoryKind kind) const;
  // Live kernel-writable untracked bytes (host-mapped, managed, IPC-imported) of every device.
  std::uint64_t untracked_writable_live_bytes() const;
  std::size_t tracked_count() const;

 private:
  struct ExcludedEntry {
    std::uint64_t size = 0;
    device::MemoryKind kind = device::MemoryKind::kUnknown;
    int owner_device = -1;
  };
  static constexpr std::size_t kKindCount = static_cast<std::size_t>(device::MemoryKind::kUnknown) + 1;
  struct State {
    std::map<device::DevicePtr, TrackedAllocation> tracked;
    std::map<device::DevicePtr, ExcludedEntry> excluded_live;
    std::array<ExcludedCounts, kKindCount> excluded{};
    std::uint64_t untracked_writable_live = 0;
    std::uint64_t next_generation = 1;
    std::uint64_t tracked_version = 0;
  };

  std::atomic<bool> recording_{false};
  std::atomic<bool> finalizing_{false};
  base::Synchronized<State> state_;
};

}  // namespace gpuprof::replay
