// HostPlatform's modules: loading a module's variables into simulated device memory (at load, or
// at the first launch for a lazy module) and finding them by name.
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "device/host/host_platform.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {

Status HostPlatform::Impl::LoadVariables(ModuleId id, Module& module) {
  std::vector<DevicePtr> registered;
  auto undo = [&] {
    auto locked = registry.wlock();
    for (DevicePtr base : registered) {
      auto it = locked->find(base);
      if (it == locked->end()) continue;
      ReleaseRaw(it->second.block);
      locked->erase(it);
    }
    for (LoadedVariable& variable : module.variables) variable.address = 0;
  };
  for (LoadedVariable& variable : module.variables) {
    if (variable.spec.size == 0) continue;  // exists, with address 0
    RegistryEntry entry;
    entry.block = AllocateRaw(variable.spec.size, /*zero_fill=*/true);
    if (entry.block.data == nullptr) {
      undo();
      return ResourceExhaustedError("LoadModule: out of host memory for variable '" + variable.spec.name +
                                    "' (" + std::to_string(variable.spec.size) + " bytes) of module " +
                                    std::to_string(id) + " ('" + module.name + "') on device " +
                                    std::to_string(module.device));
    }
    if (!variable.spec.initial.empty()) {
      std::memcpy(entry.block.data, variable.spec.initial.data(), variable.spec.initial.size());
    }
    entry.kind = MemoryKind::kDeviceLocal;
    entry.owner_device = module.device;
    entry.origin = EntryOrigin::kModuleVariable;
    variable.address = ToDevicePtr(entry.block.data);
    registry.wlock()->emplace(variable.address, entry);
    registered.push_back(variable.address);
  }
  module.loaded = true;
  return OkStatus();
}

Status HostPlatform::Impl::EnsureModuleLoaded(ModuleId id) {
  {
    auto locked = modules.rlock();
    auto it = locked->modules.find(id);
    if (it == locked->modules.end()) {
      return NotFoundError("module " + std::to_string(id) + " was never loaded");
    }
    if (it->second.loaded) return OkStatus();
  }
  auto locked = modules.wlock();
  Module& module = locked->modules.at(id);
  if (module.loaded) return OkStatus();  // another launch loaded it meanwhile
  return LoadVariables(id, module);
}

StatusOr<ModuleId> HostPlatform::LoadModule(int device, const ModuleSpec& spec) {
  if (!impl_->ValidDevice(device)) {
    return InvalidArgumentError("LoadModule: device " + std::to_string(device) + " does not exist (module '" +
                                spec.name + "')");
  }
  std::set<std::string_view> names;
  for (const ModuleVariableSpec& variable : spec.variables) {
    if (!names.insert(variable.name).second) {
      return InvalidArgumentError("LoadModule: module '" + spec.name + "' declares variable '" +
                                  variable.name + "' twice");
    }
    if (variable.initial.size() > variable.size) {
      return InvalidArgumentError("LoadModule: variable '" + variable.name + "' of module '" + spec.name +
                                  "' has " + std::to_string(variable.initial.size()) +
                                  " initial bytes but holds only " + std::to_string(variable.size));
    }
  }
  Module module;
  module.name = spec.name;
  module.device = device;
  module.lazy = spec.lazy;
  module.variables.reserve(spec.variables.size());
  for (const ModuleVariableSpec& variable : spec.variables) module.variables.push_back({variable, 0});

  auto locked = impl_->modules.wlock();
  const ModuleId id = locked->next_id++;
  if (!spec.lazy) GPUPROF_RETURN_IF_ERROR(impl_->LoadVariables(id, module));
  locked->modules.emplace(id, std::move(module));
  return id;
}

bool HostPlatform::ModuleLoaded(ModuleId module) const {
  auto locked = impl_->modules.rlock();
  auto it = locked->modules.find(module);
  return it != locked->modules.end() && it->second.loaded;
}

StatusOr<DevicePtr> HostPlatform::VariableAddress(ModuleId module, std::string_view name) const {
  auto locked = impl_->modules.rlock();
  auto it = locked->modules.find(module);
  if (it == locked->modules.end()) {
    return NotFoundError("VariableAddress: module " + std::to_string(module) + " does not exist");
  }
  if (!it->second.loaded) {
    return NotFoundError("VariableAddress: module " + std::to_string(module) + " ('" + it->second.name +
                         "') is lazy and not loaded yet");
  }
  for (const LoadedVariable& variable : it->second.variables) {
    if (variable.spec.name == name) return variable.address;
  }
  return NotFoundError("VariableAddress: module " + std::to_string(module) + " ('" + it->second.name +
                       "') has no variable '" + std::string(name) + "'");
}

}  // namespace gpuprof::device::host
