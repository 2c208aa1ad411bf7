#include "cupti/module_registry.h"

#include <algorithm>
#include <span>

#include "base/logging.h"
#include "cupti/internal_work.h"
#include "device/cuda/cubin_symbols.h"

namespace gpuprof::cupti {

using device::cuda::CudaDevice;
using device::cuda::CudaDriver;

std::shared_ptr<const ModuleInfo> ModuleRegistry::ModuleOf(const std::string& kernel) {
  std::lock_guard<std::mutex> lock(modules_mu_);
  auto it = modules_by_kernel_.find(kernel);
  return it == modules_by_kernel_.end() ? nullptr : it->second;
}

void ModuleRegistry::OnModuleLoaded(const ModuleEvent& event) noexcept {
  if (event.cubin == nullptr || event.cubin_size == 0) return;
  try {
    std::span<const std::byte> image(static_cast<const std::byte*>(event.cubin), event.cubin_size);
    StatusOr<std::vector<device::cuda::CubinVariable>> variables = device::cuda::ReadCubinVariables(image);
    StatusOr<std::vector<std::string>> kernels = device::cuda::ReadCubinKernelNames(image);
    StatusOr<device::cuda::CubinSideEffects> effects = device::cuda::ReadCubinSideEffects(image);
    if (!variables.ok() || !kernels.ok()) return;
    auto info = std::make_shared<ModuleInfo>();
    info->module_id = event.module_id;
    for (const auto& v : *variables) info->variables.push_back(v.name);
    info->kernels = *kernels;
    if (effects.ok()) {
      info->uses_printf = effects->uses_printf;
      info->uses_device_malloc = effects->uses_device_malloc;
    }
    std::lock_guard<std::mutex> lock(modules_mu_);
    for (const std::string& kernel : *kernels) modules_by_kernel_[kernel] = info;
    if (!info->variables.empty() && !info->kernels.empty()) pending_modules_.push_back({event.context, info});
  } catch (...) {
  }
}

void ModuleRegistry::OnModuleUnloading(std::uint32_t module_id) noexcept {
  try {
    std::lock_guard<std::mutex> lock(modules_mu_);
    std::erase_if(pending_modules_, [&](const PendingModule& m) { return m.info->module_id == module_id; });
    unloaded_modules_.insert(module_id);
  } catch (...) {
  }
}

void ModuleRegistry::OnCodeLoad(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  const bool entry = call.callbackSite == CUPTI_API_ENTER;
  CodeHandle handle;
  try {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuModuleUnload:
      case CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload: {
        if (!entry) return;
        if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload) {
          handle.module = static_cast<const cuModuleUnload_params*>(call.functionParams)->hmod;
        } else {
          handle.library = static_cast<const cuLibraryUnload_params*>(call.functionParams)->library;
        }
        std::lock_guard<std::mutex> lock(modules_mu_);
        if (std::erase(code_handles_, handle) > 0) code_index_stale_ = true;  // rebuilt at the next snapshot
        return;
      }
      default: break;
    }
    if (entry || call.functionReturnValue == nullptr ||
        *static_cast<const CUresult*>(call.functionReturnValue) != CUDA_SUCCESS) {
      return;
    }
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
        handle.module = *static_cast<const cuModuleLoad_params*>(call.functionParams)->module;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
        handle.module = *static_cast<const cuModuleLoadData_params*>(call.functionParams)->module;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
        handle.module = *static_cast<const cuModuleLoadDataEx_params*>(call.functionParams)->module;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
        handle.module = *static_cast<const cuModuleLoadFatBinary_params*>(call.functionParams)->module;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
        handle.library = *static_cast<const cuLibraryLoadData_params*>(call.functionParams)->library;
        break;
      case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
        handle.library = *static_cast<const cuLibraryLoadFromFile_params*>(call.functionParams)->library;
        break;
      default: return;
    }
    // Only remembered here; its kernels are named at the first snapshot that needs them, so
    // loading a program's many libraries costs nothing more than this.
    std::lock_guard<std::mutex> lock(modules_mu_);
    code_handles_.push_back(handle);
  } catch (...) {
  }
}

void ModuleRegistry::IndexCodeHandles(const CudaDriver& d, const std::vector<CodeHandle>& handles) {
  for (const CodeHandle& handle : handles) {
    unsigned count = 0;
    if (handle.library != nullptr) {
      if (d.LibraryGetKernelCount(&count, handle.library) != CUDA_SUCCESS || count == 0) continue;
      std::vector<CUkernel> kernels(count);
      if (d.LibraryEnumerateKernels(kernels.data(), count, handle.library) != CUDA_SUCCESS) continue;
      for (CUkernel kernel : kernels) {
        const char* name = nullptr;
        if (d.KernelGetName(&name, kernel) == CUDA_SUCCESS && name != nullptr)
          handles_by_kernel_[name].push_back(handle);
      }
    } else {
      if (d.ModuleGetFunctionCount(&count, handle.module) != CUDA_SUCCESS || count == 0) continue;
      std::vector<CUfunction> functions(count);
      if (d.ModuleEnumerateFunctions(functions.data(), count, handle.module) != CUDA_SUCCESS) continue;
      for (CUfunction function : functions) {
        const char* name = nullptr;
        if (d.FuncGetName(&name, function) == CUDA_SUCCESS && name != nullptr) {
          handles_by_kernel_[name].push_back(handle);
        }
      }
    }
  }
}

std::vector<ModuleRegistry::CodeHandle> ModuleRegistry::HandlesDefining(const ModuleInfo& module) const {
  // Kernel names repeat across libraries (one template instantiated in several files): the
  // handle must define every kernel of the cubin.
  std::vector<CodeHandle> candidates;
  for (const std::string& kernel : module.kernels) {
    auto it = handles_by_kernel_.find(kernel);
    if (it == handles_by_kernel_.end()) return {};
    if (&kernel == &module.kernels.front()) {
      candidates = it->second;
    } else {
      std::erase_if(candidates, [&](const CodeHandle& c) {
        return std::find(it->second.begin(), it->second.end(), c) == it->second.end();
      });
    }
    if (candidates.size() <= 1) break;
  }
  std::sort(candidates.begin(), candidates.end(), [](const CodeHandle& a, const CodeHandle& b) {
    return std::pair(a.library, a.module) < std::pair(b.library, b.module);
  });
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  return candidates;
}

void ModuleRegistry::ResolveLoadedModules(CudaDevice& device) noexcept {
  const CudaDriver& d = device.driver();
  ScopedInternalWork internal;
  try {
    // Driver calls run without modules_mu_: one that loads a module would re-enter OnModule.
    std::lock_guard<std::mutex> resolving(resolve_mu_);
    std::vector<PendingModule> pending;
    std::vector<CodeHandle> new_handles;
    {
      std::lock_guard<std::mutex> lock(modules_mu_);
      if (pending_modules_.empty()) return;
      pending.swap(pending_modules_);
      if (code_index_stale_) {
        handles_by_kernel_.clear();
        code_handles_indexed_ = 0;
        code_index_stale_ = false;
      }
      new_handles.assign(code_handles_.begin() + static_cast<std::ptrdiff_t>(code_handles_indexed_),
                         code_handles_.end());
      code_handles_indexed_ = code_handles_.size();
    }
    IndexCodeHandles(d, new_handles);
    CUdevice mine = 0;
    if (d.DeviceGet(&mine, device.ordinal()) != CUDA_SUCCESS) mine = -1;
    std::vector<PendingModule> kept;
    for (PendingModule& pending_module : pending) {
      const ModuleInfo& module = *pending_module.info;
      if (d.CtxPushCurrent(pending_module.context) != CUDA_SUCCESS) continue;  // the context is gone
      CUdevice owner = 0;
      if (d.CtxGetDevice(&owner) != CUDA_SUCCESS || owner != mine) {
        kept.push_back(std::move(pending_module));  // waits for a snapshot on its own device
      } else if (std::vector<CodeHandle> handle = HandlesDefining(module); handle.size() == 1) {
        std::vector<device::ModuleVariable> variables;
        for (const std::string& name : module.variables) {
          CUdeviceptr address = 0;
          size_t size = 0;
          CUresult found = handle[0].library != nullptr
                               ? d.LibraryGetGlobal(&address, &size, handle[0].library, name.c_str())
                               : d.ModuleGetGlobal(&address, &size, handle[0].module, name.c_str());
          if (found == CUDA_SUCCESS && address != 0 && size > 0) {
            variables.push_back({name, address, size, module.module_id, false});
          }
        }
        std::lock_guard<std::mutex> lock(modules_mu_);
        if (!unloaded_modules_.contains(module.module_id)) device.RegisterModuleVariables(variables);
      } else {
        GPUPROF_LOG(kDebug) << "replay: the variables of module " << module.module_id << " (kernel "
                            << module.kernels.front() << ", ...) are not snapshotted: "
                            << (handle.empty()
                                    ? "no library or module loaded since gpuprof started defines its kernels"
                                    : "several loaded libraries define its kernels");
      }
      CUcontext popped = nullptr;
      d.CtxPopCurrent(&popped);
    }
    std::lock_guard<std::mutex> lock(modules_mu_);
    for (PendingModule& pending_module : kept) {
      if (!unloaded_modules_.contains(pending_module.info->module_id)) {
        pending_modules_.push_back(std::move(pending_module));
      }
    }
  } catch (...) {
  }
}

Status ModuleRegistry::PrepareFunction(CudaDevice& device, CUfunction function) {
  const CudaDriver& d = device.driver();
  ScopedInternalWork internal;
  GPUPROF_RETURN_IF_ERROR(d.Check("cuFuncLoad", d.FuncLoad(function)));
  ResolveLoadedModules(device);
  const char* name = nullptr;
  CUmodule module = nullptr;
  if (d.FuncGetName(&name, function) != CUDA_SUCCESS || name == nullptr ||
      d.FuncGetModule(&module, function) != CUDA_SUCCESS) {
    return OkStatus();  // no names: the module's variables stay out (counted nowhere)
  }
  std::shared_ptr<const ModuleInfo> module_info = ModuleOf(name);
  if (module_info == nullptr) return OkStatus();
  std::vector<device::ModuleVariable> variables;
  for (const std::string& variable : module_info->variables) {
    CUdeviceptr address = 0;
    size_t size = 0;
    if (d.ModuleGetGlobal(&address, &size, module, variable.c_str()) == CUDA_SUCCESS && size > 0) {
      variables.push_back({variable, address, size, module_info->module_id, false});
    }
  }
  device.RegisterModuleVariables(variables);
  return OkStatus();
}

}  // namespace gpuprof::cupti
