// Clocks. Every timestamp gpuprof stores is Unix-epoch nanoseconds (EpochNowNs); durations are
// measured on the monotonic clock (MonotonicNowNs) and never mixed with epoch values.
#pragma once

#include <cstdint>

namespace gpuprof::base {

// Nanoseconds since the Unix epoch (CLOCK_REALTIME).
std::int64_t EpochNowNs() noexcept;

// Nanoseconds on CLOCK_MONOTONIC: for durations only.
std::int64_t MonotonicNowNs() noexcept;

// Maps monotonic readings to epoch time with one offset sampled at construction, so that a run's
// timestamps are consistent with each other even if the wall clock is stepped during the run.
class EpochConverter {
 public:
  EpochConverter() noexcept;
  std::int64_t ToEpochNs(std::int64_t monotonic_ns) const noexcept { return monotonic_ns + offset_ns_; }
  std::int64_t offset_ns() const noexcept { return offset_ns_; }

 private:
  std::int64_t offset_ns_;
};

}  // namespace gpuprof::base
