// `gpuprof replay` replays a kernel that uses device printf by default (rule C2): its message is
// printed once per pass and once more by the application's own launch, and one warning says so;
// with --no-replay-printf-kernels the launch is declined and prints once (run_case.py runs both).
// A program of its own: the cubin says whether a module calls printf, not which kernel does, so
// every kernel of this module counts as printing. Replayed or not, the application sees one run:
// *out is 1 afterwards (memory is restored between passes and before the application's launch).
#include <cstdio>

#include "gpu_test_util.h"

__global__ void say_hello(int* out) {
  printf("hello from the device\n");
  *out += 1;
}

int main() {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
  int* out = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&out, sizeof(int)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(out, 0, sizeof(int)));
  say_hello<<<1, 1>>>(out);
  int seen = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(&seen, out, sizeof(int), cudaMemcpyDeviceToHost));
  if (seen != 1) gpuprof_test::Fail("the printf kernel's result differs from a single run's");
  std::printf("gpuprof-test: launched kernel=say_hello count=1\n");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(out));
  return 0;
}
