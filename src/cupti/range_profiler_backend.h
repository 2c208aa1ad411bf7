// Hardware counters over gpuprof's replay passes (issue 19), through CUPTI's current profiling
// API: the Profiler Host API (cupti_profiler_host.h) plans and evaluates, the Range Profiler
// (cupti_range_profiler.h) collects in user replay mode, so the controller's counter passes are the
// passes CUPTI asks for (replay/counter_backend.h says how the controller drives it).
//
// Per chip (cuptiDeviceGetChipName), the backend keeps: one host object for metric properties
// (validation and units), the metric list (enumerated at the first ListMetrics or unknown name),
// and per metric list a plan: the config image, its pass count and each metric's own pass count
// (a config with that metric alone). Nothing of this needs a GPU: with a chip name ("GH100") the
// host API works on a machine without a driver (QueryMetrics, the host-API test).
//
// Per context, the Range Profiler is enabled at the context's first replayed launch and kept
// enabled between replayed launches; per launch (Begin): a counter data image sized for the plan,
// SetConfig (user replay, auto range by default, one range per pass, one nesting level);
// BeginPass = Start (+ PushRange in user-range mode), EndPass = (PopRange +) Stop, whose
// isAllPassSubmitted ends the loop; Finish = DecodeData, one range, EvaluateToGpuValues. The
// profiler is disabled on a failure, at Idle (the selector's last launch, Reconfigure) and when the
// context is destroyed. Keeping it enabled halves the per-launch cost on the H200 (343.6 -> 191.1 ms
// for --set basic, bench/counter_floor); there, the application's launch rate (4.03 -> 4.24 us) and
// the overlap of two streams (15.4 ms both ways) did not change while it was enabled.
//
// Range replay (W7, BeginRange): the same collection sized and configured for N auto ranges
// (maxNumOfRanges = maxRangesPerPass = the range's launches), each counter pass Start, the range
// re-issued, Stop; one DecodeData and one evaluation per launch (range index = launch index).
//
// Auto range (default) makes range 0 the first kernel after Start: the replayed kernel. The cache
// flush before it (a memset) is not a kernel and is not measured; its dirty lines are written back
// during the kernel, up to one L2 of dram__bytes_write. User range (--counter-range user)
// measures everything between Push and Pop, the flush included.
//
// Errors are Status values naming the fix (CounterStatus): nothing here throws, and every CUPTI
// call runs under ScopedInternalWork (C1), so the counter passes' records stay gpuprof's.
//
// Thread-safety: the backend is thread-safe (one mutex over its caches; the controller calls it
// for one device at a time, for different devices concurrently). A collection is not.
#pragma once

#include <cuda.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cupti/cupti_api.h"
#include "gpuprof/status.h"
#include "replay/counter_backend.h"

namespace gpuprof::cupti {

// Every metric `chip` supports ("GH100": the host API alone, no GPU needed), or, with an empty
// chip, device `device`'s (needs the driver). Loads CUPTI itself.
StatusOr<std::vector<replay::MetricInfo>> QueryMetrics(int device, std::string_view chip);

enum class CounterRange {
  kAuto,  // CUPTI_AutoRange: range 0 is the first kernel after Start
  kUser,  // CUPTI_UserRange: PushRange/PopRange around the pass
};

// "auto" or "user"; InvalidArgument otherwise.
StatusOr<CounterRange> ParseCounterRange(std::string_view text);

struct RangeProfilerOptions {
  CounterRange range = CounterRange::kAuto;
  // The context a launch on `device` runs in (the hook's callback thread has it current). Needed
  // by Begin only; Plan and ListMetrics work without it.
  std::function<StatusOr<CUcontext>(int device)> context_of;
  // The chip of `device`, instead of cuptiDeviceGetChipName (tests; QueryMetrics with a chip).
  std::function<StatusOr<std::string>(int device)> chip_of;
  // The session traces kernels (CONCURRENT_KERNEL activity): hold that off on the launch's context
  // from Begin to Finish, so the counter passes count the kernel alone (CUPTI's kernel tracing
  // adds about 8 instructions per warp to a traced launch: measured on the H200, bench/README.md
  // "counter_floor") and make no TASK rows; back on before the application launches again. The
  // context is noted for the subscriber (HoldOffKernelRecords, internal_work.h), which then counts no
  // kernel record for gpuprof's launches there. Without that note (2026-12-02, H200) every replayed
  // kernel lost its TASK row (GpuRunTest.ReplayCounters: 0 KERNEL tasks, MEMSET/MEMCPY rows stayed,
  // in all five ways of switching tried): the C1 filter counted a record per counter-pass launch,
  // CUPTI wrote none, and the count took the application's own record, which carries the same
  // correlation id (issue 40, item 4). The session turns it on.
  bool hold_off_kernel_activity = false;
  // Keep each context's Range Profiler enabled between collections (SetConfig again per launch)
  // until Idle; false: Enable and Disable around every launch (bench/counter_floor's per_launch).
  bool keep_enabled = true;
};

// The Status for a failed counter call, naming what the user can do (pure; unit-tested):
// INSUFFICIENT_PRIVILEGES -> the driver's RmProfilingAdminOnly / NVreg_RestrictProfilingToAdminUsers
// setting and the two ways out; HARDWARE_BUSY -> another profiler or DCGM (`dcgmi profile
// --pause`); MIG, vGPU, confidential computing, CMP, WSL, NOT_SUPPORTED -> not supported (MIG and
// MPS named); anything else "<call> failed: <error string>". `error_string` is CUPTI's text for
// `result` (CuptiErrorString); `context` is appended in parentheses.
Status CounterStatus(CUptiResult result, std::string_view call, std::string_view error_string,
                     std::string_view context = {});

// "unknown metric 'X' on GH100; nearest: a, b, c" (NotFound); `known` may be empty.
Status UnknownMetricStatus(std::string_view name, std::string_view chip, std::span<const std::string> known);

class RangeProfilerBackend final : public replay::CounterBackend {
 public:
  // `api` must have an OK CounterApiStatus() (MakeRangeProfilerBackend checks).
  RangeProfilerBackend(std::shared_ptr<CuptiApi> api, RangeProfilerOptions options);
  ~RangeProfilerBackend() override;
  RangeProfilerBackend(const RangeProfilerBackend&) = delete;
  RangeProfilerBackend& operator=(const RangeProfilerBackend&) = delete;

  StatusOr<replay::CounterPlan> Plan(int device, const std::vector<std::string>& metrics) override;
  StatusOr<std::unique_ptr<replay::CounterCollection>> Begin(
      int device, const std::vector<std::string>& metrics) override;
  // Range replay (W7): maxRangesPerPass = `launches`, one auto range per launch.
  StatusOr<std::unique_ptr<replay::CounterCollection>> BeginRange(int device,
                                                                  const std::vector<std::string>& metrics,
                                                                  std::uint32_t launches) override;
  StatusOr<std::vector<replay::MetricInfo>> ListMetrics(int device) override;
  // Disables every context's kept profiler (one still collecting is disabled when it ends).
  void Idle() noexcept override;
  // The values of `metrics` in range 0 of a decoded counter data image made for them on `device`'s
  // chip (a collection's Finish does the same after DecodeData). Needs no GPU with chip_of set:
  // the host test evaluates an image recorded on the H200.
  StatusOr<std::vector<replay::MetricValue>> EvaluateImage(int device,
                                                           const std::vector<std::string>& metrics,
                                                           std::span<const std::uint8_t> counter_data);
  // Contexts whose profiler is enabled now (tests).
  std::size_t EnabledContexts();

  // The chip name of `device` (cached).
  StatusOr<std::string> ChipName(int device);
  // Every metric of `chip`: base metric + rollup/submetric, with unit and description (cached).
  StatusOr<std::vector<replay::MetricInfo>> ListChipMetrics(const std::string& chip);

  struct HostObject;  // a CUPTI host object (cupti_profiler_host.h), deinitialized when dropped
  struct CachedPlan;
  struct ContextProfiler;  // a context's Range Profiler object, kept enabled between launches

  // A collection hands its context's profiler back: kept enabled unless `failed`, keep_enabled is
  // off or Idle came meanwhile (then disabled, and the next collection enables a new one).
  Status Return(std::shared_ptr<ContextProfiler> profiler, bool failed) noexcept;

 private:
  StatusOr<std::shared_ptr<HostObject>> NewHostObject(const std::string& chip);
  // The chip's properties object (callers hold mu_).
  StatusOr<HostObject*> PropertiesObject(const std::string& chip);
  StatusOr<std::shared_ptr<const CachedPlan>> PlanFor(int device, const std::vector<std::string>& metrics);
  StatusOr<int> SingleMetricPasses(const std::string& chip, const std::string& metric);
  // One host object configured with `metrics`: the config image and its pass count.
  Status Configure(HostObject& host, const std::vector<std::string>& metrics,
                   std::vector<std::uint8_t>& image, int& passes);
  Status Fail(CUptiResult result, std::string_view call, std::string_view context = {});
  Status Disable(ContextProfiler& profiler) noexcept;
  // A collection of `ranges` auto ranges (1: one launch).
  StatusOr<std::unique_ptr<replay::CounterCollection>> StartOn(int device,
                                                               const std::vector<std::string>& metrics,
                                                               std::uint32_t ranges);

  std::shared_ptr<CuptiApi> api_;
  RangeProfilerOptions options_;
  std::mutex mu_;  // guards everything below
  bool profiler_initialized_ = false;
  std::map<int, std::string> chips_;
  std::map<std::string, std::shared_ptr<HostObject>> properties_;
  std::map<std::string, std::vector<replay::MetricInfo>> metric_lists_;
  std::map<std::pair<std::string, std::string>, int> single_passes_;                        // (chip, metric)
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const CachedPlan>> plans_;  // (chip, list)
  std::map<CUcontext, std::shared_ptr<ContextProfiler>> profilers_;
};

// Unavailable (CounterApiStatus's message) when `api` lacks the counter entry points.
StatusOr<std::unique_ptr<RangeProfilerBackend>> MakeRangeProfilerBackend(std::shared_ptr<CuptiApi> api,
                                                                         RangeProfilerOptions options);

}  // namespace gpuprof::cupti
