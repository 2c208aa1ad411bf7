// `gpuprof replay` on memory and modules the driver API makes (issue 5's GPU tests):
//   replay_driver vmm   a buffer from cuMemCreate + cuMemMap (PyTorch's expandable segments use
//                       these), written in place by a kernel: B4
//   replay_driver ptx   a module loaded from PTX text with cuModuleLoadData whose kernel
//                       increments the module's own .global counter, 3 launches: R7
//   replay_driver cross_module   a runtime kernel increments, through a pointer, the .global of a
//                       PTX module that is loaded but never launched from, 3 launches: R7's
//                       "every loaded module" through the cuModuleLoadData handle
//   replay_driver cross_library  a PTX kernel increments, through a pointer, a __device__ variable
//                       of this file's runtime-registered (lazily loaded) library, whose kernels
//                       never run, 3 launches: R7 through the cuLibraryLoadData handle
// Each checks its results against one ordinary run per launch and exits 1 on a mismatch.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_util.h"

#define DRIVER_CHECK(call)                                                                          \
  do {                                                                                              \
    CUresult driver_err_ = (call);                                                                  \
    if (driver_err_ != CUDA_SUCCESS) {                                                              \
      const char* text = nullptr;                                                                   \
      cuGetErrorString(driver_err_, &text);                                                         \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, text ? text : "?"); \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

__global__ void vmm_update(unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 5u + 3u;
}

__device__ unsigned runtime_counter;

// *out = ++*counter, where counter lives in another module.
__global__ void bump_through(unsigned* counter, unsigned* out) { *out = ++*counter; }

namespace {

int Vmm() {
  CUdevice device = 0;
  DRIVER_CHECK(cuDeviceGet(&device, 0));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  DRIVER_CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const int n = 1 << 20;
  size_t bytes = ((n * sizeof(unsigned) + granularity - 1) / granularity) * granularity;
  CUmemGenericAllocationHandle handle = 0;
  DRIVER_CHECK(cuMemCreate(&handle, bytes, &prop, 0));
  CUdeviceptr ptr = 0;
  DRIVER_CHECK(cuMemAddressReserve(&ptr, bytes, 0, 0, 0));
  DRIVER_CHECK(cuMemMap(ptr, bytes, 0, handle, 0));
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DRIVER_CHECK(cuMemSetAccess(ptr, bytes, &access, 1));
  std::vector<unsigned> input(n), out(n);
  for (int i = 0; i < n; ++i) input[static_cast<std::size_t>(i)] = static_cast<unsigned>(i) * 11u + 2u;
  DRIVER_CHECK(cuMemcpyHtoD(ptr, input.data(), n * sizeof(unsigned)));
  vmm_update<<<n / 256, 256>>>(reinterpret_cast<unsigned*>(ptr), n);
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  DRIVER_CHECK(cuMemcpyDtoH(out.data(), ptr, n * sizeof(unsigned)));
  for (int i = 0; i < n; ++i) {
    auto u = static_cast<std::size_t>(i);
    if (out[u] != input[u] * 5u + 3u) gpuprof_test::Fail("VMM buffer differs from one ordinary run");
  }
  DRIVER_CHECK(cuMemUnmap(ptr, bytes));
  DRIVER_CHECK(cuMemAddressFree(ptr, bytes));
  DRIVER_CHECK(cuMemRelease(handle));
  std::printf("gpuprof-test: launched kernel=vmm_update count=1 allocator=vmm\n");
  return 0;
}

// A kernel written in PTX: out[0] = ++counter (a module-scope .global).
const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .global .align 4 .u32 ptx_counter;
.visible .entry ptx_count(.param .u64 out) {
  .reg .u32 %r<3>;
  .reg .u64 %rd<3>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r1, [ptx_counter];
  add.u32 %r2, %r1, 1;
  st.global.u32 [ptx_counter], %r2;
  st.global.u32 [%rd2], %r2;
  ret;
}
)";

int Ptx() {
  GPUPROF_TEST_CUDA_CHECK(cudaFree(nullptr));  // the runtime's primary context, current
  CUmodule module = nullptr;
  DRIVER_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction function = nullptr;
  DRIVER_CHECK(cuModuleGetFunction(&function, module, "ptx_count"));
  CUdeviceptr out = 0;
  DRIVER_CHECK(cuMemAlloc(&out, sizeof(unsigned)));
  for (unsigned launch = 1; launch <= 3; ++launch) {
    void* params[] = {&out};
    DRIVER_CHECK(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
    unsigned seen = 0;
    DRIVER_CHECK(cuMemcpyDtoH(&seen, out, sizeof(seen)));
    if (seen != launch) {
      std::fprintf(stderr, "gpuprof-test: launch %u saw counter %u\n", launch, seen);
      gpuprof_test::Fail("the PTX module's counter was not restored between passes");
    }
  }
  DRIVER_CHECK(cuMemFree(out));
  DRIVER_CHECK(cuModuleUnload(module));
  std::printf("gpuprof-test: launched kernel=ptx_count count=3 module=ptx\n");
  return 0;
}

// The same as bump_through in PTX, plus a module variable that only bump_through writes.
const char* kCrossPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .global .align 4 .u32 ptx_total;
.visible .entry ptx_bump(.param .u64 counter, .param .u64 out) {
  .reg .u32 %r<3>;
  .reg .u64 %rd<5>;
  ld.param.u64 %rd1, [counter];
  cvta.to.global.u64 %rd2, %rd1;
  ld.param.u64 %rd3, [out];
  cvta.to.global.u64 %rd4, %rd3;
  ld.global.u32 %r1, [%rd2];
  add.u32 %r2, %r1, 1;
  st.global.u32 [%rd2], %r2;
  st.global.u32 [%rd4], %r2;
  ret;
}
)";

// Three launches of a kernel that increments a counter of another module; each must see 1, 2, 3.
int Cross(bool through_library) {
  GPUPROF_TEST_CUDA_CHECK(cudaFree(nullptr));
  CUmodule module = nullptr;
  DRIVER_CHECK(cuModuleLoadData(&module, kCrossPtx));
  CUdeviceptr counter = 0;
  if (through_library) {
    void* symbol = nullptr;  // loads this file's module (lazily loaded until now)
    GPUPROF_TEST_CUDA_CHECK(cudaGetSymbolAddress(&symbol, runtime_counter));
    counter = reinterpret_cast<CUdeviceptr>(symbol);
  } else {
    size_t size = 0;
    DRIVER_CHECK(cuModuleGetGlobal(&counter, &size, module, "ptx_total"));
  }
  DRIVER_CHECK(cuMemsetD32(counter, 0, 1));
  CUfunction ptx_bump = nullptr;
  DRIVER_CHECK(cuModuleGetFunction(&ptx_bump, module, "ptx_bump"));
  CUdeviceptr out = 0;
  DRIVER_CHECK(cuMemAlloc(&out, sizeof(unsigned)));
  for (unsigned launch = 1; launch <= 3; ++launch) {
    if (through_library) {
      void* params[] = {&counter, &out};
      DRIVER_CHECK(cuLaunchKernel(ptx_bump, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
    } else {
      bump_through<<<1, 1>>>(reinterpret_cast<unsigned*>(counter), reinterpret_cast<unsigned*>(out));
      GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
    }
    unsigned seen = 0;
    DRIVER_CHECK(cuMemcpyDtoH(&seen, out, sizeof(seen)));
    if (seen != launch) {
      std::fprintf(stderr, "gpuprof-test: launch %u saw counter %u\n", launch, seen);
      gpuprof_test::Fail("the other module's counter was not restored between passes");
    }
  }
  DRIVER_CHECK(cuMemFree(out));
  DRIVER_CHECK(cuModuleUnload(module));
  std::printf("gpuprof-test: launched kernel=%s count=3 module=%s\n",
              through_library ? "ptx_bump" : "bump_through", through_library ? "runtime-library" : "ptx");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
  std::string mode = argc > 1 ? argv[1] : "";
  int rc = 2;
  if (mode == "vmm")
    rc = Vmm();
  else if (mode == "ptx")
    rc = Ptx();
  else if (mode == "cross_module")
    rc = Cross(false);
  else if (mode == "cross_library")
    rc = Cross(true);
  else
    std::fprintf(stderr, "usage: %s vmm|ptx|cross_module|cross_library\n", argv[0]);
  return rc;
}
