// The current SM clock of a GPU, read through NVML (device/cuda/nvml.h; rule C3: recorded before
// and after every replay pass). Reading only: clocks are set by cupti/nvml_clock_api.h, and only
// under --clock-control base. The device is found by its PCI bus id.
//
// Thread-safety: Read may be called from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace gpuprof::device::cuda {

class SmClock {
 public:
  // `pci_bus_id` as cuDeviceGetPCIBusId writes it ("0000:19:00.0"). An empty id, a missing NVML or
  // an unknown device leave the clock unreadable: Read() then returns 0.
  explicit SmClock(const std::string& pci_bus_id);
  // The SM clock in kHz, 0 when it cannot be read.
  std::uint32_t ReadKhz() const noexcept;

 private:
  using GetClockFn = int (*)(void* device, int clock_type, unsigned* mhz);
  void* device_ = nullptr;
  GetClockFn get_clock_ = nullptr;
};

}  // namespace gpuprof::device::cuda
