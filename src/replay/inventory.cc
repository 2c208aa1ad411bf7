#include "replay/inventory.h"

#include "base/logging.h"

namespace gpuprof::replay {

using device::DevicePtr;
using device::MemoryKind;

void Inventory::RecordAlloc(const device::PointerInfo& info) noexcept {
  if (!recording() || finalizing()) return;
  try {
    auto state = state_.wlock();
    if (info.kind == MemoryKind::kDeviceLocal) {
      // A base can only be live once; a stale entry means we missed a free (e.g. one that
      // happened before recording began). The new allocation replaces it with a new generation.
      state->tracked[info.base] =
          TrackedAllocation{info.base, info.size, state->next_generation++, info.owner_device};
      ++state->tracked_version;
      return;
    }
    auto& counts = state->excluded[static_cast<std::size_t>(info.kind)];
    counts.allocations += 1;
    counts.bytes += info.size;
    counts.live_bytes += info.size;
    if (device::IsKernelWritableUntracked(info.kind)) state->untracked_writable_live += info.size;
    state->excluded_live[info.base] = ExcludedEntry{info.size, info.kind, info.owner_device};
  } catch (...) {
    // Out of memory while recording: the allocation goes untracked. Replay stays correct for
    // everything else; this one's writes would not be undone, so say so.
    GPUPROF_LOG(kWarning) << "inventory: could not record allocation at 0x" << std::hex << info.base
                          << "; replayed kernels writing it will not be restored";
  }
}

void Inventory::RecordFree(DevicePtr base) noexcept {
  if (!recording() || finalizing()) return;
  auto state = state_.wlock();
  if (state->tracked.erase(base) > 0) {
    ++state->tracked_version;
    return;
  }
  auto it = state->excluded_live.find(base);
  if (it == state->excluded_live.end()) return;
  auto& counts = state->excluded[static_cast<std::size_t>(it->second.kind)];
  counts.live_bytes -= it->second.size;
  if (device::IsKernelWritableUntracked(it->second.kind)) state->untracked_writable_live -= it->second.size;
  state->excluded_live.erase(it);
}

std::vector<TrackedAllocation> Inventory::SnapshotInventory(int device, std::uint64_t* version) const {
  std::vector<TrackedAllocation> out;
  if (finalizing()) return out;
  auto state = state_.rlock();
  if (version != nullptr) *version = state->tracked_version;
  for (const auto& [base, allocation] : state->tracked) {
    if (allocation.owner_device == device) out.push_back(allocation);
  }
  return out;
}

const TrackedAllocation* Inventory::LockedView::Find(DevicePtr base) const {
  auto it = tracked_.find(base);
  return it == tracked_.end() ? nullptr : &it->second;
}

void Inventory::WithAllocationsLocked(const std::function<void(const LockedView&)>& fn) const {
  auto state = state_.rlock();
  fn(LockedView(state->tracked, state->tracked_version));
}

int Inventory::OwnerOf(DevicePtr base) const {
  auto state = state_.rlock();
  if (auto it = state->tracked.find(base); it != state->tracked.end()) return it->second.owner_device;
  if (auto it = state->excluded_live.find(base); it != state->excluded_live.end()) {
    return it->second.owner_device;
  }
  return -1;
}

ExcludedCounts Inventory::excluded(MemoryKind kind) const {
  return state_.rlock()->excluded[static_cast<std::size_t>(kind)];
}

std::uint64_t Inventory::untracked_writable_live_bytes() const {
  return state_.rlock()->untracked_writable_live;
}

std::size_t Inventory::tracked_count() const { return state_.rlock()->tracked.size(); }

}  // namespace gpuprof::replay
