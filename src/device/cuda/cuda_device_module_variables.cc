// CudaDevice's module variables (R7): the replay hook registers those of every module loaded on
// the device and forgets them at the module's unload; EnumerateModuleVariables lists the rest.
#include <algorithm>
#include <vector>

#include "device/cuda/cuda_device.h"

namespace gpuprof::device::cuda {

void CudaDevice::RegisterModuleVariables(const std::vector<ModuleVariable>& variables) {
  std::lock_guard<std::mutex> lock(variables_mu_);
  for (const ModuleVariable& v : variables) {
    bool known = std::any_of(variables_.begin(), variables_.end(),
                             [&v](const ModuleVariable& k) { return k.address == v.address; });
    if (!known) variables_.push_back(v);
  }
}

void CudaDevice::UnregisterModule(std::uint64_t module_id) {
  std::lock_guard<std::mutex> lock(variables_mu_);
  std::erase_if(variables_, [module_id](const ModuleVariable& v) { return v.module_id == module_id; });
}

StatusOr<std::vector<ModuleVariable>> CudaDevice::EnumerateModuleVariables() {
  std::lock_guard<std::mutex> lock(variables_mu_);
  return variables_;
}

}  // namespace gpuprof::device::cuda
