// Self-checking program for range replay (REPLAY_SPEC W1-W6, `gpuprof replay --replay-mode range`):
// between cudaProfilerStart and cudaProfilerStop, kernels on two streams ordered by events, copies
// both ways (asynchronous and synchronous, the host source overwritten right after its copy), a
// memset, in-place updates. Every buffer's final value is checked against what one ordinary run
// computes: a replay that lets a pass see another pass's output, reads the host source late, or
// leaves anything but the application's own result makes the program exit 1. It runs the same
// unprofiled.
//
//   a = h_in (= i)            s1: HtoD, then a = a*3+1 in place          -> a = 3i+1
//   e1 after s1; s2 waits e1  s2: memset b = 0, then b += a             -> b = 3i+1
//                             s1: c = 2a                                -> c = 6i+2
//   e2 after s2; s1 waits e2  s1: c += b in place, DtoH into h_out      -> c = 9i+3
//   legacy stream: a synchronous DtoH of b into h_b
#include <cuda_profiler_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_test_util.h"

constexpr int kN = 1 << 16;

__global__ void scale_add(unsigned* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] * 3u + 1u;
}

__global__ void accumulate(unsigned* b, const unsigned* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] += a[i];
}

__global__ void double_into(unsigned* c, const unsigned* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = 2u * a[i];
}

__global__ void add_into(unsigned* c, const unsigned* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += b[i];
}

namespace {

void Expect(const std::vector<unsigned>& got, unsigned mul, unsigned add, const char* what) {
  for (int i = 0; i < kN; ++i) {
    const unsigned want = mul * static_cast<unsigned>(i) + add;
    if (got[i] != want) {
      std::fprintf(stderr, "gpuprof-test: %s[%d] = %u, expected %u\n", what, i, got[i], want);
      gpuprof_test::Fail(what);
    }
  }
}

}  // namespace

// `gpu_test_replay_range nvtx`: the range is the NVTX range "replay-range" (`--range nvtx
// --nvtx-include replay-range`, run_case.py "ReplayRangeNvtx") instead of cudaProfilerStart/Stop.
int main(int argc, char** argv) {
  const bool by_nvtx = argc > 1 && std::strcmp(argv[1], "nvtx") == 0;
  gpuprof_test::PrintProcess("main", 0);
  const size_t bytes = kN * sizeof(unsigned);
  unsigned *a = nullptr, *b = nullptr, *c = nullptr;
  // Allocations before the range: an allocation inside it would decline it (W5).
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&a, bytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&b, bytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&c, bytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(b, 0xFF, bytes));  // the range must overwrite it
  cudaStream_t s1, s2;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e1, e2;
  GPUPROF_TEST_CUDA_CHECK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  GPUPROF_TEST_CUDA_CHECK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  std::vector<unsigned> h_in(kN), h_out(kN, 0), h_b(kN, 0);
  for (int i = 0; i < kN; ++i) h_in[i] = static_cast<unsigned>(i);
  const int block = 256;
  const int grid = (kN + block - 1) / block;

  if (by_nvtx) {
    nvtxRangePushA("replay-range");
  } else {
    GPUPROF_TEST_CUDA_CHECK(cudaProfilerStart());
  }
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpyAsync(a, h_in.data(), bytes, cudaMemcpyHostToDevice, s1));
  // A pageable source has been staged when the call returns: the range must have copied it then.
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(s1));
  for (int i = 0; i < kN; ++i) h_in[i] = 0xDEADBEEFu;
  scale_add<<<grid, block, 0, s1>>>(a, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaEventRecord(e1, s1));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamWaitEvent(s2, e1, 0));
  GPUPROF_TEST_CUDA_CHECK(cudaMemsetAsync(b, 0, bytes, s2));
  accumulate<<<grid, block, 0, s2>>>(b, a, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  double_into<<<grid, block, 0, s1>>>(c, a, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaEventRecord(e2, s2));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamWaitEvent(s1, e2, 0));
  add_into<<<grid, block, 0, s1>>>(c, b, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpyAsync(h_out.data(), c, bytes, cudaMemcpyDeviceToHost, s1));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(s1));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(s2));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(h_b.data(), b, bytes, cudaMemcpyDeviceToHost));
  if (by_nvtx) {
    nvtxRangePop();
  } else {
    GPUPROF_TEST_CUDA_CHECK(cudaProfilerStop());
  }

  // What the application's own execution wrote into its host memory, and then what the device
  // holds after the range (the passes' writes must be gone).
  Expect(h_out, 9, 3, "h_out");
  Expect(h_b, 3, 1, "h_b");
  std::vector<unsigned> after(kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(after.data(), a, bytes, cudaMemcpyDeviceToHost));
  Expect(after, 3, 1, "a");
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(after.data(), b, bytes, cudaMemcpyDeviceToHost));
  Expect(after, 3, 1, "b");
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(after.data(), c, bytes, cudaMemcpyDeviceToHost));
  Expect(after, 9, 3, "c");
  std::printf("gpuprof-test: range launches=4 results=ok\n");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(a));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(b));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(c));
  return 0;
}
