// The parameter block of the gpuprof_chunk_op kernel (chunk_kernels.cu), shared by the kernel and
// CudaDevice::RunChunkOp, which fills it: one definition, so the two cannot drift apart.
//
// Plain types only, no includes: nvcc compiles chunk_kernels.cu to PTX without the C++ standard
// library (chunk_kernels.cmake), and the host side static_asserts the layout it relies on.
//
// gpuprof_chunk_op(const ChunkOpRegion* regions, unsigned region_count, unsigned long long chunks,
//                  unsigned long long chunk_size, unsigned op, unsigned long long* hashes,
//                  unsigned char* flags, unsigned long long* counters)
//   regions[0..region_count): the table, every region non-empty, in table order, with
//     first_chunk the number of chunks of the regions before it (so regions[0].first_chunk == 0
//     and `chunks` is the table's total).
//   op: a ChunkOpCode.
//   hashes: null, or one u64 per chunk of the table: the hash of the chunk's device bytes before
//     anything was written (table order).
//   flags: one byte per chunk of the table; written only for kChunkAccessHost regions under
//     kChunkOpRefreshChanged, kChunkOpRestoreChanged and kChunkOpRestoreDiffering (1: the host
//     must copy the chunk, 0: not). May be null when the table has no such region.
//   counters: kChunkOpCounters u64, zeroed by the caller before the launch, that the kernel adds to
//     atomically: [kChunkOpCopiedChunks] chunks the kernel copied, [kChunkOpCopiedBytes] their
//     bytes, [kChunkOpNextTicket] the work counter its blocks take chunks from (internal).
#pragma once

namespace gpuprof::device::cuda {

// What the kernel does per chunk (device.h's ChunkOp; CudaDevice maps one onto the other).
enum ChunkOpCode : unsigned {
  kChunkOpCapture = 0,           // copy device -> arena; saved := hash
  kChunkOpRefreshChanged = 1,    // hash != saved: copy device -> arena, saved := hash
  kChunkOpRestoreChanged = 2,    // hash != saved: copy arena -> device
  kChunkOpRestoreDiffering = 3,  // kChunkAccessDevice: bytes differ from the copy: copy arena -> device;
                                 // other accesses: as kChunkOpRestoreChanged
  kChunkOpRestoreAll = 4,        // copy arena -> device
  kChunkOpHash = 5,              // nothing written but `hashes`
};

// The counters block (see above).
enum ChunkOpCounter : unsigned {
  kChunkOpCopiedChunks = 0,
  kChunkOpCopiedBytes = 1,
  kChunkOpNextTicket = 2,
  kChunkOpCounters = 4,  // the block's size in u64 (one spare, for 32-byte alignment)
};

// How the kernel reaches a region's arena copy.
enum ChunkAccess : unsigned {
  kChunkAccessDevice = 0,  // `copy` is device memory (the device tier)
  kChunkAccessMapped = 1,  // `copy` is mapped pinned host memory, reached over the bus (zero-copy)
  kChunkAccessHost = 2,    // the kernel cannot reach the copy (pageable host, file): it only hashes,
                           // updates saved hashes and sets `flags`; the host copies afterwards
};

struct ChunkOpRegion {
  unsigned long long base;         // device address of the region's bytes
  unsigned long long size;         // bytes, > 0
  unsigned long long copy;         // device address of the arena copy (0 for kChunkAccessHost)
  unsigned long long saved;        // device address of the saved hash of the region's chunk 0
  unsigned long long first_chunk;  // chunks of the table before this region
  unsigned int access;             // a ChunkAccess
  unsigned int reserved;           // 0
};

}  // namespace gpuprof::device::cuda
