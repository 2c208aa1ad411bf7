// Raw host memory behind simulated device memory, the registry lookup and fault injection.
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <new>

#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {

static_assert(sizeof(std::size_t) == sizeof(std::uint64_t),
              "the host platform maps device sizes onto size_t one to one");

RawBlock AllocateRaw(std::uint64_t size, bool zero_fill) noexcept {
  RawBlock block;
  block.size = size;
  if (size == 0) return block;
  if (size >= kMmapThreshold) {
    // MAP_NORESERVE: a huge variable or allocation is address space only until written.
    // Anonymous pages read as zero, so no fill is needed.
    void* data =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (data == MAP_FAILED) return RawBlock{};
    block.data = data;
    block.mapped = true;
    return block;
  }
  void* data = ::operator new (size, std::align_val_t{kAllocationAlignment}, std::nothrow);
  if (data == nullptr) return RawBlock{};
  if (zero_fill) std::memset(data, 0, size);
  block.data = data;
  return block;
}

void ReleaseRaw(const RawBlock& block) noexcept {
  if (block.data == nullptr) return;
  if (block.mapped) {
    ::munmap(block.data, block.size);
  } else {
    ::operator delete (block.data, std::align_val_t{kAllocationAlignment});
  }
}

std::string Hex(DevicePtr ptr) {
  char buffer[2 + 16 + 1];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(ptr));
  return buffer;
}

std::string PlusBytes(std::uint64_t bytes) { return "(+" + std::to_string(bytes) + " bytes)"; }

const RegistryEntry* FindContaining(const Registry& registry, DevicePtr ptr, DevicePtr* base) {
  auto it = registry.upper_bound(ptr);
  if (it == registry.begin()) return nullptr;
  --it;
  if (ptr - it->first >= it->second.block.size) return nullptr;
  if (base != nullptr) *base = it->first;
  return &it->second;
}

// ---- FaultInjector ------------------------------------------------------------------------------

std::string_view FaultPointName(FaultPoint point) noexcept {
  switch (point) {
    case FaultPoint::kArenaGrowth: return "arena-growth";
    case FaultPoint::kSaveCopy: return "save-copy";
    case FaultPoint::kRestoreCopy: return "restore-copy";
    case FaultPoint::kDeviceToHostCopy: return "device-to-host-copy";
    case FaultPoint::kHashChunks: return "hash-chunks";
    case FaultPoint::kMetadataAllocation: return "metadata-allocation";
    case FaultPoint::kModuleEnumeration: return "module-enumeration";
    case FaultPoint::kSynchronizeTimeout: return "synchronize-timeout";
    case FaultPoint::kCompareChunks: return "compare-chunks";
    case FaultPoint::kPinnedPoolExhausted: return "pinned-pool-exhausted";
    case FaultPoint::kSpillFileWrite: return "spill-file-write";
  }
  return "unknown";
}

FaultInjector::FaultInjector() {
  for (auto& armed : armed_) armed.store(false, std::memory_order_relaxed);
}

void FaultInjector::Inject(FaultPoint point, int count, int skip) {
  if (count <= 0) return;
  std::size_t i = Index(point);
  if (i >= kFaultPointCount) return;
  auto state = state_.wlock();
  PointState& s = (*state)[i];
  s.fail += count;
  s.skip += skip > 0 ? skip : 0;
  armed_[i].store(true, std::memory_order_release);
}

void FaultInjector::Clear() {
  auto state = state_.wlock();
  for (std::size_t i = 0; i < kFaultPointCount; ++i) {
    (*state)[i] = PointState{};
    armed_[i].store(false, std::memory_order_release);
  }
}

int FaultInjector::Fired(FaultPoint point) const {
  std::size_t i = Index(point);
  if (i >= kFaultPointCount) return 0;
  return state_.rlock()->at(i).fired;
}

bool FaultInjector::ShouldFail(FaultPoint point) {
  std::size_t i = Index(point);
  if (i >= kFaultPointCount || !armed_[i].load(std::memory_order_acquire)) return false;
  auto state = state_.wlock();
  PointState& s = (*state)[i];
  if (s.fail == 0) return false;  // disarmed by a racing call
  if (s.skip > 0) {
    --s.skip;
    return false;
  }
  --s.fail;
  ++s.fired;
  if (s.fail == 0) armed_[i].store(false, std::memory_order_release);
  return true;
}

}  // namespace gpuprof::device::host
