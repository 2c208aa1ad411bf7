// Content hashing on the host (xxh3, 64-bit). Device backends hash device memory themselves; the
// host device and tests use these. Chunk hashes are the unit of dirty detection in replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gpuprof::base {

inline constexpr std::size_t kDefaultChunkSize = 64 * 1024;

// xxh3-64 of `size` bytes at `data` (size 0 is allowed; data may then be null).
std::uint64_t HashBytes(const void* data, std::size_t size) noexcept;

// Number of chunks of `chunk_size` covering `size` bytes (the last may be short).
constexpr std::size_t ChunkCount(std::size_t size, std::size_t chunk_size) noexcept {
  return chunk_size == 0 ? 0 : (size + chunk_size - 1) / chunk_size;
}

// Hashes each chunk of [data, data+size) into out[i]; out.size() must equal
// ChunkCount(size, chunk_size) (checked).
void HashChunks(const void* data, std::size_t size, std::size_t chunk_size,
                std::span<std::uint64_t> out) noexcept;

// Combines a sequence of 64-bit hashes into one (order-sensitive).
std::uint64_t CombineHashes(std::span<const std::uint64_t> hashes) noexcept;

}  // namespace gpuprof::base
