#include "device/cuda/chunk_hash_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "device/cuda/chunk_kernels_ptx.h"

namespace gpuprof::device::cuda {
namespace {

std::vector<std::byte> RandomBytes(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> bytes(size);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  return bytes;
}

std::uint64_t Hash(const std::vector<std::byte>& bytes) { return ChunkHashReference(bytes); }

TEST(ChunkHashReferenceTest, SameContentAtAnyOffsetHashesEqual) {
  for (std::size_t length : {0u, 1u, 7u, 8u, 15u, 16u, 17u, 100u, 4095u, 4096u, 8191u, 65536u + 13u}) {
    const std::vector<std::byte> content = RandomBytes(length, length);
    const std::uint64_t expected = Hash(content);
    // Offsets 0..31 within one buffer cover every alignment the kernel distinguishes (16, 8, other).
    std::vector<std::byte> buffer(length + 32 + 7, std::byte{0x5A});
    for (std::size_t offset = 0; offset < 32; ++offset) {
      std::copy(content.begin(), content.end(), buffer.begin() + static_cast<std::ptrdiff_t>(offset));
      EXPECT_EQ(ChunkHashReference(std::span(buffer).subspan(offset, length)), expected)
          << "length " << length << " offset " << offset;
    }
  }
}

TEST(ChunkHashReferenceTest, EverySampledSingleBitFlipChangesHash) {
  std::vector<std::byte> chunk = RandomBytes(64 * 1024, 1);
  const std::uint64_t original = Hash(chunk);
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<std::size_t> bit_index(0, chunk.size() * 8 - 1);
  for (int i = 0; i < 1000; ++i) {
    const std::size_t bit = bit_index(rng);
    const auto mask = static_cast<std::byte>(1u << (bit % 8));
    chunk[bit / 8] ^= mask;
    EXPECT_NE(Hash(chunk), original) << "bit " << bit;
    chunk[bit / 8] ^= mask;
  }
  EXPECT_EQ(Hash(chunk), original);
}

// Flips in the first and last words, the ragged tail and every lane of the first 512 words: the
// edges of the lane partition.
TEST(ChunkHashReferenceTest, BitFlipsAtPartitionEdgesChangeHash) {
  std::vector<std::byte> chunk(8 * 1024 + 5);  // zeros: the weakest content for a mixer
  const std::uint64_t original = Hash(chunk);
  std::set<std::uint64_t> seen = {original};
  for (std::size_t byte = 0; byte < chunk.size(); byte += (byte < 8 * 512 ? 8 : 1)) {
    chunk[byte] ^= std::byte{0x80};
    EXPECT_TRUE(seen.insert(Hash(chunk)).second) << "byte " << byte;
    chunk[byte] ^= std::byte{0x80};
  }
}

TEST(ChunkHashReferenceTest, SwappedWordsChangeHash) {
  std::vector<std::byte> chunk = RandomBytes(64 * 1024, 3);
  const std::uint64_t original = Hash(chunk);
  // Neighbours (two lanes of one thread), the next thread's lanes, and the same lane 512 words on.
  for (std::size_t distance : {1u, 2u, 512u}) {
    std::vector<std::byte> swapped = chunk;
    const auto first = swapped.begin();
    std::swap_ranges(first, first + 8, first + static_cast<std::ptrdiff_t>(8 * distance));
    EXPECT_NE(Hash(swapped), original) << "words 0 and " << distance;
  }
}

TEST(ChunkHashReferenceTest, LengthsWithSamePrefixHashDistinct) {
  const std::vector<std::size_t> lengths = {0, 1, 7, 8, 9, 15, 16, 17, 4095, 65536, 65537};
  // Zeros too: there the zero-padded tail word is the same for several lengths, and only the
  // length folded in at the end tells them apart.
  for (const std::vector<std::byte>& content : {RandomBytes(65537, 4), std::vector<std::byte>(65537)}) {
    std::set<std::uint64_t> hashes;
    for (std::size_t length : lengths) hashes.insert(ChunkHashReference(std::span(content).first(length)));
    EXPECT_EQ(hashes.size(), lengths.size());
  }
}

// Pins the function: these values change only with the algorithm, and then chunk_kernels.cu must
// change with it (tests/gpu/chunk_kernels_gpu_test.cc checks the two agree).
TEST(ChunkHashReferenceTest, ValuesArePinned) {
  std::vector<std::byte> pattern(65537);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  EXPECT_EQ(ChunkHashReference({}), 0x513AD5896A0C95F4ull);
  EXPECT_EQ(ChunkHashReference(std::span(pattern).first(1)), 0x829936F2E1867E23ull);
  EXPECT_EQ(ChunkHashReference(std::span(pattern).first(4096)), 0x3A33CF532A05FFC2ull);
  EXPECT_EQ(ChunkHashReference(pattern), 0x3DC9A887E467C051ull);
}

TEST(ChunkHashReferenceTest, PtxHasBothEntryPoints) {
  const std::string_view ptx(kChunkKernelsPtx);
  ASSERT_GT(ptx.size(), 0u);
  EXPECT_EQ(ptx.size(), kChunkKernelsPtxSize);
  EXPECT_NE(ptx.find(std::string(".entry ") + kHashChunksKernelName), std::string_view::npos);
  EXPECT_NE(ptx.find(std::string(".entry ") + kChunkOpKernelName), std::string_view::npos);
  EXPECT_NE(ptx.find(".entry gpuprof_hash_chunks"), std::string_view::npos);
  EXPECT_NE(ptx.find(".entry gpuprof_chunk_op"), std::string_view::npos);
  // JIT-compiled from the oldest target CUDA 13 supports, so one PTX serves every GPU it runs on.
  EXPECT_NE(ptx.find(".target sm_75"), std::string_view::npos);
}

TEST(ChunkHashReferenceTest, BlockSizeMatchesLanePartition) {
  EXPECT_EQ(kChunkKernelBlockSize, 256u);
  EXPECT_EQ(kChunkHashLanes, 2 * kChunkKernelBlockSize);
}

}  // namespace
}  // namespace gpuprof::device::cuda
