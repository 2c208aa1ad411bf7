#include "cupti/time_converter.h"

#include <limits>

#include "base/clock.h"

namespace gpuprof::cupti {

StatusOr<TimeConverter> TimeConverter::Sample(CuptiApi& api) {
  constexpr int kSamples = 5;
  std::int64_t best_offset = 0;
  std::int64_t best_width = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < kSamples; ++i) {
    std::uint64_t cupti_ns = 0;
    const std::int64_t before = base::EpochNowNs();
    const CUptiResult result = api.GetTimestamp(&cupti_ns);
    const std::int64_t after = base::EpochNowNs();
    if (result != CUPTI_SUCCESS) return CuptiStatus(api, result, "cuptiGetTimestamp");
    const std::int64_t width = after - before;
    if (width < best_width) {
      best_width = width;
      best_offset = before + width / 2 - static_cast<std::int64_t>(cupti_ns);
    }
  }
  return TimeConverter(best_offset, best_width);
}

}  // namespace gpuprof::cupti
