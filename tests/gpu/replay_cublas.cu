// `gpuprof replay` on a cuBLAS GEMM with beta = 1: C = A*B + C accumulates into its output, so a
// pass that saw another pass's C would double the sum. Two GEMMs, checked on the host against one
// ordinary run each.
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "gpu_test_util.h"

int main() {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
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
