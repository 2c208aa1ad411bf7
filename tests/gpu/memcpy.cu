// Copies and sets device memory with known sizes and directions, and checks every byte:
//   1. cudaMemcpy       host->device   4194304 bytes (pageable)              src = pattern A
//   2. cudaMemcpy       device->device 1048576 bytes                         dst = src[0, 1 MiB)
//   3. cudaMemcpy       device->host   2097152 bytes (pageable)              checked against A
//   4. cudaMemcpyAsync  host->device     65536 bytes (pinned), created stream dst[0, 64 KiB) = B
//   5. cudaMemcpyAsync  device->host     12345 bytes (pinned), same stream    checked against B
//   6. cudaMemset                       524288 bytes at dst + 64 KiB, value 0x5a
//   7. cudaMemcpy       device->host   1048576 bytes (pageable)              dst checked: B, 0x5a, A
// No kernel is launched. tests/gpu/check_db.py (expectation "memcpy") finds each copy in
// MEMCPY_INFO with its size and ENUM_MEMCPY_OPERATION id (1 HtoD, 2 DtoH, 3 DtoD), and the memset
// as a MEMSET task.
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_test_util.h"

namespace {

constexpr size_t kHtoDBytes = 4194304;
constexpr size_t kDtoDBytes = 1048576;
constexpr size_t kDtoHBytes = 2097152;
constexpr size_t kAsyncHtoDBytes = 65536;
constexpr size_t kAsyncDtoHBytes = 12345;
constexpr size_t kMemsetOffset = kAsyncHtoDBytes;
constexpr size_t kMemsetBytes = 524288;
constexpr unsigned char kMemsetValue = 0x5a;
constexpr size_t kCheckBytes = kDtoDBytes;

unsigned char PatternA(size_t i) { return static_cast<unsigned char>(i * 7 + 3); }
unsigned char PatternB(size_t i) { return static_cast<unsigned char>(255 - i % 251); }

void Print(const char* api, const char* kind, size_t bytes, const char* stream) {
  std::printf("gpuprof-test: copied api=%s kind=%s bytes=%zu stream=%s\n", api, kind, bytes, stream);
}

}  // namespace

int main() {
  constexpr int kDevice = 0;
  GPUPROF_TEST_CUDA_CHECK(cudaSetDevice(kDevice));
  gpuprof_test::PrintProcess("main", kDevice);

  std::vector<unsigned char> host(kHtoDBytes);
  for (size_t i = 0; i < host.size(); ++i) host[i] = PatternA(i);
  unsigned char *src = nullptr, *dst = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&src, kHtoDBytes));
  GPUPROF_TEST_CUDA_CHECK(cudaMalloc(&dst, kDtoDBytes));

  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(src, host.data(), kHtoDBytes, cudaMemcpyHostToDevice));
  Print("cudaMemcpy", "HtoD", kHtoDBytes, "default");
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(dst, src, kDtoDBytes, cudaMemcpyDeviceToDevice));
  Print("cudaMemcpy", "DtoD", kDtoDBytes, "default");
  std::vector<unsigned char> back(kDtoHBytes);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(back.data(), src, kDtoHBytes, cudaMemcpyDeviceToHost));
  Print("cudaMemcpy", "DtoH", kDtoHBytes, "default");
  if (std::memcmp(back.data(), host.data(), kDtoHBytes) != 0) gpuprof_test::Fail("device->host bytes");

  cudaStream_t stream = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned char* pinned = nullptr;
  GPUPROF_TEST_CUDA_CHECK(cudaMallocHost(&pinned, kAsyncHtoDBytes));
  for (size_t i = 0; i < kAsyncHtoDBytes; ++i) pinned[i] = PatternB(i);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpyAsync(dst, pinned, kAsyncHtoDBytes, cudaMemcpyHostToDevice, stream));
  Print("cudaMemcpyAsync", "HtoD", kAsyncHtoDBytes, "created");
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::memset(pinned, 0, kAsyncHtoDBytes);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpyAsync(pinned, dst, kAsyncDtoHBytes, cudaMemcpyDeviceToHost, stream));
  Print("cudaMemcpyAsync", "DtoH", kAsyncDtoHBytes, "created");
  GPUPROF_TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < kAsyncDtoHBytes; ++i) {
    if (pinned[i] != PatternB(i)) gpuprof_test::Fail("async round trip bytes");
  }

  GPUPROF_TEST_CUDA_CHECK(cudaMemset(dst + kMemsetOffset, kMemsetValue, kMemsetBytes));
  std::printf("gpuprof-test: set api=cudaMemset bytes=%zu value=0x5a\n", kMemsetBytes);

  std::vector<unsigned char> check(kCheckBytes);
  GPUPROF_TEST_CUDA_CHECK(cudaMemcpy(check.data(), dst, kCheckBytes, cudaMemcpyDeviceToHost));
  Print("cudaMemcpy", "DtoH", kCheckBytes, "default");
  for (size_t i = 0; i < kCheckBytes; ++i) {
    unsigned char expected = i < kAsyncHtoDBytes                ? PatternB(i)
                             : i < kMemsetOffset + kMemsetBytes ? kMemsetValue
                                                                : PatternA(i);
    if (check[i] != expected) {
      std::fprintf(stderr, "dst[%zu] = %u, expected %u\n", i, check[i], expected);
      gpuprof_test::Fail("device bytes after the copies and the memset");
    }
  }

  GPUPROF_TEST_CUDA_CHECK(cudaFreeHost(pinned));
  GPUPROF_TEST_CUDA_CHECK(cudaStreamDestroy(stream));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(src));
  GPUPROF_TEST_CUDA_CHECK(cudaFree(dst));
  std::printf("gpuprof-test: ok\n");
  return 0;
}
