// CudaDevice's chunk operations over device memory (B1, B3): the chunk kernels (chunk_kernels.cu)
// loaded from the embedded PTX, HashChunks with its host fallback, and RunChunkOp, one launch of
// gpuprof_chunk_op and one wait over a whole region table.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/logging.h"
#include "device/cuda/chunk_hash_reference.h"
#include "device/cuda/chunk_kernels_ptx.h"
#include "device/cuda/chunk_op_abi.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_device_internal.h"

namespace gpuprof::device::cuda {
namespace {

// The table layout RunChunkOp writes and gpuprof_chunk_op reads (chunk_op_abi.h).
static_assert(sizeof(ChunkOpRegion) == 48 && alignof(ChunkOpRegion) == 8, "ChunkOpRegion's layout changed");
static_assert(offsetof(ChunkOpRegion, first_chunk) == 32 && offsetof(ChunkOpRegion, access) == 40,
              "ChunkOpRegion's layout changed");
static_assert(sizeof(CUdeviceptr) == sizeof(unsigned long long), "device pointers are 64-bit");

// Pinned mirror of RunChunkOp's table and results: allocated in multiples of this.
constexpr std::uint64_t kOpBufferGranule = std::uint64_t{64} << 10;

ChunkOpCode KernelOpCode(ChunkOp op) noexcept {
  switch (op) {
    case ChunkOp::kCapture: return kChunkOpCapture;
    case ChunkOp::kRefreshChanged: return kChunkOpRefreshChanged;
    case ChunkOp::kRestoreChanged: return kChunkOpRestoreChanged;
    case ChunkOp::kRestoreDiffering: return kChunkOpRestoreDiffering;
    case ChunkOp::kRestoreAll: return kChunkOpRestoreAll;
    case ChunkOp::kHash: return kChunkOpHash;
  }
  return kChunkOpHash;
}

// The ops whose host-tier chunks the kernel chooses (the others copy every chunk, or none).
bool OpChooses(ChunkOp op) noexcept {
  return op == ChunkOp::kRefreshChanged || op == ChunkOp::kRestoreChanged || op == ChunkOp::kRestoreDiffering;
}

}  // namespace

Status CudaDevice::LoadChunkKernels() {
  if (hash_kernel_ != nullptr && op_kernel_ != nullptr) return OkStatus();
  if (chunk_kernels_failed_) return UnavailableError("the chunk kernels did not load earlier");
  CUmodule module = nullptr;
  CUresult result = driver_.ModuleLoadData(&module, kChunkKernelsPtx);
  if (result == CUDA_SUCCESS)
    result = driver_.ModuleGetFunction(&hash_kernel_, module, kHashChunksKernelName);
  if (result == CUDA_SUCCESS) result = driver_.ModuleGetFunction(&op_kernel_, module, kChunkOpKernelName);
  if (result != CUDA_SUCCESS) {
    chunk_kernels_failed_ = true;
    hash_kernel_ = nullptr;
    op_kernel_ = nullptr;
    return UnavailableError(driver_.Error("loading the chunk kernels", result));
  }
  int sms = 0;
  if (driver_.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_) != CUDA_SUCCESS ||
      sms <= 0) {
    sms = 1;
  }
  // The launch contract's grid: SMs x resident blocks (chunk_kernels.cu). The kernels' launch
  // bounds ask for 8 and 4 resident blocks; those are the fallbacks when the driver cannot say.
  auto resident = [&](CUfunction kernel, int fallback) {
    int blocks = 0;
    if (driver_.OccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, kernel, static_cast<int>(kChunkKernelBlockSize), 0) != CUDA_SUCCESS ||
        blocks <= 0) {
      blocks = fallback;
    }
    return static_cast<std::uint64_t>(sms) * static_cast<std::uint64_t>(blocks);
  };
  hash_grid_limit_ = resident(hash_kernel_, 8);
  op_grid_limit_ = resident(op_kernel_, 4);
  return OkStatus();
}

Status CudaDevice::HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                              std::span<std::uint64_t> out) {
  if (chunk_size == 0) return InvalidArgumentError("HashChunks: chunk_size is 0");
  const std::uint64_t chunks = bytes == 0 ? 0 : ChunksOf(bytes, chunk_size);
  if (out.size() < chunks) return InvalidArgumentError("HashChunks: output span too small");
  if (chunks == 0) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  // B1: hashed on the device (chunk_kernels.cu), only the hashes cross to the host.
  if (Status loaded = LoadChunkKernels(); loaded.ok()) {
    const std::uint64_t hash_bytes = chunks * sizeof(std::uint64_t);
    if (EnsureKernelOutput(hash_bytes).ok()) {
      CUdeviceptr source = src;
      unsigned long long length = bytes;
      unsigned long long chunk = chunk_size;
      CUdeviceptr target = hashes_;
      void* params[] = {&source, &length, &chunk, &target};
      const auto grid = static_cast<unsigned>(std::min(chunks, hash_grid_limit_));
      CUresult launched = driver_.LaunchKernel(hash_kernel_, grid, 1, 1, kChunkKernelBlockSize, 1, 1, 0,
                                               stream_, params, nullptr);
      if (launched == CUDA_SUCCESS) {
        return Copy("cuMemcpyDtoHAsync(hashes)",
                    driver_.MemcpyDtoHAsync(out.data(), hashes_, hash_bytes, stream_));
      }
      GPUPROF_LOG(kWarning) << driver_.Error("launching the chunk-hash kernel", launched)
                            << "; hashing on the host instead";
    }
  }
  // Fallback: chunks copied to pinned staging and hashed on the host.
  const std::uint64_t per_fill = std::max<std::uint64_t>(1, options_.staging_bytes / chunk_size) * chunk_size;
  std::size_t chunk = 0;
  for (std::uint64_t offset = 0; offset < bytes; offset += per_fill) {
    const std::uint64_t n = std::min(per_fill, bytes - offset);
    if (n > options_.staging_bytes)
      return InvalidArgumentError("HashChunks: chunk larger than the staging buffer");
    GPUPROF_RETURN_IF_ERROR(
        Copy("cuMemcpyDtoHAsync(hash)", driver_.MemcpyDtoHAsync(staging_, src + offset, n, stream_)));
    for (std::uint64_t at = 0; at < n; at += chunk_size, ++chunk) {
      out[chunk] = ChunkHashReference(std::span<const std::byte>(static_cast<const std::byte*>(staging_) + at,
                                                                 std::min(chunk_size, n - at)));
    }
  }
  return OkStatus();
}

Status CudaDevice::EnsureKernelOutput(std::uint64_t bytes) {
  if (bytes <= hashes_capacity_) return OkStatus();
  if (hashes_ != 0) driver_.MemFree(hashes_);
  hashes_ = 0;
  hashes_capacity_ = 0;
  CUdeviceptr grown = 0;
  GPUPROF_RETURN_IF_ERROR(driver_.Check("cuMemAlloc(chunk kernel output)", driver_.MemAlloc(&grown, bytes)));
  hashes_ = grown;
  hashes_capacity_ = bytes;
  return OkStatus();
}

Status CudaDevice::EnsureOpBuffers(std::uint64_t bytes) {
  if (bytes <= op_capacity_) return OkStatus();
  const std::uint64_t doubled =
      op_capacity_ <= std::numeric_limits<std::uint64_t>::max() / 2 ? 2 * op_capacity_ : 0;
  std::uint64_t capacity = 0;
  if (!RoundUp(std::max(bytes, doubled), kOpBufferGranule, &capacity)) {
    return ResourceExhaustedError("RunChunkOp: a " + std::to_string(bytes) +
                                  "-byte table does not fit in memory");
  }
  // Nothing is in flight on the private stream here: every operation waits for its work before
  // it returns (or, failing, before it lets go of mu_).
  if (op_device_ != 0) driver_.MemFree(op_device_);
  if (op_host_ != nullptr) driver_.MemFreeHost(op_host_);
  op_device_ = 0;
  op_host_ = nullptr;
  op_capacity_ = 0;
  CUdeviceptr device = 0;
  if (CUresult r = driver_.MemAlloc(&device, capacity); r != CUDA_SUCCESS) {
    return ResourceExhaustedError(driver_.Error("cuMemAlloc(RunChunkOp table)", r) + " for " +
                                  std::to_string(capacity) + " bytes");
  }
  void* host = nullptr;
  if (CUresult r = driver_.MemHostAlloc(&host, capacity, 0); r != CUDA_SUCCESS) {
    driver_.MemFree(device);
    return ResourceExhaustedError(driver_.Error("cuMemHostAlloc(RunChunkOp table)", r) + " for " +
                                  std::to_string(capacity) + " bytes");
  }
  op_device_ = device;
  op_host_ = host;
  op_capacity_ = capacity;
  return OkStatus();
}

StatusOr<ChunkOpResult> CudaDevice::RunChunkOp(ChunkOp op, std::span<const ArenaRegion> regions,
                                               std::uint64_t chunk_size, std::span<std::uint64_t> hashes) {
  const std::string what = "RunChunkOp(" + std::string(ChunkOpName(op)) + ")";
  if (chunk_size == 0) return InvalidArgumentError(what + ": chunk_size is 0");
  std::lock_guard<std::mutex> lock(mu_);
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return InternalError(what + ": cuCtxPushCurrent failed");

  // Check the table and count its chunks (chunk_op_abi.h's first_chunk), before anything runs.
  const bool any_bytes =
      std::any_of(regions.begin(), regions.end(), [](const ArenaRegion& r) { return r.size != 0; });
  if (any_bytes && chunk_size != arena_chunk_size_) {
    return FailedPreconditionError(what + ": chunk size " + std::to_string(chunk_size) + ", the arena's is " +
                                   std::to_string(arena_chunk_size_) + " (ReserveArena first)");
  }
  std::uint64_t total_chunks = 0;
  std::uint64_t entries = 0;
  std::vector<HostCopyRegion> host_regions;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const ArenaRegion& region = regions[i];
    if (region.size == 0) continue;
    // Only a failure pays for the message (a table may have thousands of regions).
    auto where = [&] {
      return what + ": region " + std::to_string(i) + " (" + std::to_string(region.size) + " bytes at " +
             std::to_string(region.base) + ")";
    };
    if (TierIndex(region.tier) >= kStorageTierCount)
      return InvalidArgumentError(where() + ": no such storage tier");
    const Arena& arena = arenas_[TierIndex(region.tier)];
    if (region.arena_offset % chunk_size != 0) {
      return InvalidArgumentError(where() + ": arena offset " + std::to_string(region.arena_offset) +
                                  " is not a multiple of the chunk size");
    }
    if (region.arena_offset > arena.capacity || region.size > arena.capacity - region.arena_offset) {
      return FailedPreconditionError(where() + ": arena offset " + std::to_string(region.arena_offset) +
                                     " is past the end of the " + TierName(region.tier) + "-tier arena (" +
                                     std::to_string(arena.capacity) + " bytes; released or never reserved?)");
    }
    if (region.base > std::numeric_limits<std::uint64_t>::max() - region.size) {
      return InvalidArgumentError(where() + ": the region wraps around the address space");
    }
    if (region.tier == StorageTier::kPageableHost || region.tier == StorageTier::kFile) {
      host_regions.push_back({region.base, region.size, region.tier, region.arena_offset, total_chunks});
    }
    total_chunks += ChunksOf(region.size, chunk_size);
    ++entries;
  }
  if (!hashes.empty() && hashes.size() != total_chunks) {
    return InvalidArgumentError(what + ": " + std::to_string(hashes.size()) + " hashes for a table of " +
                                std::to_string(total_chunks) + " chunks");
  }
  ChunkOpResult result;
  result.chunks = total_chunks;
  if (total_chunks == 0) return result;
  if (entries > std::numeric_limits<unsigned>::max()) {
    return InvalidArgumentError(what + ": " + std::to_string(entries) + " regions in one table");
  }
  GPUPROF_RETURN_IF_ERROR(LoadChunkKernels().WithContext(what));

  // One buffer, mirrored on the device and in pinned memory:
  //   [table | counters (chunk_op_abi.h) | hashes (when asked) | flags (when host tiers choose)]
  // table and counters go up in one copy; counters and hashes come back in one, flags in another.
  const bool want_hashes = !hashes.empty();
  const bool want_flags = !host_regions.empty() && OpChooses(op);
  const std::uint64_t table_offset = 0;
  const std::uint64_t counters_offset = entries * sizeof(ChunkOpRegion);
  const std::uint64_t hashes_offset = counters_offset + kChunkOpCounters * sizeof(std::uint64_t);
  const std::uint64_t flags_offset = hashes_offset + (want_hashes ? total_chunks * sizeof(std::uint64_t) : 0);
  const std::uint64_t buffer_bytes = flags_offset + (want_flags ? total_chunks : 0);
  GPUPROF_RETURN_IF_ERROR(EnsureOpBuffers(buffer_bytes).WithContext(what));

  auto* host = static_cast<unsigned char*>(op_host_);
  auto* table = reinterpret_cast<ChunkOpRegion*>(host + table_offset);
  std::uint64_t first_chunk = 0;
  std::size_t entry = 0;
  for (const ArenaRegion& region : regions) {
    if (region.size == 0) continue;
    const Arena& arena = arenas_[TierIndex(region.tier)];
    ChunkOpRegion& e = table[entry++];
    e.base = region.base;
    e.size = region.size;
    e.saved = arena.saved_hashes + region.arena_offset / chunk_size * sizeof(std::uint64_t);
    e.first_chunk = first_chunk;
    e.reserved = 0;
    switch (region.tier) {
      case StorageTier::kDevice:
        e.access = kChunkAccessDevice;
        e.copy = arena.device + region.arena_offset;
        break;
      case StorageTier::kPinnedHost:
        e.access = kChunkAccessMapped;
        e.copy = arena.device + region.arena_offset;  // the pinned block's mapped address
        break;
      case StorageTier::kPageableHost:
      case StorageTier::kFile:
        e.access = kChunkAccessHost;
        e.copy = 0;
        break;
    }
    first_chunk += ChunksOf(region.size, chunk_size);
  }
  auto* counters = reinterpret_cast<std::uint64_t*>(host + counters_offset);
  std::fill(counters, counters + kChunkOpCounters, std::uint64_t{0});

  // From the first enqueue on, a failure must still wait for what was enqueued: the buffers are
  // reused (or freed) by the next call.
  auto fail = [&](Status status) {
    driver_.StreamSynchronize(stream_);
    return status.WithContext(what);
  };
  CUresult r = driver_.MemcpyHtoDAsync(op_device_, host, hashes_offset, stream_);
  if (r != CUDA_SUCCESS) return fail(driver_.Check("cuMemcpyHtoDAsync(table)", r));
  CUdeviceptr table_arg = op_device_ + table_offset;
  auto count_arg = static_cast<unsigned>(entries);
  unsigned long long chunks_arg = total_chunks;
  unsigned long long chunk_arg = chunk_size;
  unsigned op_arg = KernelOpCode(op);
  CUdeviceptr hashes_arg = want_hashes ? op_device_ + hashes_offset : 0;
  CUdeviceptr flags_arg = want_flags ? op_device_ + flags_offset : 0;
  CUdeviceptr counters_arg = op_device_ + counters_offset;
  void* params[] = {&table_arg, &count_arg,  &chunks_arg, &chunk_arg,
                    &op_arg,    &hashes_arg, &flags_arg,  &counters_arg};
  const auto grid = static_cast<unsigned>(
      std::min({total_chunks, op_grid_limit_, static_cast<std::uint64_t>(std::numeric_limits<int>::max())}));
  r = driver_.LaunchKernel(op_kernel_, grid, 1, 1, kChunkKernelBlockSize, 1, 1, 0, stream_, params, nullptr);
  if (r != CUDA_SUCCESS) return fail(driver_.Check("cuLaunchKernel(gpuprof_chunk_op)", r));
  r = driver_.MemcpyDtoHAsync(host + counters_offset, op_device_ + counters_offset,
                              flags_offset - counters_offset, stream_);
  if (r != CUDA_SUCCESS) return fail(driver_.Check("cuMemcpyDtoHAsync(counters, hashes)", r));
  if (want_flags) {
    // Only the span of chunks the host regions cover.
    const std::uint64_t begin = host_regions.front().first_chunk;
    const std::uint64_t end =
        host_regions.back().first_chunk + ChunksOf(host_regions.back().size, chunk_size);
    r = driver_.MemcpyDtoHAsync(host + flags_offset + begin, op_device_ + flags_offset + begin, end - begin,
                                stream_);
    if (r != CUDA_SUCCESS) return fail(driver_.Check("cuMemcpyDtoHAsync(flags)", r));
  }
  r = driver_.StreamSynchronize(stream_);
  if (r != CUDA_SUCCESS) return driver_.Check("cuStreamSynchronize", r).WithContext(what);

  if (want_hashes) std::memcpy(hashes.data(), host + hashes_offset, total_chunks * sizeof(std::uint64_t));
  result.copied_chunks = counters[kChunkOpCopiedChunks];
  result.copied_bytes = counters[kChunkOpCopiedBytes];
  if (!host_regions.empty() && op != ChunkOp::kHash) {
    GPUPROF_RETURN_IF_ERROR(
        CopyHostTierChunks(op, host_regions, want_flags ? host + flags_offset : nullptr, chunk_size, &result)
            .WithContext(what));
  }
  return result;
}

}  // namespace gpuprof::device::cuda
