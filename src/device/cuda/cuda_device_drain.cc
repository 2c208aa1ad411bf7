// CudaDevice's bounded drain (R14): cuCtxSynchronize cannot be bounded, so a helper thread calls
// it and Synchronize waits at most its timeout.
#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>

#include "base/clock.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_device_internal.h"

namespace gpuprof::device::cuda {
namespace {

// cuCtxSynchronize is waited for at most this long, whatever the caller asks (and the deadline
// arithmetic of a wait of nanoseconds::max() would overflow).
constexpr std::chrono::hours kLongestDrainWait{24};

}  // namespace

void CudaDevice::DrainState::Run(const std::shared_ptr<DrainState>& state) {
  DrainState& s = *state;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&s] { return s.stop || s.requested > s.started; });
    if (s.stop) return;
    const std::uint64_t covers = s.requested;
    s.started = covers;
    s.drain_started_ns = base::MonotonicNowNs();
    lock.unlock();
    CUresult result = CUDA_SUCCESS;
    {
      InternalScope scope(*s.driver, s.context);
      result = scope.ok() ? s.driver->CtxSynchronize() : CUDA_ERROR_INVALID_CONTEXT;
    }
    lock.lock();
    s.finished = covers;
    s.result = result;
    s.abandoned = false;
    s.cv.notify_all();
  }
}

Status CudaDevice::Synchronize(std::chrono::nanoseconds timeout) {
  // cuCtxSynchronize cannot be bounded: the helper thread calls it, and this waits at most
  // `timeout`. A device that never drains leaves the helper blocked in the driver; until it
  // returns, every call fails at once (R14: the launch is declined, never hangs).
  DrainState& s = *drain_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.abandoned) {
    const std::int64_t running_ms = (base::MonotonicNowNs() - s.drain_started_ns) / 1000000;
    return DeadlineExceededError("device " + std::to_string(ordinal_) +
                                 " has not drained: an earlier drain " + "is still waiting after " +
                                 std::to_string(running_ms) + " ms");
  }
  if (!s.thread_started) {
    try {
      std::thread([state = drain_] { DrainState::Run(state); }).detach();
    } catch (const std::system_error& e) {
      return UnavailableError(std::string("cannot start the drain thread: ") + e.what());
    }
    s.thread_started = true;
  }
  const std::uint64_t ticket = ++s.requested;
  s.cv.notify_all();
  const auto wait = std::min<std::chrono::nanoseconds>(timeout, kLongestDrainWait);
  if (!s.cv.wait_for(lock, wait, [&s, ticket] { return s.finished >= ticket; })) {
    s.abandoned = true;
    return DeadlineExceededError(
        "device " + std::to_string(ordinal_) + " did not drain within " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms");
  }
  return driver_.Check("cuCtxSynchronize", s.result);
}

}  // namespace gpuprof::device::cuda
