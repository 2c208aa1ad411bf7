#include "base/clock.h"

#include <ctime>

namespace gpuprof::base {
namespace {
std::int64_t ReadClock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

std::int64_t EpochNowNs() noexcept { return ReadClock(CLOCK_REALTIME); }
std::int64_t MonotonicNowNs() noexcept { return ReadClock(CLOCK_MONOTONIC); }

EpochConverter::EpochConverter() noexcept {
  // Bracket the realtime read between two monotonic reads and take the midpoint, so the offset's
  // error is at most half the (tiny) bracketing interval.
  std::int64_t before = MonotonicNowNs();
  std::int64_t epoch = EpochNowNs();
  std::int64_t after = MonotonicNowNs();
  offset_ns_ = epoch - (before + (after - before) / 2);
}

}  // namespace gpuprof::base
