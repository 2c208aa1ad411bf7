// The CUDA driver entry points gpuprof calls, resolved at run time: gpuprof's one libcuda loader.
//
// Nothing in gpuprof links libcuda: a process without a GPU driver must still load libgpuprof.so.
// CudaDriver::Load() dlopens a libcuda (the application's copy when it is already loaded) and
// resolves every symbol below under its exported (versioned) name. CudaDevice and the replay hook
// take the process's table from CudaDriver::Get(), which needs every symbol; cupti's DriverApi
// (the device list for NPU_INFO) wraps a table from Load() and needs only the few it calls, so
// a driver that lacks a replay-only entry still names its devices. A missing library or symbol is
// one Unavailable status naming it. A table is immutable once loaded, and the library is never
// closed (the driver is shared with the application).
//
// Thread-safety: Get() and Load() are safe from any thread; the functions follow the driver's own
// rules.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::device::cuda {

// The driver's soname: the one the process's own CUDA libraries load.
inline constexpr const char* kCudaDriverLibrary = "libcuda.so.1";

struct CudaDriver {
  CUresult (*Init)(unsigned int) = nullptr;  // only where gpuprof is the process's first CUDA user (a query)
  CUresult (*DriverGetVersion)(int*) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*DeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*CtxPopCurrent)(CUcontext*) = nullptr;
  CUresult (*CtxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*CtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  CUresult (*PointerGetAttributes)(unsigned, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;
  CUresult (*MemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemHostAlloc)(void**, size_t, unsigned) = nullptr;
  CUresult (*MemFreeHost)(void*) = nullptr;
  CUresult (*MemHostGetDevicePointer)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream) = nullptr;
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*StreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*StreamSynchronize)(CUstream) = nullptr;
  CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*StreamGetCtx)(CUstream, CUcontext*) = nullptr;
  CUresult (*EventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*EventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*EventSynchronize)(CUevent) = nullptr;
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*EventDestroy)(CUevent) = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*ModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*) = nullptr;
  CUresult (*FuncGetName)(const char**, CUfunction) = nullptr;
  CUresult (*FuncGetModule)(CUmodule*, CUfunction) = nullptr;
  CUresult (*FuncLoad)(CUfunction) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void**, void**) = nullptr;
  CUresult (*LaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*KernelGetFunction)(CUfunction*, CUkernel) = nullptr;
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) = nullptr;
  CUresult (*FuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;  // launch__* (issue 19)
  CUresult (*DeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  // Naming the kernels and globals of loaded modules and libraries (R7).
  CUresult (*ModuleGetFunctionCount)(unsigned*, CUmodule) = nullptr;
  CUresult (*ModuleEnumerateFunctions)(CUfunction*, unsigned, CUmodule) = nullptr;
  CUresult (*LibraryGetKernelCount)(unsigned*, CUlibrary) = nullptr;
  CUresult (*LibraryEnumerateKernels)(CUkernel*, unsigned, CUlibrary) = nullptr;
  CUresult (*KernelGetName)(const char**, CUkernel) = nullptr;
  CUresult (*LibraryGetGlobal)(CUdeviceptr*, size_t*, CUlibrary, const char*) = nullptr;
  // Graph launches replayed as a whole or node by node (issue 24).
  CUresult (*GraphClone)(CUgraph*, CUgraph) = nullptr;
  CUresult (*GraphDestroy)(CUgraph) = nullptr;
  CUresult (*GraphGetNodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
  CUresult (*GraphGetEdges)(CUgraph, CUgraphNode*, CUgraphNode*, CUgraphEdgeData*, size_t*) = nullptr;
  CUresult (*GraphNodeFindInClone)(CUgraphNode*, CUgraphNode, CUgraph) = nullptr;
  CUresult (*GraphNodeGetType)(CUgraphNode, CUgraphNodeType*) = nullptr;
  CUresult (*GraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*) = nullptr;
  CUresult (*GraphMemcpyNodeGetParams)(CUgraphNode, CUDA_MEMCPY3D*) = nullptr;
  CUresult (*GraphMemsetNodeGetParams)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS*) = nullptr;
  CUresult (*GraphEventRecordNodeGetEvent)(CUgraphNode, CUevent*) = nullptr;
  CUresult (*GraphEventWaitNodeGetEvent)(CUgraphNode, CUevent*) = nullptr;
  CUresult (*GraphMemAllocNodeGetParams)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*) = nullptr;
  CUresult (*GraphMemFreeNodeGetParams)(CUgraphNode, CUdeviceptr*) = nullptr;
  CUresult (*GraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*Memcpy3DAsync)(const CUDA_MEMCPY3D*, CUstream) = nullptr;
  CUresult (*MemsetD2D8Async)(CUdeviceptr, size_t, unsigned char, size_t, size_t, CUstream) = nullptr;
  CUresult (*MemsetD2D16Async)(CUdeviceptr, size_t, unsigned short, size_t, size_t, CUstream) = nullptr;
  CUresult (*MemsetD2D32Async)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream) = nullptr;
  CUresult (*MemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned int) = nullptr;
  // Range replay (W3/W4): gpuprof's own streams, and the layout of a kernel's parameters, which the
  // argument copy of a recorded launch needs. FuncGetParamInfo is optional (CUDA 12.4+): Get()
  // loads without it, and a launch that needs it is then not recordable (its range is declined).
  CUresult (*StreamDestroy)(CUstream) = nullptr;
  CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;

  // The library the entries came from, and the exported names of the entries it lacks
  // (comma-separated; empty when it has them all).
  std::string library;
  std::string missing;

  // The process's table, from kCudaDriverLibrary, loaded once; Unavailable (naming the library or
  // the missing symbols) when it cannot load or lacks any entry.
  static StatusOr<const CudaDriver*> Get();
  // A table from the first of `candidates` that dlopens; entries the library lacks stay null and
  // are listed in `missing`, for the caller to judge. Unavailable ("CUDA driver unavailable:
  // <dlerror of each candidate>") when none loads.
  static StatusOr<CudaDriver> Load(const std::vector<std::string>& candidates);

  // "cuFoo: <driver's error string> (code N)".
  std::string Error(const char* call, CUresult result) const;
  Status Check(const char* call, CUresult result) const;
};

}  // namespace gpuprof::device::cuda
