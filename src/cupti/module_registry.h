// The code the application loaded, for replay's R7 and C2: what each loaded cubin says about its
// kernels (its variables, printf, device malloc), and the library or module handles the code was
// loaded through, so that a snapshot can register the addresses of every loaded module's
// variables with the CudaDevice, once.
//
// Thread-safety: every method may be called from any thread (the application's, in CUPTI
// callbacks). Driver calls run without the registry's lock, since one that loads a module
// re-enters OnModuleLoaded.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cupti/subscriber.h"
#include "device/cuda/cuda_device.h"

namespace gpuprof::cupti {

// What a loaded cubin says about its kernels: its variables (R7) and side effects (C2).
struct ModuleInfo {
  std::uint32_t module_id = 0;  // CUPTI's, per context
  std::vector<std::string> variables;
  std::vector<std::string> kernels;  // mangled
  bool uses_printf = false;
  bool uses_device_malloc = false;
};

class ModuleRegistry {
 public:
  // A module load (MODULE_LOADED, with its cubin): its kernels indexed, its variables pending.
  void OnModuleLoaded(const ModuleEvent& event) noexcept;
  // A module unload starts: its variables are no longer registered by any later snapshot.
  void OnModuleUnloading(std::uint32_t module_id) noexcept;
  // cuModuleLoad*, cuLibraryLoad* (remembered at a successful exit) and their unloads (at entry).
  void OnCodeLoad(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;

  // The module defining `kernel` (mangled); null when no loaded cubin named it.
  std::shared_ptr<const ModuleInfo> ModuleOf(const std::string& kernel);
  // R7 for one launched function, before a snapshot on `device`: its module loaded (lazy loading
  // would load it at the launch, after the snapshot), and the variables of every module loaded on
  // the device registered (a kernel may write them through pointers).
  Status PrepareFunction(device::cuda::CudaDevice& device, CUfunction function);
  // Registers the variables of the modules loaded on `device` so far (called in the replay window).
  void ResolveLoadedModules(device::cuda::CudaDevice& device) noexcept;

 private:
  // R7 for every loaded module, not only the launched kernel's: a loaded cubin with variables
  // waits here until a snapshot on its device finds the library or module handle it belongs to
  // (by its kernel names) and registers the variables' addresses with the CudaDevice, once.
  struct PendingModule {
    CUcontext context = nullptr;
    std::shared_ptr<const ModuleInfo> info;
  };
  // A handle the application loaded code through (cuLibraryLoad* or cuModuleLoad*).
  struct CodeHandle {
    CUlibrary library = nullptr;
    CUmodule module = nullptr;
    friend bool operator==(const CodeHandle&, const CodeHandle&) = default;
  };
  void IndexCodeHandles(const device::cuda::CudaDriver& d,
                        const std::vector<CodeHandle>& handles);  // under resolve_mu_
  // The loaded handles that define every kernel of `module` (one: found); under resolve_mu_.
  std::vector<CodeHandle> HandlesDefining(const ModuleInfo& module) const;

  // By kernel (mangled) name, from each loaded cubin.
  std::mutex modules_mu_;
  std::unordered_map<std::string, std::shared_ptr<const ModuleInfo>>
      modules_by_kernel_;                               // guarded by modules_mu_
  std::vector<PendingModule> pending_modules_;          // guarded by modules_mu_
  std::unordered_set<std::uint32_t> unloaded_modules_;  // guarded by modules_mu_
  std::vector<CodeHandle> code_handles_;                // guarded by modules_mu_, in load order
  std::size_t code_handles_indexed_ = 0;                // guarded by modules_mu_: how many are in the index
  bool code_index_stale_ = false;                       // guarded by modules_mu_: a handle was unloaded
  // Serializes ResolveLoadedModules, which calls the driver without modules_mu_.
  std::mutex resolve_mu_;
  std::unordered_map<std::string, std::vector<CodeHandle>> handles_by_kernel_;  // guarded by resolve_mu_
};

}  // namespace gpuprof::cupti
