// Device-side snapshot work for replay (REPLAY_SPEC rules B1-B3): per-chunk hashes of device
// memory, and the one batched operation over a snapshot table that captures, refreshes, restores
// or hashes every chunk of every region in a single launch.
//
// Built to PTX only (chunk_kernels.cmake: nvcc -ptx -arch=compute_75) and embedded as
// kChunkKernelsPtx; CudaDevice loads it with cuModuleLoadData and launches with cuLaunchKernel.
// So: plain extern "C" kernels, no CUDA runtime API, no includes beyond what nvcc provides and the
// plain-C parameter block chunk_op_abi.h.
//
// Kernels (bytes, chunk_size are byte counts; chunk i is [i*chunk_size, min(bytes, (i+1)*chunk_size)),
// so there are ceil(bytes / chunk_size) chunks and the last may be short; chunk_size 0 does nothing):
//   gpuprof_hash_chunks(const unsigned char* src, unsigned long long bytes,
//                       unsigned long long chunk_size, unsigned long long* out)
//     out[i] = the 64-bit hash of chunk i of src.
//   gpuprof_chunk_op(const ChunkOpRegion* regions, unsigned region_count, unsigned long long chunks,
//                    unsigned long long chunk_size, unsigned op, unsigned long long* hashes,
//                    unsigned char* flags, unsigned long long* counters)
//     `op` over every chunk of the table `regions` (chunk_op_abi.h states the parameters). Chunks
//     are numbered over the whole table; each block finds its chunk's region by binary search over
//     first_chunk, so the launch does not depend on how the bytes are split into regions.
//
// Launch contract: blockDim = (256, 1, 1) (kChunkKernelBlockSize), no dynamic shared memory, any
// gridDim.x >= 1 (gpuprof_hash_chunks: each block walks chunks blockIdx.x, blockIdx.x + gridDim.x,
// ...; gpuprof_chunk_op: blocks take chunks from a work counter, see there). Best: min(chunks,
// SMs x resident blocks per SM from cuOccupancyMaxActiveBlocksPerMultiprocessor): small chunks are
// bound by how many are in flight, so a loop over resident blocks beat one block per chunk for them
// and tied for large ones (bench/README.md has the figures). With another block size the kernels
// return without writing anything.
// Any address alignment works; 16-byte-aligned chunk starts take the vector paths.
//
// The hash is defined in chunk_hash_reference.h, and ChunkHashReference (chunk_hash_reference.cc)
// must produce identical values: the same 512-lane word partition, the same mixing, the same
// combine tree. Both kernels hash through BlockChunkHash, so they agree with each other by
// construction. A change here is a change there (tests/gpu/chunk_kernels_gpu_test.cc compares
// them; the unit test pins reference values).

#include "chunk_op_abi.h"

namespace {

using gpuprof::device::cuda::ChunkOpRegion;

// xxh64's primes (chunk_hash_reference.cc has the same values).
constexpr unsigned long long kPrime1 = 0x9E3779B185EBCA87ull;
constexpr unsigned long long kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr unsigned long long kPrime3 = 0x165667B19E3779F9ull;
constexpr unsigned long long kPrime5 = 0x27D4EB2F165667C5ull;

constexpr unsigned kBlockSize = 256;
constexpr unsigned kWarpSize = 32;
constexpr unsigned kWarps = kBlockSize / kWarpSize;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
// 16-byte units each thread loads before using them: loads in flight hide memory latency.
constexpr unsigned kUnroll = 4;
// gpuprof_chunk_op hands out work in tickets of at least this many bytes (one chunk if larger), so
// that small chunks do not make the ticket counter the bottleneck.
constexpr unsigned long long kTicketBytes = 256 * 1024;

__device__ __forceinline__ unsigned long long Rotl(unsigned long long x, int r) {
  return (x << r) | (x >> (64 - r));
}

__device__ __forceinline__ unsigned long long Fmix64(unsigned long long k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ull;
  k ^= k >> 33;
  return k;
}

__device__ __forceinline__ unsigned long long Round(unsigned long long acc, unsigned long long word) {
  return Rotl(acc + word * kPrime2, 31) * kPrime1;
}

__device__ __forceinline__ unsigned long long Combine(unsigned long long a, unsigned long long b) {
  return (a ^ Rotl(b, 29)) * kPrime1;
}

__device__ __forceinline__ unsigned long long LaneSeed(unsigned lane) { return kPrime5 + lane * kPrime1; }

// Little-endian word of `count` (1..8) bytes at p, zero-padded: the tail word and the unaligned path.
__device__ __forceinline__ unsigned long long LoadBytes(const unsigned char* p, unsigned count) {
  unsigned long long word = 0;
  for (unsigned i = 0; i < count; ++i) word |= static_cast<unsigned long long>(p[i]) << (8 * i);
  return word;
}

// Number of chunks; written so that bytes + chunk_size cannot overflow.
__device__ __forceinline__ unsigned long long ChunkCount(unsigned long long bytes,
                                                         unsigned long long chunk_size) {
  return bytes / chunk_size + (bytes % chunk_size != 0 ? 1 : 0);
}

__device__ __forceinline__ unsigned long long Address(const void* p) {
  return reinterpret_cast<unsigned long long>(p);
}

// The hash of the `length` bytes at p (chunk_hash_reference.h), computed by the whole block and
// returned to every thread of it. Every thread of the block must call it (it synchronizes).
//
// Thread t owns lanes 2t and 2t+1, i.e. the two words of every 16-byte unit u with u % 256 == t,
// which is what lets it load whole 16-byte vectors and still follow the shape-independent
// partition.
//
// kCopy: the 16-byte vectors loaded for the hash are also stored to `copy_to` (16-byte aligned, like
// p), so a capture reads its source once; returns false in `copied` when the alignment did not allow
// it (the caller copies then).
template <bool kCopy>
__device__ __forceinline__ unsigned long long BlockChunkHashImpl(const unsigned char* p,
                                                                 unsigned long long length,
                                                                 unsigned char* copy_to, bool* copied) {
  __shared__ unsigned long long warp_results[kWarps];
  __shared__ unsigned long long block_result;
  const unsigned t = threadIdx.x;
  const unsigned lane_in_warp = t % kWarpSize;
  const unsigned warp = t / kWarpSize;
  const unsigned long long units = length / 16;  // whole 16-byte units

  unsigned long long acc0 = LaneSeed(2 * t);
  unsigned long long acc1 = LaneSeed(2 * t + 1);
  unsigned long long u = t;
  const unsigned long long address = Address(p);
  const bool store = kCopy && address % 16 == 0 && Address(copy_to) % 16 == 0;
  if (kCopy) *copied = store;
  if (address % 16 == 0) {
    const ulonglong2* v = reinterpret_cast<const ulonglong2*>(p);
    ulonglong2* out = reinterpret_cast<ulonglong2*>(copy_to);
    // Streaming loads (evict first): the hashed memory is not reused by this kernel, and the
    // application's L2 contents should suffer as little as possible.
    for (; u + (kUnroll - 1) * kBlockSize < units; u += kUnroll * kBlockSize) {
      ulonglong2 x[kUnroll];
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) x[k] = __ldcs(v + u + k * kBlockSize);
      if (kCopy && store) {
#pragma unroll
        for (unsigned k = 0; k < kUnroll; ++k) __stcs(out + u + k * kBlockSize, x[k]);
      }
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) {
        acc0 = Round(acc0, x[k].x);
        acc1 = Round(acc1, x[k].y);
      }
    }
    for (; u < units; u += kBlockSize) {
      const ulonglong2 x = __ldcs(v + u);
      if (kCopy && store) __stcs(out + u, x);
      acc0 = Round(acc0, x.x);
      acc1 = Round(acc1, x.y);
    }
  } else if (address % 8 == 0) {
    const unsigned long long* w = reinterpret_cast<const unsigned long long*>(p);
    for (; u < units; u += kBlockSize) {
      acc0 = Round(acc0, __ldcs(w + 2 * u));
      acc1 = Round(acc1, __ldcs(w + 2 * u + 1));
    }
  } else {
    for (; u < units; u += kBlockSize) {
      acc0 = Round(acc0, LoadBytes(p + 16 * u, 8));
      acc1 = Round(acc1, LoadBytes(p + 16 * u + 8, 8));
    }
  }
  // The last 0..15 bytes: words 2*units (lane 2t) and 2*units+1 (lane 2t+1) of thread
  // units % 256, each the last word of its lane.
  const unsigned remainder = static_cast<unsigned>(length - 16 * units);
  if (kCopy && store) {
    for (unsigned i = t; i < remainder; i += kBlockSize) copy_to[16 * units + i] = p[16 * units + i];
  }
  if (remainder != 0 && t == units % kBlockSize) {
    const unsigned char* tail = p + 16 * units;
    acc0 = Round(acc0, LoadBytes(tail, remainder < 8 ? remainder : 8));
    if (remainder > 8) acc1 = Round(acc1, LoadBytes(tail + 8, remainder - 8));
  }

  // Fixed reduction tree (mirrored by ChunkHashReference): strides 16..1 in each warp, then
  // strides 4, 2, 1 over the warps' results.
  unsigned long long value = Combine(Fmix64(acc0), Fmix64(acc1));
#pragma unroll
  for (unsigned stride = kWarpSize / 2; stride > 0; stride /= 2) {
    value = Combine(value, __shfl_down_sync(kFullMask, value, stride));
  }
  if (lane_in_warp == 0) warp_results[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = warp_results[lane_in_warp % kWarps];
#pragma unroll
    for (unsigned stride = kWarps / 2; stride > 0; stride /= 2) {
      value = Combine(value, __shfl_down_sync(kFullMask, value, stride));
    }
    if (lane_in_warp == 0) block_result = Fmix64(value ^ (length * kPrime3));
  }
  __syncthreads();
  // No barrier needed before the next call: its first shared write (warp_results) comes after this
  // call's second barrier, which warp 0 passes only after reading warp_results; and block_result
  // is written again only after the next call's first barrier, which every thread reaches only
  // after reading it here.
  return block_result;
}

__device__ __forceinline__ unsigned long long BlockChunkHash(const unsigned char* p,
                                                             unsigned long long length) {
  return BlockChunkHashImpl<false>(p, length, nullptr, nullptr);
}

// True in every thread when the `length` bytes at a and b differ in any byte (exact). Every thread
// of the block must call it (it synchronizes).
__device__ __forceinline__ bool BlockBytesDiffer(const unsigned char* a, const unsigned char* b,
                                                 unsigned long long length) {
  const unsigned t = threadIdx.x;
  const unsigned long long units = length / 16;
  bool differs = false;
  unsigned long long u = t;
  const unsigned long long addresses = Address(a) | Address(b);
  if (addresses % 16 == 0) {
    const ulonglong2* va = reinterpret_cast<const ulonglong2*>(a);
    const ulonglong2* vb = reinterpret_cast<const ulonglong2*>(b);
    for (; u + (kUnroll - 1) * kBlockSize < units; u += kUnroll * kBlockSize) {
      ulonglong2 xa[kUnroll];
      ulonglong2 xb[kUnroll];
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) {
        xa[k] = __ldcs(va + u + k * kBlockSize);
        xb[k] = __ldcs(vb + u + k * kBlockSize);
      }
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) differs |= ((xa[k].x ^ xb[k].x) | (xa[k].y ^ xb[k].y)) != 0;
    }
    for (; u < units; u += kBlockSize) {
      const ulonglong2 xa = __ldcs(va + u);
      const ulonglong2 xb = __ldcs(vb + u);
      differs |= ((xa.x ^ xb.x) | (xa.y ^ xb.y)) != 0;
    }
  } else if (addresses % 8 == 0) {
    const unsigned long long* wa = reinterpret_cast<const unsigned long long*>(a);
    const unsigned long long* wb = reinterpret_cast<const unsigned long long*>(b);
    for (; u < units; u += kBlockSize) {
      differs |= ((__ldcs(wa + 2 * u) ^ __ldcs(wb + 2 * u)) |
                  (__ldcs(wa + 2 * u + 1) ^ __ldcs(wb + 2 * u + 1))) != 0;
    }
  } else {
    for (; u < units; u += kBlockSize) {
      for (unsigned k = 0; k < 16; ++k) differs |= a[16 * u + k] != b[16 * u + k];
    }
  }
  // The last 0..15 bytes, one per thread.
  const unsigned long long tail_byte = 16 * units + t;
  if (tail_byte < length) differs |= a[tail_byte] != b[tail_byte];
  return __syncthreads_or(differs ? 1 : 0) != 0;
}

// Copies `length` bytes from src to dst with the whole block: 16-byte vectors when both are
// 16-byte aligned, 8-byte words when both are 8-byte aligned, bytes otherwise. Streaming stores:
// neither the arena nor the restored bytes are read again by this kernel. No barrier: the caller
// synchronizes before anything reads dst.
__device__ __forceinline__ void BlockCopy(unsigned char* dst, const unsigned char* src,
                                          unsigned long long length) {
  const unsigned t = threadIdx.x;
  const unsigned long long addresses = Address(dst) | Address(src);
  unsigned long long done = 0;  // bytes copied by the wide paths
  if (addresses % 16 == 0) {
    const unsigned long long units = length / 16;
    const ulonglong2* s = reinterpret_cast<const ulonglong2*>(src);
    ulonglong2* d = reinterpret_cast<ulonglong2*>(dst);
    unsigned long long u = t;
    for (; u + (kUnroll - 1) * kBlockSize < units; u += kUnroll * kBlockSize) {
      ulonglong2 x[kUnroll];
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) x[k] = __ldcs(s + u + k * kBlockSize);
#pragma unroll
      for (unsigned k = 0; k < kUnroll; ++k) __stcs(d + u + k * kBlockSize, x[k]);
    }
    for (; u < units; u += kBlockSize) __stcs(d + u, __ldcs(s + u));
    done = 16 * units;
  } else if (addresses % 8 == 0) {
    const unsigned long long words = length / 8;
    const unsigned long long* s = reinterpret_cast<const unsigned long long*>(src);
    unsigned long long* d = reinterpret_cast<unsigned long long*>(dst);
    for (unsigned long long w = t; w < words; w += kBlockSize) __stcs(d + w, __ldcs(s + w));
    done = 8 * words;
  }
  for (unsigned long long i = done + t; i < length; i += kBlockSize) dst[i] = src[i];
}

// The region of `regions` that holds table chunk `chunk`: the last one whose first_chunk <= chunk
// (regions are non-empty and in first_chunk order, regions[0].first_chunk == 0). Every thread of
// a block looks up the same chunk, so the loads are broadcasts.
__device__ __forceinline__ unsigned FindRegion(const ChunkOpRegion* regions, unsigned region_count,
                                               unsigned long long chunk) {
  unsigned lo = 0;
  unsigned hi =
      region_count;  // regions[lo].first_chunk <= chunk < regions[hi].first_chunk (hi == count: end)
  while (hi - lo > 1) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (regions[mid].first_chunk <= chunk) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Where table chunk `chunk` lives: its region's bytes and copy, its saved-hash slot, its length.
struct ChunkPlace {
  unsigned char* current;     // the device bytes
  unsigned char* copy;        // the arena copy (null for kChunkAccessHost)
  unsigned long long* saved;  // the saved hash of its slot
  unsigned long long length;  // 0: a malformed table (a chunk past its region's end)
  unsigned access;            // the region's ChunkAccess
};

// `hint`: the region of the block's previous chunk (consecutive chunks mostly share a region, or
// are in the next one), updated; a miss searches.
__device__ __forceinline__ ChunkPlace Locate(const ChunkOpRegion* regions, unsigned region_count,
                                             unsigned long long chunk, unsigned long long chunk_size,
                                             unsigned* hint) {
  unsigned r = *hint;
  const auto holds = [&](unsigned i) {
    return i < region_count && regions[i].first_chunk <= chunk &&
           (i + 1 == region_count || chunk < regions[i + 1].first_chunk);
  };
  if (!holds(r)) r = holds(r + 1) ? r + 1 : FindRegion(regions, region_count, chunk);
  *hint = r;
  const ChunkOpRegion& region = regions[r];
  const unsigned long long index = chunk - region.first_chunk;  // the chunk within its region
  const unsigned long long begin = index * chunk_size;
  ChunkPlace place;
  place.access = region.access;
  place.length =
      begin >= region.size ? 0 : (region.size - begin < chunk_size ? region.size - begin : chunk_size);
  place.current = reinterpret_cast<unsigned char*>(region.base + begin);
  place.copy = region.access != gpuprof::device::cuda::kChunkAccessHost
                   ? reinterpret_cast<unsigned char*>(region.copy + begin)
                   : nullptr;
  place.saved = reinterpret_cast<unsigned long long*>(region.saved) + index;
  return place;
}

// Chunk `chunk` of the table, by the whole block. Every decision (hash it? copy it? which way?)
// depends only on values all threads of the block share (the region, the op, the block-wide hash
// or compare), so the block stays converged and every thread takes the same barriers. Thread 0
// alone reads the chunk's saved hash and compares; the barrier that broadcasts its verdict
// (__syncthreads_or) also orders that read before thread 0 replaces the saved hash.
// Not inlined: inlined into the ticket loop, its values and the loop's overflow 64 registers
// (ptxas -v for sm_90 spilled); as a call, neither spills, for a call per chunk.
__device__ __noinline__ void ProcessChunk(const ChunkOpRegion* regions, unsigned region_count,
                                          unsigned long long chunk, unsigned long long chunk_size,
                                          unsigned op, unsigned long long* hashes, unsigned char* flags,
                                          unsigned long long* counters, unsigned* hint) {
  using namespace gpuprof::device::cuda;
  const unsigned t = threadIdx.x;
  const ChunkPlace place = Locate(regions, region_count, chunk, chunk_size, hint);
  if (place.length == 0) return;  // a malformed table: never built by CudaDevice

  // kRestoreAll hashes only when asked to; kRestoreDiffering compares device-tier bytes directly.
  const bool compare_bytes = op == kChunkOpRestoreDiffering && place.access == kChunkAccessDevice;
  const bool needs_hash = hashes != nullptr || (op != kChunkOpRestoreAll && !compare_bytes);
  // A capture into memory the kernel reaches stores the vectors it hashes: one read of the source.
  bool captured = false;
  const unsigned long long hash =
      op == kChunkOpCapture && place.access != kChunkAccessHost
          ? BlockChunkHashImpl<true>(place.current, place.length, place.copy, &captured)
          : (needs_hash ? BlockChunkHash(place.current, place.length) : 0);
  if (hashes != nullptr && t == 0) hashes[chunk] = hash;

  bool copy_chunk = false;
  bool to_arena = false;  // device -> arena (capture, refresh); else arena -> device
  switch (op) {
    case kChunkOpCapture:
      copy_chunk = true;
      to_arena = true;
      if (t == 0) *place.saved = hash;
      break;
    case kChunkOpRefreshChanged:
      copy_chunk = __syncthreads_or(t == 0 && hash != *place.saved) != 0;
      to_arena = true;
      if (copy_chunk && t == 0) *place.saved = hash;
      break;
    case kChunkOpRestoreChanged: copy_chunk = __syncthreads_or(t == 0 && hash != *place.saved) != 0; break;
    case kChunkOpRestoreDiffering:
      copy_chunk = compare_bytes ? BlockBytesDiffer(place.current, place.copy, place.length)
                                 : __syncthreads_or(t == 0 && hash != *place.saved) != 0;
      break;
    case kChunkOpRestoreAll: copy_chunk = true; break;
    default: break;  // kChunkOpHash
  }

  if (place.access == kChunkAccessHost) {
    // The kernel cannot reach the copy: the host copies this region's chunks after the launch, and
    // needs to know which only for the ops that choose (capture and restore-all copy every chunk).
    if (flags != nullptr && t == 0 &&
        (op == kChunkOpRefreshChanged || op == kChunkOpRestoreChanged || op == kChunkOpRestoreDiffering)) {
      flags[chunk] = copy_chunk ? 1 : 0;
    }
    return;
  }
  if (!copy_chunk) return;
  if (captured) {
    // Written while hashing.
  } else if (to_arena) {
    BlockCopy(place.copy, place.current, place.length);
  } else {
    BlockCopy(place.current, place.copy, place.length);
  }
  if (t == 0) {
    atomicAdd(counters + kChunkOpCopiedChunks, 1ull);
    atomicAdd(counters + kChunkOpCopiedBytes, place.length);
  }
}

}  // namespace

// 8 blocks per SM (32 registers): more chunks in flight, which small chunks are bound by (faster
// for 4 and 16 KiB chunks, the same for 64 KiB: bench/README.md).
extern "C" __global__ void __launch_bounds__(kBlockSize, 8)
    gpuprof_hash_chunks(const unsigned char* src, unsigned long long bytes, unsigned long long chunk_size,
                        unsigned long long* out) {
  if (blockDim.x != kBlockSize || blockDim.y != 1 || blockDim.z != 1 || chunk_size == 0) return;
  const unsigned long long chunks = ChunkCount(bytes, chunk_size);
  for (unsigned long long chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const unsigned long long begin = chunk * chunk_size;
    const unsigned long long length = bytes - begin < chunk_size ? bytes - begin : chunk_size;
    const unsigned long long hash = BlockChunkHash(src + begin, length);
    if (threadIdx.x == 0) out[chunk] = hash;
  }
}

// Blocks take the table's chunks from a shared ticket counter (counters[kChunkOpNextTicket]), a
// ticket being kTicketBytes' worth of consecutive chunks, rather than by a fixed grid stride: the
// chunks to copy cost more than the others, and a fixed stride that shares a factor with the
// pattern of changed chunks (every 16th chunk changed, and 16 dividing 4 x 132 blocks) would give
// all the copies to a few blocks. Thread 0 asks for the next ticket as the block starts on the
// current one, and publishes it at the end, so the atomic's latency hides behind the work.
// 4 blocks per SM (64 registers): the copy and compare paths keep more values live than the hash
// alone, and at 32 registers (8 blocks, as gpuprof_hash_chunks) ptxas spills; for 64 KiB chunks
// 4 and 8 resident blocks hash equally fast (bench/README.md).
extern "C" __global__ void __launch_bounds__(kBlockSize, 4)
    gpuprof_chunk_op(const ChunkOpRegion* regions, unsigned region_count, unsigned long long chunks,
                     unsigned long long chunk_size, unsigned op, unsigned long long* hashes,
                     unsigned char* flags, unsigned long long* counters) {
  using namespace gpuprof::device::cuda;
  if (blockDim.x != kBlockSize || blockDim.y != 1 || blockDim.z != 1 || chunk_size == 0 ||
      region_count == 0) {
    return;
  }
  __shared__ unsigned long long tickets[2];  // this ticket and the next, alternately
  const unsigned t = threadIdx.x;
  const unsigned long long per_ticket = chunk_size >= kTicketBytes ? 1 : kTicketBytes / chunk_size;
  const unsigned long long ticket_count = ChunkCount(chunks, per_ticket);
  unsigned slot = 0;
  unsigned hint = 0;  // the region of the previous chunk (Locate)
  if (t == 0) tickets[0] = atomicAdd(counters + kChunkOpNextTicket, 1ull);
  __syncthreads();
  for (;;) {
    const unsigned long long ticket = tickets[slot];
    if (ticket >= ticket_count) break;  // the same value in every thread: the block leaves together
    unsigned long long next = 0;
    if (t == 0) next = atomicAdd(counters + kChunkOpNextTicket, 1ull);  // used only at the end
    const unsigned long long first = ticket * per_ticket;
    const unsigned long long end = chunks - first < per_ticket ? chunks : first + per_ticket;
    for (unsigned long long chunk = first; chunk < end; ++chunk) {
      ProcessChunk(regions, region_count, chunk, chunk_size, op, hashes, flags, counters, &hint);
    }
    // Every thread has read tickets[slot] above before anyone passes this barrier, so the slot is
    // free for the ticket after next.
    if (t == 0) tickets[slot ^ 1] = next;
    __syncthreads();
    slot ^= 1;
  }
}
