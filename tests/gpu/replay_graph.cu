// Self-checking programs for graph replay (issue 24): each launches a captured CUDA graph several
// times and checks the results against what the host computes for that many ordinary launches, so
// a pass that left its output behind, or a node run twice, fails the program (exit 1). It runs the
// same unprofiled. tests/gpu/check_db.py checks the replay rows ("replay_graph_*" expectations).
//
//   replay_graph chain   an in-place update chain: kernel, copy, kernel, memset, kernel, launched 3 times
//   replay_graph alloc   a graph that allocates (cudaMallocAsync in the capture) and frees, and one
//                        that leaves its allocation for the program to free between launches
//   replay_graph host    a graph with a host-function node between two kernels
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_util.h"

constexpr int kN = 1 << 20;
constexpr int kLaunches = 3;

__global__ void chain_scale(unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3u + 1u;
}

__global__ void chain_add(unsigned* y, const unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void chain_finish(unsigned* y, const unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * 5u + x[i];
}

__global__ void fill_scratch(unsigned* scratch, const unsigned* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] = y[i] + 1u;
}

namespace {

std::vector<unsigned> Iota(int n, unsigned first) {
  std::vector<unsigned> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = first + static_cast<unsigned>(i);
  return v;
}

void Expect(const std::vector<unsigned>& got, const std::vector<unsigned>& want, const char* what) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      std::fprintf(stderr, "gpuprof-test: %s: element %zu is %u, expected %u\n", what, i, got[i], want[i]);
      gpuprof_test::Fail(what);
    }
  }
}

// The host's copy of one chain launch.
void ChainOnHost(std::vector<unsigned>& x, std::vector<unsigned>& y) {
  for (auto& v : x) v = v * 3u + 1u;
  std::memcpy(y.data(), x.data(), y.size() / 2 * sizeof(unsigned));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];
  x[0] = 0;  // the memset of the first word
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = y[i] * 5u + x[i];
}

int Chain() {
  gpuprof_test::PrintProcess("main", 0);
  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned> hx = Iota(kN, 1), hy = Iota(kN, 100), out(kN);
  unsigned *x = nullptr, *y = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&y, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, hx.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(y, hy.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  cudaGraph_t graph = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  chain_scale<<<kN / 256, 256, 0, stream>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpyAsync(y, x, kN / 2 * sizeof(unsigned), cudaMemcpyDeviceToDevice, stream));
  chain_add<<<kN / 256, 256, 0, stream>>>(y, x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemsetAsync(x, 0, sizeof(unsigned), stream));
  chain_finish<<<kN / 256, 256, 0, stream>>>(y, x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  GPUPROF_TEST_CUDA_CHECK(cudaGraphDestroy(graph));  // as PyTorch does: only the exec is kept
  for (int launch = 0; launch < kLaunches; ++launch) {
    GPUPROF_TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    ChainOnHost(hx, hy);
  }
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(out, hx, "chain: x after the launches");
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), y, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(out, hy, "chain: y after the launches");
  GPUPROF_TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
  std::printf("gpuprof-test: graph chain launches=%d ok\n", kLaunches);
  return 0;
}

int Alloc() {
  gpuprof_test::PrintProcess("main", 0);
  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned> hy = Iota(kN, 7), out(kN);
  unsigned* y = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&y, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(y, hy.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  // Graph 1 allocates scratch, uses it and frees it; graph 2 allocates and leaves it allocated.
  cudaGraphExec_t execs[2] = {nullptr, nullptr};
  unsigned* kept = nullptr;
  for (int g = 0; g < 2; ++g) {
    cudaGraph_t graph = nullptr;
    unsigned* scratch = nullptr;
    GPUPROF_TEST_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    GPUPROF_TEST_CUDA_CHECK(cudaMallocAsync(&scratch, kN * sizeof(unsigned), stream));
    fill_scratch<<<kN / 256, 256, 0, stream>>>(scratch, y, kN);
    chain_add<<<kN / 256, 256, 0, stream>>>(y, scratch, kN);
    if (g == 0) GPUPROF_TEST_CUDA_CHECK(cudaFreeAsync(scratch, stream));
    GPUPROF_TEST_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    GPUPROF_TEST_CUDA_CHECK(cudaGraphInstantiate(&execs[g], graph, 0));
    GPUPROF_TEST_CUDA_CHECK(cudaGraphDestroy(graph));
    if (g == 1) kept = scratch;
  }
  for (int launch = 0; launch < kLaunches; ++launch) {
    for (int g = 0; g < 2; ++g) {
      GPUPROF_TEST_CUDA_CHECK(cudaGraphLaunch(execs[g], stream));
      for (auto& v : hy) v += v + 1u;  // y += y + 1
    }
    // Graph 2 left its allocation: free it before launching it again.
    GPUPROF_TEST_CUDA_CHECK(cudaFreeAsync(kept, stream));
  }
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), y, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(out, hy, "alloc: y after the launches");
  for (cudaGraphExec_t exec : execs) GPUPROF_TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
  std::printf("gpuprof-test: graph alloc launches=%d ok\n", kLaunches);
  return 0;
}

void CUDART_CB CountCall(void* count) { ++*static_cast<int*>(count); }

int Host() {
  gpuprof_test::PrintProcess("main", 0);
  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned> hx = Iota(kN, 3), out(kN);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, hx.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  static int calls = 0;
  cudaGraph_t graph = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  chain_scale<<<kN / 256, 256, 0, stream>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaLaunchHostFunc(stream, CountCall, &calls));
  chain_scale<<<kN / 256, 256, 0, stream>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  GPUPROF_TEST_CUDA_CHECK(cudaGraphDestroy(graph));
  GPUPROF_TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto& v : hx) v = (v * 3u + 1u) * 3u + 1u;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  Expect(out, hx, "host: x after the launch");
  std::printf("gpuprof-test: graph host host_calls=%d ok\n", calls);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "chain") return Chain();
  if (mode == "alloc") return Alloc();
  if (mode == "host") return Host();
  std::fprintf(stderr, "usage: %s chain|alloc|host\n", argv[0]);
  return 2;
}
