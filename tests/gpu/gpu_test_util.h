// Shared by the GPU test programs: a CUDA error check and the lines the programs print. Each
// program prints what it did as "gpuprof-test: <what> key=value ..." lines on stdout, which
// tests/gpu/check_db.py reads (the process's pid and OS thread id, above all) next to the DB.
#pragma once

#include <cuda_runtime.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

// Test programs, not library code: a failed CUDA call ends the program with the call named.
#define GPUPROF_TEST_CUDA_CHECK(call)                                           \
  do {                                                                          \
    cudaError_t gpuprof_test_err_ = (call);                                     \
    if (gpuprof_test_err_ != cudaSuccess) {                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(gpuprof_test_err_));                      \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

namespace gpuprof_test {

inline long OsThreadId() { return static_cast<long>(syscall(SYS_gettid)); }

// "gpuprof-test: process pid=... tid=... device=0": who launched the work (DB_SPEC's globalTid is
// (pid << 32) | OS tid).
inline void PrintProcess(const char* role, int device) {
  std::printf("gpuprof-test: process role=%s pid=%ld tid=%ld device=%d\n", role, static_cast<long>(getpid()),
              OsThreadId(), device);
  std::fflush(stdout);
}

inline void Fail(const char* what) {
  std::fprintf(stderr, "gpuprof-test: FAILED: %s\n", what);
  std::exit(1);
}

}  // namespace gpuprof_test
