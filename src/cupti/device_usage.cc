#include "cupti/device_usage.h"

namespace gpuprof::cupti {

void DeviceUsage::OnDeviceState(std::size_t ordinal, CUpti_CallbackId cbid,
                                const CUpti_CallbackData& call) noexcept {
  const bool entry = call.callbackSite == CUPTI_API_ENTER;
  const bool succeeded = !entry && call.functionReturnValue != nullptr &&
                         *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
  try {
    std::lock_guard<std::mutex> lock(mu_);
    if (device_state_.size() <= ordinal) device_state_.resize(ordinal + 1);
    DeviceState& state = device_state_[ordinal];
    // CUDA arrays by handle, so a destroy finds the device whose count it lowers.
    auto created = [&](const void* handle) {
      if (succeeded && array_device_.emplace(handle, ordinal).second) ++state.arrays;
    };
    auto destroyed = [&](const void* handle) {
      auto it = array_device_.find(handle);
      if (!entry || it == array_device_.end()) return;
      --device_state_[it->second].arrays;
      array_device_.erase(it);
    };
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
        created(static_cast<const cuArrayCreate_v2_params*>(call.functionParams)->pHandle[0]);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
        created(static_cast<const cuArray3DCreate_v2_params*>(call.functionParams)->pHandle[0]);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
        created(static_cast<const cuMipmappedArrayCreate_params*>(call.functionParams)->pHandle[0]);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
        destroyed(static_cast<const cuArrayDestroy_params*>(call.functionParams)->hArray);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy:
        destroyed(static_cast<const cuMipmappedArrayDestroy_params*>(call.functionParams)->hMipmappedArray);
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuCtxEnablePeerAccess:
        if (succeeded) ++state.peers;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuCtxDisablePeerAccess:
        if (succeeded && state.peers > 0) --state.peers;
        break;
      default: break;
    }
  } catch (...) {
  }
}

void DeviceUsage::Describe(std::size_t ordinal, device::LaunchRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ordinal < device_state_.size()) {
    const DeviceState& state = device_state_[ordinal];
    request.live_arrays = state.arrays;
    request.peer_access = state.peers > 0;
  }
}

}  // namespace gpuprof::cupti
