#include "device/cuda/sm_clock.h"

#include "device/cuda/nvml.h"

namespace gpuprof::device::cuda {

SmClock::SmClock(const std::string& pci_bus_id) {
  void* device = nvml::DeviceByPciBusId(pci_bus_id);
  auto get_clock = reinterpret_cast<GetClockFn>(nvml::Symbol("nvmlDeviceGetClockInfo"));
  if (device == nullptr || get_clock == nullptr) return;
  device_ = device;
  get_clock_ = get_clock;
}

std::uint32_t SmClock::ReadKhz() const noexcept {
  if (get_clock_ == nullptr) return 0;
  unsigned mhz = 0;
  if (get_clock_(device_, nvml::kClockSm, &mhz) != nvml::kSuccess) return 0;
  return mhz * 1000u;
}

}  // namespace gpuprof::device::cuda
