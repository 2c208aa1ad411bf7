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

}  // namespace

HostDevice::HostDevice(HostPlatform::Impl& platform, int ordinal)
    : platform_(platform),
      ordinal_(ordinal),
      metadata_resource_(std::make_unique<FaultingMetadataResource>(platform.faults)),
      arena_(MakeArena(platform.options.arena)) {}

HostDevice::~HostDevice() = default;

void HostDevice::Count(std::uint64_t calls, std::uint64_t waits, std::uint64_t chunk_ops,
                       std::uint64_t launches) {
  std::lock_guard<std::mutex> lock(counts_mu_);
  counts_.calls += calls;
  counts_.host_waits += waits;
  counts_.chunk_ops += chunk_ops;
  counts_.launches += launches;
}

DeviceCallCounts HostDevice::call_counts() const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  return counts_;
}

void HostDevice::ResetCallCounts() {
  std::lock_guard<std::mutex> lock(counts_mu_);
  counts_ = DeviceCallCounts{};
}

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
  Count(1, 1);
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
  Count(1, 1);
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
  Count(1, 1);
  if (bytes == 0) return OkStatus();
  auto registry = platform_.registry.rlock();
  GPUPROF_RETURN_IF_ERROR(HostPlatform::Impl::CheckDeviceRange(*registry, "CopyDeviceToDevice", "destination",
                                                               dst, bytes, ordinal_));
  GPUPROF_RETURN_IF_ERROR(
      HostPlatform::Impl::CheckDeviceRange(*registry, "CopyDeviceToDevice", "source", src, bytes, ordinal_));
  std::memmove(ToHost(dst), ToHost(src), bytes);
  return OkStatus();
}

Status HostDevice::HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                              std::span<std::uint64_t> out) {
  Count(1, 1);
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
  Count(1, 1);
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
