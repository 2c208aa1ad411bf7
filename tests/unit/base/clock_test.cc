#include "base/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

namespace gpuprof::base {
namespace {

// Generous bound for "the same instant" between two clock reads taken back to back: the reads
// are microseconds apart, the bound only has to survive a descheduled CI machine.
constexpr std::int64_t kSameInstantNs = 2'000'000'000;

std::int64_t SystemClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(ClockTest, EpochNowIsUnixEpochNanoseconds) {
  std::int64_t before = SystemClockNs();
  std::int64_t epoch = EpochNowNs();
  std::int64_t after = SystemClockNs();
  // 2020-01-01T00:00:00Z in ns: catches seconds/microseconds mix-ups.
  EXPECT_GT(epoch, 1'577'836'800'000'000'000);
  EXPECT_LE(std::llabs(epoch - before), kSameInstantNs);
  EXPECT_LE(std::llabs(after - epoch), kSameInstantNs);
}

TEST(ClockTest, MonotonicNeverGoesBackwards) {
  std::int64_t previous = MonotonicNowNs();
  for (int i = 0; i < 100'000; ++i) {
    std::int64_t now = MonotonicNowNs();
    ASSERT_GE(now, previous) << "read " << i;
    previous = now;
  }
}

TEST(ClockTest, MonotonicAdvancesAtLeastTheSleptTime) {
  std::int64_t start = MonotonicNowNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_GE(MonotonicNowNs() - start, 2'000'000);
}

TEST(EpochConverterTest, MapsMonotonicNowToEpochNow) {
  EpochConverter converter;
  std::int64_t converted = converter.ToEpochNs(MonotonicNowNs());
  std::int64_t epoch = EpochNowNs();
  EXPECT_LE(std::llabs(epoch - converted), kSameInstantNs);
}

TEST(EpochConverterTest, PreservesDurations) {
  EpochConverter converter;
  std::int64_t a = MonotonicNowNs();
  std::int64_t b = a + 123'456'789;
  EXPECT_EQ(converter.ToEpochNs(b) - converter.ToEpochNs(a), 123'456'789);
  EXPECT_EQ(converter.ToEpochNs(0), converter.offset_ns());
}

TEST(EpochConverterTest, OffsetIsFixedAtConstruction) {
  EpochConverter converter;
  std::int64_t offset = converter.offset_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(converter.offset_ns(), offset);
  EXPECT_EQ(converter.ToEpochNs(1000), 1000 + offset);
}

}  // namespace
}  // namespace gpuprof::base
