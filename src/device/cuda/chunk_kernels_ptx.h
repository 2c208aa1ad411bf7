// The chunk kernels (chunk_kernels.cu) as PTX text, generated at build time by chunk_kernels.cmake.
// Pass kChunkKernelsPtx to cuModuleLoadData; the entry points are named in chunk_hash_reference.h
// (kHashChunksKernelName, kChunkOpKernelName). Static storage, immutable, any thread.
#pragma once

#include <cstddef>

namespace gpuprof::device::cuda {

// Null-terminated PTX (ISA for compute_75, JIT-compiled by the driver for the actual GPU).
extern const char kChunkKernelsPtx[];
// strlen(kChunkKernelsPtx): the PTX's size without the terminating null.
extern const std::size_t kChunkKernelsPtxSize;

}  // namespace gpuprof::device::cuda
