#include "cupti/nvml_clock_api.h"

#include <string>

#include "device/cuda/nvml.h"

namespace gpuprof::cupti {
namespace {

namespace nvml = device::cuda::nvml;
using replay::ClockCallCode;
using replay::ClockCallResult;

using GetDefaultClockFn = int (*)(void* device, int clock_type, unsigned* mhz);
using LockFn = int (*)(void* device, unsigned min_mhz, unsigned max_mhz);
using ResetFn = int (*)(void* device);

ClockCallResult Missing(const char* call) {
  return {ClockCallCode::kNotSupported, std::string(call) + " is not in this driver's NVML"};
}

}  // namespace

ClockCallResult ClockCallFromNvml(int code, std::string_view call, std::string_view text) {
  if (code == nvml::kSuccess) return {};
  const std::string message = std::string(call) + ": " + std::string(text);
  if (code == nvml::kErrorNoPermission) return {ClockCallCode::kNoPermission, message};
  if (code == nvml::kErrorNotSupported) return {ClockCallCode::kNotSupported, message};
  return {ClockCallCode::kError, message};
}

ClockCallResult NvmlClockApi::Handle(int device, void** handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = handles_.find(device); it != handles_.end()) {
    *handle = it->second;
    return {};
  }
  CUdevice cu_device = 0;
  char pci[64] = {};
  if (driver_.DeviceGet(&cu_device, device) != CUDA_SUCCESS ||
      driver_.DeviceGetPCIBusId(pci, sizeof(pci) - 1, cu_device) != CUDA_SUCCESS) {
    return {ClockCallCode::kError, "cuDeviceGetPCIBusId failed for CUDA device " + std::to_string(device)};
  }
  void* found = nvml::DeviceByPciBusId(pci);
  if (found == nullptr) {
    return {ClockCallCode::kError, std::string("NVML has no device at PCI bus id ") + pci +
                                       " (libnvidia-ml.so.1 missing or nvmlInit failed?)"};
  }
  handles_[device] = found;
  *handle = found;
  return {};
}

template <typename Fn, typename... Args>
ClockCallResult NvmlClockApi::Call(int device, const char* symbol, Args... args) {
  void* handle = nullptr;
  if (ClockCallResult found = Handle(device, &handle); !found.ok()) return found;
  auto fn = reinterpret_cast<Fn>(nvml::Symbol(symbol));
  if (fn == nullptr) return Missing(symbol);
  const int code = fn(handle, args...);
  return ClockCallFromNvml(code, symbol, nvml::ErrorString(code));
}

ClockCallResult NvmlClockApi::BaseClocks(int device, std::uint32_t* sm_mhz, std::uint32_t* memory_mhz) {
  void* handle = nullptr;
  if (ClockCallResult found = Handle(device, &handle); !found.ok()) return found;
  auto get = reinterpret_cast<GetDefaultClockFn>(nvml::Symbol("nvmlDeviceGetDefaultApplicationsClock"));
  if (get == nullptr) return Missing("nvmlDeviceGetDefaultApplicationsClock");
  unsigned sm = 0;
  unsigned memory = 0;
  int code = get(handle, nvml::kClockSm, &sm);
  if (code == nvml::kSuccess) code = get(handle, nvml::kClockMemory, &memory);
  if (code != nvml::kSuccess)
    return ClockCallFromNvml(code, "nvmlDeviceGetDefaultApplicationsClock", nvml::ErrorString(code));
  *sm_mhz = sm;
  *memory_mhz = memory;
  return {};
}

ClockCallResult NvmlClockApi::LockSmClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) {
  return Call<LockFn>(device, "nvmlDeviceSetGpuLockedClocks", min_mhz, max_mhz);
}

ClockCallResult NvmlClockApi::LockMemoryClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) {
  return Call<LockFn>(device, "nvmlDeviceSetMemoryLockedClocks", min_mhz, max_mhz);
}

ClockCallResult NvmlClockApi::ResetSmClocks(int device) {
  return Call<ResetFn>(device, "nvmlDeviceResetGpuLockedClocks");
}

ClockCallResult NvmlClockApi::ResetMemoryClocks(int device) {
  return Call<ResetFn>(device, "nvmlDeviceResetMemoryLockedClocks");
}

}  // namespace gpuprof::cupti
