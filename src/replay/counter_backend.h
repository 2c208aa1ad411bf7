// The counter backend: hardware counters over replay passes (issue 19), behind an interface of its
// own so the controller and everything above it run on the host with a fake
// (tests/fakes/fake_counter_backend.h). The CUDA one is cupti/range_profiler_backend.*:
// CUPTI's Profiler Host API for the configuration and evaluation, and the Range Profiler in user
// replay mode, so the controller's own passes are the passes CUPTI asks for.
//
// How the controller drives one replayed launch (after its timing passes; a replayed range the
// same way through BeginRange and FinishPerLaunch, the whole range in each pass):
//
//   plan = backend.Plan(device, metrics)          // once per (device, metric list); cached
//   collection = backend.Begin(device, metrics)
//   do { restore inputs; collection->BeginPass(); run the kernel; done = collection->EndPass(); }
//     while (!done && passes < plan.passes + slack)
//   values = collection->Finish()                 // decode, evaluate
//
// Errors name what the user can do: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES names the
// RmProfilingAdminOnly driver setting and the two ways out, a busy counter unit names DCGM or
// another profiler, an unknown metric lists the nearest known names, MIG and MPS say that they are
// not supported. The controller records the message as ReplayRecord::counter_status, and the
// launch is still replayed and timed.
//
// Thread-safety: the controller calls a backend from launching threads while holding the device's
// replay window, so calls for one device never overlap; calls for different devices may.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpuprof/replay.h"
#include "gpuprof/status.h"

namespace gpuprof::replay {

// A metric a device supports (for --query-metrics and for suggestions).
struct MetricInfo {
  std::string name;  // "dram__bytes_read.sum"
  std::string unit;
  std::string description;
};

// What a list of metrics costs on one device, known before any pass runs.
struct CounterPlan {
  int passes = 0;                  // counter passes the whole list needs
  std::vector<int> metric_passes;  // per metric, in the list's order: passes it needs on its own
  std::vector<std::string> units;  // per metric
};

// One launch's collection. Not thread-safe; lives inside one replay window.
class CounterCollection {
 public:
  virtual ~CounterCollection() = default;
  // Before the kernel of a counter pass is launched.
  virtual Status BeginPass() = 0;
  // After it finished; true once every pass the configuration needs has been submitted.
  virtual StatusOr<bool> EndPass() = 0;
  // Decodes and evaluates: one value per metric of the list, in its order.
  virtual StatusOr<std::vector<MetricValue>> Finish() = 0;
  // A range's collection (CounterBackend::BeginRange): one value list per launch of the range, in
  // launch order, each as Finish's.
  virtual StatusOr<std::vector<std::vector<MetricValue>>> FinishPerLaunch() {
    return UnimplementedError("this collection counts one launch");
  }
};

class CounterBackend {
 public:
  virtual ~CounterBackend() = default;
  // Checks `metrics` (no launch__* names: the controller supplies those) on `device` and plans
  // their passes.
  virtual StatusOr<CounterPlan> Plan(int device, const std::vector<std::string>& metrics) = 0;
  // Starts one launch's collection of `metrics`, planned before.
  virtual StatusOr<std::unique_ptr<CounterCollection>> Begin(int device,
                                                             const std::vector<std::string>& metrics) = 0;
  // Range replay (W7): one collection for a whole range of `launches` launches, each counted on its
  // own: every counter pass is BeginPass, the range re-issued, EndPass; FinishPerLaunch decodes
  // once for the whole range.
  virtual StatusOr<std::unique_ptr<CounterCollection>> BeginRange(int device,
                                                                  const std::vector<std::string>& metrics,
                                                                  std::uint32_t launches) {
    static_cast<void>(device);
    static_cast<void>(metrics);
    static_cast<void>(launches);
    return UnimplementedError("this counter backend counts one launch at a time, not a range");
  }
  // Every metric the device supports.
  virtual StatusOr<std::vector<MetricInfo>> ListMetrics(int device) = 0;
  // No collection is coming soon (the selector is exhausted, replay was reconfigured, a context
  // is going away, the session stops): drop what is kept between launches (the CUDA backend's
  // enabled profilers, which slow the application's launches slightly). The next Begin sets it
  // up again. Never called during process teardown.
  virtual void Idle() noexcept {}
};

}  // namespace gpuprof::replay
