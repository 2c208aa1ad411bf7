// HostPlatform: the runtime (api-table entries, streams, launches) over simulated device memory.
// HostDevice lives in host_device.cc, streams in host_stream.cc, modules in host_modules.cc.
#include "device/host/host_platform.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

#include "base/check.h"
#include "base/logging.h"
#include "device/host/host_launch_executor.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {
namespace {

using Impl = HostPlatform::Impl;

constexpr auto kForever = Stream::Clock::time_point::max();

HostPlatformOptions Normalize(HostPlatformOptions options) {
  if (options.device_count < 0) options.device_count = 0;
  return options;
}

// The runtime behind a table, or null when a tool broke the table's runtime field.
Impl* RuntimeOf(const RuntimeApiTable& table) noexcept { return static_cast<Impl*>(table.runtime); }

Status NoRuntime(std::string_view entry) {
  return FailedPreconditionError(std::string(entry) +
                                 ": the api table's runtime field is null (a tool overwrote it?)");
}

std::string OwnerName(int owner) {
  return owner < 0 ? std::string("host memory") : "device " + std::to_string(owner);
}

std::string_view TransferCallName(const TransferArgs& args) {
  if (args.kind == TransferKind::kCopy) return args.asynchronous ? "MemcpyAsync" : "Memcpy";
  return args.asynchronous ? "MemsetAsync" : "Memset";
}

}  // namespace

// ---- Impl: construction and teardown ------------------------------------------------------------

HostPlatform::Impl::Impl(HostPlatformOptions opts) : options(Normalize(opts)) {
  api_table.runtime = this;
  api_table.allocate = &Impl::OriginalAllocate;
  api_table.free = &Impl::OriginalFree;
  api_table.transfer = &Impl::OriginalTransfer;
  api_table.launch = &Impl::OriginalLaunch;
  api_table.event = &Impl::OriginalEvent;

  const auto count = static_cast<std::size_t>(options.device_count);
  devices.reserve(count);
  for (int d = 0; d < options.device_count; ++d) devices.push_back(std::make_unique<HostDevice>(*this, d));
  default_streams.assign(count, 0);
  for (int d = 0; d < options.device_count; ++d) {
    StatusOr<StreamId> stream = CreateStream(d);
    if (stream.ok()) {
      default_streams[static_cast<std::size_t>(d)] = *stream;
    } else {
      GPUPROF_LOG(kError) << "HostPlatform: default stream of device " << d
                          << " unavailable: " << stream.status().ToString();
    }
  }
}

HostPlatform::Impl::~Impl() { Shutdown(); }

void HostPlatform::Impl::Shutdown() {
  if (shut_down) return;
  shut_down = true;
  std::vector<Stream*> all;
  {
    auto locked = streams.rlock();
    for (const auto& stream : *locked) all.push_back(stream.get());
  }
  for (Stream* stream : all) stream->SetStalled(false);
  for (Stream* stream : all) stream->Shutdown();
  // The pools go back through the table, like every runtime allocation: a tool still installed
  // sees these frees arrive during teardown.
  for (Stream* stream : all) {
    for (DevicePtr pool : stream->pools()) {
      if (pool == 0) continue;
      FreeArgs args;
      args.ptr = pool;
      args.stream = stream->id();
      Status status = api_table.free(api_table, args);
      if (!status.ok()) {
        GPUPROF_LOG(kDebug) << "HostPlatform teardown: pool " << Hex(pool) << " of stream " << stream->id()
                            << ": " << status.ToString();
      }
    }
  }
  Registry remaining;
  std::swap(remaining, *registry.wlock());
  for (const auto& [base, entry] : remaining) ReleaseRaw(entry.block);
}

// ---- Impl: streams ------------------------------------------------------------------------------

Stream* HostPlatform::Impl::FindStream(StreamId id) const {
  if (id == 0) return nullptr;
  auto locked = streams.rlock();
  if (id > locked->size()) return nullptr;
  return (*locked)[id - 1].get();
}

std::vector<Stream*> HostPlatform::Impl::StreamsOf(int device) const {
  std::vector<Stream*> out;
  auto locked = streams.rlock();
  for (const auto& stream : *locked) {
    if (device < 0 || stream->device() == device) out.push_back(stream.get());
  }
  return out;
}

bool HostPlatform::Impl::WaitDeviceIdle(int device, Stream::Clock::time_point deadline) const {
  for (Stream* stream : StreamsOf(device)) {
    if (!stream->WaitIdle(deadline)) return false;
  }
  return true;
}

StatusOr<StreamId> HostPlatform::Impl::CreateStream(int device) {
  if (!ValidDevice(device)) {
    return InvalidArgumentError("CreateStream: device " + std::to_string(device) +
                                " does not exist (the platform has " + std::to_string(devices.size()) +
                                " devices)");
  }
  Stream* stream = nullptr;
  try {
    auto locked = streams.wlock();
    const StreamId id = locked->size() + 1;
    locked->push_back(std::make_unique<Stream>(id, device));
    stream = locked->back().get();
  } catch (const std::system_error& e) {
    return ResourceExhaustedError("CreateStream: cannot start a worker thread for device " +
                                  std::to_string(device) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("CreateStream: out of host memory on device " + std::to_string(device));
  }
  if (options.stream_pool_bytes == 0) return stream->id();

  AllocateArgs args;
  args.device = device;
  args.size = options.stream_pool_bytes;
  args.stream = stream->id();
  args.kind = MemoryKind::kKernelArgument;
  DevicePtr kernarg = 0;
  Status status = api_table.allocate(api_table, args, &kernarg);
  if (!status.ok()) {
    return status.WithContext("CreateStream: kernel-argument pool of stream " + std::to_string(stream->id()));
  }
  stream->SetPools(kernarg, 0);
  args.kind = MemoryKind::kRuntimeInternal;
  DevicePtr internal = 0;
  status = api_table.allocate(api_table, args, &internal);
  if (!status.ok()) {
    return status.WithContext("CreateStream: executable pool of stream " + std::to_string(stream->id()));
  }
  stream->SetPools(kernarg, internal);
  return stream->id();
}

// ---- Impl: registry -----------------------------------------------------------------------------

Status HostPlatform::Impl::CheckDeviceRange(const Registry& registry, std::string_view call,
                                            std::string_view role, DevicePtr ptr, std::uint64_t bytes,
                                            int device) {
  if (bytes == 0) return OkStatus();
  DevicePtr base = 0;
  const RegistryEntry* entry = FindContaining(registry, ptr, &base);
  if (entry == nullptr) {
    return InvalidArgumentError(
        std::string(call) + ": " + std::string(role) + " " + Hex(ptr) + " " + PlusBytes(bytes) +
        " is not inside any allocation or module variable (device " + std::to_string(device) + ")");
  }
  if (entry->block.size - (ptr - base) < bytes) {
    return InvalidArgumentError(
        std::string(call) + ": " + std::string(role) + " " + Hex(ptr) + " " + PlusBytes(bytes) +
        " is not inside any allocation of " + OwnerName(entry->owner_device) + ": it runs past the end of " +
        Hex(base) + " " + PlusBytes(entry->block.size) + " (device " + std::to_string(device) + ")");
  }
  return OkStatus();
}

Status HostPlatform::Impl::CheckApplicationRange(const Registry& registry, std::string_view call,
                                                 std::string_view role, DevicePtr ptr, std::uint64_t bytes) {
  if (bytes == 0) return OkStatus();
  if (ptr == 0) {
    return InvalidArgumentError(std::string(call) + ": " + std::string(role) + " is null " +
                                PlusBytes(bytes));
  }
  if (ptr + bytes < ptr) {
    return InvalidArgumentError(std::string(call) + ": " + std::string(role) + " " + Hex(ptr) + " " +
                                PlusBytes(bytes) + " wraps around the address space");
  }
  DevicePtr base = 0;
  const RegistryEntry* entry = FindContaining(registry, ptr, &base);
  if (entry != nullptr) {
    if (entry->block.size - (ptr - base) < bytes) {
      return InvalidArgumentError(std::string(call) + ": " + std::string(role) + " " + Hex(ptr) + " " +
                                  PlusBytes(bytes) + " is not inside any allocation of " +
                                  OwnerName(entry->owner_device) + ": it runs past the end of " + Hex(base) +
                                  " " + PlusBytes(entry->block.size));
    }
    return OkStatus();
  }
  // Plain host memory, unless the range runs into a registered allocation.
  auto next = registry.upper_bound(ptr);
  if (next != registry.end() && next->first < ptr + bytes) {
    return InvalidArgumentError(std::string(call) + ": " + std::string(role) + " " + Hex(ptr) + " " +
                                PlusBytes(bytes) + " starts outside every allocation but runs into " +
                                Hex(next->first) + " " + PlusBytes(next->second.block.size) + " of " +
                                OwnerName(next->second.owner_device));
  }
  return OkStatus();
}

int HostPlatform::Impl::WrittenDevice(DevicePtr dst, DevicePtr src) const {
  auto locked = registry.rlock();
  for (DevicePtr ptr : {dst, src}) {
    if (ptr == 0) continue;
    const RegistryEntry* entry = FindContaining(*locked, ptr, nullptr);
    if (entry != nullptr && entry->owner_device >= 0) return entry->owner_device;
  }
  return -1;
}

void HostPlatform::Impl::ReleaseAllocation(DevicePtr base) {
  RawBlock block;
  {
    auto locked = registry.wlock();
    auto it = locked->find(base);
    if (it == locked->end() || it->second.origin != EntryOrigin::kAllocation) {
      GPUPROF_LOG(kError) << "FreeAsync: " << Hex(base) << " vanished before its stream released it";
      return;
    }
    block = it->second.block;
    locked->erase(it);
  }
  ReleaseRaw(block);
}

std::uint64_t HostPlatform::Impl::ApplicationDeviceBytes(int device) const {
  std::uint64_t bytes = 0;
  auto locked = registry.rlock();
  for (const auto& [base, entry] : *locked) {
    if (entry.owner_device == device && entry.kind == MemoryKind::kDeviceLocal) bytes += entry.block.size;
  }
  return bytes;
}

// ---- Impl: api-table entries --------------------------------------------------------------------

Status HostPlatform::Impl::OriginalAllocate(RuntimeApiTable& table, const AllocateArgs& args,
                                            DevicePtr* out) {
  Impl* impl = RuntimeOf(table);
  if (impl == nullptr) return NoRuntime("allocate");
  return impl->Allocate(args, out);
}

Status HostPlatform::Impl::OriginalFree(RuntimeApiTable& table, const FreeArgs& args) {
  Impl* impl = RuntimeOf(table);
  if (impl == nullptr) return NoRuntime("free");
  return args.stream_ordered ? impl->FreeStreamOrdered(args) : impl->FreeNow(args);
}

Status HostPlatform::Impl::OriginalTransfer(RuntimeApiTable& table, const TransferArgs& args) {
  Impl* impl = RuntimeOf(table);
  if (impl == nullptr) return NoRuntime("transfer");
  return impl->Transfer(args);
}

Status HostPlatform::Impl::OriginalLaunch(RuntimeApiTable& table, const LaunchRequest& request,
                                          LaunchExecutor& executor) {
  (void)request;
  if (RuntimeOf(table) == nullptr) return NoRuntime("launch");
  return executor.RunOriginal();
}

Status HostPlatform::Impl::Allocate(const AllocateArgs& args, DevicePtr* out) {
  const std::string call = args.stream_ordered ? "MallocAsync" : "Malloc";
  if (out == nullptr) return InvalidArgumentError(call + ": null output pointer");
  *out = 0;
  if (!ValidDevice(args.device)) {
    return InvalidArgumentError(call + ": device " + std::to_string(args.device) +
                                " does not exist (the platform has " + std::to_string(devices.size()) +
                                " devices)");
  }
  if (args.kind == MemoryKind::kUnknown) {
    return InvalidArgumentError(call + ": memory kind 'unknown' cannot be allocated (" +
                                std::to_string(args.size) + " bytes on device " +
                                std::to_string(args.device) + ")");
  }
  if (args.stream_ordered && FindStream(args.stream) == nullptr) {
    return InvalidArgumentError(call + ": unknown stream " + std::to_string(args.stream));
  }
  if (args.size == 0) return OkStatus();  // like cudaMalloc(0): success, null pointer
  if (options.device_memory_bytes != 0 && args.kind == MemoryKind::kDeviceLocal) {
    const std::uint64_t used = ApplicationDeviceBytes(args.device) +
                               devices[static_cast<std::size_t>(args.device)]->device_arena_bytes();
    if (used > options.device_memory_bytes || args.size > options.device_memory_bytes - used) {
      return ResourceExhaustedError(call + ": out of device memory allocating " + std::to_string(args.size) +
                                    " bytes on device " + std::to_string(args.device) + " (" +
                                    std::to_string(used) + " of " +
                                    std::to_string(options.device_memory_bytes) + " bytes in use)");
    }
  }
  RegistryEntry entry;
  entry.block = AllocateRaw(args.size, /*zero_fill=*/true);
  if (entry.block.data == nullptr) {
    return ResourceExhaustedError(call + ": out of host memory allocating " + std::to_string(args.size) +
                                  " bytes of " + std::string(MemoryKindName(args.kind)) +
                                  " memory on device " + std::to_string(args.device));
  }
  entry.kind = args.kind;
  entry.owner_device = args.kind == MemoryKind::kHost ? -1 : args.device;
  const DevicePtr base = ToDevicePtr(entry.block.data);
  registry.wlock()->emplace(base, entry);
  *out = base;
  return OkStatus();
}

namespace {

// Why `ptr` cannot be freed, or OK; the registry lock is held by the caller.
Status CheckFreeable(const Registry& registry, std::string_view call, DevicePtr ptr) {
  auto it = registry.find(ptr);
  if (it == registry.end()) {
    DevicePtr base = 0;
    const RegistryEntry* entry = FindContaining(registry, ptr, &base);
    if (entry != nullptr) {
      return InvalidArgumentError(std::string(call) + ": " + Hex(ptr) + " is inside the allocation " +
                                  Hex(base) + " " + PlusBytes(entry->block.size) + " of " +
                                  OwnerName(entry->owner_device) + "; free its base");
    }
    return InvalidArgumentError(std::string(call) + ": " + Hex(ptr) +
                                " is not an allocation of this platform (already freed?)");
  }
  if (it->second.origin == EntryOrigin::kModuleVariable) {
    return InvalidArgumentError(std::string(call) + ": " + Hex(ptr) + " is a module variable of " +
                                OwnerName(it->second.owner_device) + ", not an allocation");
  }
  if (it->second.free_pending) {
    return InvalidArgumentError(std::string(call) + ": " + Hex(ptr) + " " + PlusBytes(it->second.block.size) +
                                " of " + OwnerName(it->second.owner_device) +
                                " already has a stream-ordered free pending");
  }
  return OkStatus();
}

}  // namespace

Status HostPlatform::Impl::FreeNow(const FreeArgs& args) {
  if (args.ptr == 0) return OkStatus();  // like cudaFree(nullptr)
  int owner = -1;
  {
    auto locked = registry.rlock();
    GPUPROF_RETURN_IF_ERROR(CheckFreeable(*locked, "Free", args.ptr));
    owner = locked->find(args.ptr)->second.owner_device;
  }
  // Like cudaFree: work already queued on the owning device may still use the memory. Host
  // memory (owner -1) may be used by any device.
  WaitDeviceIdle(owner, kForever);
  RawBlock block;
  {
    auto locked = registry.wlock();
    GPUPROF_RETURN_IF_ERROR(CheckFreeable(*locked, "Free", args.ptr));
    auto it = locked->find(args.ptr);
    block = it->second.block;
    locked->erase(it);
  }
  ReleaseRaw(block);
  return OkStatus();
}

Status HostPlatform::Impl::FreeStreamOrdered(const FreeArgs& args) {
  if (args.ptr == 0) return OkStatus();
  Stream* stream = FindStream(args.stream);
  if (stream == nullptr) {
    return InvalidArgumentError("FreeAsync: unknown stream " + std::to_string(args.stream) + " (freeing " +
                                Hex(args.ptr) + ")");
  }
  {
    auto locked = registry.wlock();
    GPUPROF_RETURN_IF_ERROR(CheckFreeable(*locked, "FreeAsync", args.ptr));
    locked->find(args.ptr)->second.free_pending = true;
  }
  const DevicePtr ptr = args.ptr;
  stream->Enqueue([this, ptr] { ReleaseAllocation(ptr); });
  return OkStatus();
}

Status HostPlatform::Impl::Transfer(const TransferArgs& args) {
  const std::string_view call = TransferCallName(args);
  const bool copy = args.kind == TransferKind::kCopy;
  if (args.asynchronous) {
    Stream* stream = FindStream(args.stream);
    if (stream == nullptr) {
      return InvalidArgumentError(std::string(call) + ": unknown stream " + std::to_string(args.stream) +
                                  " (destination " + Hex(args.dst) + " " + PlusBytes(args.bytes) + ")");
    }
    {
      auto locked = registry.rlock();
      GPUPROF_RETURN_IF_ERROR(CheckApplicationRange(*locked, call, "destination", args.dst, args.bytes));
      if (copy) GPUPROF_RETURN_IF_ERROR(CheckApplicationRange(*locked, call, "source", args.src, args.bytes));
    }
    if (args.bytes == 0) return OkStatus();
    void* dst = ToHost(args.dst);
    const std::size_t bytes = args.bytes;
    if (copy) {
      const void* src = ToHost(args.src);
      stream->Enqueue([dst, src, bytes] { std::memmove(dst, src, bytes); });
    } else {
      const int value = args.value;
      stream->Enqueue([dst, value, bytes] { std::memset(dst, value, bytes); });
    }
    return OkStatus();
  }

  // Synchronous: ordered after the work already queued on the written device's default stream.
  Stream* stream = FindStream(args.stream);
  if (stream == nullptr && ValidDevice(args.device)) {
    stream = FindStream(default_streams[static_cast<std::size_t>(args.device)]);
  }
  if (stream != nullptr) stream->WaitIdle(kForever);
  // The copy runs under the registry's read lock: a concurrent Free unregisters under the write
  // lock before releasing, so it cannot pull the bytes away mid-copy.
  auto locked = registry.rlock();
  GPUPROF_RETURN_IF_ERROR(CheckApplicationRange(*locked, call, "destination", args.dst, args.bytes));
  if (copy) GPUPROF_RETURN_IF_ERROR(CheckApplicationRange(*locked, call, "source", args.src, args.bytes));
  if (args.bytes == 0) return OkStatus();
  if (copy) {
    std::memmove(ToHost(args.dst), ToHost(args.src), args.bytes);
  } else {
    std::memset(ToHost(args.dst), args.value, args.bytes);
  }
  return OkStatus();
}

Status HostPlatform::Impl::LaunchKernels(std::string_view call, StreamId stream_id, LaunchKind kind,
                                         std::span<const Kernel> kernels, CompletionSignal* signal) {
  Stream* stream = FindStream(stream_id);
  if (stream == nullptr) {
    return InvalidArgumentError(std::string(call) + ": unknown stream " + std::to_string(stream_id));
  }
  if (kernels.empty()) {
    return InvalidArgumentError(std::string(call) + ": no kernels to launch on stream " +
                                std::to_string(stream_id));
  }
  LaunchRequest request;
  request.device = stream->device();
  request.stream = stream_id;
  request.kind = kind;
  request.dispatch_count = static_cast<std::uint32_t>(kernels.size());
  request.kernel_name = kernels.front().name;
  request.stream_capturing = stream->capturing();
  {
    auto locked = modules.rlock();
    for (const Kernel& kernel : kernels) {
      if (!kernel.body) {
        return InvalidArgumentError(std::string(call) + ": kernel '" + kernel.name +
                                    "' has no body (stream " + std::to_string(stream_id) + ")");
      }
      request.uses_device_printf = request.uses_device_printf || kernel.uses_device_printf;
      request.uses_device_malloc = request.uses_device_malloc || kernel.uses_device_malloc;
      request.live_arrays = std::max(request.live_arrays, kernel.live_arrays);
      request.peer_access = request.peer_access || kernel.peer_access;
      if (kernel.module == 0) continue;
      auto it = locked->modules.find(kernel.module);
      if (it == locked->modules.end()) {
        return NotFoundError(std::string(call) + ": kernel '" + kernel.name + "' names module " +
                             std::to_string(kernel.module) + ", which was never loaded");
      }
      if (it->second.device != stream->device()) {
        return InvalidArgumentError(
            std::string(call) + ": kernel '" + kernel.name + "' belongs to module " +
            std::to_string(kernel.module) + " of device " + std::to_string(it->second.device) +
            " but stream " + std::to_string(stream_id) + " is on device " + std::to_string(stream->device()));
      }
    }
  }
  HostLaunchExecutor executor(*this, *stream, kernels, signal);
  return api_table.launch(api_table, request, executor);
}

// ---- HostPlatform -------------------------------------------------------------------------------

HostPlatform::HostPlatform(HostPlatformOptions options) : impl_(std::make_unique<Impl>(options)) {}

// Teardown runs while impl_ is still fully alive: a tool's wrapper that the pool frees reach may
// still call back into the platform's devices.
HostPlatform::~HostPlatform() { impl_->Shutdown(); }

int HostPlatform::device_count() const noexcept { return static_cast<int>(impl_->devices.size()); }

HostDevice& HostPlatform::device(int ordinal) {
  GPUPROF_CHECK(impl_->ValidDevice(ordinal))
      << "HostPlatform::device(" << ordinal << "): the platform has " << impl_->devices.size() << " devices";
  return *impl_->devices[static_cast<std::size_t>(ordinal)];
}

Device& HostPlatform::device_interface(int ordinal) { return device(ordinal); }

RuntimeApiTable& HostPlatform::api_table() noexcept { return impl_->api_table; }

StatusOr<DevicePtr> HostPlatform::Malloc(int device, std::uint64_t size, MemoryKind kind) {
  AllocateArgs args;
  args.device = device;
  args.size = size;
  args.kind = kind;
  args.stream = DefaultStream(device);
  DevicePtr out = 0;
  RuntimeApiTable& table = impl_->api_table;
  GPUPROF_RETURN_IF_ERROR(table.allocate(table, args, &out));
  return out;
}

StatusOr<DevicePtr> HostPlatform::MallocAsync(StreamId stream, std::uint64_t size) {
  const Stream* s = impl_->FindStream(stream);
  if (s == nullptr) return InvalidArgumentError("MallocAsync: unknown stream " + std::to_string(stream));
  AllocateArgs args;
  args.device = s->device();
  args.size = size;
  args.kind = MemoryKind::kDeviceLocal;
  args.stream = stream;
  args.stream_ordered = true;
  DevicePtr out = 0;
  RuntimeApiTable& table = impl_->api_table;
  GPUPROF_RETURN_IF_ERROR(table.allocate(table, args, &out));
  return out;
}

Status HostPlatform::Free(DevicePtr ptr) {
  FreeArgs args;
  args.ptr = ptr;
  RuntimeApiTable& table = impl_->api_table;
  return table.free(table, args);
}

Status HostPlatform::FreeAsync(StreamId stream, DevicePtr ptr) {
  FreeArgs args;
  args.ptr = ptr;
  args.stream = stream;
  args.stream_ordered = true;
  RuntimeApiTable& table = impl_->api_table;
  return table.free(table, args);
}

Status HostPlatform::Memcpy(DevicePtr dst, DevicePtr src, std::uint64_t bytes) {
  TransferArgs args;
  args.kind = TransferKind::kCopy;
  args.device = impl_->WrittenDevice(dst, src);
  args.dst = dst;
  args.src = src;
  args.bytes = bytes;
  args.stream = DefaultStream(args.device);
  RuntimeApiTable& table = impl_->api_table;
  return table.transfer(table, args);
}

Status HostPlatform::MemcpyAsync(StreamId stream, DevicePtr dst, DevicePtr src, std::uint64_t bytes) {
  TransferArgs args;
  args.kind = TransferKind::kCopy;
  args.device = impl_->WrittenDevice(dst, src);
  args.dst = dst;
  args.src = src;
  args.bytes = bytes;
  args.stream = stream;
  args.asynchronous = true;
  RuntimeApiTable& table = impl_->api_table;
  return table.transfer(table, args);
}

Status HostPlatform::Memset(DevicePtr dst, std::uint8_t value, std::uint64_t bytes) {
  TransferArgs args;
  args.kind = TransferKind::kMemset;
  args.device = impl_->WrittenDevice(dst, 0);
  args.dst = dst;
  args.value = value;
  args.bytes = bytes;
  args.stream = DefaultStream(args.device);
  RuntimeApiTable& table = impl_->api_table;
  return table.transfer(table, args);
}

Status HostPlatform::MemsetAsync(StreamId stream, DevicePtr dst, std::uint8_t value, std::uint64_t bytes) {
  TransferArgs args;
  args.kind = TransferKind::kMemset;
  args.device = impl_->WrittenDevice(dst, 0);
  args.dst = dst;
  args.value = value;
  args.bytes = bytes;
  args.stream = stream;
  args.asynchronous = true;
  RuntimeApiTable& table = impl_->api_table;
  return table.transfer(table, args);
}

StatusOr<StreamId> HostPlatform::CreateStream(int device) { return impl_->CreateStream(device); }

StreamId HostPlatform::DefaultStream(int device) const noexcept {
  return impl_->ValidDevice(device) ? impl_->default_streams[static_cast<std::size_t>(device)] : 0;
}

int HostPlatform::StreamDevice(StreamId stream) const {
  const Stream* s = impl_->FindStream(stream);
  return s == nullptr ? -1 : s->device();
}

Status HostPlatform::Launch(StreamId stream, const Kernel& kernel, CompletionSignal* signal) {
  return impl_->LaunchKernels("Launch", stream, LaunchKind::kKernel, std::span<const Kernel>(&kernel, 1),
                              signal);
}

Status HostPlatform::LaunchBatch(StreamId stream, const std::vector<Kernel>& kernels,
                                 CompletionSignal* signal) {
  return impl_->LaunchKernels("LaunchBatch", stream, LaunchKind::kBatch, kernels, signal);
}

Status HostPlatform::LaunchGraph(StreamId stream, const std::vector<Kernel>& kernels,
                                 CompletionSignal* signal) {
  std::vector<GraphNodeSpec> nodes;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    GraphNodeSpec node;
    node.kernel = kernels[i];
    if (i > 0) node.dependencies = {i - 1};
    nodes.push_back(std::move(node));
  }
  const int device = impl_->FindStream(stream) != nullptr ? impl_->FindStream(stream)->device() : -1;
  GPUPROF_ASSIGN_OR_RETURN(const GraphId graph, CreateGraph(device, std::move(nodes)));
  Status launched = LaunchGraph(stream, graph, signal);
  Status destroyed = DestroyGraph(graph);
  return launched.ok() ? destroyed : launched;
}

void HostPlatform::SetStreamCapturing(StreamId stream, bool capturing) {
  Stream* s = impl_->FindStream(stream);
  if (s != nullptr) s->set_capturing(capturing);
}

Status HostPlatform::StreamSynchronize(StreamId stream) {
  Stream* s = impl_->FindStream(stream);
  if (s == nullptr)
    return InvalidArgumentError("StreamSynchronize: unknown stream " + std::to_string(stream));
  s->WaitIdle(kForever);
  return OkStatus();
}

Status HostPlatform::DeviceSynchronize(int device) {
  if (!impl_->ValidDevice(device)) {
    return InvalidArgumentError("DeviceSynchronize: device " + std::to_string(device) +
                                " does not exist (the platform has " + std::to_string(impl_->devices.size()) +
                                " devices)");
  }
  impl_->WaitDeviceIdle(device, kForever);
  return OkStatus();
}

void HostPlatform::InjectFault(FaultPoint point, int count, int skip) {
  impl_->faults.Inject(point, count, skip);
}

void HostPlatform::ClearFaults() { impl_->faults.Clear(); }

int HostPlatform::FaultsFired(FaultPoint point) const { return impl_->faults.Fired(point); }

void HostPlatform::SetBeforeRestoreCopyHook(std::function<void(DevicePtr dst)> hook) {
  std::shared_ptr<const std::function<void(DevicePtr)>> shared;
  if (hook) shared = std::make_shared<const std::function<void(DevicePtr)>>(std::move(hook));
  *impl_->restore_hook.wlock() = std::move(shared);
}

void HostPlatform::StallStream(StreamId stream) {
  Stream* s = impl_->FindStream(stream);
  if (s != nullptr) s->SetStalled(true);
}

void HostPlatform::ReleaseStream(StreamId stream) {
  Stream* s = impl_->FindStream(stream);
  if (s != nullptr) s->SetStalled(false);
}

}  // namespace gpuprof::device::host
