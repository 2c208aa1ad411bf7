// Internals of CudaDevice shared by its files (cuda_device.cc, cuda_device_*.cc). Not a public
// header: only files of this component include it.
#pragma once

#include <cuda.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device/cuda/cuda_device.h"
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

inline std::uint64_t SaturatingSub(std::uint64_t a, std::uint64_t b) noexcept { return a > b ? a - b : 0; }

// Requests from Synchronize to the helper thread that calls cuCtxSynchronize. A drain started
// after request r was made covers it: `finished >= r` means every piece of work queued before
// request r was made has completed.
struct CudaDevice::DrainState {
  const CudaDriver* driver = nullptr;
  CUcontext context = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  bool thread_started = false;     // guarded by mu, as is everything below
  bool stop = false;               // the device is gone: the helper exits after its current drain
  std::uint64_t requested = 0;     // requests made
  std::uint64_t started = 0;       // requests covered by the drain in progress (or the last one)
  std::uint64_t finished = 0;      // requests covered by finished drains
  CUresult result = CUDA_SUCCESS;  // of the last finished drain
  bool abandoned = false;          // a caller stopped waiting for a drain that has not finished
  std::int64_t drain_started_ns = 0;

  // The helper thread: drains whenever a request is newer than the last drain, until `stop`.
  static void Run(const std::shared_ptr<DrainState>& state);
};

// ReissueRange's resources, made as ranges need them and kept for the device's lifetime (a range
// is re-issued once per pass: making streams and events per pass would cost more than the pass).
struct CudaDevice::RangeResources {
  std::mutex mu;                                       // one re-issue at a time; guards everything below
  std::unordered_map<StreamId, CUstream> streams;      // the application's stream -> gpuprof's
  std::unordered_map<CUstream, CUevent> stream_marks;  // per gpuprof stream: the legacy-stream order
  std::unordered_map<std::uint64_t, CUevent> events;   // the application's event -> gpuprof's
  std::vector<CUevent> timing;                         // timing events, 2 per launch, plus begin/ends
  void* scratch = nullptr;                             // pinned: copies into host memory land here
  std::uint64_t scratch_bytes = 0;
};

}  // namespace gpuprof::device::cuda
