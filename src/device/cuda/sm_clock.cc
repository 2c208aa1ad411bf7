#include "device/cuda/sm_clock.h"

#include <dlfcn.h>

namespace gpuprof::device::cuda {
namespace {

// NVML's ABI, as nvml.h declares it: nvmlReturn_t is an int (0: NVML_SUCCESS), nvmlDevice_t an
// opaque pointer, NVML_CLOCK_SM is 1.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;
using InitFn = int (*)();
using HandleByPciFn = int (*)(const char* pci_bus_id, void** device);

void* Nvml() {
  static void* library = [] {
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return static_cast<void*>(nullptr);
    auto init = reinterpret_cast<InitFn>(dlsym(handle, "nvmlInit_v2"));
    if (init == nullptr || init() != kNvmlSuccess) return static_cast<void*>(nullptr);
    return handle;  // never closed: NVML stays initialized for the process
  }();
  return library;
}

}  // namespace

SmClock::SmClock(const std::string& pci_bus_id) {
  if (pci_bus_id.empty()) return;
  void* nvml = Nvml();
  if (nvml == nullptr) return;
  auto by_pci = reinterpret_cast<HandleByPciFn>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto get_clock = reinterpret_cast<GetClockFn>(dlsym(nvml, "nvmlDeviceGetClockInfo"));
  void* device = nullptr;
  if (by_pci == nullptr || get_clock == nullptr || by_pci(pci_bus_id.c_str(), &device) != kNvmlSuccess)
    return;
  device_ = device;
  get_clock_ = get_clock;
}

std::uint32_t SmClock::ReadKhz() const noexcept {
  if (get_clock_ == nullptr) return 0;
  unsigned mhz = 0;
  if (get_clock_(device_, kNvmlClockSm, &mhz) != kNvmlSuccess) return 0;
  return mhz * 1000u;
}

}  // namespace gpuprof::device::cuda
