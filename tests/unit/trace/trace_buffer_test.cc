#include "trace/trace_buffer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace gpuprof::trace {
namespace {

// A record that says who appended it and its position in that producer's sequence.
Record Call(std::uint32_t producer, std::uint64_t seq) {
  ApiCall call;
  call.tid = producer;
  call.correlation_id = seq;
  return call;
}

std::uint32_t ProducerOf(const Record& record) { return std::get<ApiCall>(record).tid; }
std::uint64_t SeqOf(const Record& record) { return std::get<ApiCall>(record).correlation_id; }

std::vector<std::uint64_t> SeqsOf(const std::vector<Record>& records) {
  std::vector<std::uint64_t> seqs;
  seqs.reserve(records.size());
  for (const Record& record : records) seqs.push_back(SeqOf(record));
  return seqs;
}

std::vector<std::uint64_t> Iota(std::uint64_t from, std::uint64_t to) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = from; i < to; ++i) out.push_back(i);
  return out;
}

// CollectorOptions with one field changed (GCC's -Wmissing-field-initializers rejects partial
// designated initializers).
CollectorOptions ChunkRecords(std::size_t n) {
  CollectorOptions options;
  options.chunk_records = n;
  return options;
}
CollectorOptions Cap(std::size_t n) {
  CollectorOptions options;
  options.max_buffered_records = n;
  return options;
}
CollectorOptions Flush(std::size_t threshold, std::function<void()> on_flush) {
  CollectorOptions options;
  options.flush_threshold = threshold;
  options.on_flush = std::move(on_flush);
  return options;
}

// Blocks until Open() is called; for handing control between a test and its thread.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(RecordCollectorTest, SingleThreadDrainKeepsAppendOrder) {
  RecordCollector collector(ChunkRecords(7));  // many chunk boundaries
  for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  EXPECT_EQ(collector.buffered(), 1000u);
  EXPECT_EQ(SeqsOf(collector.Drain()), Iota(0, 1000));
  EXPECT_EQ(collector.buffered(), 0u);
  EXPECT_TRUE(collector.Drain().empty());

  for (std::uint64_t i = 1000; i < 1010; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  EXPECT_EQ(SeqsOf(collector.Drain()), Iota(1000, 1010));
  EXPECT_EQ(collector.dropped(), 0u);
  EXPECT_EQ(collector.thread_count(), 1u);
}

TEST(RecordCollectorTest, DrainChunksAreBoundedAndInOrder) {
  RecordCollector collector(ChunkRecords(64));
  for (std::uint64_t i = 0; i < 500; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  std::vector<std::uint64_t> seqs;
  for (const auto& chunk : collector.DrainChunks()) {
    EXPECT_FALSE(chunk.empty());
    EXPECT_LE(chunk.size(), 64u);
    for (const Record& record : chunk) seqs.push_back(SeqOf(record));
  }
  EXPECT_EQ(seqs, Iota(0, 500));
}

TEST(RecordCollectorTest, ConcurrentProducersAndDrainerDeliverEveryRecordOnceInOrder) {
  constexpr std::uint32_t kThreads = 8;
  constexpr std::uint64_t kPerThread = 100'000;
  // Room for everything even if the drainer never ran, plus the threads' reserved batches.
  RecordCollector collector(Cap(2 * kThreads * kPerThread));

  std::vector<std::uint64_t> next(kThreads, 0);  // per producer: the next sequence number expected
  std::uint64_t delivered = 0;
  std::uint64_t mixed_chunks = 0;
  std::uint64_t out_of_order = 0;
  auto consume = [&](std::vector<std::vector<Record>> chunks) {
    for (const auto& chunk : chunks) {
      for (const Record& record : chunk) {
        std::uint32_t producer = ProducerOf(record);
        if (producer != ProducerOf(chunk.front())) ++mixed_chunks;
        if (producer >= kThreads || SeqOf(record) != next[producer]) {
          ++out_of_order;
        } else {
          ++next[producer];
        }
        ++delivered;
      }
    }
  };

  std::atomic<bool> producers_done{false};
  std::thread drainer([&] {
    while (!producers_done.load(std::memory_order_acquire)) {
      consume(collector.DrainChunks());
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> producers;
  std::atomic<std::uint64_t> rejected{0};
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    producers.emplace_back([&collector, &rejected, t] {
      for (std::uint64_t i = 0; i < kPerThread; ++i) {
        if (!collector.Append(Call(t, i))) rejected.fetch_add(1);
      }
    });
  }
  for (auto& producer : producers) producer.join();
  producers_done.store(true, std::memory_order_release);
  drainer.join();
  consume(collector.DrainChunks());  // what arrived after the drainer's last pass

  EXPECT_EQ(rejected.load(), 0u);
  EXPECT_EQ(collector.dropped(), 0u);
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(mixed_chunks, 0u);
  EXPECT_EQ(delivered, kThreads * kPerThread);
  EXPECT_THAT(next, ::testing::Each(kPerThread));
  // Every producer has exited: its buffer and its reserved batch are released.
  EXPECT_EQ(collector.buffered(), 0u);
  EXPECT_EQ(collector.thread_count(), 0u);
}

TEST(RecordCollectorTest, RecordsOfAnExitedThreadAreKeptUntilDrained) {
  RecordCollector collector;
  std::thread producer([&collector] {
    for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(collector.Append(Call(1, i)));
  });
  producer.join();
  EXPECT_EQ(collector.thread_count(), 1u);
  EXPECT_EQ(SeqsOf(collector.Drain()), Iota(0, 1000));
  EXPECT_EQ(collector.thread_count(), 0u);  // the exited thread's buffer is forgotten
  EXPECT_TRUE(collector.Drain().empty());
  EXPECT_EQ(collector.buffered(), 0u);
}

TEST(RecordCollectorTest, TwoCollectorsOnOneThreadStaySeparate) {
  RecordCollector first;
  RecordCollector second;
  for (std::uint64_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(first.Append(Call(1, i)));
    ASSERT_TRUE(second.Append(Call(2, 1000 + i)));
  }
  std::vector<Record> from_first = first.Drain();
  std::vector<Record> from_second = second.Drain();
  EXPECT_EQ(SeqsOf(from_first), Iota(0, 100));
  EXPECT_EQ(SeqsOf(from_second), Iota(1000, 1100));
  for (const Record& record : from_first) EXPECT_EQ(ProducerOf(record), 1u);
  for (const Record& record : from_second) EXPECT_EQ(ProducerOf(record), 2u);
}

TEST(RecordCollectorTest, CollectorDestroyedWhileItsThreadLivesThenThreadUsesANewOne) {
  std::optional<RecordCollector> collector;
  collector.emplace();
  RecordCollector* first_address = &*collector;
  Gate appended_to_first;
  Gate second_ready;
  Gate appended_to_second;
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < 10; ++i) EXPECT_TRUE(collector->Append(Call(1, i)));
    appended_to_first.Open();
    second_ready.Wait();
    // Same address as the destroyed collector: the thread's cached buffer must not be reused.
    for (std::uint64_t i = 100; i < 105; ++i) EXPECT_TRUE(collector->Append(Call(1, i)));
    appended_to_second.Open();
  });
  appended_to_first.Wait();
  collector.reset();  // undrained records of a live thread are freed here
  collector.emplace();
  ASSERT_EQ(&*collector, first_address);
  second_ready.Open();
  appended_to_second.Wait();
  EXPECT_EQ(SeqsOf(collector->Drain()), Iota(100, 105));
  producer.join();  // the thread exits holding a cache entry of the destroyed collector
  EXPECT_EQ(collector->dropped(), 0u);
  EXPECT_TRUE(collector->Drain().empty());
  EXPECT_EQ(collector->thread_count(), 0u);

  // The destroying thread itself keeps working with fresh collectors.
  collector.emplace();
  EXPECT_TRUE(collector->Append(Call(0, 7)));
  EXPECT_EQ(SeqsOf(collector->Drain()), std::vector<std::uint64_t>{7});
}

TEST(RecordCollectorTest, AppendsBeyondTheCapAreDroppedAndCounted) {
  RecordCollector collector(Cap(1000));
  std::uint64_t accepted = 0;
  for (std::uint64_t i = 0; i < 1500; ++i) accepted += collector.Append(Call(0, i)) ? 1u : 0u;
  EXPECT_EQ(accepted, 1000u);  // exact with one thread
  EXPECT_EQ(collector.dropped(), 500u);
  EXPECT_EQ(collector.buffered(), 1000u);
  EXPECT_EQ(SeqsOf(collector.Drain()), Iota(0, 1000));

  // Draining frees the budget.
  EXPECT_TRUE(collector.Append(Call(0, 2000)));
  EXPECT_EQ(collector.dropped(), 500u);
}

TEST(RecordCollectorTest, CapHoldsWithConcurrentProducers) {
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint64_t kPerThread = 20'000;
  constexpr std::uint64_t kCap = 10'000;
  RecordCollector collector(Cap(kCap));
  std::atomic<std::uint64_t> accepted{0};
  std::vector<std::thread> producers;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    producers.emplace_back([&collector, &accepted, t] {
      for (std::uint64_t i = 0; i < kPerThread; ++i) {
        if (collector.Append(Call(t, i))) accepted.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& producer : producers) producer.join();
  EXPECT_LE(accepted.load(), kCap);
  // Approximate below the cap (reserved batches, racing reservations), but never far.
  EXPECT_GE(accepted.load(), kCap / 2);
  EXPECT_EQ(accepted.load() + collector.dropped(), kThreads * kPerThread);
  EXPECT_EQ(collector.Drain().size(), accepted.load());
  EXPECT_EQ(collector.buffered(), 0u);
  EXPECT_TRUE(collector.Append(Call(0, 0)));
}

TEST(RecordCollectorTest, FlushCallbackRunsWhenAThreadBufferReachesTheThreshold) {
  std::atomic<int> signals{0};
  RecordCollector collector(Flush(100, [&signals] { signals.fetch_add(1); }));
  for (std::uint64_t i = 0; i < 99; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  EXPECT_EQ(signals.load(), 0);
  ASSERT_TRUE(collector.Append(Call(0, 99)));
  EXPECT_EQ(signals.load(), 1);
  for (std::uint64_t i = 100; i < 250; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  EXPECT_EQ(signals.load(), 1);  // once per crossing
  EXPECT_EQ(collector.Drain().size(), 250u);
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  EXPECT_EQ(signals.load(), 2);  // armed again by the drain
}

TEST(RecordCollectorTest, FlushCallbackWakesAWriterThatDrains) {
  constexpr std::uint64_t kRecords = 10'000;
  std::mutex mu;
  std::condition_variable wake;
  bool flush_requested = false;
  bool done = false;
  RecordCollector collector(Flush(256, [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      flush_requested = true;
    }
    wake.notify_one();
  }));
  std::vector<std::uint64_t> seqs;
  std::thread writer([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      wake.wait(lock, [&] { return flush_requested || done; });
      bool finish = done;
      flush_requested = false;
      lock.unlock();
      for (const Record& record : collector.Drain()) seqs.push_back(SeqOf(record));
      lock.lock();
      if (finish) break;
    }
  });
  for (std::uint64_t i = 0; i < kRecords; ++i) ASSERT_TRUE(collector.Append(Call(0, i)));
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  wake.notify_one();
  writer.join();
  EXPECT_EQ(seqs, Iota(0, kRecords));
}

// As the main thread in exit(), where a library's atexit teardown still calls CUDA after the
// thread's thread_local objects are gone: an H100 profile lost one record so.
TEST(RecordCollectorTest, AppendsFromThreadExitDestructorsAfterTheCacheIsGoneAreKept) {
  struct AppendAtExit {
    RecordCollector* collector = nullptr;
    std::uint64_t seq = 0;
    bool* appended = nullptr;
    ~AppendAtExit() {
      if (collector != nullptr) *appended = collector->Append(Call(9, seq));
    }
  };
  RecordCollector collector;
  // Each thread appends once while alive and once from a destructor that runs after its cache's.
  auto produce = [&collector](std::uint64_t alive_seq, std::uint64_t exit_seq, bool* appended_at_exit) {
    std::thread producer([&] {
      thread_local AppendAtExit at_exit;  // constructed before the thread's cache, destroyed after it
      at_exit.collector = &collector;     // set field by field: a temporary's destructor would append
      at_exit.seq = exit_seq;
      at_exit.appended = appended_at_exit;
      EXPECT_TRUE(collector.Append(Call(1, alive_seq)));
    });
    producer.join();
  };
  bool first_at_exit = false;
  bool second_at_exit = false;
  produce(0, 1, &first_at_exit);
  produce(2, 3, &second_at_exit);
  EXPECT_TRUE(first_at_exit);
  EXPECT_TRUE(second_at_exit);
  std::vector<std::uint64_t> seqs = SeqsOf(collector.Drain());
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, Iota(0, 4));
  EXPECT_EQ(collector.dropped(), 0u);
  // The shared buffer outlives a Drain: a later exiting thread still has somewhere to append.
  bool third_at_exit = false;
  produce(4, 5, &third_at_exit);
  EXPECT_TRUE(third_at_exit);
  seqs = SeqsOf(collector.Drain());
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, Iota(4, 6));
  EXPECT_EQ(collector.dropped(), 0u);
}

TEST(RecordCollectorTest, ValidateOptionsNamesTheBadOption) {
  EXPECT_TRUE(RecordCollector::ValidateOptions(CollectorOptions{}).ok());
  Status zero_chunk = RecordCollector::ValidateOptions(ChunkRecords(0));
  EXPECT_EQ(zero_chunk.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(zero_chunk.message(), ::testing::HasSubstr("chunk_records"));
  Status no_callback = RecordCollector::ValidateOptions(Flush(10, nullptr));
  EXPECT_EQ(no_callback.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(no_callback.message(), ::testing::HasSubstr("on_flush"));
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kLeakSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
constexpr bool kLeakSanitizer = true;
#else
constexpr bool kLeakSanitizer = false;
#endif
#else
constexpr bool kLeakSanitizer = false;
#endif

// Runs in a fork child of a process whose producers and drainer were busy with `collector`, and
// whose forking thread had used both collectors. Returns 0 on success, else failure bits.
int CheckForkChild(RecordCollector& collector, RecordCollector& never_reset) {
  int failures = 0;
  // Before ResetAfterFork nothing inherited is locked: appends drop, drains are empty.
  if (collector.Append(Call(50, 0))) failures |= 1;
  if (!collector.Drain().empty()) failures |= 2;
  if (!collector.ResetAfterFork().ok()) failures |= 4;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    if (!collector.Append(Call(50, i))) failures |= 8;
  }
  std::vector<Record> drained = collector.Drain();
  if (SeqsOf(drained) != Iota(0, 1000)) failures |= 16;
  for (const Record& record : drained) {
    if (ProducerOf(record) != 50) failures |= 32;  // nothing of the parent's
  }
  if (collector.dropped() != 0 || collector.thread_count() != 1) failures |= 64;
  if (never_reset.Append(Call(51, 0))) failures |= 128;
  return failures;
}

// Busy producer and drainer threads for the fork test. They stop and are joined when this goes
// out of scope, so a failed ASSERT in the test body does not leave joinable threads behind.
class BusyCollectorThreads {
 public:
  explicit BusyCollectorThreads(RecordCollector& collector) {
    for (std::uint32_t t = 0; t < 2; ++t) {
      threads_.emplace_back([this, &collector, t] {
        for (std::uint64_t i = 0; !stop_.load(std::memory_order_relaxed); ++i) {
          ParkWhileForking();
          static_cast<void>(collector.Append(Call(t, i)));
        }
      });
    }
    threads_.emplace_back([this, &collector] {
      while (!stop_.load(std::memory_order_relaxed)) {
        ParkWhileForking();
        static_cast<void>(collector.Drain());
      }
    });
  }
  BusyCollectorThreads(const BusyCollectorThreads&) = delete;
  BusyCollectorThreads& operator=(const BusyCollectorThreads&) = delete;
  ~BusyCollectorThreads() {
    stop_.store(true);
    park_.store(false);
    for (auto& thread : threads_) thread.join();
  }

  // Waits until every thread is parked between two calls (so none is inside malloc).
  void Park() {
    park_.store(true);
    while (parked_.load() != threads_.size()) std::this_thread::yield();
  }
  void Unpark() { park_.store(false); }

 private:
  void ParkWhileForking() {
    if (!park_.load()) return;
    parked_.fetch_add(1);
    while (park_.load() && !stop_.load()) std::this_thread::yield();
    parked_.fetch_sub(1);
  }

  std::atomic<bool> stop_{false};
  std::atomic<bool> park_{false};
  std::atomic<std::size_t> parked_{0};
  std::vector<std::thread> threads_;
};

TEST(RecordCollectorTest, ForkChildNeverLocksInheritedStateAndCollectsAfterReset) {
  RecordCollector collector;
  RecordCollector never_reset;
  // This (forking) thread holds cache entries for both collectors.
  ASSERT_TRUE(collector.Append(Call(99, 0)));
  ASSERT_TRUE(never_reset.Append(Call(99, 0)));
  {
    BusyCollectorThreads busy(collector);
    // Several forks while the other threads hold the collector's locks now and then.
    for (int round = 0; round < 5; ++round) {
      // GCC 12's ASan allocator takes no lock around fork(): a child whose parent forked while
      // another thread was inside malloc waits forever on that thread's allocator lock (seen in
      // CI). Under ASan the busy threads are therefore parked between calls at the fork; without
      // ASan they keep running and the fork lands wherever it lands.
      if (kLeakSanitizer) busy.Park();
      std::fflush(nullptr);
      pid_t pid = fork();
      if (kLeakSanitizer && pid != 0) busy.Unpark();
      ASSERT_GE(pid, 0) << "fork failed";
      if (pid == 0) {
        alarm(60);  // a deadlock kills the child with SIGALRM instead of hanging the test
        int failures = CheckForkChild(collector, never_reset);
        if (kLeakSanitizer) {
          // LeakSanitizer at exit in a fork child of a multithreaded process reports whatever
          // only the vanished threads referenced (their stacks did not come along), so leave the
          // way fork children usually do.
          _exit(failures);
        }
        // exit(), not _exit(): this thread's thread_local destructors run, with an inherited
        // cache entry (never_reset's) that they must not lock.
        std::exit(failures);
      }
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal "
                                     << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      EXPECT_EQ(WEXITSTATUS(status), 0) << "failure bits (see CheckForkChild)";
    }
  }
  // The parent is unaffected.
  EXPECT_TRUE(collector.Append(Call(99, 1)));
  EXPECT_TRUE(never_reset.Append(Call(99, 1)));
  EXPECT_EQ(never_reset.Drain().size(), 2u);
}

}  // namespace
}  // namespace gpuprof::trace
