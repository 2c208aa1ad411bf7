#include "device/cuda/nvml.h"

#include <dlfcn.h>

namespace gpuprof::device::cuda::nvml {
namespace {

using InitFn = int (*)();
using HandleByPciFn = int (*)(const char* pci_bus_id, void** device);
using ErrorStringFn = const char* (*)(int code);

void* Library() noexcept {
  static void* library = [] {
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return static_cast<void*>(nullptr);
    auto init = reinterpret_cast<InitFn>(dlsym(handle, "nvmlInit_v2"));
    if (init == nullptr || init() != kSuccess) return static_cast<void*>(nullptr);
    return handle;
  }();
  return library;
}

}  // namespace

void* Symbol(const char* name) noexcept {
  void* library = Library();
  return library != nullptr ? dlsym(library, name) : nullptr;
}

void* DeviceByPciBusId(const std::string& pci_bus_id) noexcept {
  if (pci_bus_id.empty()) return nullptr;
  auto by_pci = reinterpret_cast<HandleByPciFn>(Symbol("nvmlDeviceGetHandleByPciBusId_v2"));
  void* device = nullptr;
  if (by_pci == nullptr || by_pci(pci_bus_id.c_str(), &device) != kSuccess) return nullptr;
  return device;
}

std::string ErrorString(int code) {
  auto text = reinterpret_cast<ErrorStringFn>(Symbol("nvmlErrorString"));
  const char* message = text != nullptr ? text(code) : nullptr;
  return message != nullptr ? std::string(message) : "NVML error " + std::to_string(code);
}

}  // namespace gpuprof::device::cuda::nvml
