#include "base/hash.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuprof::base {
namespace {

std::vector<unsigned char> Pattern(std::size_t size) {
  std::vector<unsigned char> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>((i * 131 + 7) % 251);
  return bytes;
}

std::vector<std::uint64_t> Chunks(const std::vector<unsigned char>& bytes, std::size_t chunk_size) {
  std::vector<std::uint64_t> out(ChunkCount(bytes.size(), chunk_size));
  HashChunks(bytes.data(), bytes.size(), chunk_size, out);
  return out;
}

TEST(HashTest, ChunkCountRoundsUp) {
  static_assert(ChunkCount(0, 64) == 0);
  static_assert(ChunkCount(1, 64) == 1);
  static_assert(ChunkCount(64, 64) == 1);
  static_assert(ChunkCount(65, 64) == 2);
  static_assert(ChunkCount(128, 64) == 2);
  static_assert(ChunkCount(100, 0) == 0);
  EXPECT_EQ(ChunkCount(3 * kDefaultChunkSize + 1, kDefaultChunkSize), 4u);
  EXPECT_EQ(kDefaultChunkSize, 64u * 1024u);
}

// The host backend's chunk hash and the output hash are pinned: xxh3-64 with seed 0 (reference
// value of the empty input). Each device backend hashes chunks its own way (device.h HashChunks;
// CUDA's is chunk_kernels.cu), so chunk hashes are only ever compared within one backend.
TEST(HashTest, HashBytesIsXxh3With64BitOutput) {
  EXPECT_EQ(HashBytes(nullptr, 0), 0x2D06800538D394C2ull);
  unsigned char empty[1] = {0};
  EXPECT_EQ(HashBytes(empty, 0), HashBytes(nullptr, 0));
}

TEST(HashTest, HashBytesDependsOnContentAndLength) {
  std::vector<unsigned char> bytes = Pattern(1000);
  std::uint64_t full = HashBytes(bytes.data(), bytes.size());
  EXPECT_EQ(full, HashBytes(bytes.data(), bytes.size()));
  EXPECT_NE(full, HashBytes(bytes.data(), bytes.size() - 1));
  bytes[500] ^= 1;
  EXPECT_NE(full, HashBytes(bytes.data(), bytes.size()));
}

TEST(HashTest, HashChunksEqualsHashBytesOfEachChunkIncludingShortLast) {
  constexpr std::size_t kChunk = 256;
  std::vector<unsigned char> bytes = Pattern(3 * kChunk + 17);
  std::vector<std::uint64_t> hashes = Chunks(bytes, kChunk);

  ASSERT_EQ(hashes.size(), 4u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(hashes[i], HashBytes(bytes.data() + i * kChunk, kChunk)) << "chunk " << i;
  }
  EXPECT_EQ(hashes[3], HashBytes(bytes.data() + 3 * kChunk, 17)) << "short last chunk";
}

TEST(HashTest, HashChunksOfExactMultipleHasNoShortChunk) {
  constexpr std::size_t kChunk = 64;
  std::vector<unsigned char> bytes = Pattern(4 * kChunk);
  std::vector<std::uint64_t> hashes = Chunks(bytes, kChunk);
  ASSERT_EQ(hashes.size(), 4u);
  EXPECT_EQ(hashes[3], HashBytes(bytes.data() + 3 * kChunk, kChunk));
}

TEST(HashTest, HashChunksOfSmallerThanOneChunkIsOneShortChunk) {
  std::vector<unsigned char> bytes = Pattern(10);
  std::vector<std::uint64_t> hashes = Chunks(bytes, kDefaultChunkSize);
  ASSERT_EQ(hashes.size(), 1u);
  EXPECT_EQ(hashes[0], HashBytes(bytes.data(), bytes.size()));
}

TEST(HashTest, HashChunksOfNothingWritesNothing) {
  std::vector<std::uint64_t> out;
  HashChunks(nullptr, 0, kDefaultChunkSize, out);
  EXPECT_TRUE(out.empty());
}

TEST(HashTest, OneByteChangeChangesExactlyOneChunkHash) {
  constexpr std::size_t kChunk = 128;
  std::vector<unsigned char> bytes = Pattern(10 * kChunk + 5);
  const std::vector<std::uint64_t> before = Chunks(bytes, kChunk);

  // A byte in a middle chunk, the first byte, and a byte of the short last chunk.
  for (std::size_t offset : {std::size_t{4 * kChunk + 77}, std::size_t{0}, bytes.size() - 1}) {
    std::vector<unsigned char> changed = bytes;
    changed[offset] = static_cast<unsigned char>(changed[offset] + 1);
    std::vector<std::uint64_t> after = Chunks(changed, kChunk);
    ASSERT_EQ(after.size(), before.size());
    std::vector<std::size_t> differing;
    for (std::size_t i = 0; i < after.size(); ++i) {
      if (after[i] != before[i]) differing.push_back(i);
    }
    EXPECT_EQ(differing, std::vector<std::size_t>{offset / kChunk}) << "changed byte at " << offset;
  }
}

TEST(HashTest, CombineHashesIsOrderSensitive) {
  std::vector<std::uint64_t> hashes = {1, 2, 3};
  std::uint64_t combined = CombineHashes(hashes);
  EXPECT_EQ(combined, CombineHashes(hashes));
  std::vector<std::uint64_t> swapped = {2, 1, 3};
  EXPECT_NE(combined, CombineHashes(swapped));
  std::vector<std::uint64_t> shorter = {1, 2};
  EXPECT_NE(combined, CombineHashes(shorter));
}

TEST(HashDeathTest, HashChunksRejectsWrongOutputSize) {
  std::vector<unsigned char> bytes = Pattern(300);
  std::vector<std::uint64_t> out(2);  // needs 3 chunks of 128
  EXPECT_DEATH(HashChunks(bytes.data(), bytes.size(), 128, out), "output span holds 2 hashes, need 3");
}

TEST(HashDeathTest, HashChunksRejectsZeroChunkSize) {
  std::vector<unsigned char> bytes = Pattern(10);
  std::vector<std::uint64_t> out;
  EXPECT_DEATH(HashChunks(bytes.data(), bytes.size(), 0, out), "chunk size must be positive");
}

}  // namespace
}  // namespace gpuprof::base
