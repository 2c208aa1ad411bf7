#include "session/cupti_device_collector.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>

#include "base/clock.h"
#include "base/logging.h"
#include "cupti/internal_work.h"
#include "cupti/nvml_clock_api.h"
#include "cupti/range_profiler_backend.h"
#include "cupti/replay_hook.h"
#include "db/lost_records.h"
#include "device/cuda/cuda_driver.h"
#include "session/config.h"
#include "session/process.h"

namespace gpuprof::session {
namespace {

constexpr const char* kNvtxInjectionEnv = "NVTX_INJECTION64_PATH";

struct ObjectSearch {
  std::string_view prefix;
  std::string path;
};

int FindObject(struct dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto* search = static_cast<ObjectSearch*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  std::string_view name(info->dlpi_name);
  const std::size_t slash = name.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? name : name.substr(slash + 1);
  if (file.substr(0, search->prefix.size()) != search->prefix) return 0;
  try {
    search->path = std::string(name);
  } catch (...) {
    return 1;
  }
  return 1;
}

// Points the application's NVTX at the CUPTI that was just subscribed (see the header).
void PointNvtxAtCupti() {
  if (const char* current = std::getenv(kNvtxInjectionEnv); current != nullptr && current[0] != '\0') return;
  const std::string cupti = LoadedObjectPath("libcupti.so");
  if (cupti.empty()) {
    GPUPROF_LOG(kDebug) << "no loaded libcupti.so found; " << kNvtxInjectionEnv << " is left unset";
    return;
  }
  // setenv is not synchronized with getenv on other threads; glibc keeps superseded environment
  // arrays alive, so a concurrent reader sees the old or the new value. Done once, at start.
  if (setenv(kNvtxInjectionEnv, cupti.c_str(), /*overwrite=*/0) == 0) {
    GPUPROF_LOG(kDebug) << kNvtxInjectionEnv << "=" << cupti << " (NVTX ranges reach CUPTI)";
  }
}

// The hardware-counter backend for replay (issue 19), made when the options first ask for
// metrics. The launch's context is the one current on the launching thread (the hook's callbacks
// run there); counter_range is the declared setting's text ("auto" or "user", --counter-range).
StatusOr<std::shared_ptr<replay::CounterBackend>> MakeCounterBackend(std::shared_ptr<cupti::CuptiApi> api,
                                                                     const std::string& counter_range) {
  GPUPROF_ASSIGN_OR_RETURN(const device::cuda::CudaDriver* driver, device::cuda::CudaDriver::Get());
  cupti::RangeProfilerOptions options;
  // On: CUPTI's kernel tracing adds about 8 instructions per warp to a traced launch, so the counts
  // equal Nsight Compute's only with it held off (RangeProfilerOptions::hold_off_kernel_activity).
  options.hold_off_kernel_activity = true;
  GPUPROF_ASSIGN_OR_RETURN(options.range, cupti::ParseCounterRange(counter_range));
  options.context_of = [driver](int device) -> StatusOr<CUcontext> {
    CUcontext context = nullptr;
    GPUPROF_RETURN_IF_ERROR(driver->Check("cuCtxGetCurrent", driver->CtxGetCurrent(&context)));
    if (context == nullptr) return FailedPreconditionError("no current CUDA context for counters");
    CUdevice current = 0;
    CUdevice wanted = 0;
    GPUPROF_RETURN_IF_ERROR(driver->Check("cuCtxGetDevice", driver->CtxGetDevice(&current)));
    GPUPROF_RETURN_IF_ERROR(driver->Check("cuDeviceGet", driver->DeviceGet(&wanted, device)));
    if (current != wanted) {
      return FailedPreconditionError("the current CUDA context is not device " + std::to_string(device) +
                                     "'s");
    }
    return context;
  };
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<cupti::RangeProfilerBackend> backend,
                           cupti::MakeRangeProfilerBackend(std::move(api), std::move(options)));
  return std::shared_ptr<replay::CounterBackend>(std::move(backend));
}

}  // namespace

std::string LoadedObjectPath(std::string_view prefix) {
  ObjectSearch search{prefix, {}};
  dl_iterate_phdr(&FindObject, &search);
  return search.path;
}

CuptiLoaders DefaultCuptiLoaders() {
  CuptiLoaders loaders;
  loaders.cupti = [] { return cupti::LoadCuptiApi(); };
  loaders.driver = [] { return cupti::LoadDriverApi(); };
  return loaders;
}

CuptiDeviceCollector::CuptiDeviceCollector(CuptiLoaders loaders, cupti::SubscriberOptions options,
                                           bool started_by_injection, ReplaySettings replay,
                                           std::string spill_directory)
    : loaders_(std::move(loaders)),
      options_(std::move(options)),
      started_by_injection_(started_by_injection),
      replay_settings_(std::move(replay)),
      spill_directory_(std::move(spill_directory)) {}

CuptiDeviceCollector::~CuptiDeviceCollector() { Stop(); }

std::vector<std::pair<std::int32_t, std::string>> CuptiDeviceCollector::Devices() {
  std::vector<std::pair<std::int32_t, std::string>> devices =
      started_by_injection_ ? std::vector<std::pair<std::int32_t, std::string>>{} : QueryDevices();
  devices_known_at_start_ = !devices.empty();
  return devices;
}

std::vector<std::pair<std::int32_t, std::string>> CuptiDeviceCollector::DevicesAtStop() {
  std::vector<std::pair<std::int32_t, std::string>> now = QueryDevices();
  if (!now.empty()) return now;
  // The stop may come after the driver is gone (a script's session ends at exit): the names asked
  // for when the first context was made.
  std::lock_guard<std::mutex> lock(devices_mu_);
  return devices_at_first_context_;
}

void CuptiDeviceCollector::RememberDevices() {
  if (devices_remembered_.load(std::memory_order_acquire)) return;
  std::vector<std::pair<std::int32_t, std::string>> devices = QueryDevices();
  if (devices.empty()) return;
  std::lock_guard<std::mutex> lock(devices_mu_);
  devices_at_first_context_ = std::move(devices);
  devices_remembered_.store(true, std::memory_order_release);
}

std::vector<std::pair<std::int32_t, std::string>> CuptiDeviceCollector::QueryDevices() {
  if (!loaders_.driver) return {};
  StatusOr<std::unique_ptr<cupti::DriverApi>> driver = loaders_.driver();
  if (!driver.ok()) {
    GPUPROF_LOG(kDebug) << "device names not recorded: " << driver.status().message();
    return {};
  }
  cupti::ScopedInternalWork internal;  // gpuprof's own driver calls stay out of the profile
  StatusOr<std::vector<std::pair<std::int32_t, std::string>>> devices = cupti::ListDevices(**driver);
  if (!devices.ok()) {
    GPUPROF_LOG(kDebug) << "device names not recorded: " << devices.status().message();
    return {};
  }
  return *std::move(devices);
}

Status CuptiDeviceCollector::Start(DeviceCollectorHooks hooks) {
  if (!loaders_.cupti) return UnavailableError("CUPTI unavailable: no loader");
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<cupti::CuptiApi> loaded, loaders_.cupti());
  std::shared_ptr<cupti::CuptiApi> api(std::move(loaded));  // the subscriber's, and the counters'

  // Kernel replay when `gpuprof replay` (GPUPROF_REPLAY=1) asks for it.
  std::optional<cupti::CudaReplaySettings> replay_settings;
  if (replay_settings_.enabled) {
    replay_settings.emplace();
    replay_settings->options = ReplayOptionsFrom(replay_settings_);
    replay_settings->flush_l2 = replay_settings_.flush_l2;
    replay_settings->device.device_reserve_bytes = replay_settings_.device_reserve_bytes;
    replay_settings->device.spill_directory = spill_directory_;
    replay_settings->from_script = replay_settings_.from_script;
    replay_settings->cupti = api;
    counter_range_ = std::make_shared<base::Synchronized<CounterRange, std::mutex>>(
        std::in_place, CounterRange{replay_settings_.counter_range, false});
    replay_settings->make_counter_backend = [api, counter_range = counter_range_] {
      std::string range;
      {
        auto chosen = counter_range->wlock();
        chosen->made = true;
        range = chosen->range;
      }
      return MakeCounterBackend(api, range);
    };
    if (StatusOr<const device::cuda::CudaDriver*> driver = device::cuda::CudaDriver::Get(); driver.ok()) {
      replay_settings->clock_api = std::make_shared<cupti::NvmlClockApi>(**driver);
    }
    Status valid = CheckRangeSettings(replay_settings_);
    if (valid.ok()) valid = replay::Controller::ValidateOptions(replay_settings->options);
    if (!valid.ok()) {
      GPUPROF_LOG(kError) << "replay off: " << valid.message();
      replay_settings.reset();
    }
  }
  if (replay_settings) {
    replay_from_script_ = replay_settings->from_script;
    if (replay_from_script_) replay_settings->options.passes = 1;  // nothing until the program asks
    auto replay_sink = [sink = hooks.sink](const replay::ReplayRecord& record) {
      // Progress, one line per replayed or declined launch (stderr; `gpuprof replay` shows info).
      if (record.replayed) {
        std::vector<std::uint64_t> us;
        for (const replay::PassRecord& pass : record.passes) us.push_back(pass.duration_ns / 1000);
        std::sort(us.begin(), us.end());
        GPUPROF_LOG(kInfo) << "replay: " << record.kernel_name << " launch " << record.launch_index << ": "
                           << us.size() << " passes, " << (us.empty() ? 0 : us.front()) << "/"
                           << (us.empty() ? 0 : us[us.size() / 2]) << "/" << (us.empty() ? 0 : us.back())
                           << " us min/median/max, " << record.snapshot_bytes << " bytes snapshotted ("
                           << record.snapshot_device_bytes << " in device memory)"
                           << (record.deterministic ? "" : ", NONDETERMINISTIC");
      }
      trace::ReplayResult result;
      result.time_ns = base::EpochNowNs();
      result.pid = static_cast<std::uint32_t>(getpid());
      result.tid = static_cast<std::uint32_t>(gettid());
      // The application call being replayed (the sink runs inside its CUPTI callback): its kernel,
      // or the graph launch whose passes' node records carry this id (GPUPROF_REPLAY_GRAPH_NODE);
      // a range's launches were recorded earlier and carry their own (W6: pass 1's duration).
      result.correlation_id = record.application_launch_id != 0 ? record.application_launch_id
                                                                : cupti::ScopedApplicationCall::Current();
      result.record = record;
      static_cast<void>(sink(std::move(result)));
    };
    replay_hook_ = std::make_unique<cupti::CudaReplayHook>(*replay_settings, std::move(replay_sink));
    options_.driver_api_observer = replay_hook_.get();
    options_.on_module = [hook = replay_hook_.get()](const cupti::ModuleEvent& event) {
      hook->OnModule(event);
    };
    options_.on_context_destroy = [hook = replay_hook_.get()](CUcontext context) {
      hook->OnContextDestroy(context);
    };
    options_.filter_internal_work = true;
    if (replay_from_script_) {
      GPUPROF_LOG(kInfo)
          << "replay: armed; the program chooses what to replay (gpuprof.profile(kernel_replay=...))";
    } else {
      GPUPROF_LOG(kInfo) << "replay: " << replay_settings->options.passes << " passes per selected launch"
                         << (replay_settings->options.selector.name.empty()
                                 ? std::string(" (every kernel)")
                                 : " of " + replay_settings->options.selector.name);
    }
  }
  // C1's filter costs a CUPTI callback at every runtime- and driver-API entry and exit of every
  // thread. Only replay makes CUDA calls of gpuprof's own while collecting (device names are read
  // before Start), so without it the API domains stay off: the callbacks are work saved, though
  // the difference per training step was within run-to-run noise when measured (bench/README.md,
  // "Figures that used to live in code comments").
  if (replay_hook_ == nullptr) options_.filter_internal_work = false;
  // Unnamed at the start (inside cuInit, or CUDA not yet initialized): named at the first context,
  // in case the stop comes after the driver is gone.
  if (!devices_known_at_start_) options_.on_context_created = [this](CUcontext) { RememberDevices(); };
  cupti::RecordSink sink = [sink = std::move(hooks.sink)](std::vector<trace::Record>&& records) {
    for (trace::Record& record : records) static_cast<void>(sink(std::move(record)));
  };
  GPUPROF_ASSIGN_OR_RETURN(subscriber_,
                           cupti::CuptiSubscriber::Start(std::move(api), std::move(sink), options_));
  if (options_.nvtx) PointNvtxAtCupti();
  return OkStatus();
}

namespace {

// The CUPTI table the correlation functions call; set at the first Start and kept for the life of
// the process (CUPTI is never unloaded), so the plain function pointers never dangle.
std::atomic<cupti::CuptiApi*> g_correlation_api{nullptr};

int PushCorrelation(std::uint64_t id) {
  cupti::CuptiApi* api = g_correlation_api.load(std::memory_order_acquire);
  return api != nullptr &&
                 api->ActivityPushExternalCorrelationId(cupti::kGpuprofExternalKind, id) == CUPTI_SUCCESS
             ? 0
             : 1;
}

int PopCorrelation() {
  cupti::CuptiApi* api = g_correlation_api.load(std::memory_order_acquire);
  std::uint64_t id = 0;
  return api != nullptr &&
                 api->ActivityPopExternalCorrelationId(cupti::kGpuprofExternalKind, &id) == CUPTI_SUCCESS
             ? 0
             : 1;
}

// With cuda_trace `launches`, the launch callbacks take each call's external id from a thread-local
// stack: a push is a store, not a CUPTI call (cupti::LaunchApiTracer).
int PushLaunchCorrelation(std::uint64_t id) {
  cupti::PushExternalId(id);
  return 0;
}

int PopLaunchCorrelation() {
  cupti::PopExternalId();
  return 0;
}

}  // namespace

std::optional<std::uint32_t> CuptiDeviceCollector::StreamId(std::uint64_t stream) {
  if (subscriber_ == nullptr || !subscriber_->running()) return std::nullopt;
  StatusOr<const device::cuda::CudaDriver*> driver = device::cuda::CudaDriver::Get();
  if (!driver.ok() || (*driver)->StreamGetCtx == nullptr) return std::nullopt;
  auto* handle = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(stream));
  CUcontext context = nullptr;
  if ((*driver)->StreamGetCtx(handle, &context) != CUDA_SUCCESS) return std::nullopt;
  std::uint32_t id = 0;
  if (subscriber_->api()->GetStreamIdEx(context, handle, 0, &id) != CUPTI_SUCCESS) return std::nullopt;
  return id;
}

DeviceCollector::CorrelationFunctions CuptiDeviceCollector::Correlation() const {
  if (subscriber_ == nullptr || !subscriber_->running() || !options_.external_correlation) return {};
  if (options_.launch_api_callbacks) return {&PushLaunchCorrelation, &PopLaunchCorrelation};
  if (g_correlation_api.load(std::memory_order_acquire) == nullptr) {
    // Leaked on purpose: process lifetime (see g_correlation_api).
    static std::shared_ptr<cupti::CuptiApi>* kept = new std::shared_ptr<cupti::CuptiApi>(subscriber_->api());
    g_correlation_api.store(kept->get(), std::memory_order_release);
  }
  return {&PushCorrelation, &PopCorrelation};
}

Status CuptiDeviceCollector::ConfigureReplay(const ReplaySettings& settings) {
  constexpr const char* kHowToStart = "start the program with `gpuprof replay --from-script -- COMMAND`";
  if (replay_hook_ == nullptr) {
    return FailedPreconditionError(
        started_by_injection_
            ? std::string("this process was started by `gpuprof run`, which does not track device memory for "
                          "replay (that would cost every CUDA call a callback); ") +
                  kHowToStart
            : std::string("kernel replay needs gpuprof's injection from the start of the process (it tracks "
                          "every device allocation); ") +
                  kHowToStart);
  }
  if (!replay_from_script_) {
    return FailedPreconditionError(
        std::string(
            "the command line's replay settings are in force (gpuprof replay --passes/--kernel); to let "
            "the program choose, ") +
        kHowToStart);
  }
  {
    auto chosen = counter_range_->wlock();
    if (chosen->made && chosen->range != settings.counter_range) {
      return FailedPreconditionError("replay_counter_range is \"" + chosen->range +
                                     "\" since this process's first counter pass and cannot become \"" +
                                     settings.counter_range +
                                     "\"; give it before the first counter pass, or `gpuprof replay "
                                     "--counter-range " +
                                     settings.counter_range + "`");
    }
    chosen->range = settings.counter_range;
  }
  return replay_hook_->Configure(ReplayOptionsFrom(settings), settings.flush_l2);
}

void CuptiDeviceCollector::ReplayStepBoundary() {
  // The hook returns at once unless its options are range replay by step.
  if (replay_hook_ != nullptr) replay_hook_->StepBoundary();
}

void CuptiDeviceCollector::Flush() {
  if (subscriber_ == nullptr || !subscriber_->running()) return;
  if (Status flushed = subscriber_->Flush(/*forced=*/true); !flushed.ok()) {
    GPUPROF_LOG(kWarning) << "flushing GPU activity: " << flushed.message();
  }
}

std::vector<std::pair<std::string, std::uint64_t>> CuptiDeviceCollector::LostRecords() {
  if (subscriber_ == nullptr) return {};
  return {{std::string(db::kLostCuptiBuffers), subscriber_->stats().cupti_dropped_records}};
}

void CuptiDeviceCollector::Stop() {
  if (replay_hook_ != nullptr) {
    replay_hook_->IdleCounters();       // no Range Profiler left enabled on the application's contexts
    replay_hook_->BeginFinalization();  // R5
  }
  if (subscriber_ == nullptr || !subscriber_->running()) return;
  if (Status stopped = subscriber_->Stop(); !stopped.ok()) {
    GPUPROF_LOG(kWarning) << "stopping GPU activity collection: " << stopped.message()
                          << "; GPU activity at the end of the run may be missing";
  }
}

DeviceCollectorFactory CuptiDeviceCollectorFactory(CuptiLoaders loaders) {
  return [loaders =
              std::move(loaders)](const SessionConfig& config) -> StatusOr<std::unique_ptr<DeviceCollector>> {
    if (!config.device) return std::unique_ptr<DeviceCollector>();
    // No driver, no GPU work to see: a CPU-only process does not load CUPTI at all.
    if (loaders.driver) {
      StatusOr<std::unique_ptr<cupti::DriverApi>> driver = loaders.driver();
      if (!driver.ok()) {
        GPUPROF_LOG(kInfo) << "no CUDA driver in this process (" << driver.status().message()
                           << "): host records only";
        return std::unique_ptr<DeviceCollector>();
      }
    }
    cupti::SubscriberOptions options;
    options.runtime_api = config.cuda_trace.runtime;
    options.driver_api = config.cuda_trace.driver;
    options.nvtx = config.cuda_trace.nvtx;
    options.launch_api_callbacks = config.cuda_trace.launches;
    return std::unique_ptr<DeviceCollector>(std::make_unique<CuptiDeviceCollector>(
        loaders, std::move(options), /*started_by_injection=*/config.started_by == "injection", config.replay,
        config.output_dir));
  };
}

DeviceCollectorFactory DefaultDeviceCollectorFactory() { return CuptiDeviceCollectorFactory(); }

StatusOr<std::vector<replay::MetricInfo>> QueryDeviceMetrics(int device, std::string_view chip) {
  return cupti::QueryMetrics(device, chip);
}

}  // namespace gpuprof::session
