// The device work of counter_floor: kernels whose counter values are known. Compiled by nvcc
// (counter_floor_kernels.cu); the benchmark itself is plain C++ and calls these.
#pragma once

#include <cuda_runtime_api.h>

namespace gpuprof::bench {

// 132 blocks of 256 threads, each running `k` dependent FMAs (the loop is not unrolled, so the
// instruction count is linear in k) and writing one float to out[thread] (out: 132 * 256 floats).
cudaError_t LaunchFmaLoop(float* out, int k, cudaStream_t stream);

// One block of 32 threads running `k` dependent FMAs (out: 32 floats): a kernel that leaves the
// GPU nearly idle, so two of them on two streams overlap unless something serializes them.
cudaError_t LaunchFmaBlock(float* out, int k, cudaStream_t stream);

// One block of 32 threads that does nothing: the launch rate floor.
cudaError_t LaunchEmpty(cudaStream_t stream);

inline constexpr int kFmaLoopThreads = 132 * 256;

}  // namespace gpuprof::bench
