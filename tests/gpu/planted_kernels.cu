// Kernels that plant issue 41's per-kernel findings, for tests/python/planted/own_kernels.py to
// launch through ctypes on PyTorch's current stream (PyTorch has no kernel of these shapes):
//
//   planted_pointer_chase   memory-bound well below DRAM peak: every warp follows a chain of
//                           dependent 128-byte loads at random places, with 8 warps per SM (its
//                           shared memory allows no more), so few bytes are ever in flight. Achieved
//                           occupancy is about its theoretical, so only memory-bound-kernels fits it.
//   planted_one_busy_block  low achieved occupancy against a theoretical of 100 %: of a grid of 16
//                           blocks per SM, block 0 runs a long chain of multiply-adds and the others
//                           return at once, so one SM holds 8 warps for almost the whole kernel.
//   planted_host_wait       not a kernel: a host function queued on the stream that sleeps, so the
//                           kernel launched after it starts late on an idle device (launch-delay).
//
// Every function returns a cudaError_t (0: success) for the caller to check.
#include <cuda_runtime.h>
#include <time.h>

#include <atomic>
#include <cstdint>

namespace {
constexpr int kLineInts = 32;  // one 128-byte line: a warp's coalesced load
constexpr int kChaseThreads = 128;
constexpr int kChaseSharedBytes = 100 * 1024;  // two blocks per SM: 8 warps of 64
constexpr int kBusyThreads = 256;
constexpr int kBusyBlocksPerSm = 16;
}  // namespace

// The kernels are at global scope so that their names in the profile are the plain ones.

// Each line holds, in every one of its 32 ints, the index of the next line of the chain.
__global__ void planted_pointer_chase(const int* next, int lines, int hops, int* out) {
  extern __shared__ int reserved[];  // only to bound the blocks per SM
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const int warps = gridDim.x * blockDim.x / 32;
  int line = static_cast<int>(static_cast<long long>(warp) * lines / warps);
  for (int hop = 0; hop < hops; ++hop) line = next[static_cast<long long>(line) * kLineInts + lane];
  if (lane == 0) {
    reserved[threadIdx.x / 32] = line;
    out[warp] = reserved[threadIdx.x / 32];
  }
}

__global__ void planted_one_busy_block(float* out, int iterations) {
  float x = static_cast<float>(threadIdx.x);
  const int n = blockIdx.x == 0 ? iterations : 1;
  for (int i = 0; i < n; ++i) x = x * 0.999f + 0.5f;
  if (x == -1.0f) out[threadIdx.x] = x;  // never true: keeps the chain from being optimized away
}

namespace {

std::atomic<std::int64_t> g_host_waited_ns{0};

std::int64_t NowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void CUDART_CB SleepOnTheStream(void* microseconds) {
  const std::int64_t start = NowNs();
  const auto us = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(microseconds));
  timespec wait{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  while (nanosleep(&wait, &wait) != 0) {
  }
  g_host_waited_ns += NowNs() - start;
}

int SmCount() {
  int device = 0;
  int sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  return sms;
}

}  // namespace

extern "C" {

// Warps the pointer chase runs (its `out` holds one int per warp).
int planted_pointer_chase_warps() { return 2 * SmCount() * kChaseThreads / 32; }

int planted_pointer_chase_launch(const int* next, int lines, int hops, int* out, cudaStream_t stream) {
  cudaError_t error = cudaFuncSetAttribute(planted_pointer_chase, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           kChaseSharedBytes);
  if (error != cudaSuccess) return error;
  planted_pointer_chase<<<2 * SmCount(), kChaseThreads, kChaseSharedBytes, stream>>>(next, lines, hops, out);
  return cudaGetLastError();
}

// The warps the busy block keeps on its SM, and the most an SM holds.
int planted_one_busy_block_warps() { return kBusyThreads / 32; }

int planted_max_warps_per_sm() {
  int device = 0;
  int threads = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device) != cudaSuccess)
    return 0;
  return threads / 32;
}

int planted_one_busy_block_launch(float* out, int iterations, cudaStream_t stream) {
  planted_one_busy_block<<<kBusyBlocksPerSm * SmCount(), kBusyThreads, 0, stream>>>(out, iterations);
  return cudaGetLastError();
}

int planted_host_wait(cudaStream_t stream, int microseconds) {
  return cudaLaunchHostFunc(stream, SleepOnTheStream,
                            reinterpret_cast<void*>(static_cast<std::intptr_t>(microseconds)));
}

// Nanoseconds the queued host functions have slept so far.
std::int64_t planted_host_waited_ns() { return g_host_waited_ns.load(); }

}  // extern "C"
