// The chunk kernels (rules B1-B3) on a real GPU, loaded the way CudaDevice loads them: the embedded
// PTX through cuModuleLoadData, launched with cuLaunchKernel. Every device hash, from
// gpuprof_hash_chunks or gpuprof_chunk_op, must equal ChunkHashReference of the same bytes on the
// host, whatever the size, chunk size, alignment, grid and split into regions; gpuprof_chunk_op
// must copy exactly the chunks its op selects (byte compare, saved hashes) and flag the chunks of
// regions it cannot reach. CudaDevice's use of it (arena tiers, the host copies) is tested by
// cuda_device_gpu_test.cc.
//
// Label gpu: needs a GPU. libcuda.so.1 is opened with dlopen, as gpuprof itself does, so that the
// binary starts (and CTest lists its cases) on machines without a driver; there every case skips.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "device/cuda/chunk_hash_reference.h"
#include "device/cuda/chunk_kernels_ptx.h"
#include "device/cuda/chunk_op_abi.h"

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
    GPUPROF_CU_ASSERT(cu_->ModuleGetFunction(&op_, module_, kChunkOpKernelName));
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

  // What one gpuprof_chunk_op launch reported.
  struct OpOutput {
    std::vector<std::uint64_t> hashes;  // when asked for
    std::vector<std::uint8_t> flags;    // when asked for
    std::uint64_t copied_chunks = 0;
    std::uint64_t copied_bytes = 0;
  };

  // gpuprof_chunk_op over `table` (first_chunk filled in here) with `grid` blocks (0: one per
  // chunk).
  void OpOnDevice(std::vector<ChunkOpRegion> table, std::uint64_t chunk_size, ChunkOpCode op, unsigned grid,
                  bool want_hashes, bool want_flags, OpOutput* out) {
    std::uint64_t chunks = 0;
    for (ChunkOpRegion& region : table) {
      region.first_chunk = chunks;
      chunks += ChunkCount(region.size, chunk_size);
    }
    CUdeviceptr device_table = 0;
    CUdeviceptr device_hashes = 0;
    CUdeviceptr device_flags = 0;
    CUdeviceptr device_counters = 0;
    GPUPROF_CU_ASSERT(cu_->MemAlloc(&device_table, table.size() * sizeof(ChunkOpRegion)));
    GPUPROF_CU_ASSERT(cu_->MemcpyHtoD(device_table, table.data(), table.size() * sizeof(ChunkOpRegion)));
    GPUPROF_CU_ASSERT(cu_->MemAlloc(&device_counters, kChunkOpCounters * sizeof(std::uint64_t)));
    GPUPROF_CU_ASSERT(cu_->MemsetD8(device_counters, 0, kChunkOpCounters * sizeof(std::uint64_t)));
    if (want_hashes) {
      GPUPROF_CU_ASSERT(cu_->MemAlloc(&device_hashes, chunks * sizeof(std::uint64_t)));
      GPUPROF_CU_ASSERT(cu_->MemsetD8(device_hashes, 0, chunks * sizeof(std::uint64_t)));
    }
    if (want_flags) {
      GPUPROF_CU_ASSERT(cu_->MemAlloc(&device_flags, chunks));
      // 0xAB: every flag of a host-copied region must be written, clean ones included.
      GPUPROF_CU_ASSERT(cu_->MemsetD8(device_flags, 0xAB, chunks));
    }
    unsigned long long table_arg = device_table;
    auto count_arg = static_cast<unsigned>(table.size());
    unsigned long long chunks_arg = chunks;
    unsigned long long chunk_arg = chunk_size;
    unsigned op_arg = op;
    unsigned long long hashes_arg = device_hashes;
    unsigned long long flags_arg = device_flags;
    unsigned long long counters_arg = device_counters;
    void* args[] = {&table_arg, &count_arg,  &chunks_arg, &chunk_arg,
                    &op_arg,    &hashes_arg, &flags_arg,  &counters_arg};
    const unsigned blocks =
        grid != 0 ? grid : static_cast<unsigned>(std::min<std::uint64_t>(chunks, 1u << 30));
    GPUPROF_CU_ASSERT(
        cu_->LaunchKernel(op_, blocks, 1, 1, kChunkKernelBlockSize, 1, 1, 0, nullptr, args, nullptr));
    GPUPROF_CU_ASSERT(cu_->CtxSynchronize());
    std::uint64_t counters[kChunkOpCounters] = {};
    GPUPROF_CU_ASSERT(cu_->MemcpyDtoH(counters, device_counters, sizeof(counters)));
    out->copied_chunks = counters[kChunkOpCopiedChunks];
    out->copied_bytes = counters[kChunkOpCopiedBytes];
    out->hashes.clear();
    out->flags.clear();
    if (want_hashes) {
      out->hashes.resize(chunks);
      GPUPROF_CU_ASSERT(cu_->MemcpyDtoH(out->hashes.data(), device_hashes, chunks * sizeof(std::uint64_t)));
      GPUPROF_CU_ASSERT(cu_->MemFree(device_hashes));
    }
    if (want_flags) {
      out->flags.resize(chunks);
      GPUPROF_CU_ASSERT(cu_->MemcpyDtoH(out->flags.data(), device_flags, chunks));
      GPUPROF_CU_ASSERT(cu_->MemFree(device_flags));
    }
    GPUPROF_CU_ASSERT(cu_->MemFree(device_counters));
    GPUPROF_CU_ASSERT(cu_->MemFree(device_table));
  }

  // Inverts the byte at `offset` of device memory at `base`, whose bytes are `contents` now: a
  // change that is never a no-op.
  void FlipByte(CUdeviceptr base, std::size_t offset, const std::vector<std::byte>& contents) {
    const std::byte flipped = ~contents.at(offset);
    GPUPROF_CU_ASSERT(cu_->MemcpyHtoD(base + offset, &flipped, 1));
  }

  std::vector<std::byte> Download(CUdeviceptr src, std::size_t size) {
    std::vector<std::byte> bytes(size);
    const CUresult result = cu_->MemcpyDtoH(bytes.data(), src, size);
    EXPECT_EQ(result, CUDA_SUCCESS) << "cuMemcpyDtoH: " << CuErrorText(result);
    return bytes;
  }

  const Driver* cu_ = &LoadDriver();
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction hash_ = nullptr;
  CUfunction op_ = nullptr;
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

// One table of regions of odd sizes and alignments: each chunk's hash is the reference hash of its
// bytes, in table order, whatever the grid.
TEST_F(ChunkKernelsGpuTest, ChunkOpHashesEqualHostReferenceInTableOrder) {
  const std::uint64_t chunk_size = 4096;
  const std::size_t sizes[] = {1, 4099, 65536 + 7, 3 * 1024 * 1024 + 5, 4096};
  const std::size_t offsets[] = {0, 3, 8, 0, 5};
  std::vector<std::vector<std::byte>> contents;
  std::vector<CUdeviceptr> bases;
  std::vector<ChunkOpRegion> table;
  CUdeviceptr saved = 0;  // kHash never reads saved hashes, but they must point somewhere
  GPUPROF_CU_ASSERT(cu_->MemAlloc(&saved, 4096 * sizeof(std::uint64_t)));
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    contents.push_back(RandomBytes(sizes[i], 100 + i));
    CUdeviceptr base = 0;
    CUdeviceptr at = 0;
    ASSERT_NO_FATAL_FAILURE(Upload(contents.back(), offsets[i], &base, &at));
    bases.push_back(base);
    table.push_back({at, sizes[i], 0, saved, 0, kChunkAccessDevice, 0});
  }
  std::vector<std::uint64_t> expected;
  for (const std::vector<std::byte>& bytes : contents) {
    for (std::size_t begin = 0; begin < bytes.size(); begin += chunk_size) {
      const std::size_t length = std::min<std::size_t>(chunk_size, bytes.size() - begin);
      expected.push_back(ChunkHashReference(std::span(bytes).subspan(begin, length)));
    }
  }
  for (unsigned grid : {0u, 1u, 7u}) {
    OpOutput out;
    ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpHash, grid, true, false, &out));
    EXPECT_EQ(out.hashes, expected) << "grid " << grid;
    EXPECT_EQ(out.copied_chunks, 0u);
  }
  for (CUdeviceptr base : bases) GPUPROF_CU_ASSERT(cu_->MemFree(base));
  GPUPROF_CU_ASSERT(cu_->MemFree(saved));
}

// kRestoreDiffering on a device-resident copy compares bytes: it writes back exactly the chunks
// that differ, whatever the saved hashes say, through the vector, word and byte paths.
TEST_F(ChunkKernelsGpuTest, ChunkOpRestoreDifferingCopiesExactlyTheChangedChunks) {
  const std::size_t size = 10 * 1024 * 1024 + 13;
  const std::uint64_t chunk_size = 65536;
  const std::uint64_t chunks = ChunkCount(size, chunk_size);
  const std::vector<std::byte> saved_bytes = RandomBytes(size, 11);
  std::vector<std::byte> current_bytes = saved_bytes;
  // One bit in the first byte of chunk 0, the last byte of a middle chunk, and the ragged last
  // chunk's last byte (the per-thread tail path).
  current_bytes.at(0) ^= std::byte{0x01};
  current_bytes.at((chunks / 2 + 1) * chunk_size - 1) ^= std::byte{0x80};
  current_bytes.at(size - 1) ^= std::byte{0x10};
  const std::uint64_t changed_bytes = 2 * chunk_size + (size - (chunks - 1) * chunk_size);

  CUdeviceptr saved = 0;  // all zero: the hashes would call every chunk changed
  GPUPROF_CU_ASSERT(cu_->MemAlloc(&saved, chunks * sizeof(std::uint64_t)));
  GPUPROF_CU_ASSERT(cu_->MemsetD8(saved, 0, chunks * sizeof(std::uint64_t)));
  // 0/0: 16-byte aligned; 8/0: 8-byte words; 3/5: bytes.
  const std::pair<std::size_t, std::size_t> offsets[] = {{0, 0}, {8, 0}, {3, 5}};
  for (const auto& [current_offset, copy_offset] : offsets) {
    for (unsigned grid : {0u, 5u}) {
      CUdeviceptr copy_base = 0;
      CUdeviceptr current_base = 0;
      CUdeviceptr copy = 0;
      CUdeviceptr current = 0;
      ASSERT_NO_FATAL_FAILURE(Upload(saved_bytes, copy_offset, &copy_base, &copy));
      ASSERT_NO_FATAL_FAILURE(Upload(current_bytes, current_offset, &current_base, &current));
      OpOutput out;
      ASSERT_NO_FATAL_FAILURE(OpOnDevice({{current, size, copy, saved, 0, kChunkAccessDevice, 0}}, chunk_size,
                                         kChunkOpRestoreDiffering, grid, true, false, &out));
      EXPECT_EQ(out.copied_chunks, 3u)
          << "offsets " << current_offset << "/" << copy_offset << " grid " << grid;
      EXPECT_EQ(out.copied_bytes, changed_bytes);
      EXPECT_TRUE(Download(current, size) == saved_bytes) << "restored bytes differ from the copy";
      // The hashes are of the bytes before the restore.
      ASSERT_EQ(out.hashes.size(), chunks);
      EXPECT_EQ(out.hashes[0], ChunkHashReference(std::span(current_bytes).subspan(0, chunk_size)));
      // Nothing differs any more.
      ASSERT_NO_FATAL_FAILURE(OpOnDevice({{current, size, copy, saved, 0, kChunkAccessDevice, 0}}, chunk_size,
                                         kChunkOpRestoreDiffering, grid, false, false, &out));
      EXPECT_EQ(out.copied_chunks, 0u);
      GPUPROF_CU_ASSERT(cu_->MemFree(copy_base));
      GPUPROF_CU_ASSERT(cu_->MemFree(current_base));
    }
  }
  GPUPROF_CU_ASSERT(cu_->MemFree(saved));
}

// kCapture copies every chunk and saves its hash; kRestoreChanged then writes back the chunks whose
// hash no longer matches, and kRefreshChanged copies changed chunks the other way.
TEST_F(ChunkKernelsGpuTest, ChunkOpCaptureRestoreAndRefreshFollowSavedHashes) {
  const std::size_t size = 2 * 1024 * 1024 + 100;
  const std::uint64_t chunk_size = 16384;
  const std::uint64_t chunks = ChunkCount(size, chunk_size);
  const std::vector<std::byte> original = RandomBytes(size, 21);
  CUdeviceptr current_base = 0;
  CUdeviceptr current = 0;
  CUdeviceptr copy = 0;
  CUdeviceptr saved = 0;
  ASSERT_NO_FATAL_FAILURE(Upload(original, 0, &current_base, &current));
  GPUPROF_CU_ASSERT(cu_->MemAlloc(&copy, chunks * chunk_size));
  GPUPROF_CU_ASSERT(cu_->MemAlloc(&saved, chunks * sizeof(std::uint64_t)));
  const std::vector<ChunkOpRegion> table = {{current, size, copy, saved, 0, kChunkAccessDevice, 0}};

  OpOutput out;
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpCapture, 0, false, false, &out));
  EXPECT_EQ(out.copied_chunks, chunks);
  EXPECT_EQ(out.copied_bytes, size);
  EXPECT_TRUE(Download(copy, size) == original);
  std::vector<std::uint64_t> saved_hashes(chunks);
  GPUPROF_CU_ASSERT(cu_->MemcpyDtoH(saved_hashes.data(), saved, chunks * sizeof(std::uint64_t)));
  for (std::uint64_t i = 0; i < chunks; ++i) {
    const std::size_t length = std::min<std::size_t>(chunk_size, size - i * chunk_size);
    ASSERT_EQ(saved_hashes[i], ChunkHashReference(std::span(original).subspan(i * chunk_size, length))) << i;
  }

  // Two chunks change (the last one ragged); restore brings back exactly those.
  ASSERT_NO_FATAL_FAILURE(FlipByte(current, 5 * chunk_size + 7, original));
  ASSERT_NO_FATAL_FAILURE(FlipByte(current, size - 2, original));
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpRestoreChanged, 3, false, false, &out));
  EXPECT_EQ(out.copied_chunks, 2u);
  EXPECT_EQ(out.copied_bytes, chunk_size + (size - (chunks - 1) * chunk_size));
  EXPECT_TRUE(Download(current, size) == original);
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpRestoreChanged, 3, false, false, &out));
  EXPECT_EQ(out.copied_chunks, 0u);

  // A change refreshed into the copy is what the next restore brings back.
  ASSERT_NO_FATAL_FAILURE(FlipByte(current, 9 * chunk_size, original));
  const std::vector<std::byte> refreshed = Download(current, size);
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpRefreshChanged, 0, false, false, &out));
  EXPECT_EQ(out.copied_chunks, 1u);
  GPUPROF_CU_ASSERT(cu_->MemsetD8(current, 0, size));
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpRestoreAll, 0, false, false, &out));
  EXPECT_EQ(out.copied_chunks, chunks);
  EXPECT_TRUE(Download(current, size) == refreshed);

  GPUPROF_CU_ASSERT(cu_->MemFree(saved));
  GPUPROF_CU_ASSERT(cu_->MemFree(copy));
  GPUPROF_CU_ASSERT(cu_->MemFree(current_base));
}

// A region whose copy the kernel cannot reach (pageable host, file): the kernel copies nothing,
// flags each of its chunks (1: changed) and, refreshing, updates the saved hashes of the changed
// ones; a reachable region in the same table is copied as usual.
TEST_F(ChunkKernelsGpuTest, ChunkOpFlagsTheChunksOfHostCopiedRegions) {
  const std::uint64_t chunk_size = 4096;
  const std::size_t size = 40 * 4096 + 1;
  const std::uint64_t chunks = ChunkCount(size, chunk_size);
  const std::vector<std::byte> bytes = RandomBytes(size, 31);
  CUdeviceptr host_region_base = 0;
  CUdeviceptr host_region = 0;
  CUdeviceptr device_region_base = 0;
  CUdeviceptr device_region = 0;
  CUdeviceptr copy = 0;
  CUdeviceptr saved = 0;  // slots [0, chunks) for the host-copied region, [chunks, 2 chunks) for the other
  ASSERT_NO_FATAL_FAILURE(Upload(bytes, 0, &host_region_base, &host_region));
  ASSERT_NO_FATAL_FAILURE(Upload(bytes, 0, &device_region_base, &device_region));
  GPUPROF_CU_ASSERT(cu_->MemAlloc(&copy, chunks * chunk_size));
  GPUPROF_CU_ASSERT(cu_->MemAlloc(&saved, 2 * chunks * sizeof(std::uint64_t)));
  const std::vector<ChunkOpRegion> table = {
      {host_region, size, 0, saved, 0, kChunkAccessHost, 0},
      {device_region, size, copy, saved + chunks * sizeof(std::uint64_t), 0, kChunkAccessDevice, 0}};

  OpOutput out;
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpCapture, 0, false, false, &out));
  EXPECT_EQ(out.copied_chunks, chunks) << "only the reachable region is copied by the kernel";
  ASSERT_NO_FATAL_FAILURE(FlipByte(host_region, 3 * chunk_size, bytes));
  ASSERT_NO_FATAL_FAILURE(FlipByte(host_region, size - 1, bytes));
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpRefreshChanged, 0, false, true, &out));
  EXPECT_EQ(out.copied_chunks, 0u);
  std::vector<std::uint8_t> expected(chunks, 0);
  expected[3] = 1;
  expected[chunks - 1] = 1;
  EXPECT_EQ(
      std::vector<std::uint8_t>(out.flags.begin(), out.flags.begin() + static_cast<std::ptrdiff_t>(chunks)),
      expected);
  // The saved hashes now describe the changed bytes: nothing is flagged any more.
  ASSERT_NO_FATAL_FAILURE(OpOnDevice(table, chunk_size, kChunkOpRestoreChanged, 0, false, true, &out));
  EXPECT_EQ(
      std::vector<std::uint8_t>(out.flags.begin(), out.flags.begin() + static_cast<std::ptrdiff_t>(chunks)),
      std::vector<std::uint8_t>(chunks, 0));
  EXPECT_EQ(out.copied_chunks, 0u);

  GPUPROF_CU_ASSERT(cu_->MemFree(saved));
  GPUPROF_CU_ASSERT(cu_->MemFree(copy));
  GPUPROF_CU_ASSERT(cu_->MemFree(device_region_base));
  GPUPROF_CU_ASSERT(cu_->MemFree(host_region_base));
}

}  // namespace
}  // namespace gpuprof::device::cuda
