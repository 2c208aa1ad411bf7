// `gpuprof replay` on a cuBLAS GEMM with beta = 1: C = A*B + C accumulates into its output, so a
// pass that saw another pass's C would double the sum. Two GEMMs, checked on the host against one
// ordinary run each.
//
// With the argument "sol" (ReplaySpeedOfLight): one large square SGEMM (compute-bound) and then a
// 2 GiB streaming copy (memory-bound), each checked, for `--section SpeedOfLight`.
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_test_util.h"

__global__ void stream_copy(const uint4* __restrict__ in, uint4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

// One 4096^3 SGEMM (C = A*B, A and B all 1/64: every C entry is 4096/4096 = 1) and a 2 GiB copy.
int SpeedOfLight() {
  const int n = 4096;
  const std::size_t count = static_cast<std::size_t>(n) * n;
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&da, count * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&db, count * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&dc, count * sizeof(float)));
  std::vector<float> fill(count, 1.0f / 64.0f);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(da, fill.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(db, fill.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) gpuprof_test::Fail("cublasCreate");
  const float alpha = 1.0f, beta = 0.0f;
  if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n, db, n, &beta, dc, n) !=
      CUBLAS_STATUS_SUCCESS) {
    gpuprof_test::Fail("cublasSgemm");
  }
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> got(count);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(got.data(), dc, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < count; i += 4099) {
    if (std::fabs(got[i] - 1.0f) > 1e-3f) gpuprof_test::Fail("the 4096^3 SGEMM's C is not all 1");
  }
  cublasDestroy(handle);
  GPUPROF_TEST_CUDA_CHECK(cudaFree(da));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(db));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(dc));
  std::printf("gpuprof-test: launched gemm=cublasSgemm n=%d\n", n);

  const std::size_t bytes = std::size_t{2} << 30;
  uint4* in = nullptr;
  uint4* out = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&in, bytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&out, bytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(in, 0x3c, bytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(out, 0, bytes));
  stream_copy<<<132 * 8, 512>>>(in, out, bytes / sizeof(uint4));
  GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned char probe[4096];
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(probe, reinterpret_cast<unsigned char*>(out) + bytes - sizeof(probe),
                                     sizeof(probe), cudaMemcpyDeviceToHost));
  for (unsigned char byte : probe) {
    if (byte != 0x3c) gpuprof_test::Fail("stream_copy: the output is not the input");
  }
  GPUPROF_TEST_CUDA_CHECK(cudaFree(in));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(out));
  std::printf("gpuprof-test: launch kernel=stream_copy bytes=%zu\n", bytes);
  return 0;
}

int main(int argc, char** argv) {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
  if (argc > 1 && std::string(argv[1]) == "sol") return SpeedOfLight();
  const int n = 256;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (int i = 0; i < n * n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 13) / 13.0f;
    b[static_cast<std::size_t>(i)] = static_cast<float>((i * 3) % 11) / 11.0f;
    c[static_cast<std::size_t>(i)] = 1.0f;
  }
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(dc, c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice));
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) gpuprof_test::Fail("cublasCreate");
  const float alpha = 1.0f, beta = 1.0f;
  for (int g = 0; g < 2; ++g) {
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n, db, n, &beta, dc, n) !=
        CUBLAS_STATUS_SUCCESS) {
      gpuprof_test::Fail("cublasSgemm");
    }
  }
  std::vector<float> got(c.size());
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  // Column-major: C[i + j*n] += sum_k A[i + k*n] * B[k + j*n], twice.
  for (int j = 0; j < n; j += 17) {
    for (int i = 0; i < n; i += 13) {
      double sum = 0;
      for (int k = 0; k < n; ++k) {
        sum += static_cast<double>(a[static_cast<std::size_t>(i + k * n)]) *
               b[static_cast<std::size_t>(k + j * n)];
      }
      double want = 1.0 + 2.0 * sum;
      double have = got[static_cast<std::size_t>(i + j * n)];
      if (std::fabs(have - want) > 1e-3 * std::fabs(want) + 1e-3) {
        std::fprintf(stderr, "gpuprof-test: C[%d,%d] = %f, one ordinary run gives %f\n", i, j, have, want);
        gpuprof_test::Fail("GEMM with beta = 1 accumulated more than once");
      }
    }
  }
  cublasDestroy(handle);
  std::printf("gpuprof-test: launched gemm=cublasSgemm count=2 beta=1\n");
  return 0;
}
