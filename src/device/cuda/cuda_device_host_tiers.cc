// CudaDevice's pageable and file tiers (RunChunkOp's slow path): the kernel cannot reach their
// memory, so after it has flagged the chunks to copy, the host moves them between the device and
// the arena through the pinned staging buffer, adjacent chunks coalesced into runs. The spill
// file is read and written with pread/pwrite.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/errno_text.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_device_internal.h"

namespace gpuprof::device::cuda {
namespace {

// pwrite/pread of exactly `bytes` (they may transfer less per call, or be interrupted).
Status WriteFully(int fd, const void* data, std::uint64_t bytes, std::uint64_t offset) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t n = pwrite(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return ResourceExhaustedError("writing the file-tier arena (spill file) at offset " +
                                    std::to_string(offset) + ": " + base::ErrnoText(n < 0 ? errno : EIO));
    }
    p += n;
    bytes -= static_cast<std::uint64_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return OkStatus();
}

Status ReadFully(int fd, void* data, std::uint64_t bytes, std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t n = pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return InternalError("reading the file-tier arena (spill file) at offset " + std::to_string(offset) +
                           ": " + base::ErrnoText(errno));
    }
    if (n == 0) {
      return DataLossError("reading the file-tier arena (spill file): it ends before offset " +
                           std::to_string(offset));
    }
    p += n;
    bytes -= static_cast<std::uint64_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return OkStatus();
}

bool OpCopiesToArena(ChunkOp op) noexcept {
  return op == ChunkOp::kCapture || op == ChunkOp::kRefreshChanged;
}

// Moves runs of bytes between device memory and a host-side arena (pageable memory or the spill
// file) through the pinned staging buffer: the slow path of RunChunkOp. Runs are packed into the
// staging buffer until it is full; then one stream wait, and the staged bytes are written to
// their destination (to the arena: memcpy/pwrite after the wait; to the device: the buffer is
// reused only after the wait). Finish() flushes what is left. On the private stream, under the
// device's mutex.
class StagedHostCopier {
 public:
  StagedHostCopier(const CudaDriver& driver, CUstream stream, void* staging, std::uint64_t staging_bytes,
                   bool to_arena)
      : driver_(driver),
        stream_(stream),
        staging_(static_cast<unsigned char*>(staging)),
        staging_bytes_(staging_bytes),
        to_arena_(to_arena) {}

  // One run: device [device, device + bytes) <-> the arena (`host` memory, or `fd` when host is
  // null) at `arena_offset`.
  Status Add(CUdeviceptr device, void* host, int fd, std::uint64_t arena_offset, std::uint64_t bytes) {
    while (bytes > 0) {
      if (used_ == staging_bytes_) GPUPROF_RETURN_IF_ERROR(Flush());
      const std::uint64_t piece = std::min(bytes, staging_bytes_ - used_);
      unsigned char* staged = staging_ + used_;
      if (to_arena_) {
        GPUPROF_RETURN_IF_ERROR(driver_.Check("cuMemcpyDtoHAsync(host-tier arena)",
                                              driver_.MemcpyDtoHAsync(staged, device, piece, stream_)));
        pending_.push_back({host, fd, arena_offset, used_, piece});
      } else {
        if (host != nullptr) {
          std::memcpy(staged, static_cast<const unsigned char*>(host) + arena_offset, piece);
        } else {
          GPUPROF_RETURN_IF_ERROR(ReadFully(fd, staged, piece, arena_offset));
        }
        GPUPROF_RETURN_IF_ERROR(driver_.Check("cuMemcpyHtoDAsync(host-tier arena)",
                                              driver_.MemcpyHtoDAsync(device, staged, piece, stream_)));
      }
      used_ += piece;
      device += piece;
      arena_offset += piece;
      bytes -= piece;
    }
    return OkStatus();
  }

  Status Finish() { return Flush(); }

 private:
  struct Pending {  // staged bytes still to be written to the arena
    void* host;
    int fd;
    std::uint64_t arena_offset;
    std::uint64_t staging_offset;
    std::uint64_t bytes;
  };

  Status Flush() {
    if (used_ == 0) return OkStatus();
    GPUPROF_RETURN_IF_ERROR(driver_.Check("cuStreamSynchronize", driver_.StreamSynchronize(stream_)));
    for (const Pending& p : pending_) {
      const unsigned char* staged = staging_ + p.staging_offset;
      if (p.host != nullptr) {
        std::memcpy(static_cast<unsigned char*>(p.host) + p.arena_offset, staged, p.bytes);
      } else {
        GPUPROF_RETURN_IF_ERROR(WriteFully(p.fd, staged, p.bytes, p.arena_offset));
      }
    }
    pending_.clear();
    used_ = 0;
    return OkStatus();
  }

  const CudaDriver& driver_;
  CUstream stream_;
  unsigned char* staging_;
  std::uint64_t staging_bytes_;
  bool to_arena_;
  std::uint64_t used_ = 0;
  std::vector<Pending> pending_;
};

}  // namespace

Status CudaDevice::CopyHostTierChunks(ChunkOp op, std::span<const HostCopyRegion> regions,
                                      const std::uint8_t* flags, std::uint64_t chunk_size,
                                      ChunkOpResult* result) {
  StagedHostCopier copier(driver_, stream_, staging_, options_.staging_bytes, OpCopiesToArena(op));
  Status status;
  for (const HostCopyRegion& region : regions) {
    const Arena& arena = arenas_[TierIndex(region.tier)];
    void* host = region.tier == StorageTier::kPageableHost ? arena.host : nullptr;
    const std::uint64_t chunks = ChunksOf(region.size, chunk_size);
    auto wanted = [&](std::uint64_t k) { return flags == nullptr || flags[region.first_chunk + k] != 0; };
    // Runs of adjacent chunks to copy: [run, c).
    std::uint64_t c = 0;
    while (c < chunks && status.ok()) {
      if (!wanted(c)) {
        ++c;
        continue;
      }
      const std::uint64_t run = c;
      while (c < chunks && wanted(c)) ++c;
      const std::uint64_t offset = run * chunk_size;
      const std::uint64_t bytes = std::min(c * chunk_size, region.size) - offset;
      status = copier.Add(region.base + offset, host, arena.fd, region.arena_offset + offset, bytes);
      result->copied_chunks += c - run;
      result->copied_bytes += bytes;
    }
    if (!status.ok()) break;
  }
  if (status.ok()) status = copier.Finish();
  if (!status.ok()) driver_.StreamSynchronize(stream_);  // staging is reused by the next call
  return status;
}

}  // namespace gpuprof::device::cuda
