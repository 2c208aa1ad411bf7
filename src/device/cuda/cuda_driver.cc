#include "device/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <string>
#include <type_traits>
#include <utility>

namespace gpuprof::device::cuda {
namespace {

// The exported name of a cuda.h function (the header maps cuMemAlloc to cuMemAlloc_v2, ...).
#define GPUPROF_STR(x) #x
#define GPUPROF_EXPORTED_NAME(x) GPUPROF_STR(x)

// dlopen()s the first candidate that loads: the copy the process already has when there is one
// (RTLD_NOLOAD), else a private one. RTLD_NOW makes a broken install fail here, not at the first
// call under a CUDA callback; RTLD_LOCAL keeps the driver's symbols out of the global namespace.
StatusOr<std::pair<void*, std::string>> OpenFirst(const std::vector<std::string>& candidates) {
  if (candidates.empty()) return UnavailableError("CUDA driver unavailable: no library to try");
  std::string tried;
  for (const std::string& candidate : candidates) {
    dlerror();  // clear any stale error so the one reported is this call's
    void* lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) return std::pair{lib, candidate};
    const char* error = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += error != nullptr ? error : candidate + ": dlopen failed";
  }
  return UnavailableError("CUDA driver unavailable: " + tried);
}

// Get()'s table: every entry is required, since CudaDevice and the replay hook call them all.
StatusOr<CudaDriver> LoadComplete() {
  StatusOr<CudaDriver> d = CudaDriver::Load({kCudaDriverLibrary});
  if (!d.ok()) return UnavailableError(d.status().message() + " (is an NVIDIA driver installed?)");
  if (!d->missing.empty())
    return UnavailableError(d->library + " lacks " + d->missing + " (driver too old?)");
  return d;
}

}  // namespace

StatusOr<CudaDriver> CudaDriver::Load(const std::vector<std::string>& candidates) {
  GPUPROF_ASSIGN_OR_RETURN(auto opened, OpenFirst(candidates));
  void* lib = opened.first;
  CudaDriver d;
  d.library = std::move(opened.second);
  auto resolve = [&](auto& slot, const char* name) {
    void* symbol = dlsym(lib, name);
    if (symbol == nullptr) {
      d.missing += d.missing.empty() ? name : std::string(", ") + name;
      return;
    }
    // POSIX guarantees a data pointer from dlsym converts to a function pointer.
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol);
  };
#define GPUPROF_RESOLVE(field, fn) resolve(d.field, GPUPROF_EXPORTED_NAME(fn))
  GPUPROF_RESOLVE(Init, cuInit);
  GPUPROF_RESOLVE(DriverGetVersion, cuDriverGetVersion);
  GPUPROF_RESOLVE(GetErrorString, cuGetErrorString);
  GPUPROF_RESOLVE(DeviceGet, cuDeviceGet);
  GPUPROF_RESOLVE(DeviceGetCount, cuDeviceGetCount);
  GPUPROF_RESOLVE(DeviceGetName, cuDeviceGetName);
  GPUPROF_RESOLVE(DeviceGetAttribute, cuDeviceGetAttribute);
  GPUPROF_RESOLVE(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
  GPUPROF_RESOLVE(CtxPushCurrent, cuCtxPushCurrent);
  GPUPROF_RESOLVE(CtxPopCurrent, cuCtxPopCurrent);
  GPUPROF_RESOLVE(CtxGetCurrent, cuCtxGetCurrent);
  GPUPROF_RESOLVE(CtxGetDevice, cuCtxGetDevice);
  GPUPROF_RESOLVE(CtxSynchronize, cuCtxSynchronize);
  GPUPROF_RESOLVE(PointerGetAttributes, cuPointerGetAttributes);
  GPUPROF_RESOLVE(MemGetInfo, cuMemGetInfo);
  GPUPROF_RESOLVE(MemAlloc, cuMemAlloc);
  GPUPROF_RESOLVE(MemFree, cuMemFree);
  GPUPROF_RESOLVE(MemHostAlloc, cuMemHostAlloc);
  GPUPROF_RESOLVE(MemFreeHost, cuMemFreeHost);
  GPUPROF_RESOLVE(MemHostGetDevicePointer, cuMemHostGetDevicePointer);
  GPUPROF_RESOLVE(MemcpyDtoHAsync, cuMemcpyDtoHAsync);
  GPUPROF_RESOLVE(MemcpyHtoDAsync, cuMemcpyHtoDAsync);
  GPUPROF_RESOLVE(MemcpyDtoDAsync, cuMemcpyDtoDAsync);
  GPUPROF_RESOLVE(MemsetD8Async, cuMemsetD8Async);
  GPUPROF_RESOLVE(StreamCreate, cuStreamCreate);
  GPUPROF_RESOLVE(StreamSynchronize, cuStreamSynchronize);
  GPUPROF_RESOLVE(StreamIsCapturing, cuStreamIsCapturing);
  GPUPROF_RESOLVE(StreamGetCtx, cuStreamGetCtx);
  GPUPROF_RESOLVE(EventCreate, cuEventCreate);
  GPUPROF_RESOLVE(EventRecord, cuEventRecord);
  GPUPROF_RESOLVE(EventSynchronize, cuEventSynchronize);
  GPUPROF_RESOLVE(EventElapsedTime, cuEventElapsedTime);
  GPUPROF_RESOLVE(EventDestroy, cuEventDestroy);
  GPUPROF_RESOLVE(ModuleLoadData, cuModuleLoadData);
  GPUPROF_RESOLVE(ModuleGetFunction, cuModuleGetFunction);
  GPUPROF_RESOLVE(ModuleGetGlobal, cuModuleGetGlobal);
  GPUPROF_RESOLVE(FuncGetName, cuFuncGetName);
  GPUPROF_RESOLVE(FuncGetModule, cuFuncGetModule);
  GPUPROF_RESOLVE(FuncLoad, cuFuncLoad);
  GPUPROF_RESOLVE(LaunchKernel, cuLaunchKernel);
  GPUPROF_RESOLVE(LaunchKernelEx, cuLaunchKernelEx);
  GPUPROF_RESOLVE(KernelGetFunction, cuKernelGetFunction);
  GPUPROF_RESOLVE(OccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor);
  GPUPROF_RESOLVE(FuncGetAttribute, cuFuncGetAttribute);
  GPUPROF_RESOLVE(DeviceGetPCIBusId, cuDeviceGetPCIBusId);
  GPUPROF_RESOLVE(ModuleGetFunctionCount, cuModuleGetFunctionCount);
  GPUPROF_RESOLVE(ModuleEnumerateFunctions, cuModuleEnumerateFunctions);
  GPUPROF_RESOLVE(LibraryGetKernelCount, cuLibraryGetKernelCount);
  GPUPROF_RESOLVE(LibraryEnumerateKernels, cuLibraryEnumerateKernels);
  GPUPROF_RESOLVE(KernelGetName, cuKernelGetName);
  GPUPROF_RESOLVE(LibraryGetGlobal, cuLibraryGetGlobal);
  GPUPROF_RESOLVE(GraphClone, cuGraphClone);
  GPUPROF_RESOLVE(GraphDestroy, cuGraphDestroy);
  GPUPROF_RESOLVE(GraphGetNodes, cuGraphGetNodes);
  GPUPROF_RESOLVE(GraphGetEdges, cuGraphGetEdges);
  GPUPROF_RESOLVE(GraphNodeFindInClone, cuGraphNodeFindInClone);
  GPUPROF_RESOLVE(GraphNodeGetType, cuGraphNodeGetType);
  GPUPROF_RESOLVE(GraphKernelNodeGetParams, cuGraphKernelNodeGetParams);
  GPUPROF_RESOLVE(GraphMemcpyNodeGetParams, cuGraphMemcpyNodeGetParams);
  GPUPROF_RESOLVE(GraphMemsetNodeGetParams, cuGraphMemsetNodeGetParams);
  GPUPROF_RESOLVE(GraphEventRecordNodeGetEvent, cuGraphEventRecordNodeGetEvent);
  GPUPROF_RESOLVE(GraphEventWaitNodeGetEvent, cuGraphEventWaitNodeGetEvent);
  GPUPROF_RESOLVE(GraphMemAllocNodeGetParams, cuGraphMemAllocNodeGetParams);
  GPUPROF_RESOLVE(GraphMemFreeNodeGetParams, cuGraphMemFreeNodeGetParams);
  GPUPROF_RESOLVE(GraphLaunch, cuGraphLaunch);
  GPUPROF_RESOLVE(Memcpy3DAsync, cuMemcpy3DAsync);
  GPUPROF_RESOLVE(MemsetD2D8Async, cuMemsetD2D8Async);
  GPUPROF_RESOLVE(MemsetD2D16Async, cuMemsetD2D16Async);
  GPUPROF_RESOLVE(MemsetD2D32Async, cuMemsetD2D32Async);
  GPUPROF_RESOLVE(MemFreeAsync, cuMemFreeAsync);
  GPUPROF_RESOLVE(StreamWaitEvent, cuStreamWaitEvent);
  GPUPROF_RESOLVE(StreamDestroy, cuStreamDestroy);
#undef GPUPROF_RESOLVE
  // Optional: not listed in `missing` (see the field's comment).
  if (void* symbol = dlsym(lib, "cuFuncGetParamInfo"); symbol != nullptr) {
    d.FuncGetParamInfo = reinterpret_cast<decltype(d.FuncGetParamInfo)>(symbol);
  }
  return d;
}

StatusOr<const CudaDriver*> CudaDriver::Get() {
  static const StatusOr<CudaDriver>* loaded = new StatusOr<CudaDriver>(LoadComplete());  // never destroyed
  if (!loaded->ok()) return loaded->status();
  return &loaded->value();
}

std::string CudaDriver::Error(const char* call, CUresult result) const {
  const char* text = nullptr;
  if (GetErrorString == nullptr || GetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) {
    text = "unknown error";
  }
  return std::string(call) + ": " + text + " (code " + std::to_string(static_cast<int>(result)) + ")";
}

Status CudaDriver::Check(const char* call, CUresult result) const {
  if (result == CUDA_SUCCESS) return OkStatus();
  return InternalError(Error(call, result));
}

}  // namespace gpuprof::device::cuda
