// Self-checking programs for `gpuprof replay` (issue 5): each mode launches kernels whose results
// would be wrong if replay let a pass see another pass's output, or left the application anything
// but one ordinary run's state. The program checks its own results and exits 1 on a mismatch; it
// runs the same unprofiled. tests/gpu/check_db.py checks the replay rows ("replay_*" expectations).
//
//   replay inplace      x = x*3+1 in place on cudaMalloc memory (the input is overwritten)
//   replay counter      a __device__ counter incremented per launch, 3 launches
//   replay constant     a __constant__ table updated with cudaMemcpyToSymbol between 2 launches
//   replay async        cudaMallocAsync and a custom pool, written in place, freed async
//   replay graph        a graph launch and a launch into a capturing stream (both declined)
//   replay timer        a kernel that writes %globaltimer (nondeterministic every time, B6)
//   (device printf is replay_printf.cu: C2 is decided per module, and this module must not print)
//   replay free_thread  another thread frees a buffer while a replay window is open
//   replay array        a launch while a CUDA array exists on the device (declined, C2)
//   replay two_gpu      a 64 MiB buffer on device 1, a replayed launch on device 0: the snapshot
//                       holds device 0's memory only (prints a skip line on a one-GPU machine)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test_util.h"

constexpr int kN = 1 << 20;

// Kernels at namespace scope: their names in the DB are the plain function names.

__global__ void in_place_update(unsigned* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3u + 1u;
}

__device__ unsigned long long launch_counter;

__global__ void count_launches(unsigned long long* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = ++launch_counter;
}

__constant__ float coefficients[16];

__global__ void apply_coefficients(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * coefficients[i % 16] + out[i];  // accumulates into out
}

__global__ void write_globaltimer(unsigned long long* out) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  out[threadIdx.x] = t;
}

__global__ void slow_update(unsigned* x, int n, long long spin) {
  long long start = clock64();
  while (clock64() - start < spin) {
  }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 3u + 1u;
}

namespace {

std::vector<unsigned> Iota(int n) {
  std::vector<unsigned> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<unsigned>(i) * 7u + 1u;
  return v;
}

void CheckInPlace(const std::vector<unsigned>& got, const std::vector<unsigned>& input, int launches) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    unsigned want = input[i];
    for (int l = 0; l < launches; ++l) want = want * 3u + 1u;
    if (got[i] != want) {
      std::fprintf(stderr, "gpuprof-test: word %zu is %u, an unprofiled run gives %u\n", i, got[i], want);
      gpuprof_test::Fail("in-place result differs from one ordinary run per launch");
    }
  }
}

int InPlace() {
  std::vector<unsigned> input = Iota(kN), out(kN);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  for (int l = 0; l < 2; ++l) in_place_update<<<kN / 256, 256>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CheckInPlace(out, input, 2);
  std::printf("gpuprof-test: launched kernel=in_place_update count=2\n");
  GPUPROF_TEST_CUDA_CHECK(cudaFree(x));
  return 0;
}

int Counter() {
  unsigned long long* out = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&out, sizeof(unsigned long long)));
  unsigned long long zero = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpyToSymbol(launch_counter, &zero, sizeof(zero)));
  unsigned long long seen = 0;
  for (int l = 1; l <= 3; ++l) {
    count_launches<<<1, 32>>>(out);
    GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(&seen, out, sizeof(seen), cudaMemcpyDeviceToHost));
    if (seen != static_cast<unsigned long long>(l)) {
      std::fprintf(stderr, "gpuprof-test: launch %d saw counter %llu\n", l, seen);
      gpuprof_test::Fail("__device__ counter not restored between passes");
    }
  }
  std::printf("gpuprof-test: launched kernel=count_launches count=3\n");
  return 0;
}

int Constant() {
  std::vector<float> in(kN), out(kN, 1.0f), table(16);
  for (int i = 0; i < kN; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000);
  float *din = nullptr, *dout = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&din, kN * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&dout, kN * sizeof(float)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(din, in.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(dout, out.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<float> want = out;
  for (int l = 0; l < 2; ++l) {
    for (int k = 0; k < 16; ++k) table[static_cast<std::size_t>(k)] = static_cast<float>(k + 1 + 10 * l);
    GPUPROF_TEST_CUDA_CHECK(cudaMemcpyToSymbol(coefficients, table.data(), sizeof(float) * 16));
    apply_coefficients<<<kN / 256, 256>>>(din, dout, kN);
    for (int i = 0; i < kN; ++i) {
      auto u = static_cast<std::size_t>(i);
      want[u] = in[u] * table[u % 16] + want[u];
    }
  }
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), dout, kN * sizeof(float), cudaMemcpyDeviceToHost));
  if (std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) != 0) {
    gpuprof_test::Fail("accumulated output differs from one ordinary run per launch");
  }
  std::printf("gpuprof-test: launched kernel=apply_coefficients count=2\n");
  return 0;
}

int Async() {
  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned> input = Iota(kN), out(kN);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMallocAsync(&x, kN * sizeof(unsigned), stream));
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpyAsync(x, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice, stream));
  in_place_update<<<kN / 256, 256, 0, stream>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  CheckInPlace(out, input, 1);
  GPUPROF_TEST_CUDA_CHECK(cudaFreeAsync(x, stream));

  // A custom pool.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  unsigned* y = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMallocFromPoolAsync(&y, kN * sizeof(unsigned), pool, stream));
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpyAsync(y, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice, stream));
  in_place_update<<<kN / 256, 256, 0, stream>>>(y, kN);
  GPUPROF_TEST_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), y, kN * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  CheckInPlace(out, input, 1);
  GPUPROF_TEST_CUDA_CHECK(cudaFreeAsync(y, stream));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  GPUPROF_TEST_CUDA_CHECK(cudaMemPoolDestroy(pool));
  std::printf("gpuprof-test: launched kernel=in_place_update count=2 allocator=stream_ordered\n");
  return 0;
}

int Graph() {
  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<unsigned> input = Iota(kN), out(kN);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  cudaGraph_t graph = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  in_place_update<<<kN / 256, 256, 0, stream>>>(x, kN);  // into a capturing stream: not run now
  GPUPROF_TEST_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  GPUPROF_TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // runs the kernel once
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CheckInPlace(out, input, 1);
  std::printf("gpuprof-test: launched graph=1 captured_kernel=in_place_update\n");
  return 0;
}

int Timer() {
  unsigned long long* out = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&out, 32 * sizeof(unsigned long long)));
  write_globaltimer<<<1, 32>>>(out);
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  std::printf("gpuprof-test: launched kernel=write_globaltimer count=1\n");
  return 0;
}

int FreeThread() {
  std::vector<unsigned> input = Iota(kN), out(kN);
  unsigned* x = nullptr;
  unsigned* other = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&other, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  std::atomic<bool> go{false};
  std::thread freer([&] {
    GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
    while (!go.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    GPUPROF_TEST_CUDA_CHECK(cudaFree(other));  // while the replay window is (likely) open
  });
  go.store(true);
  slow_update<<<kN / 256, 256>>>(x, kN, 2000000);
  freer.join();
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CheckInPlace(out, input, 1);
  std::printf("gpuprof-test: launched kernel=slow_update count=1 concurrent_free=1\n");
  return 0;
}

int Array() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMallocArray(&array, &desc, 64, 64));
  std::vector<unsigned> input = Iota(kN), out(kN);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  in_place_update<<<kN / 256, 256>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CheckInPlace(out, input, 1);
  GPUPROF_TEST_CUDA_CHECK(cudaFreeArray(array));
  std::printf("gpuprof-test: launched kernel=in_place_update count=1 cuda_array=1\n");
  return 0;
}

int TwoGpu() {
  int count = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    std::printf("gpuprof-test: skip reason=needs_two_gpus devices=%d\n", count);
    return 0;
  }
  constexpr std::size_t kOtherBytes = std::size_t{64} << 20;
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(1));
  void* other = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&other, kOtherBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMemset(other, 0x5a, kOtherBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  std::vector<unsigned> input = Iota(kN), out(kN);
  unsigned* x = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&x, kN * sizeof(unsigned)));
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(x, input.data(), kN * sizeof(unsigned), cudaMemcpyHostToDevice));
  in_place_update<<<kN / 256, 256>>>(x, kN);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(out.data(), x, kN * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CheckInPlace(out, input, 1);
  std::printf("gpuprof-test: launched kernel=in_place_update count=1 device=0 other_device_bytes=%zu\n",
              kOtherBytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(0));
  gpuprof_test::PrintProcess("main", 0);
  std::string mode = argc > 1 ? argv[1] : "";
  int rc = 2;
  if (mode == "inplace")
    rc = InPlace();
  else if (mode == "counter")
    rc = Counter();
  else if (mode == "constant")
    rc = Constant();
  else if (mode == "async")
    rc = Async();
  else if (mode == "graph")
    rc = Graph();
  else if (mode == "timer")
    rc = Timer();
  else if (mode == "free_thread")
    rc = FreeThread();
  else if (mode == "array")
    rc = Array();
  else if (mode == "two_gpu")
    rc = TwoGpu();
  else
    std::fprintf(stderr, "usage: %s inplace|counter|constant|async|graph|timer|free_thread|array|two_gpu\n",
                 argv[0]);
  if (rc == 0) GPUPROF_TEST_CUDA_CHECK(cudaDeviceSynchronize());
  return rc;
}
