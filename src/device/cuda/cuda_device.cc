// CudaDevice (cuda_device.h): its setup and teardown, pointer queries and copies on the private
// stream, and the replay pass's timing events and L2 flush. The other jobs have their own files:
// cuda_device_arena.cc (the snapshot arena), cuda_device_chunk_ops.cc (HashChunks, RunChunkOp),
// cuda_device_host_tiers.cc (the pageable and file tiers' copies), cuda_device_drain.cc
// (Synchronize), cuda_device_module_variables.cc.
#include "device/cuda/cuda_device.h"

#include <atomic>
#include <memory>
#include <string>

#include "device/cuda/cuda_device_internal.h"
#include "device/cuda/scoped_internal_work.h"

namespace gpuprof::device::cuda {

CudaDevice::CudaDevice(const CudaDriver& driver, int ordinal, CudaDeviceOptions options)
    : driver_(driver),
      ordinal_(ordinal),
      options_(std::move(options)),
      drain_(std::make_shared<DrainState>()),
      range_(std::make_unique<RangeResources>()) {
  drain_->driver = &driver_;
}

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create(const CudaDriver& driver, int ordinal,
                                                         CudaDeviceOptions options) {
  std::unique_ptr<CudaDevice> device(new CudaDevice(driver, ordinal, std::move(options)));
  GPUPROF_RETURN_IF_ERROR(device->Init().WithContext("CUDA device " + std::to_string(ordinal)));
  return device;
}

Status CudaDevice::Init() {
  ScopedInternalWork internal;
  if (options_.staging_bytes == 0) return InvalidArgumentError("CudaDeviceOptions::staging_bytes is 0");
  GPUPROF_RETURN_IF_ERROR(driver_.Check("cuDeviceGet", driver_.DeviceGet(&device_, ordinal_)));
  char name[256] = {};
  if (driver_.DeviceGetName(name, sizeof(name) - 1, device_) == CUDA_SUCCESS) name_ = name;
  GPUPROF_RETURN_IF_ERROR(
      driver_.Check("cuDevicePrimaryCtxRetain", driver_.DevicePrimaryCtxRetain(&context_, device_)));
  drain_->context = context_;
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
  {
    // A helper stuck in cuCtxSynchronize exits when the driver returns; it holds its own state.
    std::lock_guard<std::mutex> lock(drain_->mu);
    drain_->stop = true;
    drain_->cv.notify_all();
  }
  // The driver may already be shutting down at process exit: best effort, no checks.
  if (context_ == nullptr) return;
  InternalScope scope(driver_, context_);
  std::lock_guard<std::mutex> lock(mu_);
  // Even without the context: the pageable mapping and the spill file are the host's.
  FreeArenas();
  if (!scope.ok()) return;
  ReleaseRangeResources();
  if (l2_scratch_ != 0) driver_.MemFree(l2_scratch_);
  for (CUevent event : pass_events_) {
    if (event != nullptr) driver_.EventDestroy(event);
  }
  if (hashes_ != 0) driver_.MemFree(hashes_);
  if (op_device_ != 0) driver_.MemFree(op_device_);
  if (op_host_ != nullptr) driver_.MemFreeHost(op_host_);
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

// ---- what a replay pass needs ----

StatusOr<std::array<CUevent, 2>> CudaDevice::PassEvents() {
  std::lock_guard<std::mutex> lock(events_mu_);
  if (pass_events_[0] == nullptr || pass_events_[1] == nullptr) {
    InternalScope scope(driver_, context_);
    if (!scope.ok()) return InternalError("PassEvents: cuCtxPushCurrent failed");
    for (CUevent& event : pass_events_) {
      if (event == nullptr)
        GPUPROF_RETURN_IF_ERROR(
            driver_.Check("cuEventCreate", driver_.EventCreate(&event, CU_EVENT_DEFAULT)));
    }
  }
  return pass_events_;
}

Status CudaDevice::FlushL2(CUstream stream) {
  if (l2_scratch_ == 0) return OkStatus();
  InternalScope scope(driver_, context_);
  static std::atomic<unsigned char> value{0};
  return driver_.Check("cuMemsetD8Async(L2 flush)",
                       driver_.MemsetD8Async(l2_scratch_, value.fetch_add(1), l2_scratch_bytes_, stream));
}

}  // namespace gpuprof::device::cuda
