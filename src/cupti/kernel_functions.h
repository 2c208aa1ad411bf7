// What the replay hook knows of each launched function: the name launches are selected by and
// stored under (C4), the selector's verdict, and what its module says it does (C2). Computed at
// the function's first launch (driver calls) and cached, so that a launch that is not selected
// costs a lookup and no driver call (R3).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cupti.h>

#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "cupti/module_registry.h"
#include "device/cuda/cuda_device.h"
#include "replay/controller.h"

namespace gpuprof::cupti {

// The name a launch is selected by and stored under (C4): the demangled function name without its
// parameter list ("_Z15in_place_updatePji" -> "in_place_update", "void k<int>(int*)" -> "k<int>");
// a name that does not demangle is returned as is.
std::string KernelFunctionName(const char* mangled);

struct FunctionInfo {
  CUfunction resolved = nullptr;  // this context's CUfunction (a launch may pass a CUkernel)
  std::string mangled;
  std::string name;      // as the DB and the selector see it
  bool matches = false;  // the selector's name test
  bool uses_printf = false;
  bool uses_device_malloc = false;
};

class KernelFunctions {
 public:
  // `function` as launched on `stream`, judged by `controller`'s selector, its side effects from
  // `modules` (loading its module first when it loads lazily and the stream does not capture).
  // Null when the function has no name.
  std::shared_ptr<const FunctionInfo> InfoOf(const device::cuda::CudaDriver& driver,
                                             const replay::Controller& controller, ModuleRegistry& modules,
                                             CUfunction function, CUstream stream) noexcept;
  // Forgets every verdict: the selector changed, or a module unload may hand its function
  // handles to other kernels.
  void Clear() noexcept;

 private:
  std::shared_mutex mu_;
  std::unordered_map<CUfunction, std::shared_ptr<const FunctionInfo>> functions_;  // guarded by mu_
};

}  // namespace gpuprof::cupti
