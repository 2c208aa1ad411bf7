// The chunk kernels (rule B1) on a real GPU, loaded the way CudaDevice loads them: the embedded
// PTX through cuModuleLoadData, launched with cuLaunchKernel. Every device hash must equal
// ChunkHashReference of the same bytes on the host, whatever the size, chunk size, alignment and
// grid; gpuprof_compare_chunks must flag exactly the chunks that differ.
//
// Label gpu: needs a GPU. libcuda.so.1 is opened with dlopen, as gpuprof itself does, so that the
// binary starts (and CTest lists its cases) on machines without a driver; there every case skips.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "device/cuda/chunk_hash_reference.h"
#include "device/cuda/chunk_kernels_ptx.h"

namespace gpuprof::device::cuda {
namespace {

// The driver entry points this test calls, resolved from libcuda.so.1 under the names cuda.h maps
// them to (cuMemAlloc -> cuMemAlloc_v2, ...).
#define GPUPROF_TEST_DRIVER_FUNCTIONS(X)                \
  X(Init, cuInit)                                       \
  X(GetErrorName, cuGetErrorName)                       \
  X(GetErrorString, cuGetErrorString)                   \
  X(DeviceGet, cuDeviceGet)                             \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)   \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease) \
  X(CtxSetCurrent, cuCtxSetCurrent)                     \
  X(CtxSynchronize, cuCtxSynchronize)                   \
  X(ModuleLoadDataEx, cuModuleLoadDataEx)               \
  X(ModuleUnload, cuModuleUnload)                       \
  X(ModuleGetFunction, cuModuleGetFunction)             \
  X(LaunchKernel, cuLaunchKernel)                       \
  X(MemAlloc, cuMemAlloc)                               \
  X(MemFree, cuMemFree)                                 \
  X(MemcpyHtoD, cuMemcpyHtoD)                           \
  X(MemcpyDtoH, cuMemcpyDtoH)                           \
  X(MemsetD8, cuMemsetD8)
#define GPUPROF_TEST_STRINGIFY(x) GPUPROF_TEST_STRINGIFY_(x)
#define GPUPROF_TEST_STRINGIFY_(x) #x

struct Driver {
#define GPUPROF_TEST_DRIVER_MEMBER(member, function) decltype(&function) member = nullptr;
  GPUPROF_TEST_DRIVER_FUNCTIONS(GPUPROF_TEST_DRIVER_MEMBER)
#undef GPUPROF_TEST_DRIVER_MEMBER
  std::string error;  // why the table is unusable; empty when every symbol resolved
};

template <typename Function>
void Resolve(void* library, const char* name, Function* out, std::string* error) {
  *out = reinterpret_cast<Function>(dlsym(library, name));
  if (*out == nullptr && error->empty()) error->assign("dlsym(").append(name).append(") failed");
}

// Loaded once; immutable afterwards. The library is never closed.
const Driver& LoadDriver() {
  static const Driver driver = [] {
    Driver d;
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      d.error = std::string("dlopen(libcuda.so.1): ") + (why != nullptr ? why : "?");
      return d;
    }
#define GPUPROF_TEST_DRIVER_RESOLVE(member, function) \
  Resolve(library, GPUPROF_TEST_STRINGIFY(function), &d.member, &d.error);
    GPUPROF_TEST_DRIVER_FUNCTIONS(GPUPROF_TEST_DRIVER_RESOLVE)
#undef GPUPROF_TEST_DRIVER_RESOLVE
    return d;
  }();
  return driver;
}

std::string CuErrorText(CUresult result) {
  const Driver& cu = LoadDriver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.GetErrorName != nullptr) cu.GetErrorName(result, &name);
  if (cu.GetErrorString != nullptr) cu.GetErrorString(result, &text);
  return std::string(name != nullptr ? name : "?") + " (" + (text != nullptr ? text : "?") + ")";
}

// For TEST bodies and void helpers only (it ASSERTs).
#define GPUPROF_CU_ASSERT(call)                                                                      \
  do {                                                                                               \
    const CUresult gpuprof_cu_result_ = (call);                                                      \
    ASSERT_EQ(gpuprof_cu_result_, CUDA_SUCCESS) << #call << ": " << CuErrorText(gpuprof_cu_result_); \
  } while (0)

std::vector<std::byte> RandomBytes(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  return bytes;
}

std::uint64_t ChunkCount(std::uint64_t bytes, std::uint64_t chunk_size) {
  return bytes / chunk_size + (bytes % chunk_size != 0 ? 1 : 0);
}

class ChunkKernelsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cu_->error.empty()) GTEST_SKIP() << "no CUDA driver: " << cu_->error;
    const CUresult init = cu_->Init(0);
    if (init == CUDA_ERROR_NO_DEVICE) GTEST_SKIP() << "no CUDA device: " << CuErrorText(init);
    GPUPROF_CU_ASSERT(init);
    GPUPROF_CU_ASSERT(cu_->DeviceGet(&device_, 0));
    GPUPROF_CU_ASSERT(cu_->DevicePrimaryCtxRetain(&context_, device_));
    GPUPROF_CU_ASSERT(cu_->CtxSetCurrent(context_));

    // The JIT log names the PTX line when the driver rejects the module.
    char log[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof(log)))};
    const CUresult load = cu_->ModuleLoadDataEx(&module_, kChunkKernelsPtx, 2, options, values);
    ASSERT_EQ(load, CUDA_SUCCESS) << "cu_->ModuleLoadDataEx(kChunkKernelsPtx): " << CuErrorText(load) << "\n"
                                  << log;
    GPUPROF_CU_ASSERT(cu_->ModuleGetFunction(&hash_, module_, kHashChunksKernelName));
    GPUPROF_CU_ASSERT(cu_->ModuleGetFunction(&compare_, module_, kCompareChunksKernelName));
  }

  void TearDown() override {
    if (module_ != nullptr) {
      EXPECT_EQ(cu_->ModuleUnload(module_), CUDA_SUCCESS);
    }
    if (context_ != nullptr) {
      EXPECT_EQ(cu_->DevicePrimaryCtxRelease(device_), CUDA_SUCCESS);
    }
  }

  // Device copy of `bytes` placed at `offset` bytes past a fresh allocation (cuMemAlloc is 256-byte
  // aligned, so the offset sets the alignment the kernels see).
  void Upload(const std::vector<std::byte>& bytes, std::size_t offset, CUdeviceptr* base, CUdeviceptr* at) {
    GPUPROF_CU_ASSERT(cu_->MemAlloc(base, std::max<std::size_t>(bytes.size() + offset, 1)));
    *at = *base + offset;
    if (!bytes.empty()) GPUPROF_CU_ASSERT(cu_->MemcpyHtoD(*at, bytes.data(), bytes.size()));
  }

  // gpuprof_hash_chunks over [src, src+bytes) with `grid` blocks (0: one per chunk).
  void HashOnDevice(CUdeviceptr src, std::uint64_t bytes, std::uint64_t chunk_size, unsigned grid,
                    std::vector<std::uint64_t>* out) {
    const std::uint64_t chunks = ChunkCount(bytes, chunk_size);
    out->assign(chunks, 0);
    CUdeviceptr device_out = 0;
    GPUPROF_CU_ASSERT(cu_->MemAlloc(&device_out, chunks * sizeof(std::uint64_t)));
    GPUPROF_CU_ASSERT(cu_->MemsetD8(device_out, 0, chunks * sizeof(std::uint64_t)));
    unsigned long long src_arg = src;
    unsigned long long bytes_arg = bytes;
    unsigned long long chunk_arg = chunk_size;
    unsigned long long out_arg = device_out;
    void* args[] = {&src_arg, &bytes_arg, &chunk_arg, &out_arg};
    const unsigned blocks =
        grid != 0 ? grid : static_cast<unsigned>(std::min<std::uint64_t>(chunks, 1u << 30));
    GPUPROF_CU_ASSERT(
        cu_->LaunchKernel(hash_, blocks, 1, 1, kChunkKernelBlockSize, 1, 1, 0, nullptr, args, nullptr));
    GPUPROF_CU_ASSERT(cu_->CtxSynchronize());
    GPUPROF_CU_ASSERT(cu_->MemcpyDtoH(out->data(), device_out, chunks * sizeof(std::uint64_t)));
    GPUPROF_CU_ASSERT(cu_->MemFree(device_out));
  }

  void CompareOnDevice(CUdeviceptr a, CUdeviceptr b, std::uint64_t bytes, std::uint64_t chunk_size,
                       unsigned grid, std::vector<std::uint32_t>* dirty) {
    const std::uint64_t chunks = ChunkCount(bytes, chunk_size);
    dirty->assign(chunks, 0);
    CUdeviceptr device_dirty = 0;
    GPUPROF_CU_ASSERT(cu_->MemAlloc(&device_dirty, chunks * sizeof(std::uint32_t)));
    // 0xAB..: every flag must be written, clean ones included.
    GPUPROF_CU_ASSERT(cu_->MemsetD8(device_dirty, 0xAB, chunks * sizeof(std::uint32_t)));
    unsigned long long a_arg = a;
    unsigned long long b_arg = b;
    unsigned long long bytes_arg = bytes;
    unsigned long long chunk_arg = chunk_size;
    unsigned long long dirty_arg = device_dirty;
    void* args[] = {&a_arg, &b_arg, &bytes_arg, &chunk_arg, &dirty_arg};
    const unsigned blocks =
        grid != 0 ? grid : static_cast<unsigned>(std::min<std::uint64_t>(chunks, 1u << 30));
    GPUPROF_CU_ASSERT(
        cu_->LaunchKernel(compare_, blocks, 1, 1, kChunkKernelBlockSize, 1, 1, 0, nullptr, args, nullptr));
    GPUPROF_CU_ASSERT(cu_->CtxSynchronize());
    GPUPROF_CU_ASSERT(cu_->MemcpyDtoH(dirty->data(), device_dirty, chunks * sizeof(std::uint32_t)));
    GPUPROF_CU_ASSERT(cu_->MemFree(device_dirty));
  }

  const Driver* cu_ = &LoadDriver();
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction hash_ = nullptr;
  CUfunction compare_ = nullptr;
};

TEST_F(ChunkKernelsGpuTest, DeviceHashesEqualHostReference) {
  const std::size_t sizes[] = {1, 1000, 65536, 10 * 1024 * 1024 + 13};
  const std::uint64_t chunk_sizes[] = {4096, 65536};
  // 0: the 16-byte vector path; 8: the 8-byte path; 3: the bytewise path.
  const std::size_t offsets[] = {0, 3, 8};
  for (std::size_t size : sizes) {
    const std::vector<std::byte> host = RandomBytes(size, size);
    for (std::size_t offset : offsets) {
      CUdeviceptr base = 0;
      CUdeviceptr src = 0;
      ASSERT_NO_FATAL_FAILURE(Upload(host, offset, &base, &src));
      for (std::uint64_t chunk_size : chunk_sizes) {
        std::vector<std::uint64_t> device_hashes;
        ASSERT_NO_FATAL_FAILURE(HashOnDevice(src, size, chunk_size, 0, &device_hashes));
        for (std::size_t i = 0; i < device_hashes.size(); ++i) {
          const std::size_t begin = i * chunk_size;
          const std::size_t length = std::min<std::size_t>(chunk_size, size - begin);
          ASSERT_EQ(device_hashes[i], ChunkHashReference(std::span(host).subspan(begin, length)))
              << "size " << size << " offset " << offset << " chunk_size " << chunk_size << " chunk " << i;
        }
      }
      GPUPROF_CU_ASSERT(cu_->MemFree(base));
    }
  }
}

// A capped grid walks the chunks with a grid-stride loop; a chunk size that is not a multiple of
// 16 alternates chunk alignments within one launch. Neither may change a hash.
TEST_F(ChunkKernelsGpuTest, HashesIndependentOfGridAndChunkAlignment) {
  const std::size_t size = 3 * 1024 * 1024 + 5;
  const std::vector<std::byte> host = RandomBytes(size, 7);
  CUdeviceptr base = 0;
  CUdeviceptr src = 0;
  ASSERT_NO_FATAL_FAILURE(Upload(host, 0, &base, &src));
  for (std::uint64_t chunk_size : {std::uint64_t{4096}, std::uint64_t{4099}, std::uint64_t{1} << 20}) {
    std::vector<std::uint64_t> full;
    ASSERT_NO_FATAL_FAILURE(HashOnDevice(src, size, chunk_size, 0, &full));
    for (unsigned grid : {1u, 7u, 132u}) {
      std::vector<std::uint64_t> capped;
      ASSERT_NO_FATAL_FAILURE(HashOnDevice(src, size, chunk_size, grid, &capped));
      EXPECT_EQ(capped, full) << "chunk_size " << chunk_size << " grid " << grid;
    }
    for (std::size_t i = 0; i < full.size(); ++i) {
      const std::size_t begin = i * chunk_size;
      const std::size_t length = std::min<std::size_t>(chunk_size, size - begin);
      ASSERT_EQ(full[i], ChunkHashReference(std::span(host).subspan(begin, length)))
          << "chunk_size " << chunk_size << " chunk " << i;
    }
  }
  GPUPROF_CU_ASSERT(cu_->MemFree(base));
}

TEST_F(ChunkKernelsGpuTest, CompareFlagsExactlyTheChangedChunks) {
  const std::size_t size = 10 * 1024 * 1024 + 13;
  const std::uint64_t chunk_size = 65536;
  const std::uint64_t chunks = ChunkCount(size, chunk_size);
  const std::vector<std::byte> a = RandomBytes(size, 11);
  std::vector<std::byte> b = a;
  // One bit in the first byte of chunk 0, the last byte of a middle chunk, and the ragged last
  // chunk's last byte (the per-thread tail path).
  const std::uint64_t changed[] = {0, chunks / 2, chunks - 1};
  b.at(0) ^= std::byte{0x01};
  b.at((chunks / 2 + 1) * chunk_size - 1) ^= std::byte{0x80};
  b.at(size - 1) ^= std::byte{0x10};

  for (std::size_t offset : {std::size_t{0}, std::size_t{3}}) {
    CUdeviceptr a_base = 0;
    CUdeviceptr b_base = 0;
    CUdeviceptr a_at = 0;
    CUdeviceptr b_at = 0;
    ASSERT_NO_FATAL_FAILURE(Upload(a, offset, &a_base, &a_at));
    ASSERT_NO_FATAL_FAILURE(Upload(b, offset, &b_base, &b_at));
    for (unsigned grid : {0u, 5u}) {
      std::vector<std::uint32_t> dirty;
      ASSERT_NO_FATAL_FAILURE(CompareOnDevice(a_at, b_at, size, chunk_size, grid, &dirty));
      std::vector<std::uint32_t> expected(chunks, 0);
      for (std::uint64_t i : changed) expected[i] = 1;
      EXPECT_EQ(dirty, expected) << "offset " << offset << " grid " << grid;

      ASSERT_NO_FATAL_FAILURE(CompareOnDevice(a_at, a_at, size, chunk_size, grid, &dirty));
      EXPECT_EQ(dirty, std::vector<std::uint32_t>(chunks, 0)) << "a against itself, offset " << offset;
    }
    // The hashes see the same three chunks.
    std::vector<std::uint64_t> hash_a;
    std::vector<std::uint64_t> hash_b;
    ASSERT_NO_FATAL_FAILURE(HashOnDevice(a_at, size, chunk_size, 0, &hash_a));
    ASSERT_NO_FATAL_FAILURE(HashOnDevice(b_at, size, chunk_size, 0, &hash_b));
    for (std::uint64_t i = 0; i < chunks; ++i) {
      const bool is_changed = std::find(std::begin(changed), std::end(changed), i) != std::end(changed);
      EXPECT_EQ(hash_a[i] != hash_b[i], is_changed) << "chunk " << i << " offset " << offset;
    }
    GPUPROF_CU_ASSERT(cu_->MemFree(a_base));
    GPUPROF_CU_ASSERT(cu_->MemFree(b_base));
  }
}

// Mismatched alignment between a and b (one 16-byte aligned, one not) takes the bytewise path.
TEST_F(ChunkKernelsGpuTest, CompareWithDifferentAlignments) {
  const std::size_t size = 1024 * 1024 + 7;
  const std::uint64_t chunk_size = 4096;
  const std::vector<std::byte> a = RandomBytes(size, 13);
  std::vector<std::byte> b = a;
  b.at(5 * chunk_size + 17) ^= std::byte{0x04};
  CUdeviceptr a_base = 0;
  CUdeviceptr b_base = 0;
  CUdeviceptr a_at = 0;
  CUdeviceptr b_at = 0;
  ASSERT_NO_FATAL_FAILURE(Upload(a, 0, &a_base, &a_at));
  ASSERT_NO_FATAL_FAILURE(Upload(b, 5, &b_base, &b_at));
  std::vector<std::uint32_t> dirty;
  ASSERT_NO_FATAL_FAILURE(CompareOnDevice(a_at, b_at, size, chunk_size, 0, &dirty));
  std::vector<std::uint32_t> expected(ChunkCount(size, chunk_size), 0);
  expected[5] = 1;
  EXPECT_EQ(dirty, expected);
  GPUPROF_CU_ASSERT(cu_->MemFree(a_base));
  GPUPROF_CU_ASSERT(cu_->MemFree(b_base));
}

}  // namespace
}  // namespace gpuprof::device::cuda
