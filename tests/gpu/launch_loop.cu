// The per-launch cost of gpuprof's launch hook: N launches of an empty kernel, timed on the host
// from the first launch to the last one's completion. bench/replay_overhead.py runs it plain,
// under `gpuprof run` and under `gpuprof replay -k <a kernel that never runs>`.
//   gpu_test_launch_loop [N]   prints "launch_loop: N launches, X ns per launch"
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "gpu_test_util.h"

__global__ void empty_kernel(int* sink) {
  if (sink != nullptr && threadIdx.x == 1024) *sink = 0;  // never true: keeps the argument
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 200000;
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32>>>(nullptr);  // warm up
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  const auto begin = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) empty_kernel<<<1, 32>>>(nullptr);
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count();
  std::printf("launch_loop: %ld launches, %.1f ns per launch\n", n, ns / static_cast<double>(n));
  return 0;
}
