// One collection of the Range Profiler backend: its configuration over a counter data image, the
// passes (Start/Stop), decode and evaluation.
#include <utility>

#include "base/logging.h"
#include "cupti/internal_work.h"
#include "cupti/range_profiler_internal.h"

namespace gpuprof::cupti {

std::vector<const char*> CStrings(const std::vector<std::string>& names) {
  std::vector<const char*> out;
  out.reserve(names.size());
  for (const std::string& name : names) out.push_back(name.c_str());
  return out;
}

StatusOr<std::vector<std::vector<replay::MetricValue>>> EvaluateRanges(
    CuptiApi& api, const RangeProfilerBackend::CachedPlan& plan, std::span<const std::uint8_t> image,
    std::uint32_t ranges, int passes) {
  const auto check = [&api](CUptiResult result, std::string_view call) {
    return result == CUPTI_SUCCESS ? OkStatus() : CounterStatus(result, call, CuptiErrorString(api, result));
  };
  auto info = MakeParams<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = image.data();
  info.counterDataImageSize = image.size();
  GPUPROF_RETURN_IF_ERROR(
      check(api.RangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo"));
  if (info.numTotalRanges < 1) {
    return InternalError("the counter data holds no range after " + std::to_string(passes) +
                         " pass(es): no kernel ran between cuptiRangeProfilerStart and Stop");
  }
  if (info.numTotalRanges < ranges) {
    return InternalError("the counter data holds " + std::to_string(info.numTotalRanges) + " range(s) for " +
                         std::to_string(ranges) + " launches after " + std::to_string(passes) + " pass(es)");
  }
  std::vector<const char*> names = CStrings(plan.metrics);
  std::vector<std::vector<replay::MetricValue>> out(ranges);
  for (std::uint32_t range = 0; range < ranges; ++range) {
    std::vector<double> values(plan.metrics.size(), 0.0);
    {
      std::lock_guard<std::mutex> lock(plan.host->mu);
      auto evaluate = MakeParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      evaluate.pHostObject = plan.host->object;
      evaluate.pCounterDataImage = image.data();
      evaluate.counterDataImageSize = image.size();
      evaluate.rangeIndex = range;
      evaluate.ppMetricNames = names.data();
      evaluate.numMetrics = names.size();
      evaluate.pMetricValues = values.data();
      GPUPROF_RETURN_IF_ERROR(
          check(api.HostEvaluateToGpuValues(&evaluate), "cuptiProfilerHostEvaluateToGpuValues"));
    }
    for (std::size_t i = 0; i < plan.metrics.size(); ++i) {
      replay::MetricValue value;
      value.name = plan.metrics[i];
      value.unit = i < plan.plan.units.size() ? plan.plan.units[i] : std::string();
      value.value = values[i];
      value.passes = i < plan.plan.metric_passes.size() ? plan.plan.metric_passes[i] : 0;
      out[range].push_back(std::move(value));
    }
  }
  return out;
}

StatusOr<std::vector<replay::MetricValue>> EvaluateFirstRange(CuptiApi& api,
                                                              const RangeProfilerBackend::CachedPlan& plan,
                                                              std::span<const std::uint8_t> image,
                                                              int passes) {
  GPUPROF_ASSIGN_OR_RETURN(std::vector<std::vector<replay::MetricValue>> ranges,
                           EvaluateRanges(api, plan, image, 1, passes));
  return std::move(ranges.front());
}

namespace {

// One launch's collection on its context's profiler: SetConfig over a fresh counter data image,
// the passes, then decode and evaluate; the profiler goes back to the backend, enabled, unless
// something failed (then it is disabled, and the next collection enables a new one).
class RangeProfilerCollection final : public replay::CounterCollection {
 public:
  using ContextProfiler = RangeProfilerBackend::ContextProfiler;

  RangeProfilerCollection(std::shared_ptr<CuptiApi> api, RangeProfilerBackend& backend,
                          std::shared_ptr<const RangeProfilerBackend::CachedPlan> plan,
                          std::shared_ptr<ContextProfiler> profiler, CounterRange range, std::uint32_t ranges)
      : api_(std::move(api)),
        backend_(backend),
        plan_(std::move(plan)),
        profiler_(std::move(profiler)),
        range_(range),
        ranges_(ranges) {}

  ~RangeProfilerCollection() override { static_cast<void>(Release(/*failed=*/true)); }

  RangeProfilerCollection(const RangeProfilerCollection&) = delete;
  RangeProfilerCollection& operator=(const RangeProfilerCollection&) = delete;

  // Kernel activity off on the context until Release (RangeProfilerOptions::hold_off_kernel_activity).
  // Noted first (HoldOffKernelRecords), so the subscriber counts no kernel record for gpuprof's own
  // launches there: CUPTI writes none, and a count would take the application's record instead.
  Status HoldOffKernelActivity() {
    ScopedInternalWork internal;
    if (!HoldOffKernelRecords(profiler_->context)) {
      return ResourceExhaustedError("out of memory holding kernel tracing off for the counter passes");
    }
    if (Status off =
            Check(api_->ActivityDisableContext(profiler_->context, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                  "cuptiActivityDisableContext(CONCURRENT_KERNEL)");
        !off.ok()) {
      ResumeKernelRecords(profiler_->context);
      return off;
    }
    activity_held_off_ = true;
    return OkStatus();
  }

  // Enables the context's profiler if it is not yet, sizes the counter data image for this plan
  // when it was sized for another, and configures this launch's collection.
  Status Prepare() {
    ScopedInternalWork internal;
    ContextProfiler& p = *profiler_;
    if (p.object == nullptr) {
      auto enable =
          MakeParams<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
      enable.ctx = p.context;
      GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerEnable(&enable), "cuptiRangeProfilerEnable"));
      p.object = enable.pRangeProfilerObject;
      p.sized_for = nullptr;
      if (p.object == nullptr) return InternalError("cuptiRangeProfilerEnable returned no profiler object");
    }
    names_ = CStrings(plan_->metrics);
    if (p.sized_for != plan_.get() || p.sized_ranges != ranges_) {
      p.sized_for = nullptr;
      auto size = MakeParams<CUpti_RangeProfiler_GetCounterDataSize_Params>(
          CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
      size.pRangeProfilerObject = p.object;
      size.pMetricNames = names_.data();
      size.numMetrics = names_.size();
      size.maxNumOfRanges = ranges_;  // auto range: one range per launch
      size.maxNumRangeTreeNodes = ranges_;
      GPUPROF_RETURN_IF_ERROR(
          Check(api_->RangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize"));
      if (size.counterDataSize == 0)
        return InternalError("cuptiRangeProfilerGetCounterDataSize returned 0 bytes");
      p.image.assign(size.counterDataSize, 0);
      p.sized_for = plan_.get();
      p.sized_ranges = ranges_;
    }
    auto init = MakeParams<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = p.object;
    init.counterDataSize = p.image.size();
    init.pCounterData = p.image.data();
    GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerCounterDataImageInitialize(&init),
                                  "cuptiRangeProfilerCounterDataImageInitialize"));

    auto config =
        MakeParams<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    config.pRangeProfilerObject = p.object;
    config.configSize = plan_->config_image.size();
    config.pConfig = plan_->config_image.data();
    config.counterDataImageSize = p.image.size();
    config.pCounterDataImage = p.image.data();
    config.range = range_ == CounterRange::kAuto ? CUPTI_AutoRange : CUPTI_UserRange;
    config.replayMode = CUPTI_UserReplay;  // gpuprof's own passes are the replays
    config.maxRangesPerPass = ranges_;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig"));
    configured_ = true;
    return OkStatus();
  }

  Status BeginPass() override {
    if (!configured_) return FailedPreconditionError("counter collection already finished");
    ScopedInternalWork internal;
    auto start = MakeParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = profiler_->object;
    GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerStart(&start), "cuptiRangeProfilerStart"));
    started_ = true;
    if (range_ == CounterRange::kUser) {
      auto push =
          MakeParams<CUpti_RangeProfiler_PushRange_Params>(CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
      push.pRangeProfilerObject = profiler_->object;
      push.pRangeName = "gpuprof";
      GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange"));
      pushed_ = true;
    }
    return OkStatus();
  }

  StatusOr<bool> EndPass() override {
    if (!started_) return FailedPreconditionError("EndPass without BeginPass");
    ScopedInternalWork internal;
    if (pushed_) {
      pushed_ = false;
      auto pop =
          MakeParams<CUpti_RangeProfiler_PopRange_Params>(CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
      pop.pRangeProfilerObject = profiler_->object;
      GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerPopRange(&pop), "cuptiRangeProfilerPopRange"));
    }
    started_ = false;
    auto stop = MakeParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    stop.pRangeProfilerObject = profiler_->object;
    GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerStop(&stop), "cuptiRangeProfilerStop"));
    ++passes_;
    return stop.isAllPassSubmitted != 0;
  }

  StatusOr<std::vector<replay::MetricValue>> Finish() override {
    if (ranges_ != 1) return FailedPreconditionError("a range's collection is finished per launch");
    GPUPROF_ASSIGN_OR_RETURN(std::vector<std::vector<replay::MetricValue>> values, FinishPerLaunch());
    return std::move(values.front());
  }

  StatusOr<std::vector<std::vector<replay::MetricValue>>> FinishPerLaunch() override {
    if (!configured_) return FailedPreconditionError("counter collection already finished");
    ScopedInternalWork internal;
    Status status = Evaluate();
    // Whatever happened, the profiler goes back (kept enabled only after a clean collection).
    Status released = Release(/*failed=*/!status.ok());
    GPUPROF_RETURN_IF_ERROR(status);
    GPUPROF_RETURN_IF_ERROR(released);
    return std::move(values_);
  }

 private:
  Status Check(CUptiResult result, std::string_view call) {
    if (result == CUPTI_SUCCESS) return OkStatus();
    return CounterStatus(result, call, CuptiErrorString(*api_, result));
  }

  Status Evaluate() {
    ContextProfiler& p = *profiler_;
    auto decode =
        MakeParams<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = p.object;
    GPUPROF_RETURN_IF_ERROR(Check(api_->RangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData"));
    if (decode.numOfRangeDropped > 0) {
      return InternalError("cuptiRangeProfilerDecodeData dropped " +
                           std::to_string(decode.numOfRangeDropped) + " range(s) after " +
                           std::to_string(passes_) +
                           " pass(es): more kernels ran between Start and Stop than were replayed");
    }
    GPUPROF_ASSIGN_OR_RETURN(values_, EvaluateRanges(*api_, *plan_, p.image, ranges_, passes_));
    return OkStatus();
  }

  // Stops an open pass, resumes kernel activity and hands the profiler back (disabled when
  // `failed`); idempotent.
  Status Release(bool failed) noexcept {
    if (profiler_ == nullptr) return OkStatus();
    ScopedInternalWork internal;
    if (profiler_->object != nullptr) {
      if (pushed_) {
        auto pop =
            MakeParams<CUpti_RangeProfiler_PopRange_Params>(CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
        pop.pRangeProfilerObject = profiler_->object;
        static_cast<void>(api_->RangeProfilerPopRange(&pop));
        pushed_ = false;
      }
      if (started_) {
        auto stop = MakeParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
        stop.pRangeProfilerObject = profiler_->object;
        static_cast<void>(api_->RangeProfilerStop(&stop));
        started_ = false;
      }
    }
    configured_ = false;
    ResumeKernelActivity();
    return backend_.Return(std::move(profiler_), failed);
  }

  // Kernel activity back on for the context (idempotent).
  void ResumeKernelActivity() noexcept {
    if (!activity_held_off_) return;
    activity_held_off_ = false;
    const CUptiResult result =
        api_->ActivityEnableContext(profiler_->context, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    // Still off after a failure: the context stays noted, so its launches count no kernel record.
    if (result == CUPTI_SUCCESS) ResumeKernelRecords(profiler_->context);
    if (result != CUPTI_SUCCESS) {
      GPUPROF_LOG(kError) << "cuptiActivityEnableContext(CONCURRENT_KERNEL) failed after the counter passes: "
                          << CuptiErrorString(*api_, result)
                          << "; later kernels of this context may have no TASK row";
    }
  }

  std::shared_ptr<CuptiApi> api_;
  RangeProfilerBackend& backend_;  // outlives the collection (the controller holds it meanwhile)
  std::shared_ptr<const RangeProfilerBackend::CachedPlan> plan_;
  std::shared_ptr<ContextProfiler> profiler_;  // held (busy) until Release hands it back
  CounterRange range_;
  std::vector<const char*> names_;
  bool activity_held_off_ = false;
  bool configured_ = false;
  bool started_ = false;
  bool pushed_ = false;
  std::uint32_t ranges_ = 1;  // launches counted per pass, one auto range each
  int passes_ = 0;
  std::vector<std::vector<replay::MetricValue>> values_;  // per range
};

}  // namespace

StatusOr<std::unique_ptr<replay::CounterCollection>> StartCollection(
    std::shared_ptr<CuptiApi> api, RangeProfilerBackend& backend,
    std::shared_ptr<const RangeProfilerBackend::CachedPlan> plan,
    std::shared_ptr<RangeProfilerBackend::ContextProfiler> profiler, CounterRange range,
    bool hold_off_kernel_activity, std::uint32_t ranges) {
  auto collection = std::make_unique<RangeProfilerCollection>(std::move(api), backend, std::move(plan),
                                                              std::move(profiler), range, ranges);
  if (hold_off_kernel_activity) GPUPROF_RETURN_IF_ERROR(collection->HoldOffKernelActivity());
  GPUPROF_RETURN_IF_ERROR(collection->Prepare());
  return std::unique_ptr<replay::CounterCollection>(std::move(collection));
}

}  // namespace gpuprof::cupti
