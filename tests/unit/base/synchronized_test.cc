#include "base/synchronized.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpuprof::base {
namespace {

using std::chrono_literals::operator""ms;
using std::chrono_literals::operator""s;

TEST(SynchronizedTest, WlockModifiesAndRlockReads) {
  Synchronized<std::vector<int>> values;
  values.wlock()->push_back(1);
  {
    auto locked = values.wlock();
    locked->push_back(2);
    (*locked).push_back(3);
  }
  auto read = values.rlock();
  EXPECT_EQ(*read, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(read->size(), 3u);
}

TEST(SynchronizedTest, RlockGivesAConstView) {
  Synchronized<std::string> text;
  static_assert(std::is_const_v<std::remove_reference_t<decltype(*text.rlock())>>);
  static_assert(!std::is_const_v<std::remove_reference_t<decltype(*text.wlock())>>);
  const Synchronized<std::string>& const_text = text;
  EXPECT_TRUE(const_text.rlock()->empty());
}

TEST(SynchronizedTest, InPlaceConstructsTheValue) {
  Synchronized<std::string> text(std::in_place, std::size_t{3}, 'x');
  EXPECT_EQ(*text.rlock(), "xxx");
}

TEST(SynchronizedTest, WithLockHelpersReturnTheFunctionsResult) {
  Synchronized<int> counter(std::in_place, 5);
  int after = counter.WithWLock([](int& value) { return ++value; });
  EXPECT_EQ(after, 6);
  EXPECT_EQ(counter.WithRLock([](const int& value) { return value * 2; }), 12);
}

TEST(SynchronizedTest, ReadersShareTheLock) {
  Synchronized<int> value(std::in_place, 7);
  std::optional<Synchronized<int>::ReadLocked> held(value.rlock());
  // A second reader must get in while the first still holds its lock. The wait only bounds a
  // failure (a reader excluded by a reader); on success the future is ready at once.
  auto second = std::async(std::launch::async, [&value] { return *value.rlock(); });
  bool ready = second.wait_for(30s) == std::future_status::ready;
  held.reset();
  EXPECT_TRUE(ready) << "a second rlock() blocked while another rlock() was held";
  EXPECT_EQ(second.get(), 7);
}

TEST(SynchronizedTest, WriterExcludesReaders) {
  Synchronized<int> value(std::in_place, 1);
  std::optional<Synchronized<int>::WriteLocked> writer(value.wlock());
  std::atomic<bool> reader_started{false};
  auto reader = std::async(std::launch::async, [&] {
    reader_started = true;
    return *value.rlock();
  });
  while (!reader_started) std::this_thread::yield();
  // The reader cannot finish while the writer holds the lock, however long this waits; this
  // never fails spuriously, it can only miss a broken lock on an unlucky schedule.
  EXPECT_EQ(reader.wait_for(20ms), std::future_status::timeout);
  **writer = 2;
  writer.reset();
  EXPECT_EQ(reader.get(), 2);
}

TEST(SynchronizedTest, ConcurrentWritersProduceTheRightTotal) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 20'000;
  Synchronized<long> total;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&total] {
      for (int i = 0; i < kIncrements; ++i) {
        if (i % 2 == 0) {
          ++*total.wlock();
        } else {
          total.WithWLock([](long& value) { ++value; });
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(*total.rlock(), long{kThreads} * kIncrements);
}

TEST(SynchronizedTest, ReadersNeverSeeAHalfWrittenValue) {
  struct Pair {
    long a = 0;
    long b = 0;  // always equal to a outside a write
  };
  Synchronized<Pair> pair;
  std::atomic<bool> done{false};
  std::atomic<long> torn_reads{0};

  std::vector<std::thread> readers;
  readers.reserve(2);
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        {
          auto read = pair.rlock();
          if (read->a != read->b) torn_reads.fetch_add(1);
        }
        // glibc's shared_mutex prefers readers: let the writers in.
        std::this_thread::yield();
      }
    });
  }
  std::vector<std::thread> writers;
  writers.reserve(2);
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < 2'000; ++i) {
        auto write = pair.wlock();
        ++write->a;
        std::this_thread::yield();
        ++write->b;
      }
    });
  }
  for (std::thread& thread : writers) thread.join();
  done = true;
  for (std::thread& thread : readers) thread.join();

  EXPECT_EQ(torn_reads.load(), 0);
  auto final_pair = pair.rlock();
  EXPECT_EQ(final_pair->a, 4'000);
  EXPECT_EQ(final_pair->b, 4'000);
}

}  // namespace
}  // namespace gpuprof::base
