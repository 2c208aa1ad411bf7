#include "device/cuda/cuda_device.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <new>
#include <thread>

#include "base/logging.h"
#include "device/cuda/chunk_hash_reference.h"
#include "device/cuda/chunk_kernels_ptx.h"
#include "device/cuda/scoped_internal_work.h"

namespace gpuprof::device::cuda {
namespace {

// gpuprof's own driver work on this thread, in `context`: invisible to the profile (C1).
class InternalScope {
 public:
  InternalScope(const CudaDriver& driver, CUcontext context) : driver_(driver) {
    pushed_ = driver_.CtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~InternalScope() {
    CUcontext popped = nullptr;
    if (pushed_) driver_.CtxPopCurrent(&popped);
  }
  InternalScope(const InternalScope&) = delete;
  InternalScope& operator=(const InternalScope&) = delete;
  bool ok() const noexcept { return pushed_; }

 private:
  ScopedInternalWork internal_;
  const CudaDriver& driver_;
  bool pushed_ = false;
};

class CudaBacking final : public BackingBuffer {
 public:
  CudaBacking(const CudaDriver& driver, StorageTier tier, std::uint64_t size, CUdeviceptr device_ptr,
              void* host)
      : driver_(driver), tier_(tier), size_(size), device_ptr_(device_ptr), host_(host) {}
  ~CudaBacking() override {
    ScopedInternalWork internal;
    switch (tier_) {
      case StorageTier::kDevice: driver_.MemFree(device_ptr_); break;
      case StorageTier::kPinnedHost: driver_.MemFreeHost(host_); break;
      default: ::operator delete(host_); break;
    }
  }
  std::uint64_t size() const noexcept override { return size_; }
  StorageTier tier() const noexcept override { return tier_; }
  CUdeviceptr device_ptr() const noexcept { return device_ptr_; }
  void* host() const noexcept { return host_; }

 private:
  const CudaDriver& driver_;
  StorageTier tier_;
  std::uint64_t size_;
  CUdeviceptr device_ptr_;
  void* host_;
};

}  // namespace

CudaDevice::CudaDevice(const CudaDriver& driver, int ordinal, CudaDeviceOptions options)
    : driver_(driver), ordinal_(ordinal), options_(options) {}

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create(const CudaDriver& driver, int ordinal,
                                                         CudaDeviceOptions options) {
  std::unique_ptr<CudaDevice> device(new CudaDevice(driver, ordinal, options));
  GPUPROF_RETURN_IF_ERROR(device->Init().WithContext("CUDA device " + std::to_string(ordinal)));
  return device;
}

Status CudaDevice::Init() {
  ScopedInternalWork internal;
  GPUPROF_RETURN_IF_ERROR(driver_.Check("cuDeviceGet", driver_.DeviceGet(&device_, ordinal_)));
  char name[256] = {};
  if (driver_.DeviceGetName(name, sizeof(name) - 1, device_) == CUDA_SUCCESS) name_ = name;
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuDevicePrimaryCtxRetain", driver_.DevicePrimaryCtxRetain(&context_, device_)));
  char pci[64] = {};
  sm_clock_ = std::make_unique<SmClock>(
      driver_.DeviceGetPCIBusId(pci, sizeof(pci) - 1, device_) == CUDA_SUCCESS ? std::string(pci)
                                                                               : std::string());
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return InternalError("cuCtxPushCurrent failed");
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuStreamCreate", driver_.StreamCreate(&stream_, CU_STREAM_NON_BLOCKING)));
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuMemHostAlloc(staging)", driver_.MemHostAlloc(&staging_, options_.staging_bytes, 0)));
  int l2 = 0;
  if (driver_.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device_) == CUDA_SUCCESS && l2 > 0) {
    l2_scratch_bytes_ = std::uint64_t{2} * static_cast<std::uint64_t>(l2);
    if (driver_.MemAlloc(&l2_scratch_, l2_scratch_bytes_) != CUDA_SUCCESS) {
      l2_scratch_ = 0;
      l2_scratch_bytes_ = 0;
    }
  }
  return OkStatus();
}

CudaDevice::~CudaDevice() {
  // The driver may already be shutting down at process exit: best effort, no checks.
  if (context_ == nullptr) return;
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return;
  if (l2_scratch_ != 0) driver_.MemFree(l2_scratch_);
  if (hashes_ != 0) driver_.MemFree(hashes_);
  if (staging_ != nullptr) driver_.MemFreeHost(staging_);
}

StatusOr<PointerInfo> CudaDevice::QueryPointer(DevicePtr ptr) {
  InternalScope scope(driver_, context_);
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned int memory_type = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  unsigned int managed = 0;
  int owner = -1;
  void* values[] = {&memory_type, &start, &size, &managed, &owner};
  CUresult result = driver_.PointerGetAttributes(5, attributes, values, static_cast<CUdeviceptr>(ptr));
  if (result != CUDA_SUCCESS) return NotFoundError(driver_.Error("cuPointerGetAttributes", result));
  if (memory_type == 0) return NotFoundError("no allocation contains address " + std::to_string(ptr));
  PointerInfo info;
  info.base = start;
  info.size = size;
  info.owner_device = owner;
  if (managed != 0) {
    info.kind = MemoryKind::kManaged;
  } else if (memory_type == CU_MEMORYTYPE_DEVICE) {
    info.kind = MemoryKind::kDeviceLocal;
  } else if (memory_type == CU_MEMORYTYPE_HOST) {
    info.kind = MemoryKind::kHostMapped;
  } else {
    info.kind = MemoryKind::kUnknown;
  }
  return info;
}

Status CudaDevice::Copy(const char* what, CUresult result) {
  GPUPROF_RETURN_IF_ERROR(driver_.Check(what, result));
  return driver_.Check("cuStreamSynchronize", driver_.StreamSynchronize(stream_));
}

Status CudaDevice::CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return Copy("cuMemcpyDtoHAsync", driver_.MemcpyDtoHAsync(dst, src, bytes, stream_));
}

Status CudaDevice::CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return Copy("cuMemcpyHtoDAsync", driver_.MemcpyHtoDAsync(dst, src, bytes, stream_));
}

Status CudaDevice::CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  return Copy("cuMemcpyDtoDAsync", driver_.MemcpyDtoDAsync(dst, src, bytes, stream_));
}

StatusOr<std::unique_ptr<BackingBuffer>> CudaDevice::AllocateBacking(std::uint64_t bytes,
                                                                     StorageTier preferred) {
  InternalScope scope(driver_, context_);
  if (preferred == StorageTier::kDevice) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    if (driver_.MemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS &&
        free_bytes > options_.device_reserve_bytes && bytes <= free_bytes - options_.device_reserve_bytes) {
      CUdeviceptr ptr = 0;
      if (driver_.MemAlloc(&ptr, bytes) == CUDA_SUCCESS) {
        return std::unique_ptr<BackingBuffer>(
            new CudaBacking(driver_, StorageTier::kDevice, bytes, ptr, nullptr));
      }
    }
    preferred = StorageTier::kPinnedHost;
  }
  if (preferred == StorageTier::kPinnedHost) {
    void* host = nullptr;
    if (driver_.MemHostAlloc(&host, bytes, 0) == CUDA_SUCCESS) {
      return std::unique_ptr<BackingBuffer>(
          new CudaBacking(driver_, StorageTier::kPinnedHost, bytes, 0, host));
    }
  }
  void* host = ::operator new(bytes, std::nothrow);
  if (host == nullptr) {
    return ResourceExhaustedError("no device, pinned or pageable memory for a " + std::to_string(bytes) +
                                  "-byte snapshot region");
  }
  return std::unique_ptr<BackingBuffer>(new CudaBacking(driver_, StorageTier::kPageableHost, bytes, 0, host));
}

Status CudaDevice::SaveToBacking(BackingBuffer& dst, std::uint64_t dst_offset, DevicePtr src,
                                 std::uint64_t bytes) {
  auto& backing = static_cast<CudaBacking&>(dst);
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (backing.tier() == StorageTier::kDevice) {
    return Copy("cuMemcpyDtoDAsync(save)",
                driver_.MemcpyDtoDAsync(backing.device_ptr() + dst_offset, src, bytes, stream_));
  }
  return Copy("cuMemcpyDtoHAsync(save)",
              driver_.MemcpyDtoHAsync(static_cast<char*>(backing.host()) + dst_offset, src, bytes, stream_));
}

Status CudaDevice::RestoreFromBacking(DevicePtr dst, const BackingBuffer& src, std::uint64_t src_offset,
                                      std::uint64_t bytes) {
  const auto& backing = static_cast<const CudaBacking&>(src);
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (backing.tier() == StorageTier::kDevice) {
    return Copy("cuMemcpyDtoDAsync(restore)",
                driver_.MemcpyDtoDAsync(dst, backing.device_ptr() + src_offset, bytes, stream_));
  }
  return Copy(
      "cuMemcpyHtoDAsync(restore)",
      driver_.MemcpyHtoDAsync(dst, static_cast<const char*>(backing.host()) + src_offset, bytes, stream_));
}

Status CudaDevice::LoadChunkKernels() {
  if (hash_kernel_ != nullptr) return OkStatus();
  if (chunk_kernels_failed_) return UnavailableError("the chunk kernels did not load earlier");
  CUmodule module = nullptr;
  CUresult result = driver_.ModuleLoadData(&module, kChunkKernelsPtx);
  if (result == CUDA_SUCCESS)
    result = driver_.ModuleGetFunction(&hash_kernel_, module, kHashChunksKernelName);
  if (result == CUDA_SUCCESS)
    result = driver_.ModuleGetFunction(&compare_kernel_, module, kCompareChunksKernelName);
  if (result != CUDA_SUCCESS) {
    chunk_kernels_failed_ = true;
    hash_kernel_ = nullptr;
    compare_kernel_ = nullptr;
    return UnavailableError(driver_.Error("loading the chunk-hash kernels", result));
  }
  int sms = 0;
  if (driver_.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_) != CUDA_SUCCESS ||
      sms <= 0) {
    sms = 1;
  }
  hash_grid_limit_ = static_cast<std::uint64_t>(sms) * 8;
  return OkStatus();
}

Status CudaDevice::HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                              std::span<std::uint64_t> out) {
  if (chunk_size == 0) return InvalidArgumentError("HashChunks: chunk_size is 0");
  const std::uint64_t chunks = bytes == 0 ? 0 : (bytes + chunk_size - 1) / chunk_size;
  if (out.size() < chunks) return InvalidArgumentError("HashChunks: output span too small");
  if (chunks == 0) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  // B1: hashed on the device (chunk_kernels.cu), only the hashes cross to the host.
  if (Status loaded = LoadChunkKernels(); loaded.ok()) {
    const std::uint64_t hash_bytes = chunks * sizeof(std::uint64_t);
    if (EnsureKernelOutput(hash_bytes).ok()) {
      CUdeviceptr source = src;
      unsigned long long length = bytes;
      unsigned long long chunk = chunk_size;
      CUdeviceptr target = hashes_;
      void* params[] = {&source, &length, &chunk, &target};
      const auto grid = static_cast<unsigned>(std::min(chunks, hash_grid_limit_));
      CUresult launched = driver_.LaunchKernel(hash_kernel_, grid, 1, 1, kChunkKernelBlockSize, 1, 1, 0,
                                               stream_, params, nullptr);
      if (launched == CUDA_SUCCESS) {
        return Copy("cuMemcpyDtoHAsync(hashes)",
                    driver_.MemcpyDtoHAsync(out.data(), hashes_, hash_bytes, stream_));
      }
      GPUPROF_LOG(kWarning) << driver_.Error("launching the chunk-hash kernel", launched)
                            << "; hashing on the host instead";
    }
  }
  // Fallback: chunks copied to pinned staging and hashed on the host.
  const std::uint64_t per_fill = std::max<std::uint64_t>(1, options_.staging_bytes / chunk_size) * chunk_size;
  std::size_t chunk = 0;
  for (std::uint64_t offset = 0; offset < bytes; offset += per_fill) {
    const std::uint64_t n = std::min(per_fill, bytes - offset);
    if (n > options_.staging_bytes)
      return InvalidArgumentError("HashChunks: chunk larger than the staging buffer");
    GPUPROF_RETURN_IF_ERROR(
        Copy("cuMemcpyDtoHAsync(hash)", driver_.MemcpyDtoHAsync(staging_, src + offset, n, stream_)));
    for (std::uint64_t at = 0; at < n; at += chunk_size, ++chunk) {
      out[chunk] = ChunkHashReference(std::span<const std::byte>(static_cast<const std::byte*>(staging_) + at,
                                                                 std::min(chunk_size, n - at)));
    }
  }
  return OkStatus();
}

Status CudaDevice::EnsureKernelOutput(std::uint64_t bytes) {
  if (bytes <= hashes_capacity_) return OkStatus();
  if (hashes_ != 0) driver_.MemFree(hashes_);
  hashes_ = 0;
  hashes_capacity_ = 0;
  CUdeviceptr grown = 0;
  GPUPROF_RETURN_IF_ERROR(driver_.Check("cuMemAlloc(chunk kernel output)", driver_.MemAlloc(&grown, bytes)));
  hashes_ = grown;
  hashes_capacity_ = bytes;
  return OkStatus();
}

Status CudaDevice::CompareChunks(DevicePtr current, const BackingBuffer& saved, std::uint64_t saved_offset,
                                 std::uint64_t bytes, std::uint64_t chunk_size,
                                 std::span<std::uint8_t> dirty) {
  const auto& backing = static_cast<const CudaBacking&>(saved);
  if (backing.tier() != StorageTier::kDevice) {
    return UnimplementedError(std::string("CompareChunks: the snapshot is in ") +
                              std::string(StorageTierName(backing.tier())) + " storage, not on the device");
  }
  if (chunk_size == 0) return InvalidArgumentError("CompareChunks: chunk_size is 0");
  const std::uint64_t chunks = bytes == 0 ? 0 : (bytes + chunk_size - 1) / chunk_size;
  if (dirty.size() != chunks) return InvalidArgumentError("CompareChunks: output span has the wrong size");
  if (saved_offset > backing.size() || bytes > backing.size() - saved_offset) {
    return InvalidArgumentError("CompareChunks: range exceeds the snapshot buffer");
  }
  if (chunks == 0) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  GPUPROF_RETURN_IF_ERROR(LoadChunkKernels());
  const std::uint64_t flag_bytes = chunks * sizeof(std::uint32_t);
  GPUPROF_RETURN_IF_ERROR(EnsureKernelOutput(flag_bytes));
  CUdeviceptr a = current;
  CUdeviceptr b = backing.device_ptr() + saved_offset;
  unsigned long long length = bytes;
  unsigned long long chunk = chunk_size;
  CUdeviceptr flags = hashes_;
  void* params[] = {&a, &b, &length, &chunk, &flags};
  const auto grid = static_cast<unsigned>(std::min(chunks, hash_grid_limit_));
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("launching the chunk-compare kernel",
                    driver_.LaunchKernel(compare_kernel_, grid, 1, 1, kChunkKernelBlockSize, 1, 1, 0, stream_,
                                         params, nullptr)));
  std::vector<std::uint32_t> host_flags(chunks);
  GPUPROF_RETURN_IF_ERROR(Copy("cuMemcpyDtoHAsync(dirty flags)",
                               driver_.MemcpyDtoHAsync(host_flags.data(), hashes_, flag_bytes, stream_)));
  for (std::uint64_t i = 0; i < chunks; ++i) dirty[i] = host_flags[i] != 0 ? 1 : 0;
  return OkStatus();
}

void CudaDevice::RegisterModuleVariables(const std::vector<ModuleVariable>& variables) {
  std::lock_guard<std::mutex> lock(variables_mu_);
  for (const ModuleVariable& v : variables) {
    bool known = std::any_of(variables_.begin(), variables_.end(),
                             [&v](const ModuleVariable& k) { return k.address == v.address; });
    if (!known) variables_.push_back(v);
  }
}

void CudaDevice::UnregisterModule(std::uint64_t module_id) {
  std::lock_guard<std::mutex> lock(variables_mu_);
  std::erase_if(variables_, [module_id](const ModuleVariable& v) { return v.module_id == module_id; });
}

StatusOr<std::vector<ModuleVariable>> CudaDevice::EnumerateModuleVariables() {
  std::lock_guard<std::mutex> lock(variables_mu_);
  return variables_;
}

Status CudaDevice::Synchronize(std::chrono::nanoseconds timeout) {
  // cuCtxSynchronize cannot be bounded: run it beside and wait at most `timeout`. A device that
  // never drains leaves the helper blocked in the driver; the launch is declined meanwhile (R14).
  auto done = std::make_shared<std::promise<CUresult>>();
  std::future<CUresult> result = done->get_future();
  try {
    std::thread([this, done] {
      InternalScope scope(driver_, context_);
      done->set_value(driver_.CtxSynchronize());
    }).detach();
  } catch (const std::system_error& e) {
    return UnavailableError(std::string("cannot start the drain thread: ") + e.what());
  }
  if (result.wait_for(timeout) != std::future_status::ready) {
    return DeadlineExceededError(
        "device " + std::to_string(ordinal_) + " did not drain within " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms");
  }
  return driver_.Check("cuCtxSynchronize", result.get());
}

Status CudaDevice::FlushL2(CUstream stream) {
  if (l2_scratch_ == 0) return OkStatus();
  InternalScope scope(driver_, context_);
  static std::atomic<unsigned char> value{0};
  return driver_.Check("cuMemsetD8Async(L2 flush)",
                       driver_.MemsetD8Async(l2_scratch_, value.fetch_add(1), l2_scratch_bytes_, stream));
}

}  // namespace gpuprof::device::cuda
