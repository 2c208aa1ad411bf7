// `gpuprof replay` on memory and modules the driver API makes (issue 5's GPU tests):
//   replay_driver vmm   a buffer from cuMemCreate + cuMemMap (PyTorch's expandable segments use
//                       these), written in place by a kernel: B4
//   replay_driver ptx   a module loaded from PTX text with cuModuleLoadData whose kernel
//                       increments the module's own .global counter, 3 launches: R7
// Each checks its results against one ordinary run per launch and exits 1 on a mismatch.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_util.h"

#define DRIVER_CHECK(call)                                                                  \
  do {                                                                                      \
    CUresult driver_err_ = (call);                                                          \
    if (driver_err_ != CUDA_SUCCESS) {                                                      \
      const char* text = nullptr;                                                           \
      cuGetErrorString(driver_err_, &text);                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, text ? text : "?"); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

__global__ void vmm_update(unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 5u + 3u;
}

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

}  // namespace

int main(int argc, char** argv) {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
  std::string mode = argc > 1 ? argv[1] : "";
  int rc = 2;
  if (mode == "vmm") rc = Vmm();
  else if (mode == "ptx") rc = Ptx();
  else std::fprintf(stderr, "usage: %s vmm|ptx\n", argv[0]);
  return rc;
}
