// Kernels of replay_device_benchmark (see replay_device_benchmark_kernels.h).

#include <cuda_runtime.h>

#include <cstdint>

#include "replay_device_benchmark_kernels.h"

namespace gpuprof::bench {
namespace {

constexpr unsigned kThreads = 256;
constexpr std::uint64_t kEpochStep = 0x9E3779B97F4A7C15ull;  // odd: distinct epochs never collide

// splitmix64's finalizer: a bijection, so distinct inputs give distinct words.
__device__ __forceinline__ std::uint64_t Mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

__device__ __forceinline__ uint4 Pattern(std::uint64_t word, std::uint64_t epoch) {
  const std::uint64_t key = 2 * word + epoch * kEpochStep;
  const std::uint64_t lo = Mix(key);
  const std::uint64_t hi = Mix(key + 1);
  return make_uint4(static_cast<unsigned>(lo), static_cast<unsigned>(lo >> 32), static_cast<unsigned>(hi),
                    static_cast<unsigned>(hi >> 32));
}

__global__ void __launch_bounds__(kThreads) FillKernel(std::uint64_t address, std::uint64_t words) {
  uint4* out = reinterpret_cast<uint4*>(address);
  const std::uint64_t first = address / 16;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    out[i] = Pattern(first + i, 0);
  }
}

__global__ void __launch_bounds__(kThreads) RewriteKernel(const DeviceSpan* spans, std::uint64_t epoch) {
  const DeviceSpan span = spans[blockIdx.x];
  uint4* out = reinterpret_cast<uint4*>(span.address);
  const std::uint64_t first = span.address / 16;
  const std::uint64_t words = span.bytes / 16;
  for (std::uint64_t i = threadIdx.x; i < words; i += blockDim.x) out[i] = Pattern(first + i, epoch);
}

}  // namespace

cudaError_t LaunchFill(std::uint64_t address, std::uint64_t bytes, cudaStream_t stream) {
  const std::uint64_t words = bytes / 16;
  if (words == 0) return cudaSuccess;
  // Enough blocks to fill the GPU; the grid-stride loop covers the rest.
  const std::uint64_t wanted = (words + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65536 ? wanted : 65536);
  FillKernel<<<blocks, kThreads, 0, stream>>>(address, words);
  return cudaGetLastError();
}

cudaError_t LaunchRewrite(const DeviceSpan* spans, std::uint32_t count, std::uint64_t epoch,
                          cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  RewriteKernel<<<count, kThreads, 0, stream>>>(spans, epoch);
  return cudaGetLastError();
}

}  // namespace gpuprof::bench
