// Hardware counters over replay passes (issue 19): kernels whose counter values are known, run
// under `gpuprof replay --metrics ...` (run_case.py "ReplayCounters"); check_db.py
// ("replay_counters") reads GPUPROF_REPLAY_METRIC.
//
//   stream_copy   copies kCopyBytes (3 GiB, uint4 per thread, grid-stride): dram__bytes_read.sum
//                 and dram__bytes_write.sum within 2% of kCopyBytes (the L2, 50 MB, is below 2% of it:
//                 the dirty lines a pass starts or ends with move the write count by less)
//   fma_loop      K dependent FMAs per thread (K = kFma, 2*kFma, 3*kFma; each launched twice):
//                 smsp__inst_executed.sum is the same in both launches of a K, and linear in K
//                 (the loop is not unrolled, so each iteration costs the same instructions)
//   fixed_grid    grid (37,3,2), block (96,1,1): launch__grid_size 222, launch__block_size 96
//
// `gpu_test_replay_counters DEVICE range` (run_case.py "ReplayCountersRange", range replay, W7): the
// same kernels between cudaProfilerStart and cudaProfilerStop, each fma_loop K launched six times,
// so one range holds 20 launches counted from one pass set; every buffer is allocated before the
// range and freed after it (an allocation or a free inside would decline it, W5).
//
// The program checks its own results (the copy's output, the FMA result) and prints one
// "gpuprof-test: launch kernel=... k=..." line per launch, in launch order.
//
//   gpu_test_replay_counters [DEVICE]   runs every launch on DEVICE (default 0; "ReplayCountersDevice1"
//                                       passes 1) and prints "gpuprof-test: counters device=DEVICE";
//                                       on a machine without that device it prints a skip line
#include <cuda_profiler_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_test_util.h"

constexpr std::size_t kCopyBytes = std::size_t{3} << 30;
constexpr int kFma = 4096;
constexpr int kFmaBlocks = 132;
constexpr int kFmaThreads = 256;

__global__ void stream_copy(const uint4* __restrict__ in, uint4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void fma_loop(float* out, int k) {
  float a = threadIdx.x * 1e-3f;
  const float b = 0.999f;
  const float c = 1e-4f;
#pragma unroll 1
  for (int i = 0; i < k; ++i) a = fmaf(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void fixed_grid(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) out[block] = block + 1;
}

int main(int argc, char** argv) {
  const int device = argc > 1 ? std::atoi(argv[1]) : 0;
  const bool range = argc > 2 && std::strcmp(argv[2], "range") == 0;
  const int fma_repeats = range ? 6 : 2;
  int device_count = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaGetDeviceCount(&device_count));
  if (device < 0 || device >= device_count) {
    std::printf("gpuprof-test: skip reason=no_device_%d devices=%d\n", device, device_count);
    return 0;
  }
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(device));
  gpuprof_test::PrintProcess("main", device);
  std::printf("gpuprof-test: counters device=%d mode=%s\n", device, range ? "range" : "kernel");

  const std::size_t n = kCopyBytes / sizeof(uint4);
  uint4* in = nullptr;
  uint4* out = nullptr;
  float* fma_out = nullptr;
  unsigned* blocks = nullptr;
  const dim3 grid(37, 3, 2);
  const unsigned count = grid.x * grid.y * grid.z;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&in, kCopyBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&out, kCopyBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&fma_out, sizeof(float) * kFmaBlocks * kFmaThreads));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&blocks, sizeof(unsigned) * count));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(in, 0x5a, kCopyBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(out, 0, kCopyBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  if (range) GPUPROF_TEST_CUDA_CHECK(cudaProfilerStart());

  stream_copy<<<132 * 8, 512>>>(in, out, n);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  std::printf("gpuprof-test: launch kernel=stream_copy bytes=%zu\n", kCopyBytes);
  std::vector<unsigned char> probe(4096);
  for (std::size_t offset : {std::size_t{0}, kCopyBytes / 2, kCopyBytes - probe.size()}) {
    GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(probe.data(), reinterpret_cast<unsigned char*>(out) + offset,
                                       probe.size(), cudaMemcpyDeviceToHost));
    for (unsigned char byte : probe) {
      if (byte != 0x5a) gpuprof_test::Fail("stream_copy: the output is not the input");
    }
  }

  for (int multiple = 1; multiple <= 3; ++multiple) {
    for (int repeat = 0; repeat < fma_repeats; ++repeat) {
      fma_loop<<<kFmaBlocks, kFmaThreads>>>(fma_out, multiple * kFma);
      GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
      GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("gpuprof-test: launch kernel=fma_loop k=%d warps=%d\n", multiple * kFma,
                  kFmaBlocks * kFmaThreads / 32);
    }
  }
  float first = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(&first, fma_out, sizeof(first), cudaMemcpyDeviceToHost));
  float expected = 0;
  for (int i = 0; i < 3 * kFma; ++i) expected = fmaf(expected, 0.999f, 1e-4f);
  if (first != expected) gpuprof_test::Fail("fma_loop: thread 0's result differs from the host's");

  fixed_grid<<<grid, 96>>>(blocks);
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> host(count);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(host.data(), blocks, sizeof(unsigned) * count, cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < count; ++i) {
    if (host[i] != i + 1) gpuprof_test::Fail("fixed_grid: a block did not write its slot");
  }
  std::printf("gpuprof-test: launch kernel=fixed_grid grid_size=%u block_size=96\n", count);
  if (range) GPUPROF_TEST_CUDA_CHECK(cudaProfilerStop());

  GPUPROF_TEST_CUDA_CHECK(cudaFree(in));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(out));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(fma_out));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(blocks));
  std::printf("gpuprof-test: done\n");
  return 0;
}
