#include "base/hash.h"

#include <xxhash.h>

#include "base/check.h"

namespace gpuprof::base {

std::uint64_t HashBytes(const void* data, std::size_t size) noexcept { return XXH3_64bits(data, size); }

void HashChunks(const void* data, std::size_t size, std::size_t chunk_size,
                std::span<std::uint64_t> out) noexcept {
  GPUPROF_CHECK(chunk_size > 0) << "chunk size must be positive";
  GPUPROF_CHECK(out.size() == ChunkCount(size, chunk_size))
      << "output span holds " << out.size() << " hashes, need " << ChunkCount(size, chunk_size);
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::size_t offset = i * chunk_size;
    std::size_t length = size - offset < chunk_size ? size - offset : chunk_size;
    out[i] = XXH3_64bits(bytes + offset, length);
  }
}

std::uint64_t CombineHashes(std::span<const std::uint64_t> hashes) noexcept {
  return XXH3_64bits(hashes.data(), hashes.size_bytes());
}

}  // namespace gpuprof::base
