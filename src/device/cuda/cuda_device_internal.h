// Internals of CudaDevice shared by its files (cuda_device.cc, cuda_device_*.cc). Not a public
// header: only files of this component include it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "device/cuda/cuda_driver.h"
#include "device/cuda/scoped_internal_work.h"
#include "device/device.h"

namespace gpuprof::device::cuda {

// gpuprof's own driver work on this thread, in `context`: invisible to the profile (C1).
class InternalScope {
 public:
  InternalScope(const CudaDriver& driver, CUcontext context) : driver_(driver) {
    pushed_ = driver_.CtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~InternalScope() {
    CUcontext popped = nullptr;
    if (pushed_) driver_.CtxPopCurrent(&popped);
  }
  InternalScope(const InternalScope&) = delete;
  InternalScope& operator=(const InternalScope&) = delete;
  bool ok() const noexcept { return pushed_; }

 private:
  ScopedInternalWork internal_;
  const CudaDriver& driver_;
  bool pushed_ = false;
};

inline std::size_t TierIndex(StorageTier tier) noexcept { return static_cast<std::size_t>(tier); }

inline std::string TierName(StorageTier tier) { return std::string(StorageTierName(tier)); }

// x rounded up to a multiple of m (m > 0); false when that overflows.
inline bool RoundUp(std::uint64_t x, std::uint64_t m, std::uint64_t* out) noexcept {
  const std::uint64_t remainder = x % m;
  if (remainder == 0) {
    *out = x;
    return true;
  }
  if (x > std::numeric_limits<std::uint64_t>::max() - (m - remainder)) return false;
  *out = x + (m - remainder);
  return true;
}

inline std::uint64_t RoundDown(std::uint64_t x, std::uint64_t m) noexcept { return x - x % m; }

inline std::uint64_t ChunksOf(std::uint64_t bytes, std::uint64_t chunk_size) noexcept {
  return bytes / chunk_size + (bytes % chunk_size != 0 ? 1 : 0);
}

inline std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}

}  // namespace gpuprof::device::cuda
