// The CUDA devices the replay hook works on. Each GPU is set up (a CudaDevice, which retains its
// primary context) at the first call that needs it, never for a GPU the process does not use: a
// rank of an 8-GPU job uses one. The controller sees every ordinal through a lazy proxy.
//
// Thread-safety: after Open, every method may be called from any thread.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "device/cuda/cuda_device.h"
#include "device/device.h"

namespace gpuprof::cupti {

class ReplayDevices {
 public:
  explicit ReplayDevices(device::cuda::CudaDeviceOptions options) : options_(options) {}

  // Makes a slot for each of `driver`'s devices (none set up yet) and returns the controller's
  // view of each, by ordinal, owned here. Called once, before any other method; may throw
  // std::bad_alloc.
  std::vector<device::Device*> Open(const device::cuda::CudaDriver& driver);

  // Device `ordinal`, set up at its first use; null when it could not be (said once, in a warning).
  device::cuda::CudaDevice* DeviceAt(int ordinal) noexcept;
  // Device `ordinal` if it was set up already (never sets it up); null otherwise.
  device::cuda::CudaDevice* ExistingDeviceAt(int ordinal) noexcept;
  // The device of `context` (cached per context; null: not one of this process's devices). Call in
  // a callback of a driver call made in `context` (it is current there).
  device::cuda::CudaDevice* DeviceOf(CUcontext context) noexcept;
  // A module unload starts: no later snapshot on any device may read its variables.
  void UnregisterModule(std::uint32_t module_id) noexcept;
  // The device of the calling thread's current context (driver calls: call under
  // ScopedInternalWork); null when none is current or it is not one of this process's devices.
  device::cuda::CudaDevice* DeviceOfCurrentContext() noexcept;

 private:
  const device::cuda::CudaDeviceOptions options_;
  const device::cuda::CudaDriver* driver_ = nullptr;  // set by Open
  std::mutex devices_mu_;
  std::vector<std::unique_ptr<device::cuda::CudaDevice>> devices_;  // by ordinal; guarded by devices_mu_
  std::vector<bool> device_failed_;                                 // guarded by devices_mu_
  std::vector<std::unique_ptr<device::Device>> proxies_;            // the controller's devices
  std::shared_mutex contexts_mu_;
  std::unordered_map<CUcontext, device::cuda::CudaDevice*> device_by_context_;  // guarded by contexts_mu_
};

}  // namespace gpuprof::cupti
