#include "cupti/recorded_launch.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace gpuprof::cupti {

namespace {

// The kernel parameter space's limit (CUDA 12.1+: 32764 bytes); a layout past it is not a kernel's.
constexpr std::size_t kMaxParameterBytes = 32764;
constexpr std::size_t kMaxParameters = kMaxParameterBytes;

// Launch attributes that are plain values: copied as they are. Anything else names an event or a
// graph, or is unknown to this build: not re-issued faithfully.
bool CopiedByValue(CUlaunchAttributeID id) noexcept {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING: return true;
    default: return false;
  }
}

}  // namespace

StatusOr<std::shared_ptr<const CudaRecordedLaunch>> CudaRecordedLaunch::Record(
    const device::cuda::CudaDriver& driver, const LaunchCall& call, std::string name,
    const ParamInfoFn& param_info, ShapeFn describe) {
  if (call.function == nullptr) return FailedPreconditionError("no kernel function to record");
  if (call.cooperative) {
    return UnimplementedError(
        "a cooperative launch (its grid-wide synchronization is not re-issued in a range)");
  }
  std::shared_ptr<CudaRecordedLaunch> launch(new CudaRecordedLaunch(driver, call, std::move(name)));
  launch->describe_ = std::move(describe);
  GPUPROF_RETURN_IF_ERROR(launch->CopyAttributes(call));
  if (call.kernel_params != nullptr) {
    GPUPROF_RETURN_IF_ERROR(launch->CopyParameters(call, param_info));
  } else if (call.extra != nullptr) {
    GPUPROF_RETURN_IF_ERROR(launch->CopyExtra(call.extra));
  }
  launch->call_.kernel_params = nullptr;
  launch->call_.extra = nullptr;
  launch->call_.attributes = nullptr;
  launch->call_.attribute_count = 0;
  return std::shared_ptr<const CudaRecordedLaunch>(std::move(launch));
}

Status CudaRecordedLaunch::CopyAttributes(const LaunchCall& call) {
  if (call.attribute_count > 0 && call.attributes == nullptr) {
    return InvalidArgumentError("the launch names attributes but passes none");
  }
  for (unsigned i = 0; i < call.attribute_count; ++i) {
    const CUlaunchAttribute& attribute = call.attributes[i];
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
      if (attribute.value.cooperative != 0) {
        return UnimplementedError(
            "a cooperative launch (its grid-wide synchronization is not re-issued in a range)");
      }
      continue;
    }
    if (!CopiedByValue(attribute.id)) {
      return UnimplementedError(
          "launch attribute " + std::to_string(static_cast<int>(attribute.id)) +
          " names an event or a graph, or is unknown to this build; it is not re-issued");
    }
    attributes_.push_back(attribute);
  }
  return OkStatus();
}

Status CudaRecordedLaunch::CopyParameters(const LaunchCall& call, const ParamInfoFn& param_info) {
  if (!param_info) {
    return UnavailableError(
        "the driver lacks cuFuncGetParamInfo (CUDA 12.4+), needed to copy the arguments of a launch that "
        "passes kernelParams; update the NVIDIA driver");
  }
  struct Slot {
    std::size_t offset = 0;
    std::size_t size = 0;
  };
  std::vector<Slot> slots;
  std::size_t end = 0;
  for (std::size_t index = 0;; ++index) {
    Slot slot;
    const CUresult result = param_info(index, &slot.offset, &slot.size);
    if (result == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (result != CUDA_SUCCESS) {
      return driver_.Check("cuFuncGetParamInfo", result);
    }
    if (index >= kMaxParameters || slot.size > kMaxParameterBytes ||
        slot.offset > kMaxParameterBytes - slot.size) {
      return InternalError("cuFuncGetParamInfo describes parameter " + std::to_string(index) +
                           " outside the kernel parameter space");
    }
    if (slot.size > 0 && call.kernel_params[index] == nullptr) {
      return InvalidArgumentError("kernelParams[" + std::to_string(index) + "] is null");
    }
    end = std::max(end, slot.offset + slot.size);
    slots.push_back(slot);
  }
  arguments_.assign(end, 0);
  parameters_.reserve(slots.size());
  for (std::size_t index = 0; index < slots.size(); ++index) {
    const Slot& slot = slots[index];
    if (slot.size > 0) std::memcpy(arguments_.data() + slot.offset, call.kernel_params[index], slot.size);
    parameters_.push_back(arguments_.data() + slot.offset);
  }
  return OkStatus();
}

Status CudaRecordedLaunch::CopyExtra(void** extra) {
  const void* buffer = nullptr;
  const std::size_t* size = nullptr;
  for (std::size_t i = 0;; i += 2) {
    if (i > 16) return InvalidArgumentError("`extra` holds more entries than the launch API defines");
    void* key = extra[i];
    if (key == CU_LAUNCH_PARAM_END) break;
    if (key == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = extra[i + 1];
    } else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const std::size_t*>(extra[i + 1]);
    } else {
      return UnimplementedError("`extra` key " + std::to_string(reinterpret_cast<std::uintptr_t>(key)) +
                                " is not CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE; it is not re-issued");
    }
  }
  if (buffer == nullptr || size == nullptr) {
    return InvalidArgumentError(
        "`extra` lacks CU_LAUNCH_PARAM_BUFFER_POINTER or CU_LAUNCH_PARAM_BUFFER_SIZE");
  }
  if (*size > kMaxParameterBytes) {
    return InvalidArgumentError("`extra`'s argument buffer (" + std::to_string(*size) +
                                " bytes) exceeds the kernel parameter space");
  }
  const auto* bytes = static_cast<const std::uint8_t*>(buffer);
  arguments_.assign(bytes, bytes + *size);
  extra_size_ = *size;
  return OkStatus();
}

CUresult CudaRecordedLaunch::Issue(CUstream stream) const {
  // The driver reads the arguments at the call and never writes them.
  void** params = parameters_.empty() ? nullptr : const_cast<void**>(parameters_.data());
  std::size_t extra_size = extra_size_;
  void* extra_entries[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<std::uint8_t*>(arguments_.data()),
                           CU_LAUNCH_PARAM_BUFFER_SIZE, &extra_size, CU_LAUNCH_PARAM_END};
  void** extra = params == nullptr && !arguments_.empty() ? extra_entries : nullptr;
  if (attributes_.empty()) {
    return driver_.LaunchKernel(call_.function, call_.grid[0], call_.grid[1], call_.grid[2], call_.block[0],
                                call_.block[1], call_.block[2], call_.shared_bytes, stream, params, extra);
  }
  CUlaunchConfig config{};
  config.gridDimX = call_.grid[0];
  config.gridDimY = call_.grid[1];
  config.gridDimZ = call_.grid[2];
  config.blockDimX = call_.block[0];
  config.blockDimY = call_.block[1];
  config.blockDimZ = call_.block[2];
  config.sharedMemBytes = call_.shared_bytes;
  config.hStream = stream;
  config.attrs = const_cast<CUlaunchAttribute*>(attributes_.data());
  config.numAttrs = static_cast<unsigned>(attributes_.size());
  return driver_.LaunchKernelEx(&config, call_.function, params, extra);
}

}  // namespace gpuprof::cupti
