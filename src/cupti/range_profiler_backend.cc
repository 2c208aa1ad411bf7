#include "cupti/range_profiler_backend.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <set>

#include "base/logging.h"
#include "cupti/internal_work.h"
#include "cupti/range_profiler_internal.h"
#include "device/cuda/cuda_driver.h"
#include "replay/metric_catalog.h"

namespace gpuprof::cupti {

namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

}  // namespace

StatusOr<CounterRange> ParseCounterRange(std::string_view text) {
  if (text == "auto") return CounterRange::kAuto;
  if (text == "user") return CounterRange::kUser;
  return InvalidArgumentError("counter range '" + std::string(text) + "': expected auto or user");
}

Status CounterStatus(CUptiResult result, std::string_view call, std::string_view error_string,
                     std::string_view context) {
  if (result == CUPTI_SUCCESS) return OkStatus();
  std::string message = std::string(call) + " failed: " + std::string(error_string);
  if (!context.empty()) message += " (" + std::string(context) + ")";
  switch (result) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return FailedPreconditionError(
          message +
          ". The NVIDIA driver restricts GPU performance counters to admin users (its "
          "NVreg_RestrictProfilingToAdminUsers / RmProfilingAdminOnly setting). Either run as root (or "
          "with CAP_SYS_ADMIN), or set the module option NVreg_RestrictProfilingToAdminUsers=0 (e.g. "
          "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d/) and reload the "
          "driver or reboot; see https://developer.nvidia.com/ERR_NVGPUCTRPERM");
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return FailedPreconditionError(message +
                                     ". The hypervisor does not allow profiling on this virtual GPU; enable "
                                     "profiling for the vGPU on the host (see the vGPU documentation)");
    case CUPTI_ERROR_HARDWARE_BUSY:
      return UnavailableError(message +
                              ". Another client holds the GPU's performance counters: a second profiler "
                              "(Nsight Compute, Nsight Systems with GPU metrics, another gpuprof) or DCGM's "
                              "profiling module. Stop it, or pause DCGM with `dcgmi profile --pause` (and "
                              "`dcgmi profile --resume` afterwards)");
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
      return UnimplementedError(message +
                                ". Hardware counters are not supported on a MIG instance: run on a whole "
                                "GPU (MIG disabled)");
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return UnimplementedError(message + ". Hardware counters are not supported on this virtualized GPU");
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
      return UnimplementedError(message +
                                ". Hardware counters are not allowed in confidential computing mode");
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return UnimplementedError(message + ". Hardware counters are not supported on this device");
    case CUPTI_ERROR_NOT_SUPPORTED:
      return UnimplementedError(message +
                                ". Hardware counters are not supported here (a MIG instance, an MPS client, "
                                "a GPU older than Turing or a driver older than the CUDA 13 CUPTI need are "
                                "not supported)");
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return UnavailableError(message + ". Another profiling API or tool is active in this process");
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_INVALID_DEVICE:
      return UnavailableError(message + ". No usable GPU or driver for counters");
    default: return InternalError(message);
  }
}

Status UnknownMetricStatus(std::string_view name, std::string_view chip, std::span<const std::string> known) {
  std::string message = "unknown metric '" + std::string(name) + "' on " + std::string(chip);
  const std::vector<std::string> nearest = replay::NearestMetricNames(name, known);
  if (!nearest.empty()) {
    message += "; nearest known: ";
    for (std::size_t i = 0; i < nearest.size(); ++i) {
      if (i > 0) message += ", ";
      message += nearest[i];
    }
  }
  message += " (`gpuprof replay --query-metrics` lists them all)";
  return NotFoundError(std::move(message));
}

RangeProfilerBackend::RangeProfilerBackend(std::shared_ptr<CuptiApi> api, RangeProfilerOptions options)
    : api_(std::move(api)), options_(std::move(options)) {}

RangeProfilerBackend::~RangeProfilerBackend() = default;

Status RangeProfilerBackend::Fail(CUptiResult result, std::string_view call, std::string_view context) {
  return CounterStatus(result, call, CuptiErrorString(*api_, result), context);
}

StatusOr<std::string> RangeProfilerBackend::ChipName(int device) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = chips_.find(device); it != chips_.end()) return it->second;
  }
  std::string chip;
  if (options_.chip_of) {
    GPUPROF_ASSIGN_OR_RETURN(chip, options_.chip_of(device));
  } else {
    ScopedInternalWork internal;
    auto params = MakeParams<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    params.deviceIndex = static_cast<std::size_t>(device);
    const CUptiResult result = api_->DeviceGetChipName(&params);
    if (result != CUPTI_SUCCESS)
      return Fail(result, "cuptiDeviceGetChipName", "device " + std::to_string(device));
    if (params.pChipName == nullptr) return InternalError("cuptiDeviceGetChipName returned no name");
    chip = params.pChipName;
  }
  std::lock_guard<std::mutex> lock(mu_);
  chips_[device] = chip;
  return chip;
}

StatusOr<std::shared_ptr<RangeProfilerBackend::HostObject>> RangeProfilerBackend::NewHostObject(
    const std::string& chip) {
  auto host = std::make_shared<HostObject>();
  host->api = api_.get();
  auto params =
      MakeParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
  params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  params.pChipName = chip.c_str();
  params.pCounterAvailabilityImage = nullptr;  // chips of this CUPTI's release need none
  const CUptiResult result = api_->HostInitialize(&params);
  if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostInitialize", "chip " + chip);
  if (params.pHostObject == nullptr)
    return InternalError("cuptiProfilerHostInitialize returned no host object");
  host->object = params.pHostObject;
  return host;
}

StatusOr<RangeProfilerBackend::HostObject*> RangeProfilerBackend::PropertiesObject(const std::string& chip) {
  if (auto it = properties_.find(chip); it != properties_.end()) return it->second.get();
  GPUPROF_ASSIGN_OR_RETURN(std::shared_ptr<HostObject> host, NewHostObject(chip));
  HostObject* raw = host.get();
  properties_[chip] = std::move(host);
  return raw;
}

StatusOr<std::vector<replay::MetricInfo>> RangeProfilerBackend::ListChipMetrics(const std::string& chip) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = metric_lists_.find(chip); it != metric_lists_.end()) return it->second;
  GPUPROF_ASSIGN_OR_RETURN(HostObject * host, PropertiesObject(chip));
  std::vector<replay::MetricInfo> out;
  for (CUpti_MetricType type :
       {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    auto base = MakeParams<CUpti_Profiler_Host_GetBaseMetrics_Params>(
        CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE);
    base.pHostObject = host->object;
    base.metricType = type;
    CUptiResult result = api_->HostGetBaseMetrics(&base);
    if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostGetBaseMetrics", "chip " + chip);
    for (std::size_t i = 0; i < base.numMetrics; ++i) {
      if (base.ppMetricNames == nullptr || base.ppMetricNames[i] == nullptr) continue;
      const std::string name = base.ppMetricNames[i];
      auto properties = MakeParams<CUpti_Profiler_Host_GetMetricProperties_Params>(
          CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
      properties.pHostObject = host->object;
      properties.pMetricName = name.c_str();
      std::string description;
      std::string unit;
      if (api_->HostGetMetricProperties(&properties) == CUPTI_SUCCESS) {
        if (properties.pDescription != nullptr) description = properties.pDescription;
        if (properties.pDimUnit != nullptr) unit = properties.pDimUnit;
      }
      auto subs = MakeParams<CUpti_Profiler_Host_GetSubMetrics_Params>(
          CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE);
      subs.pHostObject = host->object;
      subs.metricType = type;
      subs.pMetricName = name.c_str();
      result = api_->HostGetSubMetrics(&subs);
      if (result != CUPTI_SUCCESS || subs.numOfSubmetrics == 0 || subs.ppSubMetrics == nullptr) {
        out.push_back({name, unit, description});
        continue;
      }
      for (std::size_t k = 0; k < subs.numOfSubmetrics; ++k) {
        if (subs.ppSubMetrics[k] == nullptr) continue;
        std::string full = name + subs.ppSubMetrics[k];  // submetrics carry their leading '.'
        // The dimension changes with the submetric (.pct_of_peak_* is a percent, .per_second a
        // rate): derived from the base unit rather than one properties call per name (~150k).
        std::string sub = subs.ppSubMetrics[k];
        std::string full_unit = unit;
        if (sub.find(".pct") != std::string::npos) {
          full_unit = "percent";
        } else if (sub.find(".ratio") != std::string::npos) {
          full_unit = "";
        } else if (sub.find(".per_second") != std::string::npos) {
          full_unit = unit + "/second";
        } else if (sub.find(".per_cycle") != std::string::npos) {
          full_unit = unit + "/cycle";
        }
        out.push_back({std::move(full), std::move(full_unit), description});
      }
    }
  }
  metric_lists_[chip] = out;
  return out;
}

StatusOr<std::vector<replay::MetricInfo>> RangeProfilerBackend::ListMetrics(int device) {
  GPUPROF_ASSIGN_OR_RETURN(const std::string chip, ChipName(device));
  return ListChipMetrics(chip);
}

Status RangeProfilerBackend::Configure(HostObject& host, const std::vector<std::string>& metrics,
                                       std::vector<std::uint8_t>& image, int& passes) {
  std::vector<const char*> names = CStrings(metrics);
  auto add = MakeParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
  add.pHostObject = host.object;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  CUptiResult result = api_->HostConfigAddMetrics(&add);
  if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostConfigAddMetrics", Join(metrics));
  auto size = MakeParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
  size.pHostObject = host.object;
  result = api_->HostGetConfigImageSize(&size);
  if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostGetConfigImageSize");
  if (size.configImageSize == 0) return InternalError("cuptiProfilerHostGetConfigImageSize returned 0 bytes");
  image.assign(size.configImageSize, 0);
  auto get = MakeParams<CUpti_Profiler_Host_GetConfigImage_Params>(
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
  get.pHostObject = host.object;
  get.configImageSize = image.size();
  get.pConfigImage = image.data();
  result = api_->HostGetConfigImage(&get);
  if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostGetConfigImage");
  auto count = MakeParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
  count.configImageSize = image.size();
  count.pConfigImage = image.data();
  result = api_->HostGetNumOfPasses(&count);
  if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostGetNumOfPasses");
  passes = static_cast<int>(count.numOfPasses);
  return OkStatus();
}

StatusOr<int> RangeProfilerBackend::SingleMetricPasses(const std::string& chip, const std::string& metric) {
  if (auto it = single_passes_.find({chip, metric}); it != single_passes_.end()) return it->second;
  // A host object takes one configuration (a second ConfigAddMetrics after GetConfigImage fails),
  // so each metric's own count needs an object of its own (~5 ms each on the build machine).
  GPUPROF_ASSIGN_OR_RETURN(std::shared_ptr<HostObject> host, NewHostObject(chip));
  std::vector<std::uint8_t> image;
  int passes = 0;
  GPUPROF_RETURN_IF_ERROR(Configure(*host, {metric}, image, passes));
  single_passes_[{chip, metric}] = passes;
  return passes;
}

StatusOr<std::shared_ptr<const RangeProfilerBackend::CachedPlan>> RangeProfilerBackend::PlanFor(
    int device, const std::vector<std::string>& metrics) {
  if (metrics.empty()) return InvalidArgumentError("no metrics to plan");
  GPUPROF_RETURN_IF_ERROR(api_->CounterApiStatus());
  GPUPROF_ASSIGN_OR_RETURN(const std::string chip, ChipName(device));
  const std::pair<std::string, std::string> key{chip, Join(metrics)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  }
  ScopedInternalWork internal;
  auto plan = std::make_shared<CachedPlan>();
  plan->chip = chip;
  plan->metrics = metrics;
  std::string unknown;
  {
    std::lock_guard<std::mutex> lock(mu_);
    GPUPROF_ASSIGN_OR_RETURN(HostObject * properties_host, PropertiesObject(chip));
    for (const std::string& metric : metrics) {
      auto properties = MakeParams<CUpti_Profiler_Host_GetMetricProperties_Params>(
          CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE);
      properties.pHostObject = properties_host->object;
      properties.pMetricName = metric.c_str();
      const CUptiResult result = api_->HostGetMetricProperties(&properties);
      if (result == CUPTI_ERROR_INVALID_METRIC_NAME) {
        unknown = metric;
        break;
      }
      if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerHostGetMetricProperties", metric);
      plan->plan.units.emplace_back(properties.pDimUnit != nullptr ? properties.pDimUnit : "");
    }
  }
  if (!unknown.empty()) {
    std::vector<std::string> known;
    if (StatusOr<std::vector<replay::MetricInfo>> list = ListChipMetrics(chip); list.ok()) {
      known.reserve(list->size());
      for (replay::MetricInfo& info : *list) known.push_back(std::move(info.name));
    }
    return UnknownMetricStatus(unknown, chip, known);
  }
  GPUPROF_ASSIGN_OR_RETURN(plan->host, NewHostObject(chip));
  GPUPROF_RETURN_IF_ERROR(Configure(*plan->host, metrics, plan->config_image, plan->plan.passes));
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& metric : metrics) {
    GPUPROF_ASSIGN_OR_RETURN(const int passes, SingleMetricPasses(chip, metric));
    plan->plan.metric_passes.push_back(passes);
  }
  plans_[key] = plan;
  return std::shared_ptr<const CachedPlan>(std::move(plan));
}

StatusOr<replay::CounterPlan> RangeProfilerBackend::Plan(int device,
                                                         const std::vector<std::string>& metrics) {
  try {
    GPUPROF_ASSIGN_OR_RETURN(std::shared_ptr<const CachedPlan> plan, PlanFor(device, metrics));
    return plan->plan;
  } catch (const std::exception& e) {
    return InternalError(std::string("planning counters: ") + e.what());
  }
}

StatusOr<std::unique_ptr<replay::CounterCollection>> RangeProfilerBackend::Begin(
    int device, const std::vector<std::string>& metrics) {
  return StartOn(device, metrics, 1);
}

StatusOr<std::unique_ptr<replay::CounterCollection>> RangeProfilerBackend::BeginRange(
    int device, const std::vector<std::string>& metrics, std::uint32_t launches) {
  if (launches == 0) return InvalidArgumentError("a range without launches has nothing to count");
  if (options_.range != CounterRange::kAuto) {
    return FailedPreconditionError(
        "--counter-range user measures one range per pass; range replay counts each launch in its own "
        "auto range: leave --counter-range at auto");
  }
  return StartOn(device, metrics, launches);
}

StatusOr<std::unique_ptr<replay::CounterCollection>> RangeProfilerBackend::StartOn(
    int device, const std::vector<std::string>& metrics, std::uint32_t ranges) {
  try {
    GPUPROF_ASSIGN_OR_RETURN(std::shared_ptr<const CachedPlan> plan, PlanFor(device, metrics));
    if (!options_.context_of) return FailedPreconditionError("counter collection needs the launch's context");
    GPUPROF_ASSIGN_OR_RETURN(CUcontext context, options_.context_of(device));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!profiler_initialized_) {
        ScopedInternalWork internal;
        auto params =
            MakeParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
        const CUptiResult result = api_->ProfilerInitialize(&params);
        if (result != CUPTI_SUCCESS) return Fail(result, "cuptiProfilerInitialize");
        profiler_initialized_ = true;
      }
    }
    std::shared_ptr<ContextProfiler> profiler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::shared_ptr<ContextProfiler>& held = profilers_[context];
      if (held == nullptr) {
        held = std::make_shared<ContextProfiler>();
        held->context = context;
      }
      if (held->busy) {
        return FailedPreconditionError("a counter collection is already running on this CUDA context");
      }
      held->busy = true;
      profiler = held;
    }
    // From here the collection owns the profiler: a failure below hands it back, disabled.
    return StartCollection(api_, *this, std::move(plan), std::move(profiler), options_.range,
                           options_.hold_off_kernel_activity, ranges);
  } catch (const std::exception& e) {
    return InternalError(std::string("starting counter collection: ") + e.what());
  }
}

Status RangeProfilerBackend::Disable(ContextProfiler& profiler) noexcept {
  if (profiler.object == nullptr) return OkStatus();
  ScopedInternalWork internal;
  auto params =
      MakeParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
  params.pRangeProfilerObject = profiler.object;
  profiler.object = nullptr;
  profiler.sized_for = nullptr;
  const CUptiResult result = api_->RangeProfilerDisable(&params);
  if (result == CUPTI_SUCCESS) return OkStatus();
  try {
    return Fail(result, "cuptiRangeProfilerDisable");
  } catch (...) {
    return InternalError("cuptiRangeProfilerDisable failed");
  }
}

Status RangeProfilerBackend::Return(std::shared_ptr<ContextProfiler> profiler, bool failed) noexcept {
  bool disable = failed || !options_.keep_enabled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    disable = disable || profiler->drop_when_done;
    profiler->busy = false;
    profiler->drop_when_done = false;
    if (disable) {
      auto it = profilers_.find(profiler->context);
      if (it != profilers_.end() && it->second == profiler) profilers_.erase(it);
    }
  }
  return disable ? Disable(*profiler) : OkStatus();
}

StatusOr<std::vector<replay::MetricValue>> RangeProfilerBackend::EvaluateImage(
    int device, const std::vector<std::string>& metrics, std::span<const std::uint8_t> counter_data) {
  try {
    GPUPROF_ASSIGN_OR_RETURN(std::shared_ptr<const CachedPlan> plan, PlanFor(device, metrics));
    return EvaluateFirstRange(*api_, *plan, counter_data, /*passes=*/0);
  } catch (const std::exception& e) {
    return InternalError(std::string("evaluating a counter data image: ") + e.what());
  }
}

void RangeProfilerBackend::Idle() noexcept {
  std::vector<std::shared_ptr<ContextProfiler>> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = profilers_.begin(); it != profilers_.end();) {
      if (it->second->busy) {
        it->second->drop_when_done = true;  // its collection disables it when it ends
        ++it;
      } else {
        idle.push_back(std::move(it->second));
        it = profilers_.erase(it);
      }
    }
  }
  for (const std::shared_ptr<ContextProfiler>& profiler : idle) {
    if (Status s = Disable(*profiler); !s.ok()) {
      GPUPROF_LOG(kWarning) << "replay counters: " << s.message();
    }
  }
}

std::size_t RangeProfilerBackend::EnabledContexts() {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t enabled = 0;
  for (const auto& [context, profiler] : profilers_) {
    if (profiler->object != nullptr) ++enabled;
  }
  return enabled;
}

StatusOr<std::unique_ptr<RangeProfilerBackend>> MakeRangeProfilerBackend(std::shared_ptr<CuptiApi> api,
                                                                         RangeProfilerOptions options) {
  if (api == nullptr) return InvalidArgumentError("no CUPTI table");
  GPUPROF_RETURN_IF_ERROR(api->CounterApiStatus());
  return std::make_unique<RangeProfilerBackend>(std::move(api), std::move(options));
}

StatusOr<std::vector<replay::MetricInfo>> QueryMetrics(int device, std::string_view chip) {
  if (chip.empty()) {
    // cuptiDeviceGetChipName needs an initialized driver with that device (it crashes otherwise),
    // and this may be the process's first CUDA call (gpuprof replay --query-metrics).
    const std::string hint = "; name the chip instead (--chip GH100) to list its metrics without a GPU";
    StatusOr<device::cuda::CudaDriver> driver =
        device::cuda::CudaDriver::Load({device::cuda::kCudaDriverLibrary});
    if (!driver.ok()) return UnavailableError("no CUDA driver: " + driver.status().message() + hint);
    if (const CUresult r = driver->Init(0); r != CUDA_SUCCESS) {
      return UnavailableError("cuInit failed (CUresult " + std::to_string(static_cast<int>(r)) +
                              "): no usable GPU" + hint);
    }
    int count = 0;
    if (driver->DeviceGetCount(&count) != CUDA_SUCCESS || device < 0 || device >= count) {
      return UnavailableError("device " + std::to_string(device) + " does not exist (" +
                              std::to_string(count) + " CUDA device(s))" + hint);
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<CuptiApi> loaded, LoadCuptiApi());
  RangeProfilerOptions options;
  if (!chip.empty()) {
    options.chip_of = [name = std::string(chip)](int) -> StatusOr<std::string> { return name; };
  }
  GPUPROF_ASSIGN_OR_RETURN(
      std::unique_ptr<RangeProfilerBackend> backend,
      MakeRangeProfilerBackend(std::shared_ptr<CuptiApi>(std::move(loaded)), std::move(options)));
  return backend->ListMetrics(device);
}

}  // namespace gpuprof::cupti
