// Stream: a FIFO of ops served by one worker thread.
#include <exception>
#include <utility>

#include "base/logging.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {

Stream::Stream(StreamId id, int device) : id_(id), device_(device), worker_([this] { Run(); }) {}

Stream::~Stream() { Shutdown(); }

void Stream::Enqueue(Op op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  work_cv_.notify_one();
}

bool Stream::WaitIdle(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [this] { return queue_.empty() && !running_; };
  if (deadline == Clock::time_point::max()) {
    idle_cv_.wait(lock, idle);
    return true;
  }
  return idle_cv_.wait_until(lock, deadline, idle);
}

void Stream::SetStalled(bool stalled) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stalled_ = stalled;
  }
  work_cv_.notify_one();
}

void Stream::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    stalled_ = false;
  }
  work_cv_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void Stream::SetPools(DevicePtr kernarg, DevicePtr internal) {
  std::lock_guard<std::mutex> lock(mu_);
  pools_ = {kernarg, internal};
}

std::array<DevicePtr, 2> Stream::pools() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_;
}

void Stream::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // A stall holds back the next op; stop drains what is queued (the destructor releases
    // stalls first, so a stalled stream never blocks teardown).
    work_cv_.wait(lock,
                  [this] { return (!queue_.empty() && (!stalled_ || stop_)) || (stop_ && queue_.empty()); });
    if (queue_.empty()) return;  // stop_ with nothing left
    Op op = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    try {
      op();
    } catch (const std::exception& e) {
      GPUPROF_LOG(kError) << "stream " << id_ << " (device " << device_
                          << "): an op threw and was abandoned: " << e.what();
    } catch (...) {
      GPUPROF_LOG(kError) << "stream " << id_ << " (device " << device_
                          << "): an op threw a non-standard exception and was abandoned";
    }
    op = nullptr;  // destroy captures (kernel bodies' state) before reporting idle
    lock.lock();
    running_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace gpuprof::device::host
