// What the application keeps live on each device that decides whether a launch there can be
// replayed: CUDA arrays (C2: their memory is outside the snapshot) and peer access (R14: a kernel
// may write another device's memory).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "device/device.h"

namespace gpuprof::cupti {

class DeviceUsage {
 public:
  // cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate (counted at a successful exit),
  // cuArrayDestroy, cuMipmappedArrayDestroy (at entry), cuCtxEnablePeerAccess and
  // cuCtxDisablePeerAccess (at a successful exit), called in a context of device `ordinal`.
  void OnDeviceState(std::size_t ordinal, CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  // Sets `request`'s live_arrays and peer_access from device `ordinal`'s counts.
  void Describe(std::size_t ordinal, device::LaunchRequest& request);

 private:
  struct DeviceState {
    std::uint32_t arrays = 0;  // live CUDA arrays (and mipmapped arrays) on the device
    std::uint32_t peers = 0;   // peer accesses enabled from its contexts
  };
  std::mutex mu_;
  std::vector<DeviceState> device_state_;                      // guarded by mu_, by ordinal
  std::unordered_map<const void*, std::size_t> array_device_;  // guarded by mu_
};

}  // namespace gpuprof::cupti
