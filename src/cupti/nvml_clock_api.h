// NVML under replay::ClockApi: what `--clock-control base` locks the SM and memory clocks with
// (REPLAY_SPEC.md C3, replay/clock_lock.h holds the policy). CUDA ordinals map to NVML devices by
// PCI bus id (cuDeviceGetPCIBusId), so CUDA_VISIBLE_DEVICES and NVML's own order cannot mix them
// up. NVML itself is device/cuda/nvml.h's (dlopened once).
//
// Never exercised on the shared GPU machine, whose clocks must stay as they are: the host tests
// drive the lock through a fake ClockApi, and ClockCallFromNvml (the only logic here beyond the
// calls) is tested on its own.
//
// Thread-safety: calls for different devices may overlap; the handle cache is locked.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>

#include "device/cuda/cuda_driver.h"
#include "replay/clock_lock.h"

namespace gpuprof::cupti {

// How the lock reads NVML's answer `code` to `call` (`text`: nvmlErrorString): success, no
// permission (not root), not supported, or an error naming the call.
replay::ClockCallResult ClockCallFromNvml(int code, std::string_view call, std::string_view text);

class NvmlClockApi final : public replay::ClockApi {
 public:
  // `driver` must outlive this object and be initialized (cuInit ran).
  explicit NvmlClockApi(const device::cuda::CudaDriver& driver) : driver_(driver) {}

  replay::ClockCallResult BaseClocks(int device, std::uint32_t* sm_mhz, std::uint32_t* memory_mhz) override;
  replay::ClockCallResult LockSmClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) override;
  replay::ClockCallResult LockMemoryClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) override;
  replay::ClockCallResult ResetSmClocks(int device) override;
  replay::ClockCallResult ResetMemoryClocks(int device) override;

 private:
  // NVML's device for CUDA ordinal `device` (cached); a kError result naming why there is none.
  replay::ClockCallResult Handle(int device, void** handle);
  // NVML's `symbol` (of type Fn) called on device `device`'s handle with `args`.
  template <typename Fn, typename... Args>
  replay::ClockCallResult Call(int device, const char* symbol, Args... args);

  const device::cuda::CudaDriver& driver_;
  std::mutex mu_;
  std::map<int, void*> handles_;
};

}  // namespace gpuprof::cupti
