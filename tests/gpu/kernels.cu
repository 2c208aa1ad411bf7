// Launches kernels with known names, grid/block sizes and streams, and checks their results:
//   3 x vector_add            <<<(64,1,1), (256,1,1)>>> on a created stream
//   2 x scale_kernel<float>   <<<(32,4,1), (32,2,2)>>>  on the legacy default stream
// tests/gpu/check_db.py (expectation "kernels") finds exactly these five kernels in the DB.
#include <cstdio>
#include <vector>

#include "gpu_test_util.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

template <typename T>
__global__ void scale_kernel(T* data, T factor, int n) {
  // 3-D blocks on a 2-D grid: a linear index over all of them.
  int threads_per_block = blockDim.x * blockDim.y * blockDim.z;
  int thread_in_block = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int block = blockIdx.x + gridDim.x * blockIdx.y;
  int i = block * threads_per_block + thread_in_block;
  if (i < n) data[i] *= factor;
}

int main() {
  constexpr int kDevice = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(kDevice));
  gpuprof_test::PrintProcess("main", kDevice);

  constexpr int kN = 64 * 256;
  std::vector<float> a(kN), b(kN), c(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * static_cast<float>(i);
  }
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&da, kN * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&db, kN * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&dc, kN * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(da, a.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(db, b.data(), kN * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < 3; ++i) {
    vector_add<<<dim3(64, 1, 1), dim3(256, 1, 1), 0, stream>>>(da, db, dc, kN);
    GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  }
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::printf("gpuprof-test: launched kernel=vector_add count=3 grid=64,1,1 block=256,1,1 stream=created\n");

  // 32*4 blocks of 32*2*2 threads = kN threads: c *= 0.5 twice.
  for (int i = 0; i < 2; ++i) {
    scale_kernel<float><<<dim3(32, 4, 1), dim3(32, 2, 2)>>>(dc, 0.5f, kN);
    GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  }
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  std::printf(
      "gpuprof-test: launched kernel=scale_kernel<float> count=2 grid=32,4,1 block=32,2,2 stream=default\n");

  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(c.data(), dc, kN * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) {
    float expected = 3.0f * static_cast<float>(i) * 0.25f;
    if (c[i] != expected) {
      std::fprintf(stderr, "c[%d] = %f, expected %f\n", i, static_cast<double>(c[i]),
                   static_cast<double>(expected));
      gpuprof_test::Fail("kernel results");
    }
  }
  GPUPROF_TEST_CUDA_CHECK(cudaStreamDestroy(stream));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(da));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(db));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(dc));
  std::printf("gpuprof-test: ok\n");
  return 0;
}
