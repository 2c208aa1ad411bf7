// Internals of the Range Profiler backend shared by range_profiler_backend.cc (chips, plans, the
// contexts' kept profilers) and range_profiler_collection.cc (one collection: its passes, decode
// and evaluation). Not a public header: only this component's files include it.
#pragma once

#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cupti/range_profiler_backend.h"

namespace gpuprof::cupti {

// A CUPTI parameter struct, zeroed, with its size set (CUPTI checks the size for the version).
template <typename Params>
Params MakeParams(std::size_t size) {
  Params params{};
  params.structSize = size;
  return params;
}

struct RangeProfilerBackend::HostObject {
  CuptiApi* api = nullptr;
  CUpti_Profiler_Host_Object* object = nullptr;
  std::mutex mu;  // CUPTI does not say a host object may be used from two threads at once

  HostObject() = default;
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;
  ~HostObject() {
    if (object == nullptr) return;
    auto params = MakeParams<CUpti_Profiler_Host_Deinitialize_Params>(
        CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    params.pHostObject = object;
    static_cast<void>(api->HostDeinitialize(&params));
  }
};

struct RangeProfilerBackend::CachedPlan {
  std::string chip;
  std::vector<std::string> metrics;
  std::vector<std::uint8_t> config_image;
  std::shared_ptr<HostObject> host;  // configured with `metrics`; evaluates their values
  replay::CounterPlan plan;
};

// A context's Range Profiler, enabled at its first collection and kept for the next ones (SetConfig
// again per launch): Enable, Disable and the first Start after an Enable cost 155 ms per launch of
// --set basic on the H200, kept 190 ms against 345 ms per launch (bench/counter_floor). Guarded by
// the backend's mu_, except `object` and `image`, which only the collection holding it (busy) uses.
struct RangeProfilerBackend::ContextProfiler {
  CUcontext context = nullptr;
  CUpti_RangeProfiler_Object* object = nullptr;  // null until enabled
  std::vector<std::uint8_t> image;        // the counter data image SetConfig points into: lives with object
  const CachedPlan* sized_for = nullptr;  // the plan `image` was sized for
  std::uint32_t sized_ranges = 0;         // and the ranges it holds
  bool busy = false;                      // a collection holds it
  bool drop_when_done = false;            // Idle came while busy: disable at the collection's end
};

// C strings of `names`, which must outlive them.
std::vector<const char*> CStrings(const std::vector<std::string>& names);

// Range 0 of a decoded counter data image, evaluated for `plan`'s metrics, with their units and
// pass counts. `passes` only words the message of an image without a range.
StatusOr<std::vector<replay::MetricValue>> EvaluateFirstRange(CuptiApi& api,
                                                              const RangeProfilerBackend::CachedPlan& plan,
                                                              std::span<const std::uint8_t> image,
                                                              int passes);

// One collection on `profiler` of one launch, or of `ranges` launches counted each in its own auto
// range (range replay) (held busy until it finishes; handed back to `backend`),
// prepared: kernel activity held off when asked, the profiler enabled and configured.
StatusOr<std::unique_ptr<replay::CounterCollection>> StartCollection(
    std::shared_ptr<CuptiApi> api, RangeProfilerBackend& backend,
    std::shared_ptr<const RangeProfilerBackend::CachedPlan> plan,
    std::shared_ptr<RangeProfilerBackend::ContextProfiler> profiler, CounterRange range,
    bool hold_off_kernel_activity, std::uint32_t ranges);

}  // namespace gpuprof::cupti
