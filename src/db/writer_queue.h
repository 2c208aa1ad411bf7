// The queues between ProfileWriter's threads: Submit -> the SQLite thread, and the SQLite thread
// -> the op thread (writer_threads.cc). Private to src/db.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

namespace gpuprof::db::internal {

enum class PushResult { kQueued, kFull, kClosed };

// Batches waiting for a consumer thread. Bounded in items; Push never blocks.
template <typename Item>
class WorkQueue {
 public:
  explicit WorkQueue(std::size_t max_items) : max_records_(max_items) {}

  PushResult Push(std::vector<Item>&& batch) {
    std::size_t n = batch.size();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return PushResult::kClosed;
      if (records_ + n > max_records_) return PushResult::kFull;
      records_ += n;
      batches_.push_back(std::move(batch));
    }
    cv_.notify_one();
    return PushResult::kQueued;
  }

  // Waits for work; moves every queued batch into `out`. False once closed and drained.
  bool PopAll(std::deque<std::vector<Item>>* out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return closed_ || !batches_.empty(); });
    if (batches_.empty()) return false;
    out->swap(batches_);
    records_ = 0;
    return true;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  // A condition variable needs the mutex itself, so this is the one place with a bare mutex; the
  // state it guards is reachable only through the three methods above.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<Item>> batches_;
  std::size_t records_ = 0;
  bool closed_ = false;
  const std::size_t max_records_;
};

}  // namespace gpuprof::db::internal
