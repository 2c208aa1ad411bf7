// The per-chunk hash that the device kernels in chunk_kernels.cu compute (rule B1: dirty detection
// on the device), computed on the host. The kernel and this reference must give identical values
// for identical bytes; tests/gpu/chunk_kernels_gpu_test.cc checks that on a GPU and
// tests/unit/device/cuda/chunk_hash_reference_test.cc checks the hash's properties here.
//
// The algorithm (defined here; chunk_kernels.cu repeats it line for line):
//   - The chunk's n bytes are read as little-endian 8-byte words; a ragged tail of n % 8 bytes is
//     zero-padded into one final word. Word w belongs to lane w % 512 (kChunkHashLanes).
//   - Lane l starts at kPrime5 + l * kPrime1 and folds its words in increasing w with the xxh64
//     round acc = rotl(acc + word * kPrime2, 31) * kPrime1, then is finished with murmur3's fmix64.
//   - The 512 finished lanes are reduced by a fixed binary tree of Combine(a, b) =
//     (a ^ rotl(b, 29)) * kPrime1: first adjacent pairs (2t, 2t+1) -> 256 values, then, in each
//     group of 32, strides 16, 8, 4, 2, 1 (v[i] = Combine(v[i], v[i + stride])), then the 8 group
//     results with strides 4, 2, 1 (the device's warp shuffles and shared memory). The hash is
//     fmix64(root ^ (n * kPrime3)).
//   Combine is cheap on purpose: its inputs are already fmix64 outputs, and it only needs to be a
//   bijection in each argument; a full fmix64 per tree node cost measurable throughput on small
//   chunks (bench/README.md).
// The lane partition depends only on word indices, so the value depends on the chunk's bytes and
// length alone: not on the address, alignment, grid or block shape. Each step is a bijection in
// each of its inputs, so any change confined to one word (every single-bit flip) always changes
// the hash; other changes collide with probability about 2^-64.
//
// Not a cryptographic hash, and not base::HashBytes (xxh3): a backend's chunk hashes are only
// compared with hashes from the same backend (device.h).
//
// Thread-safety: ChunkHashReference is a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gpuprof::device::cuda {

// blockDim.x that the kernels require (one thread per two hash lanes).
inline constexpr unsigned kChunkKernelBlockSize = 256;
// Lanes of the hash partition: word w is folded into lane w % kChunkHashLanes.
inline constexpr unsigned kChunkHashLanes = 2 * kChunkKernelBlockSize;

// Entry points in kChunkKernelsPtx (chunk_kernels_ptx.h), for cuModuleGetFunction.
// gpuprof_hash_chunks(const u8* src, u64 bytes, u64 chunk_size, u64* out)
inline constexpr char kHashChunksKernelName[] = "gpuprof_hash_chunks";
// gpuprof_chunk_op(const ChunkOpRegion* regions, u32 region_count, u64 chunks, u64 chunk_size, u32 op,
//                  u64* hashes, u8* flags, u64* counters): chunk_op_abi.h
inline constexpr char kChunkOpKernelName[] = "gpuprof_chunk_op";

// The hash of one chunk (any length, 0 included), bit-exact with gpuprof_hash_chunks's out[i] (and
// gpuprof_chunk_op's hashes[i]) for a chunk with these bytes.
std::uint64_t ChunkHashReference(std::span<const std::byte> chunk) noexcept;

}  // namespace gpuprof::device::cuda
