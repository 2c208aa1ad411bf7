// HostDevice: device.h over the platform's simulated memory, with fault injection.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory_resource>
#include <new>
#include <string>
#include <utility>

#include "base/hash.h"
#include "device/host/host_platform.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {
namespace {

// Snapshot storage. Every tier is host memory here; the tier is a label the engine reads back.
class HostBackingBuffer final : public BackingBuffer {
 public:
  HostBackingBuffer(RawBlock block, StorageTier tier) : block_(block), tier_(tier) {}
  ~HostBackingBuffer() override { ReleaseRaw(block_); }
  HostBackingBuffer(const HostBackingBuffer&) = delete;
  HostBackingBuffer& operator=(const HostBackingBuffer&) = delete;

  std::uint64_t size() const noexcept override { return block_.size; }
  StorageTier tier() const noexcept override { return tier_; }
  std::uint8_t* data() const noexcept { return static_cast<std::uint8_t*>(block_.data); }

 private:
  RawBlock block_;
  StorageTier tier_;
};

// new_delete_resource, except that it throws std::bad_alloc when kMetadataAllocation fires.
class FaultingMetadataResource final : public std::pmr::memory_resource {
 public:
  explicit FaultingMetadataResource(FaultInjector& faults) : faults_(faults) {}

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (faults_.ShouldFail(FaultPoint::kMetadataAllocation)) throw std::bad_alloc();
    return std::pmr::new_delete_resource()->allocate(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  FaultInjector& faults_;
};

std::string FormatDuration(std::chrono::nanoseconds duration) {
  const auto ns = duration.count();
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + " ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + " us";
  return std::to_string(ns) + " ns";
}

// The backing range [offset, offset+bytes) must lie inside the buffer.
Status CheckBackingRange(std::string_view call, const HostBackingBuffer& buffer, std::uint64_t offset,
                         std::uint64_t bytes) {
  if (offset > buffer.size() || bytes > buffer.size() - offset) {
    return InvalidArgumentError(std::string(call) + ": backing range at offset " + std::to_string(offset) +
                                " " + PlusBytes(bytes) + " exceeds the buffer's " +
                                std::to_string(buffer.size()) + " bytes");
  }
  return OkStatus();
}

}  // namespace

HostDevice::HostDevice(HostPlatform::Impl& platform, int ordinal)
    : platform_(platform),
      ordinal_(ordinal),
      metadata_resource_(std::make_unique<FaultingMetadataResource>(platform.faults)) {}

HostDevice::~HostDevice() = default;

std::string HostDevice::name() const { return "host-device-" + std::to_string(ordinal_); }

StatusOr<PointerInfo> HostDevice::QueryPointer(DevicePtr ptr) {
  auto registry = platform_.registry.rlock();
  DevicePtr base = 0;
  const RegistryEntry* entry = FindContaining(*registry, ptr, &base);
  if (entry == nullptr) {
    return NotFoundError("QueryPointer: " + Hex(ptr) + " is not inside any allocation (device " +
                         std::to_string(ordinal_) + ")");
  }
  PointerInfo info;
  info.base = base;
  info.size = entry->block.size;
  info.kind = entry->kind;
  info.owner_device = entry->owner_device;
  return info;
}

Status HostDevice::CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) {
  if (platform_.faults.ShouldFail(FaultPoint::kDeviceToHostCopy)) {
    return InternalError("CopyDeviceToHost: copy of " + Hex(src) + " " + PlusBytes(bytes) +
                         " failed on device " + std::to_string(ordinal_) + " (injected fault)");
  }
  if (bytes == 0) return OkStatus();
  if (dst == nullptr) {
    return InvalidArgumentError("CopyDeviceToHost: null host destination for " + Hex(src) + " " +
                                PlusBytes(bytes) + " (device " + std::to_string(ordinal_) + ")");
  }
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(
      HostPlatform::Impl::CheckDeviceRange(*registry, "CopyDeviceToHost", "source", src, bytes, ordinal_));
  std::memcpy(dst, ToHost(src), bytes);
  return OkStatus();
}

Status HostDevice::CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) {
  if (bytes == 0) return OkStatus();
  if (src == nullptr) {
    return InvalidArgumentError("CopyHostToDevice: null host source for " + Hex(dst) + " " +
                                PlusBytes(bytes) + " (device " + std::to_string(ordinal_) + ")");
  }
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(HostPlatform::Impl::CheckDeviceRange(*registry, "CopyHostToDevice", "destination",
                                                               dst, bytes, ordinal_));
  std::memcpy(ToHost(dst), src, bytes);
  return OkStatus();
}

Status HostDevice::CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) {
  if (bytes == 0) return OkStatus();
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(HostPlatform::Impl::CheckDeviceRange(*registry, "CopyDeviceToDevice", "destination",
                                                               dst, bytes, ordinal_));
  GPUPROF_RETURN_IF_ERROR(
      HostPlatform::Impl::CheckDeviceRange(*registry, "CopyDeviceToDevice", "source", src, bytes, ordinal_));
  std::memmove(ToHost(dst), ToHost(src), bytes);
  return OkStatus();
}

StatusOr<std::unique_ptr<BackingBuffer>> HostDevice::AllocateBacking(std::uint64_t bytes,
                                                                     StorageTier preferred) {
  const std::string failure = "AllocateBacking: host allocation failed (bad_alloc) for " +
                              std::to_string(bytes) + " bytes of " + std::string(StorageTierName(preferred)) +
                              " storage on device " + std::to_string(ordinal_);
  if (platform_.faults.ShouldFail(FaultPoint::kBackingAllocation)) {
    return ResourceExhaustedError(failure + " (injected fault)");
  }
  // No file tier here: a spill lands in pageable host memory, and the buffer says so.
  const StorageTier tier = preferred == StorageTier::kFile ? StorageTier::kPageableHost : preferred;
  const RawBlock block = AllocateRaw(bytes, /*zero_fill=*/false);
  if (bytes != 0 && block.data == nullptr) return ResourceExhaustedError(failure);
  try {
    return std::unique_ptr<BackingBuffer>(std::make_unique<HostBackingBuffer>(block, tier));
  } catch (const std::bad_alloc&) {
    ReleaseRaw(block);
    return ResourceExhaustedError(failure);
  }
}

Status HostDevice::SaveToBacking(BackingBuffer& dst, std::uint64_t dst_offset, DevicePtr src,
                                 std::uint64_t bytes) {
  if (platform_.faults.ShouldFail(FaultPoint::kSaveCopy)) {
    return InternalError("SaveToBacking: copy of " + Hex(src) + " " + PlusBytes(bytes) +
                         " failed on device " + std::to_string(ordinal_) + " (injected fault)");
  }
  auto* buffer = dynamic_cast<HostBackingBuffer*>(&dst);
  if (buffer == nullptr) {
    return InvalidArgumentError("SaveToBacking: the backing buffer was not made by a host device");
  }
  GPUPROF_RETURN_IF_ERROR(CheckBackingRange("SaveToBacking", *buffer, dst_offset, bytes));
  if (bytes == 0) return OkStatus();
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(
      HostPlatform::Impl::CheckDeviceRange(*registry, "SaveToBacking", "source", src, bytes, ordinal_));
  std::memcpy(buffer->data() + dst_offset, ToHost(src), bytes);
  return OkStatus();
}

Status HostDevice::RestoreFromBacking(DevicePtr dst, const BackingBuffer& src, std::uint64_t src_offset,
                                      std::uint64_t bytes) {
  // Copied out so the hook runs with no lock held (it may free, allocate or copy).
  const auto hook = *platform_.restore_hook.rlock();
  if (hook != nullptr) (*hook)(dst);
  if (platform_.faults.ShouldFail(FaultPoint::kRestoreCopy)) {
    return InternalError("RestoreFromBacking: copy to " + Hex(dst) + " " + PlusBytes(bytes) +
                         " failed on device " + std::to_string(ordinal_) +
                         " (injected fault; nothing written)");
  }
  const auto* buffer = dynamic_cast<const HostBackingBuffer*>(&src);
  if (buffer == nullptr) {
    return InvalidArgumentError("RestoreFromBacking: the backing buffer was not made by a host device");
  }
  GPUPROF_RETURN_IF_ERROR(CheckBackingRange("RestoreFromBacking", *buffer, src_offset, bytes));
  if (bytes == 0) return OkStatus();
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(HostPlatform::Impl::CheckDeviceRange(*registry, "RestoreFromBacking", "destination",
                                                               dst, bytes, ordinal_));
  std::memcpy(ToHost(dst), buffer->data() + src_offset, bytes);
  return OkStatus();
}

Status HostDevice::HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                              std::span<std::uint64_t> out) {
  if (platform_.faults.ShouldFail(FaultPoint::kHashChunks)) {
    return InternalError("HashChunks: hashing " + Hex(src) + " " + PlusBytes(bytes) + " failed on device " +
                         std::to_string(ordinal_) + " (injected fault)");
  }
  if (chunk_size == 0) {
    return InvalidArgumentError("HashChunks: chunk size 0 for " + Hex(src) + " " + PlusBytes(bytes) +
                                " (device " + std::to_string(ordinal_) + ")");
  }
  const std::size_t chunks = base::ChunkCount(bytes, chunk_size);
  if (out.size() != chunks) {
    return InvalidArgumentError("HashChunks: output holds " + std::to_string(out.size()) + " hashes but " +
                                Hex(src) + " " + PlusBytes(bytes) + " in chunks of " +
                                std::to_string(chunk_size) + " needs " + std::to_string(chunks) +
                                " (device " + std::to_string(ordinal_) + ")");
  }
  if (bytes == 0) return OkStatus();
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(
      HostPlatform::Impl::CheckDeviceRange(*registry, "HashChunks", "source", src, bytes, ordinal_));
  base::HashChunks(ToHost(src), bytes, chunk_size, out);
  return OkStatus();
}

Status HostDevice::CompareChunks(DevicePtr current, const BackingBuffer& saved, std::uint64_t saved_offset,
                                 std::uint64_t bytes, std::uint64_t chunk_size,
                                 std::span<std::uint8_t> dirty) {
  if (platform_.faults.ShouldFail(FaultPoint::kCompareChunks)) {
    return InternalError("CompareChunks: comparing " + Hex(current) + " " + PlusBytes(bytes) +
                         " failed on device " + std::to_string(ordinal_) + " (injected fault)");
  }
  const auto* buffer = dynamic_cast<const HostBackingBuffer*>(&saved);
  if (buffer == nullptr) {
    return InvalidArgumentError("CompareChunks: the backing buffer was not made by a host device");
  }
  if (buffer->tier() != StorageTier::kDevice) {
    return UnimplementedError("CompareChunks: the snapshot is in " +
                              std::string(StorageTierName(buffer->tier())) + " storage, not on the device");
  }
  if (chunk_size == 0) return InvalidArgumentError("CompareChunks: chunk size 0 for " + Hex(current));
  const std::size_t chunks = base::ChunkCount(bytes, chunk_size);
  if (dirty.size() != chunks) {
    return InvalidArgumentError("CompareChunks: output holds " + std::to_string(dirty.size()) +
                                " flags but " + std::to_string(chunks) + " chunks are compared");
  }
  GPUPROF_RETURN_IF_ERROR(CheckBackingRange("CompareChunks", *buffer, saved_offset, bytes));
  if (bytes == 0) return OkStatus();
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(
      HostPlatform::Impl::CheckDeviceRange(*registry, "CompareChunks", "source", current, bytes, ordinal_));
  const auto* now = static_cast<const std::uint8_t*>(ToHost(current));
  const std::uint8_t* then = buffer->data() + saved_offset;
  for (std::size_t i = 0; i < chunks; ++i) {
    const std::uint64_t offset = i * chunk_size;
    const std::uint64_t length = std::min(chunk_size, bytes - offset);
    dirty[i] = std::memcmp(now + offset, then + offset, length) != 0 ? 1 : 0;
  }
  return OkStatus();
}

StatusOr<std::vector<ModuleVariable>> HostDevice::EnumerateModuleVariables() {
  if (platform_.faults.ShouldFail(FaultPoint::kModuleEnumeration)) {
    return UnavailableError("EnumerateModuleVariables: enumeration failed on device " +
                            std::to_string(ordinal_) + " (injected fault)");
  }
  std::vector<ModuleVariable> out;
  auto modules = platform_.modules.rlock();
  for (const auto& [id, module] : modules->modules) {
    if (module.device != ordinal_ || !module.loaded) continue;
    for (const LoadedVariable& variable : module.variables) {
      ModuleVariable v;
      v.name = variable.spec.name;
      v.address = variable.address;
      v.size = variable.spec.size;
      v.module_id = id;
      v.is_constant = variable.spec.is_constant;
      out.push_back(std::move(v));
    }
  }
  return out;
}

Status HostDevice::Synchronize(std::chrono::nanoseconds timeout) {
  if (platform_.faults.ShouldFail(FaultPoint::kSynchronizeTimeout)) {
    return DeadlineExceededError("Synchronize: device " + std::to_string(ordinal_) +
                                 " did not drain within " + FormatDuration(timeout) + " (injected fault)");
  }
  // A timeout beyond a year means "no limit" (and keeps now() + timeout from overflowing).
  constexpr auto kUnbounded = std::chrono::hours(24 * 366);
  const auto now = Stream::Clock::now();
  Stream::Clock::time_point deadline = Stream::Clock::time_point::max();
  if (timeout <= std::chrono::nanoseconds::zero()) {
    deadline = now;
  } else if (timeout < kUnbounded) {
    deadline = now + std::chrono::duration_cast<Stream::Clock::duration>(timeout);
  }
  if (!platform_.WaitDeviceIdle(ordinal_, deadline)) {
    return DeadlineExceededError("Synchronize: device " + std::to_string(ordinal_) +
                                 " did not drain within " + FormatDuration(timeout) +
                                 " (a stream is stalled or still busy)");
  }
  return OkStatus();
}

std::pmr::memory_resource* HostDevice::metadata_resource() noexcept { return metadata_resource_.get(); }

}  // namespace gpuprof::device::host
