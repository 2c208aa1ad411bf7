// The CUDA counter backend (replay/counter_backend.h): CUPTI's Profiler Host API for the
// configuration and evaluation, the Range Profiler in user replay mode for the passes.
//
// PLACEHOLDER: only the declaration the session's `gpuprof_query_metrics_v1` calls lives here
// for now; the backend itself (and this function's definition, range_profiler_backend.cc) is
// written on the CUDA side of issue 19. Until then the CUDA build of libgpuprof.so does not link;
// the ci preset (no CUDA) never references it.
#pragma once

#include <string_view>
#include <vector>

#include "gpuprof/status.h"
#include "replay/counter_backend.h"

namespace gpuprof::cupti {

// Every metric CUPTI offers for CUDA device `device`, or, when `chip` is not empty, for that chip
// ("GH100", no device needed). Unavailable (naming the fix) when CUPTI or the device cannot answer.
StatusOr<std::vector<replay::MetricInfo>> QueryMetrics(int device, std::string_view chip);

}  // namespace gpuprof::cupti
