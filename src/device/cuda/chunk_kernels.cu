// Device-side dirty detection for replay (REPLAY_SPEC rule B1): per-chunk hashes of device memory
// and exact chunk-by-chunk comparison against a device-resident snapshot.
//
// Built to PTX only (chunk_kernels.cmake: nvcc -ptx -arch=compute_75) and embedded as
// kChunkKernelsPtx; CudaDevice loads it with cuModuleLoadData and launches with cuLaunchKernel.
// So: plain extern "C" kernels, no CUDA runtime API, no includes beyond what nvcc provides.
//
// Kernels (bytes, chunk_size are byte counts; chunk i is [i*chunk_size, min(bytes, (i+1)*chunk_size)),
// so there are ceil(bytes / chunk_size) chunks and the last may be short; chunk_size 0 does nothing):
//   gpuprof_hash_chunks(const unsigned char* src, unsigned long long bytes,
//                       unsigned long long chunk_size, unsigned long long* out)
//     out[i] = the 64-bit hash of chunk i of src.
//   gpuprof_compare_chunks(const unsigned char* a, const unsigned char* b, unsigned long long bytes,
//                          unsigned long long chunk_size, unsigned int* dirty)
//     dirty[i] = 1 when chunk i of a and b differ in any byte, else 0 (exact).
//
// Launch contract: blockDim = (256, 1, 1) (kChunkKernelBlockSize), no dynamic shared memory, any
// gridDim.x >= 1 (each block walks chunks blockIdx.x, blockIdx.x + gridDim.x, ...). Best: min(chunks,
// SMs x resident blocks per SM from cuOccupancyMaxActiveBlocksPerMultiprocessor): small chunks are
// bound by how many are in flight, so a grid-stride loop over resident blocks beat one block per
// chunk for them and tied for large ones (bench/README.md has the figures). With another block
// size the kernels return without writing anything.
// Any src/a/b alignment works; 16-byte-aligned chunk starts take the vector path.
//
// The hash is defined in chunk_hash_reference.h, and ChunkHashReference (chunk_hash_reference.cc)
// must produce identical values: the same 512-lane word partition, the same mixing, the same
// combine tree. A change here is a change there (tests/gpu/chunk_kernels_gpu_test.cc compares them;
// the unit test pins reference values).

namespace {

// xxh64's primes (chunk_hash_reference.cc has the same values).
constexpr unsigned long long kPrime1 = 0x9E3779B185EBCA87ull;
constexpr unsigned long long kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr unsigned long long kPrime3 = 0x165667B19E3779F9ull;
constexpr unsigned long long kPrime5 = 0x27D4EB2F165667C5ull;

constexpr unsigned kBlockSize = 256;
constexpr unsigned kWarpSize = 32;
constexpr unsigned kWarps = kBlockSize / kWarpSize;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
// 16-byte units each thread loads before mixing them: loads in flight hide memory latency.
constexpr unsigned kUnroll = 4;

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

}  // namespace

// Thread t owns lanes 2t and 2t+1, i.e. the two words of every 16-byte unit u with u % 256 == t,
// which is what lets it load whole 16-byte vectors and still follow the shape-independent
// partition. 8 blocks per SM (32 registers): more chunks in flight, which small chunks are bound by
// (faster for 4 and 16 KiB chunks, the same for 64 KiB: bench/README.md).
extern "C" __global__ void __launch_bounds__(kBlockSize, 8)
    gpuprof_hash_chunks(const unsigned char* src, unsigned long long bytes, unsigned long long chunk_size,
                        unsigned long long* out) {
  if (blockDim.x != kBlockSize || blockDim.y != 1 || blockDim.z != 1 || chunk_size == 0) return;
  __shared__ unsigned long long warp_results[kWarps];
  const unsigned t = threadIdx.x;
  const unsigned lane_in_warp = t % kWarpSize;
  const unsigned warp = t / kWarpSize;
  const unsigned long long chunks = ChunkCount(bytes, chunk_size);

  for (unsigned long long chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const unsigned long long begin = chunk * chunk_size;
    const unsigned long long length = bytes - begin < chunk_size ? bytes - begin : chunk_size;
    const unsigned char* p = src + begin;
    const unsigned long long units = length / 16;  // whole 16-byte units

    unsigned long long acc0 = LaneSeed(2 * t);
    unsigned long long acc1 = LaneSeed(2 * t + 1);
    unsigned long long u = t;
    const unsigned long long address = reinterpret_cast<unsigned long long>(p);
    if (address % 16 == 0) {
      const ulonglong2* v = reinterpret_cast<const ulonglong2*>(p);
      // Streaming loads (evict first): the hashed memory is not reused by this kernel, and the
      // application's L2 contents should suffer as little as possible.
      for (; u + (kUnroll - 1) * kBlockSize < units; u += kUnroll * kBlockSize) {
        ulonglong2 x[kUnroll];
#pragma unroll
        for (unsigned k = 0; k < kUnroll; ++k) x[k] = __ldcs(v + u + k * kBlockSize);
#pragma unroll
        for (unsigned k = 0; k < kUnroll; ++k) {
          acc0 = Round(acc0, x[k].x);
          acc1 = Round(acc1, x[k].y);
        }
      }
      for (; u < units; u += kBlockSize) {
        const ulonglong2 x = __ldcs(v + u);
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
      if (lane_in_warp == 0) out[chunk] = Fmix64(value ^ (length * kPrime3));
    }
    // warp_results is rewritten by the next chunk.
    __syncthreads();
  }
}

// Exact comparison: every thread compares its 16-byte units, then the block ORs the results.
extern "C" __global__ void __launch_bounds__(kBlockSize)
    gpuprof_compare_chunks(const unsigned char* a, const unsigned char* b, unsigned long long bytes,
                           unsigned long long chunk_size, unsigned int* dirty) {
  if (blockDim.x != kBlockSize || blockDim.y != 1 || blockDim.z != 1 || chunk_size == 0) return;
  const unsigned t = threadIdx.x;
  const unsigned long long chunks = ChunkCount(bytes, chunk_size);

  for (unsigned long long chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const unsigned long long begin = chunk * chunk_size;
    const unsigned long long length = bytes - begin < chunk_size ? bytes - begin : chunk_size;
    const unsigned char* pa = a + begin;
    const unsigned char* pb = b + begin;
    const unsigned long long units = length / 16;

    bool differs = false;
    unsigned long long u = t;
    const unsigned long long addresses =
        reinterpret_cast<unsigned long long>(pa) | reinterpret_cast<unsigned long long>(pb);
    if (addresses % 16 == 0) {
      const ulonglong2* va = reinterpret_cast<const ulonglong2*>(pa);
      const ulonglong2* vb = reinterpret_cast<const ulonglong2*>(pb);
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
      const unsigned long long* wa = reinterpret_cast<const unsigned long long*>(pa);
      const unsigned long long* wb = reinterpret_cast<const unsigned long long*>(pb);
      for (; u < units; u += kBlockSize) {
        differs |= ((__ldcs(wa + 2 * u) ^ __ldcs(wb + 2 * u)) |
                    (__ldcs(wa + 2 * u + 1) ^ __ldcs(wb + 2 * u + 1))) != 0;
      }
    } else {
      for (; u < units; u += kBlockSize) {
        for (unsigned k = 0; k < 16; ++k) differs |= pa[16 * u + k] != pb[16 * u + k];
      }
    }
    // The last 0..15 bytes, one per thread.
    const unsigned long long tail_byte = 16 * units + t;
    if (tail_byte < length) differs |= pa[tail_byte] != pb[tail_byte];

    // __syncthreads_or also keeps the block in step between chunks.
    const int any = __syncthreads_or(differs ? 1 : 0);
    if (t == 0) dirty[chunk] = any != 0 ? 1u : 0u;
  }
}
