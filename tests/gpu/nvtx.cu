// NVTX ranges and marks around known kernels (nvtx3, header-only, from the toolkit):
//   push/pop  "gpuprof_outer" containing push/pop "gpuprof_inner"; each wraps one kernel launch
//             and a synchronize, so each range contains its kernel's device execution
//   mark      "gpuprof_mark"
//   start/end "gpuprof_cross_thread": started on the main thread, ended on another thread
//   push/pop  "gpuprof_domain_range" in the domain "gpuprof_domain"
// CUDA is initialized before the first NVTX call. tests/gpu/check_db.py (expectation "nvtx")
// finds each in MSTX_EVENTS with its type, thread(s), domain and nesting.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <thread>

#include "gpu_test_util.h"

__global__ void nvtx_outer_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = static_cast<float>(i);
}

__global__ void nvtx_inner_kernel(float* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}

int main() {
  constexpr int kDevice = 0;
  constexpr int kN = 1 << 16;
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(kDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(nullptr));  // CUDA (and gpuprof) initialized first
  gpuprof_test::PrintProcess("main", kDevice);
  float* data = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&data, kN * sizeof(float)));

  nvtxRangePushA("gpuprof_outer");
  nvtx_outer_kernel<<<kN / 256, 256>>>(data, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  nvtxRangePushA("gpuprof_inner");
  nvtx_inner_kernel<<<kN / 256, 256>>>(data, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  nvtxRangePop();
  nvtxRangePop();
  std::printf(
      "gpuprof-test: range type=push/pop message=gpuprof_outer contains=gpuprof_inner "
      "kernel=nvtx_outer_kernel\n");
  std::printf("gpuprof-test: range type=push/pop message=gpuprof_inner kernel=nvtx_inner_kernel\n");

  nvtxMarkA("gpuprof_mark");
  std::printf("gpuprof-test: mark message=gpuprof_mark\n");

  nvtxRangeId_t cross = nvtxRangeStartA("gpuprof_cross_thread");
  long end_tid = 0;
  std::thread ender([&] {
    end_tid = gpuprof_test::OsThreadId();
    nvtxRangeEnd(cross);
  });
  ender.join();
  std::printf("gpuprof-test: range type=start/end message=gpuprof_cross_thread start_tid=%ld end_tid=%ld\n",
              gpuprof_test::OsThreadId(), end_tid);

  nvtxDomainHandle_t domain = nvtxDomainCreateA("gpuprof_domain");
  nvtxEventAttributes_t attributes = {};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = "gpuprof_domain_range";
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);
  nvtxDomainDestroy(domain);
  std::printf("gpuprof-test: range type=push/pop message=gpuprof_domain_range domain=gpuprof_domain\n");

  float first = 0.0f;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(&first, data + 5, sizeof(float), cudaMemcpyDeviceToHost));
  if (first != 6.0f) gpuprof_test::Fail("kernel results");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(data));
  std::printf("gpuprof-test: ok\n");
  std::fflush(stdout);
  return 0;
}
