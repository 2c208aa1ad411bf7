// fork() before CUDA is initialized; then parent and child each initialize CUDA (a CUDA context
// never survives fork) and launch their own kernels:
//   parent: 2 x fork_parent_kernel    child: 3 x fork_child_kernel
// With `gpuprof run --follow-children` each process writes its own DB under its own pid; without
// it only the parent's DB exists, intact, and the child's kernels appear nowhere
// (tests/gpu/check_db.py, expectations "fork_follow" and "fork_parent_only"). The parent waits
// for the child and fails if the child failed.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "gpu_test_util.h"

__global__ void fork_parent_kernel(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

__global__ void fork_child_kernel(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 10;
}

namespace {

constexpr int kDevice = 0;
constexpr int kN = 4096;

// Runs `launches` launches of `kernel` and checks the result (launches * step in every element).
void Work(const char* role, void (*kernel)(int*, int), int launches, int step) {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(kDevice));
  gpuprof_test::PrintProcess(role, kDevice);
  int* data = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&data, kN * sizeof(int)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(data, 0, kN * sizeof(int)));
  for (int i = 0; i < launches; ++i) {
    kernel<<<kN / 128, 128>>>(data, kN);
    GPUPROF_TEST_CUDA_CHECK(cudaGetLastError());
  }
  int last = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(&last, data + kN - 1, sizeof(int), cudaMemcpyDeviceToHost));
  if (last != launches * step) gpuprof_test::Fail(role);
  GPUPROF_TEST_CUDA_CHECK(cudaFree(data));
  std::printf("gpuprof-test: launched role=%s pid=%ld count=%d\n", role, static_cast<long>(getpid()),
              launches);
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0) gpuprof_test::Fail("fork");
  if (child == 0) {
    Work("child", fork_child_kernel, 3, 10);
    return 0;  // normal exit: atexit handlers run, so a followed child finalizes its DB
  }
  Work("parent", fork_parent_kernel, 2, 1);
  int status = 0;
  if (waitpid(child, &status, 0) != child) gpuprof_test::Fail("waitpid");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) gpuprof_test::Fail("the child");
  std::printf("gpuprof-test: ok child=%ld\n", static_cast<long>(child));
  return 0;
}
