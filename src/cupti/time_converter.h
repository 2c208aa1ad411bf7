// CUPTI timestamps -> Unix-epoch nanoseconds.
//
// CUPTI stamps activity records in nanoseconds on its own clock (cuptiGetTimestamp reads it). The
// offset to CLOCK_REALTIME is sampled once when collection starts and applied to every record, so
// all device and API times of a run share one mapping even if the wall clock is stepped later
// (docs/architecture.md, "Time base": CUPTI timestamps converted once).
//
// Value type, immutable after construction: copy it freely and use it from any thread.
#pragma once

#include <cstdint>

#include "cupti/cupti_api.h"
#include "gpuprof/status.h"

namespace gpuprof::cupti {

class TimeConverter {
 public:
  // Reads the epoch clock before and after cuptiGetTimestamp a few times and keeps the tightest
  // bracket; the offset is the bracket's midpoint minus the CUPTI reading (error <= half the
  // bracket, typically well under a microsecond). Fails when cuptiGetTimestamp fails.
  static StatusOr<TimeConverter> Sample(CuptiApi& api);
  // A fixed offset (tests, or a converter rebuilt from a recorded offset).
  static TimeConverter WithOffset(std::int64_t offset_ns) noexcept { return {offset_ns, 0}; }

  // CUPTI's "unknown" timestamp (0) stays 0 so the writer can tell it from a real time.
  std::int64_t ToEpochNs(std::uint64_t cupti_ns) const noexcept {
    return cupti_ns == 0 ? 0 : static_cast<std::int64_t>(cupti_ns) + offset_ns_;
  }
  std::int64_t offset_ns() const noexcept { return offset_ns_; }
  // Width of the epoch-clock bracket the offset came from (0 for WithOffset).
  std::int64_t uncertainty_ns() const noexcept { return uncertainty_ns_; }

 private:
  TimeConverter(std::int64_t offset_ns, std::int64_t uncertainty_ns) noexcept
      : offset_ns_(offset_ns), uncertainty_ns_(uncertainty_ns) {}

  std::int64_t offset_ns_;
  std::int64_t uncertainty_ns_;
};

}  // namespace gpuprof::cupti
