// The device work of replay_device_benchmark: filling its allocations with a known pattern and the
// "dirty kernel" that rewrites a chosen set of chunks between snapshots and restores. Compiled by
// nvcc (replay_device_benchmark_kernels.cu); the benchmark itself is plain C++ and calls these.
//
// Every 16-byte word at device address A holds Pattern(A / 16, epoch): the fill writes epoch 0,
// each rewrite a new epoch, so a rewritten chunk always differs from every earlier state of it and
// the snapshot's copy of it (dirty detection must find exactly the rewritten chunks).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gpuprof::bench {

// A byte range of device memory; address and bytes are multiples of 16.
struct DeviceSpan {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
};

// Writes epoch 0's pattern over [address, address + bytes) on `stream` (asynchronous).
cudaError_t LaunchFill(std::uint64_t address, std::uint64_t bytes, cudaStream_t stream);

// One kernel launch, one block per span: rewrites every span of `spans` (a device array of `count`
// entries) with `epoch`'s pattern, on `stream` (asynchronous). `epoch` must be > 0.
cudaError_t LaunchRewrite(const DeviceSpan* spans, std::uint32_t count, std::uint64_t epoch,
                          cudaStream_t stream);

}  // namespace gpuprof::bench
