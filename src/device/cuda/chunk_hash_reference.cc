#include "device/cuda/chunk_hash_reference.h"

#include <array>
#include <bit>
#include <cstring>

namespace gpuprof::device::cuda {
namespace {

// The GPU reads words little-endian; so does this file, by memcpy.
static_assert(std::endian::native == std::endian::little,
              "ChunkHashReference assumes a little-endian host, like the GPU");

// xxh64's primes; chunk_kernels.cu has the same values.
constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr std::uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr std::uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

constexpr unsigned kWarpSize = 32;
constexpr unsigned kWarps = kChunkKernelBlockSize / kWarpSize;

constexpr std::uint64_t Fmix64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ull;
  k ^= k >> 33;
  return k;
}

constexpr std::uint64_t Round(std::uint64_t acc, std::uint64_t word) {
  return std::rotl(acc + word * kPrime2, 31) * kPrime1;
}

constexpr std::uint64_t Combine(std::uint64_t a, std::uint64_t b) { return (a ^ std::rotl(b, 29)) * kPrime1; }

constexpr std::uint64_t LaneSeed(unsigned lane) { return kPrime5 + lane * kPrime1; }

}  // namespace

std::uint64_t ChunkHashReference(std::span<const std::byte> chunk) noexcept {
  std::array<std::uint64_t, kChunkHashLanes> lanes;
  for (unsigned l = 0; l < kChunkHashLanes; ++l) lanes[l] = LaneSeed(l);

  const std::size_t full_words = chunk.size() / 8;
  for (std::size_t w = 0; w < full_words; ++w) {
    std::uint64_t word;
    std::memcpy(&word, chunk.data() + 8 * w, sizeof(word));
    std::uint64_t& lane = lanes[w % kChunkHashLanes];
    lane = Round(lane, word);
  }
  if (const std::size_t tail = chunk.size() % 8; tail != 0) {
    std::uint64_t word = 0;
    std::memcpy(&word, chunk.data() + 8 * full_words, tail);
    std::uint64_t& lane = lanes[full_words % kChunkHashLanes];
    lane = Round(lane, word);
  }

  // The device's reduction, step by step: thread t's two lanes, then the warp shuffles (each
  // step reads values from before the step; only v[i] with i < stride are written, so in place is
  // the same), then warp 0 over the per-warp results in shared memory.
  std::array<std::uint64_t, kChunkKernelBlockSize> v;
  for (unsigned t = 0; t < kChunkKernelBlockSize; ++t) {
    v[t] = Combine(Fmix64(lanes[2 * t]), Fmix64(lanes[2 * t + 1]));
  }
  std::array<std::uint64_t, kWarps> warp_result;
  for (unsigned warp = 0; warp < kWarps; ++warp) {
    std::uint64_t* x = v.data() + warp * kWarpSize;
    for (unsigned stride = kWarpSize / 2; stride > 0; stride /= 2) {
      for (unsigned i = 0; i < stride; ++i) x[i] = Combine(x[i], x[i + stride]);
    }
    warp_result[warp] = x[0];
  }
  for (unsigned stride = kWarps / 2; stride > 0; stride /= 2) {
    for (unsigned i = 0; i < stride; ++i) warp_result[i] = Combine(warp_result[i], warp_result[i + stride]);
  }
  return Fmix64(warp_result[0] ^ (static_cast<std::uint64_t>(chunk.size()) * kPrime3));
}

}  // namespace gpuprof::device::cuda
