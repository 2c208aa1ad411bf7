// Kernels of counter_floor (see counter_floor_kernels.h).

#include <cuda_runtime.h>

#include "counter_floor_kernels.h"

namespace gpuprof::bench {
namespace {

__global__ void fma_loop(float* out, int k) {
  float a = threadIdx.x * 1e-3f;
  const float b = 0.999f;
  const float c = 1e-4f;
#pragma unroll 1
  for (int i = 0; i < k; ++i) a = fmaf(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

__global__ void empty_kernel() {}

}  // namespace

cudaError_t LaunchFmaLoop(float* out, int k, cudaStream_t stream) {
  fma_loop<<<132, 256, 0, stream>>>(out, k);
  return cudaGetLastError();
}

cudaError_t LaunchFmaBlock(float* out, int k, cudaStream_t stream) {
  fma_loop<<<1, 32, 0, stream>>>(out, k);
  return cudaGetLastError();
}

cudaError_t LaunchEmpty(cudaStream_t stream) {
  empty_kernel<<<1, 32, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace gpuprof::bench
