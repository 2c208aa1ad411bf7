#include "cupti/kernel_functions.h"

#include <mutex>
#include <string_view>

#include "cupti/activity_translator.h"
#include "cupti/internal_work.h"

namespace gpuprof::cupti {

using device::cuda::CudaDriver;

std::string KernelFunctionName(const char* mangled) {
  std::string out = DemangleKernelName(mangled);
  // Cut the parameter list: the first '(' outside template arguments that does not open an
  // "(anonymous namespace)" qualifier.
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  int depth = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char ch = out[i];
    if (ch == '<') ++depth;
    if (ch == '>') --depth;
    if (ch != '(' || depth != 0) continue;
    if (out.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size() - 1;
      continue;
    }
    out.resize(i);
    break;
  }
  // Function templates demangle with their return type first ("void k<int>(int*)").
  if (out.rfind("void ", 0) == 0) out.erase(0, 5);
  return out;
}

std::shared_ptr<const FunctionInfo> KernelFunctions::InfoOf(const CudaDriver& driver,
                                                            const replay::Controller& controller,
                                                            ModuleRegistry& modules, CUfunction function,
                                                            CUstream stream) noexcept {
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (auto it = functions_.find(function); it != functions_.end()) return it->second;
  }
  try {
    const CudaDriver& d = driver;
    ScopedInternalWork internal;
    auto info = std::make_shared<FunctionInfo>();
    info->resolved = function;
    const char* name = nullptr;
    CUfunction from_kernel = nullptr;
    if (d.FuncGetName(&name, function) != CUDA_SUCCESS &&
        d.KernelGetFunction(&from_kernel, reinterpret_cast<CUkernel>(function)) == CUDA_SUCCESS) {
      info->resolved = from_kernel;  // the runtime launches library kernels (cuLibrary*) as CUkernel
      name = nullptr;
      d.FuncGetName(&name, from_kernel);
    }
    if (name == nullptr) return nullptr;
    info->mangled = name;
    info->name =
        controller.options().selector.name == info->mangled ? info->mangled : KernelFunctionName(name);
    info->matches = controller.NameMatches(info->name) || controller.NameMatches(info->mangled);
    std::shared_ptr<const ModuleInfo> module = modules.ModuleOf(info->mangled);
    // A lazily loaded module loads at its first launch, after this callback: load it now, so its
    // cubin (MODULE_LOADED) says what the kernel does before the decision (C2, R7). Not while the
    // stream captures (loading is not capture-safe): then nothing is cached, the next launch retries.
    if (module == nullptr && info->matches) {
      CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
      if (d.StreamIsCapturing(stream, &capture) == CUDA_SUCCESS && capture != CU_STREAM_CAPTURE_STATUS_NONE) {
        return info;
      }
      if (d.FuncLoad(info->resolved) == CUDA_SUCCESS) module = modules.ModuleOf(info->mangled);
    }
    if (module != nullptr) {
      info->uses_printf = module->uses_printf;
      info->uses_device_malloc = module->uses_device_malloc;
    }
    std::unique_lock<std::shared_mutex> lock(mu_);
    functions_[function] = info;
    return info;
  } catch (...) {
    return nullptr;
  }
}

void KernelFunctions::Clear() noexcept {
  std::unique_lock<std::shared_mutex> lock(mu_);
  functions_.clear();
}

}  // namespace gpuprof::cupti
