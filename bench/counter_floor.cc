// Where the time of a hardware-counter collection goes, on one NVIDIA GPU, call by call (issue 19;
// bench/README.md "counter_floor"). counter_overhead.py measures gpuprof against ncu on a real
// training; this program finds the floor under it: CUPTI's Range Profiler driven directly, in user
// replay, each CUPTI call timed, for the ways a profiler can hold it across launches:
//
//   per_launch       Enable, counter data image, SetConfig, the passes, Decode, Evaluate, Disable
//                    for every launch (what the first counter backend did)
//   keep_enabled     Enable once; per launch a fresh counter data image and SetConfig
//   keep_configured  Enable and SetConfig once; per launch only the passes, Decode, Evaluate and
//                    a re-initialized counter data image
//   backend          gpuprof's RangeProfilerBackend (Begin, BeginPass/EndPass, Finish; it keeps
//                    the profiler enabled between launches), total only
//   cupti_kernel_replay  the peer floor: CUPTI replays the kernel itself (CUPTI_KernelReplay, its
//                    own save and restore), one Start and Stop per launch
//
// Each pass is Start, one launch of a known kernel (fma_loop: k dependent FMAs per thread),
// cuStreamSynchronize, Stop. Beside them, in the same run: the kernel alone (launch + sync, the
// timing pass's floor), the application's launch rate (empty kernels, asynchronous) and whether
// two one-block kernels on two streams still overlap, each with the profiler disabled and
// enabled-but-not-started: what a profiler kept enabled between replayed launches costs the
// application.
//
// Every variant's smsp__inst_executed.sum on its last launch must equal per_launch's (an exact
// count), or the row says WRONG and the program exits 1. --inst-check prints the instruction count
// of fma_loop at k = 0, 4096, 8192 in auto and user range; --plain runs those launches with no
// CUPTI at all, for `ncu --metrics smsp__inst_executed.sum` on this program. --save-image DIR
// writes one launch's counter data image with its metric list and values (host test data: the
// Profiler Host API evaluates it without a GPU).

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_args.h"
#include "counter_floor_kernels.h"
#include "cupti/cupti_api.h"
#include "cupti/range_profiler_backend.h"
#include "device/cuda/cuda_driver.h"
#include "replay/metric_catalog.h"

namespace gpuprof::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

template <typename Params>
Params MakeParams(std::size_t size) {
  Params params{};
  params.structSize = size;
  return params;
}

struct Flags {
  std::uint64_t launches = 20;
  std::uint64_t fma_k = 4096;
  std::string metrics;  // empty: --set basic's counter metrics
  std::string set = "basic";
  std::string save_image;
  std::string json;
  bool plain = false;
  bool inst_check = false;
  bool activity = false;  // CUPTI kernel activity on, as under `gpuprof run`
};

// --activity: CUPTI's kernel activity records (CONCURRENT_KERNEL), as a tracing session enables
// them; the records are counted, so the switches around the counter passes are seen to hold.
std::atomic<std::uint64_t> g_kernel_records{0};
cupti::CuptiApi* g_api = nullptr;

void CUPTIAPI BufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                              std::size_t valid) {
  CUpti_Activity* record = nullptr;
  while (g_api->ActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_kernel_records.fetch_add(1);
  }
  std::free(buffer);
}

// Per-call time, summed over the launches that count (the first launch of a variant is apart).
class CallTimes {
 public:
  CUptiResult Time(const char* name, const std::function<CUptiResult()>& call) {
    const Clock::time_point start = Clock::now();
    const CUptiResult result = call();
    Stat& stat = stats_[name];
    stat.count += 1;
    stat.ms += MsSince(start);
    if (order_.end() == std::find(order_.begin(), order_.end(), name)) order_.emplace_back(name);
    return result;
  }
  void Reset() { stats_.clear(); }
  struct Stat {
    std::uint64_t count = 0;
    double ms = 0;
  };
  const std::map<std::string, Stat>& stats() const { return stats_; }
  const std::vector<std::string>& order() const { return order_; }

 private:
  std::map<std::string, Stat> stats_;
  std::vector<std::string> order_;
};

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "counter_floor: %s\n", why.c_str());
  std::exit(2);
}

void CheckCuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) Die(std::string(what) + ": " + cudaGetErrorString(error));
}

// The configured host side: one host object, the config image and its pass count.
struct HostPlan {
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<std::string> metrics;
  std::vector<const char*> names;
  std::vector<std::uint8_t> config;
  std::size_t passes = 0;
};

class Floor {
 public:
  Floor(cupti::CuptiApi& api, CUcontext context, std::string chip)
      : api_(api), context_(context), chip_(std::move(chip)) {}

  std::string Error(CUptiResult result, const char* call) {
    return std::string(call) + ": " + cupti::CuptiErrorString(api_, result);
  }

  HostPlan Configure(const std::vector<std::string>& metrics) {
    HostPlan plan;
    plan.metrics = metrics;
    for (const std::string& m : plan.metrics) plan.names.push_back(m.c_str());
    auto init =
        MakeParams<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    init.pChipName = chip_.c_str();
    if (CUptiResult r = api_.HostInitialize(&init); r != CUPTI_SUCCESS) Die(Error(r, "HostInitialize"));
    plan.host = init.pHostObject;
    auto add = MakeParams<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = plan.host;
    add.ppMetricNames = plan.names.data();
    add.numMetrics = plan.names.size();
    if (CUptiResult r = api_.HostConfigAddMetrics(&add); r != CUPTI_SUCCESS)
      Die(Error(r, "HostConfigAddMetrics") + " (" + Join(metrics) + ")");
    auto size = MakeParams<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = plan.host;
    if (CUptiResult r = api_.HostGetConfigImageSize(&size); r != CUPTI_SUCCESS)
      Die(Error(r, "HostGetConfigImageSize"));
    plan.config.assign(size.configImageSize, 0);
    auto get = MakeParams<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    get.pHostObject = plan.host;
    get.configImageSize = plan.config.size();
    get.pConfigImage = plan.config.data();
    if (CUptiResult r = api_.HostGetConfigImage(&get); r != CUPTI_SUCCESS)
      Die(Error(r, "HostGetConfigImage"));
    auto count = MakeParams<CUpti_Profiler_Host_GetNumOfPasses_Params>(
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    count.configImageSize = plan.config.size();
    count.pConfigImage = plan.config.data();
    if (CUptiResult r = api_.HostGetNumOfPasses(&count); r != CUPTI_SUCCESS)
      Die(Error(r, "HostGetNumOfPasses"));
    plan.passes = count.numOfPasses;
    return plan;
  }

  // --- the Range Profiler, each call timed; false (and error_ set) on a failed call ---
  bool Enable() {
    auto p = MakeParams<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    p.ctx = context_;
    if (!Ok(times_.Time("Enable", [&] { return api_.RangeProfilerEnable(&p); }), "Enable")) return false;
    object_ = p.pRangeProfilerObject;
    return true;
  }
  bool Disable() {
    if (object_ == nullptr) return true;
    auto p = MakeParams<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    object_ = nullptr;
    return Ok(times_.Time("Disable", [&] { return api_.RangeProfilerDisable(&p); }), "Disable");
  }
  bool SizeImage(const HostPlan& plan) {
    auto p = MakeParams<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    p.pMetricNames = const_cast<const char**>(plan.names.data());
    p.numMetrics = plan.names.size();
    p.maxNumOfRanges = 1;
    p.maxNumRangeTreeNodes = 1;
    if (!Ok(times_.Time("GetCounterDataSize", [&] { return api_.RangeProfilerGetCounterDataSize(&p); }),
            "GetCounterDataSize"))
      return false;
    image_.assign(p.counterDataSize, 0);
    return true;
  }
  bool InitImage() {
    auto p = MakeParams<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    p.counterDataSize = image_.size();
    p.pCounterData = image_.data();
    return Ok(times_.Time("CounterDataImageInitialize",
                          [&] { return api_.RangeProfilerCounterDataImageInitialize(&p); }),
              "CounterDataImageInitialize");
  }
  bool SetConfig(const HostPlan& plan, bool user_range, CUpti_ProfilerReplayMode mode = CUPTI_UserReplay) {
    auto p =
        MakeParams<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = object_;
    p.configSize = plan.config.size();
    p.pConfig = plan.config.data();
    p.counterDataImageSize = image_.size();
    p.pCounterDataImage = image_.data();
    p.range = user_range ? CUPTI_UserRange : CUPTI_AutoRange;
    p.replayMode = mode;
    p.maxRangesPerPass = 1;
    p.numNestingLevels = 1;
    p.minNestingLevel = 1;
    p.passIndex = 0;
    p.targetNestingLevel = 1;
    return Ok(times_.Time("SetConfig", [&] { return api_.RangeProfilerSetConfig(&p); }), "SetConfig");
  }
  // Passes until CUPTI says all are submitted; -1 on failure or past `cap`.
  int Passes(const std::function<void()>& launch, bool user_range, std::size_t cap) {
    for (std::size_t pass = 1; pass <= cap; ++pass) {
      auto start = MakeParams<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
      start.pRangeProfilerObject = object_;
      if (!Ok(times_.Time("Start", [&] { return api_.RangeProfilerStart(&start); }), "Start")) return -1;
      if (user_range) {
        auto push = MakeParams<CUpti_RangeProfiler_PushRange_Params>(
            CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
        push.pRangeProfilerObject = object_;
        push.pRangeName = "floor";
        if (!Ok(times_.Time("PushRange", [&] { return api_.RangeProfilerPushRange(&push); }), "PushRange"))
          return -1;
      }
      times_.Time("launch+sync", [&] {
        launch();
        CheckCuda(cudaDeviceSynchronize(), "kernel");
        return CUPTI_SUCCESS;
      });
      if (user_range) {
        auto pop =
            MakeParams<CUpti_RangeProfiler_PopRange_Params>(CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
        pop.pRangeProfilerObject = object_;
        if (!Ok(times_.Time("PopRange", [&] { return api_.RangeProfilerPopRange(&pop); }), "PopRange"))
          return -1;
      }
      auto stop = MakeParams<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
      stop.pRangeProfilerObject = object_;
      if (!Ok(times_.Time("Stop", [&] { return api_.RangeProfilerStop(&stop); }), "Stop")) return -1;
      if (stop.isAllPassSubmitted != 0) return static_cast<int>(pass);
    }
    error_ = "not all passes submitted after " + std::to_string(cap);
    return -1;
  }
  // Decode, one range, evaluate every metric of `plan`; empty on failure.
  std::vector<double> Evaluate(const HostPlan& plan) {
    auto decode =
        MakeParams<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    if (!Ok(times_.Time("DecodeData", [&] { return api_.RangeProfilerDecodeData(&decode); }), "DecodeData"))
      return {};
    if (decode.numOfRangeDropped != 0) {
      error_ = "DecodeData dropped " + std::to_string(decode.numOfRangeDropped) + " range(s)";
      return {};
    }
    auto info = MakeParams<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = image_.data();
    info.counterDataImageSize = image_.size();
    if (!Ok(times_.Time("GetCounterDataInfo", [&] { return api_.RangeProfilerGetCounterDataInfo(&info); }),
            "GetCounterDataInfo"))
      return {};
    if (info.numTotalRanges != 1) {
      error_ = "the counter data holds " + std::to_string(info.numTotalRanges) + " ranges, not 1";
      return {};
    }
    std::vector<double> values(plan.metrics.size(), 0.0);
    auto eval = MakeParams<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    eval.pHostObject = plan.host;
    eval.pCounterDataImage = image_.data();
    eval.counterDataImageSize = image_.size();
    eval.rangeIndex = 0;
    eval.ppMetricNames = const_cast<const char**>(plan.names.data());
    eval.numMetrics = plan.names.size();
    eval.pMetricValues = values.data();
    if (!Ok(times_.Time("EvaluateToGpuValues", [&] { return api_.HostEvaluateToGpuValues(&eval); }),
            "EvaluateToGpuValues"))
      return {};
    return values;
  }

  CallTimes& times() { return times_; }
  const std::vector<std::uint8_t>& image() const { return image_; }
  const std::string& error() const { return error_; }
  void ClearError() { error_.clear(); }

 private:
  bool Ok(CUptiResult result, const char* call) {
    if (result == CUPTI_SUCCESS) return true;
    error_ = Error(result, call);
    return false;
  }

  cupti::CuptiApi& api_;
  CUcontext context_;
  std::string chip_;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  std::vector<std::uint8_t> image_;
  CallTimes times_;
  std::string error_;
};

struct VariantResult {
  std::string name;
  bool ok = false;
  std::string error;
  int passes = 0;
  double first_ms = 0;         // the first launch (Enable and the like for the keep_* variants)
  double per_launch_ms = 0;    // mean over the launches after the first
  std::vector<double> values;  // the last launch's
  std::vector<std::pair<std::string, CallTimes::Stat>> calls;  // per launch, after the first
};

// The per-launch figures of a variant: its mean over launches 2..N, and each call's share.
void SetPerLaunch(const CallTimes& times, std::size_t launches, double steady_ms, VariantResult& result) {
  const double steady = launches > 1 ? static_cast<double>(launches - 1) : 1.0;
  result.per_launch_ms = steady_ms / steady;
  for (const std::string& call : times.order()) {
    auto it = times.stats().find(call);
    if (it == times.stats().end()) continue;
    CallTimes::Stat stat = it->second;
    stat.ms /= steady;
    result.calls.emplace_back(call, stat);
  }
}

std::size_t IndexOf(const std::vector<std::string>& names, std::string_view name) {
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}

// What each variant does before its launches, per launch, and after.
enum class Hold { kPerLaunch, kKeepEnabled, kKeepConfigured };

// The peer floor: CUPTI's own kernel replay (CUPTI_KernelReplay): one Start, one launch that CUPTI
// replays once per pass with its own save and restore, one Stop.
VariantResult RunCuptiKernelReplay(Floor& floor, const HostPlan& plan, std::size_t launches,
                                   const std::function<void()>& launch) {
  VariantResult result;
  result.name = "cupti_kernel_replay";
  floor.ClearError();
  floor.times().Reset();
  double steady_ms = 0;
  bool ok = floor.Enable() && floor.SizeImage(plan);
  for (std::size_t i = 0; ok && i < launches; ++i) {
    if (i == 1) floor.times().Reset();
    const Clock::time_point start = Clock::now();
    ok = floor.InitImage() && floor.SetConfig(plan, false, CUPTI_KernelReplay);
    const int passes = ok ? floor.Passes(launch, false, 1) : -1;
    std::vector<double> values = passes > 0 ? floor.Evaluate(plan) : std::vector<double>{};
    const double ms = MsSince(start);
    if (passes <= 0 || values.empty()) {
      ok = false;
      break;
    }
    result.passes = static_cast<int>(plan.passes);
    result.values = std::move(values);
    if (i == 0) {
      result.first_ms = ms;
    } else {
      steady_ms += ms;
    }
  }
  if (!ok) {
    result.error = floor.error().empty() ? "failed" : floor.error();
    floor.Disable();
    return result;
  }
  floor.Disable();
  SetPerLaunch(floor.times(), launches, steady_ms, result);
  result.ok = true;
  return result;
}

VariantResult RunVariant(Floor& floor, const HostPlan& plan, Hold hold, std::string name,
                         std::size_t launches, const std::function<void()>& launch) {
  VariantResult result;
  result.name = std::move(name);
  floor.ClearError();
  floor.times().Reset();
  const std::size_t cap = plan.passes + 2;
  double steady_ms = 0;
  bool enabled = false;
  for (std::size_t i = 0; i < launches; ++i) {
    if (i == 1) floor.times().Reset();
    const Clock::time_point start = Clock::now();
    bool ok = true;
    if (hold == Hold::kPerLaunch || !enabled) {
      ok = floor.Enable() && floor.SizeImage(plan) && floor.InitImage() && floor.SetConfig(plan, false);
      enabled = ok;
    } else if (hold == Hold::kKeepEnabled) {
      ok = floor.InitImage() && floor.SetConfig(plan, false);
    } else {
      ok = floor.InitImage();
    }
    int passes = ok ? floor.Passes(launch, false, cap) : -1;
    std::vector<double> values = passes > 0 ? floor.Evaluate(plan) : std::vector<double>{};
    if (hold == Hold::kPerLaunch) floor.Disable();
    const double ms = MsSince(start);
    if (passes <= 0 || values.empty()) {
      result.error = floor.error().empty() ? "failed" : floor.error();
      result.error += " (launch " + std::to_string(i + 1) + ")";
      floor.Disable();
      return result;
    }
    result.passes = passes;
    result.values = std::move(values);
    if (i == 0) {
      result.first_ms = ms;
    } else {
      steady_ms += ms;
    }
  }
  floor.Disable();
  SetPerLaunch(floor.times(), launches, steady_ms, result);
  result.ok = true;
  return result;
}

// The same launches through gpuprof's own backend (what a replayed launch's counter passes call).
VariantResult RunBackend(std::shared_ptr<cupti::CuptiApi> api, CUcontext context, const HostPlan& plan,
                         std::size_t launches, const std::function<void()>& launch) {
  VariantResult result;
  result.name = "backend";
  cupti::RangeProfilerOptions options;
  options.context_of = [context](int) -> StatusOr<CUcontext> { return context; };
  StatusOr<std::unique_ptr<cupti::RangeProfilerBackend>> backend =
      cupti::MakeRangeProfilerBackend(std::move(api), std::move(options));
  if (!backend.ok()) {
    result.error = backend.status().ToString();
    return result;
  }
  double steady_ms = 0;
  for (std::size_t i = 0; i < launches; ++i) {
    const Clock::time_point start = Clock::now();
    StatusOr<std::unique_ptr<replay::CounterCollection>> collection = (*backend)->Begin(0, plan.metrics);
    if (!collection.ok()) {
      result.error = collection.status().ToString();
      return result;
    }
    int passes = 0;
    for (bool done = false; !done && passes <= static_cast<int>(plan.passes) + 2; ++passes) {
      if (Status s = (*collection)->BeginPass(); !s.ok()) {
        result.error = s.ToString();
        return result;
      }
      launch();
      CheckCuda(cudaDeviceSynchronize(), "kernel");
      StatusOr<bool> ended = (*collection)->EndPass();
      if (!ended.ok()) {
        result.error = ended.status().ToString();
        return result;
      }
      done = *ended;
    }
    StatusOr<std::vector<replay::MetricValue>> values = (*collection)->Finish();
    if (!values.ok()) {
      result.error = values.status().ToString();
      return result;
    }
    const double ms = MsSince(start);
    result.passes = passes;
    result.values.clear();
    for (const replay::MetricValue& v : *values) result.values.push_back(v.value);
    if (i == 0) {
      result.first_ms = ms;
    } else {
      steady_ms += ms;
    }
  }
  result.per_launch_ms = steady_ms / (launches > 1 ? static_cast<double>(launches - 1) : 1.0);
  result.ok = true;
  return result;
}

// Microseconds per launch of `count` empty kernels issued back to back, then one sync.
double LaunchRateUs(int count) {
  CheckCuda(cudaDeviceSynchronize(), "sync");
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < count; ++i) CheckCuda(LaunchEmpty(nullptr), "empty kernel");
  CheckCuda(cudaDeviceSynchronize(), "sync");
  return MsSince(start) * 1000.0 / count;
}

// Milliseconds for two one-block kernels on two streams, issued together: about one kernel's time
// when they overlap, two when something serializes them.
double TwoStreamsMs(float* out) {
  static cudaStream_t streams[2] = {nullptr, nullptr};
  if (streams[0] == nullptr) {
    CheckCuda(cudaStreamCreateWithFlags(&streams[0], cudaStreamNonBlocking), "stream");
    CheckCuda(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking), "stream");
  }
  constexpr int kSerialFmas = 1 << 20;
  CheckCuda(cudaDeviceSynchronize(), "sync");
  const Clock::time_point start = Clock::now();
  CheckCuda(LaunchFmaBlock(out, kSerialFmas, streams[0]), "fma block");
  CheckCuda(LaunchFmaBlock(out + 32, kSerialFmas, streams[1]), "fma block");
  CheckCuda(cudaDeviceSynchronize(), "sync");
  return MsSince(start);
}

void WriteFile(const std::string& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) Die("cannot write " + path);
}

int Main(int argc, char** argv) {
  Flags flags;
  bool help = false;
  const bool parsed = ParseArgs(
      "counter_floor", argc, argv,
      [](std::string_view n) { return n == "--plain" || n == "--inst-check" || n == "--activity"; },
      [&](std::string_view n) {
        if (n == "--plain") flags.plain = true;
        if (n == "--inst-check") flags.inst_check = true;
        if (n == "--activity") flags.activity = true;
      },
      [&](std::string_view name, std::string_view value) -> OptionResult {
        if (name == "--launches")
          return ParseUint(value, &flags.launches) && flags.launches >= 2 ? "" : "an integer >= 2";
        if (name == "--fma-k") return ParseUint(value, &flags.fma_k) ? "" : "a non-negative integer";
        if (name == "--metrics") return flags.metrics = value, "";
        if (name == "--set") return flags.set = value, "";
        if (name == "--save-image") return flags.save_image = value, "";
        if (name == "--json") return flags.json = value, "";
        return std::nullopt;
      },
      &help);
  if (!parsed) return 2;
  if (help) {
    std::printf(
        "usage: counter_floor [--launches N] [--fma-k K] [--set basic|full] [--metrics m1,m2] "
        "[--inst-check]\n"
        "                     [--save-image DIR] [--json FILE] [--plain] [--activity]\n"
        "Times CUPTI's Range Profiler call by call over N launches (default 20) of fma_loop(k=4096)\n"
        "for the ways of holding it across launches, beside the kernel alone and the launch rate.\n"
        "--plain runs fma_loop at k = 0, 4096, 8192 with no CUPTI (for ncu on this program).\n"
        "--activity turns CUPTI's kernel activity records on first (as a tracing session does); with\n"
        "--inst-check the counts are then taken with the records on, off for the context, off globally.\n");
    return 0;
  }
  float* out = nullptr;
  CheckCuda(cudaSetDevice(0), "cudaSetDevice");
  CheckCuda(cudaMalloc(reinterpret_cast<void**>(&out), sizeof(float) * kFmaLoopThreads), "cudaMalloc");
  const std::vector<int> inst_ks = {0, 4096, 8192};
  if (flags.plain) {
    for (int k : inst_ks) {
      CheckCuda(LaunchFmaLoop(out, k, nullptr), "fma_loop");
      CheckCuda(cudaDeviceSynchronize(), "fma_loop");
    }
    std::printf("counter_floor --plain: launched fma_loop k=0,4096,8192\n");
    return 0;
  }

  StatusOr<device::cuda::CudaDriver> driver =
      device::cuda::CudaDriver::Load({device::cuda::kCudaDriverLibrary});
  if (!driver.ok()) Die(driver.status().ToString());
  CUcontext context = nullptr;
  if (driver->CtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) Die("no current context");
  StatusOr<std::unique_ptr<cupti::CuptiApi>> loaded = cupti::LoadCuptiApi();
  if (!loaded.ok()) Die(loaded.status().ToString());
  std::shared_ptr<cupti::CuptiApi> api(std::move(*loaded));
  if (Status s = api->CounterApiStatus(); !s.ok()) Die(s.ToString());
  g_api = api.get();
  if (flags.activity) {
    if (api->ActivityRegisterCallbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS ||
        api->ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
      Die("cannot enable CUPTI's kernel activity");
    }
  }
  auto init = MakeParams<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  if (CUptiResult r = api->ProfilerInitialize(&init); r != CUPTI_SUCCESS)
    Die("cuptiProfilerInitialize: " + cupti::CuptiErrorString(*api, r));
  auto chip_params = MakeParams<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  chip_params.deviceIndex = 0;
  if (CUptiResult r = api->DeviceGetChipName(&chip_params); r != CUPTI_SUCCESS)
    Die("cuptiDeviceGetChipName: " + cupti::CuptiErrorString(*api, r));
  const std::string chip = chip_params.pChipName;

  std::vector<std::string> metrics;
  {
    StatusOr<std::vector<std::string>> expanded =
        replay::ExpandMetricRequest(flags.metrics, "", flags.metrics.empty() ? flags.set : "");
    if (!expanded.ok()) Die(expanded.status().ToString());
    for (std::string& m : *expanded) {
      if (!replay::IsLaunchMetric(m)) metrics.push_back(std::move(m));
    }
    if (IndexOf(metrics, "smsp__inst_executed.sum") == metrics.size())
      metrics.push_back("smsp__inst_executed.sum");
  }
  Floor floor(*api, context, chip);
  const HostPlan plan = floor.Configure(metrics);
  const std::size_t inst = IndexOf(plan.metrics, "smsp__inst_executed.sum");
  const int k = static_cast<int>(flags.fma_k);
  const auto launch = [&] { CheckCuda(LaunchFmaLoop(out, k, nullptr), "fma_loop"); };

  std::printf("counter_floor: %s, %zu counter metrics (%s%s), %zu counter passes, %" PRIu64
              " launches of fma_loop(k=%d) per variant\n",
              chip.c_str(), plan.metrics.size(), flags.metrics.empty() ? "--set " : "--metrics ",
              flags.metrics.empty() ? flags.set.c_str() : flags.metrics.c_str(), plan.passes, flags.launches,
              k);

  // The kernel alone: a timing pass's floor.
  for (int i = 0; i < 3; ++i) launch();
  CheckCuda(cudaDeviceSynchronize(), "warmup");
  const Clock::time_point alone_start = Clock::now();
  for (std::uint64_t i = 0; i < flags.launches * 10; ++i) {
    launch();
    CheckCuda(cudaDeviceSynchronize(), "kernel");
  }
  const double alone_ms = MsSince(alone_start) / static_cast<double>(flags.launches * 10);
  const double rate_off_us = LaunchRateUs(2000);
  TwoStreamsMs(out);  // warm
  const Clock::time_point one_start = Clock::now();
  CheckCuda(LaunchFmaBlock(out, 1 << 20, nullptr), "fma block");
  CheckCuda(cudaDeviceSynchronize(), "sync");
  const double one_block_ms = MsSince(one_start);
  const double two_off_ms = TwoStreamsMs(out);

  std::vector<VariantResult> results;
  results.push_back(RunVariant(floor, plan, Hold::kPerLaunch, "per_launch", flags.launches, launch));
  if (!flags.save_image.empty() && results.back().ok) {
    WriteFile(flags.save_image + "/counter_data.bin", floor.image().data(), floor.image().size());
    WriteFile(flags.save_image + "/config.bin", plan.config.data(), plan.config.size());
    // One "key value" per line (tests/unit/cupti reads it): the chip, the kernel, its pass count,
    // then "metric NAME VALUE" in the plan's order, as this run evaluated them.
    std::string meta = "chip " + chip + "\nkernel fma_loop k=" + std::to_string(k) + "\npasses " +
                       std::to_string(results.back().passes) + "\n";
    for (std::size_t i = 0; i < plan.metrics.size(); ++i) {
      char value[64];
      std::snprintf(value, sizeof(value), "%.17g", results.back().values[i]);
      meta += "metric " + plan.metrics[i] + " " + value + "\n";
    }
    WriteFile(flags.save_image + "/values.txt", meta.data(), meta.size());
    std::printf("counter_floor: saved a %zu-byte counter data image and %zu-byte config to %s\n",
                floor.image().size(), plan.config.size(), flags.save_image.c_str());
  }
  results.push_back(RunVariant(floor, plan, Hold::kKeepEnabled, "keep_enabled", flags.launches, launch));
  results.push_back(
      RunVariant(floor, plan, Hold::kKeepConfigured, "keep_configured", flags.launches, launch));

  // The application's launch rate with the profiler enabled and configured but not started.
  double rate_enabled_us = -1;
  double two_enabled_ms = -1;
  floor.ClearError();
  if (floor.Enable() && floor.SizeImage(plan) && floor.InitImage() && floor.SetConfig(plan, false)) {
    rate_enabled_us = LaunchRateUs(2000);
    two_enabled_ms = TwoStreamsMs(out);
  } else {
    std::printf("counter_floor: enabled-not-started launch rate: %s\n", floor.error().c_str());
  }
  floor.Disable();
  results.push_back(RunBackend(api, context, plan, flags.launches, launch));
  results.push_back(RunCuptiKernelReplay(floor, plan, flags.launches, launch));

  int exit_code = 0;
  const double reference = results[0].ok && inst < results[0].values.size() ? results[0].values[inst] : -1;
  std::printf("\n%-16s %6s %12s %14s %14s %22s\n", "variant", "passes", "first ms", "ms/launch", "ms/pass",
              "smsp__inst_executed");
  for (VariantResult& r : results) {
    if (!r.ok) {
      std::printf("%-16s FAILED: %s\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    const double value = inst < r.values.size() ? r.values[inst] : -1;
    const bool same = value == reference;
    if (!same) exit_code = 1;
    std::printf("%-16s %6d %12.3f %14.3f %14.3f %18.0f %s\n", r.name.c_str(), r.passes, r.first_ms,
                r.per_launch_ms, r.per_launch_ms / r.passes, value, same ? "" : "WRONG");
  }
  std::printf("%-16s %6s %12s %14.4f %14s\n", "kernel alone", "", "", alone_ms, "(launch + sync)");
  std::printf(
      "app launch rate, empty kernel, async: %.2f us/launch profiler off, %.2f us/launch enabled "
      "and configured (not started)\n",
      rate_off_us, rate_enabled_us);
  std::printf(
      "app concurrency, two 1-block kernels on two streams: %.3f ms profiler off, %.3f ms enabled and "
      "configured (one alone: %.3f ms; about twice that means serialized)\n",
      two_off_ms, two_enabled_ms, one_block_ms);
  for (const VariantResult& r : results) {
    if (!r.ok || r.calls.empty()) continue;
    std::printf("\n%s, per launch (mean over launches 2..%" PRIu64 "):\n  %-28s %8s %10s\n", r.name.c_str(),
                flags.launches, "call", "calls", "ms");
    for (const auto& [call, stat] : r.calls) {
      std::printf("  %-28s %8.1f %10.3f\n", call.c_str(),
                  static_cast<double>(stat.count) / static_cast<double>(flags.launches - 1), stat.ms);
    }
  }

  if (flags.inst_check) {
    const HostPlan one = floor.Configure({"smsp__inst_executed.sum"});
    std::printf("\nsmsp__inst_executed.sum of fma_loop (132 x 256 threads, %d warps):\n",
                kFmaLoopThreads / 32);
    const std::vector<std::string> records =
        flags.activity
            ? std::vector<std::string>{"activity on", "activity off for the context", "activity off globally"}
            : std::vector<std::string>{"no activity"};
    for (const std::string& mode : records) {
      for (bool user : {false, true}) {
        for (int kk : inst_ks) {
          floor.ClearError();
          const auto run = [&] { CheckCuda(LaunchFmaLoop(out, kk, nullptr), "fma_loop"); };
          if (mode == "activity off for the context")
            api->ActivityDisableContext(context, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
          if (mode == "activity off globally") api->ActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
          std::vector<double> values;
          if (floor.Enable() && floor.SizeImage(one) && floor.InitImage() && floor.SetConfig(one, user) &&
              floor.Passes(run, user, one.passes + 2) > 0) {
            values = floor.Evaluate(one);
          }
          floor.Disable();
          if (mode == "activity off for the context")
            api->ActivityEnableContext(context, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
          if (mode == "activity off globally") api->ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
          // One launch outside any collection: its record must arrive (the switch was restored).
          run();
          CheckCuda(cudaDeviceSynchronize(), "fma_loop");
          if (values.empty()) {
            std::printf("  %-30s %s range k=%d: FAILED %s\n", mode.c_str(), user ? "user" : "auto", kk,
                        floor.error().c_str());
          } else {
            std::printf("  %-30s %s range k=%-5d %.0f\n", mode.c_str(), user ? "user" : "auto", kk,
                        values[0]);
          }
        }
      }
    }
    if (flags.activity) {
      api->ActivityFlushAll(1);
      std::printf("  kernel activity records received: %" PRIu64 "\n", g_kernel_records.load());
    }
  }

  if (!flags.json.empty()) {
    std::string json = "{\"chip\": \"" + chip + "\", \"passes\": " + std::to_string(plan.passes) +
                       ", \"kernel_alone_ms\": " + std::to_string(alone_ms) +
                       ", \"launch_rate_off_us\": " + std::to_string(rate_off_us) +
                       ", \"launch_rate_enabled_us\": " + std::to_string(rate_enabled_us) +
                       ", \"variants\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const VariantResult& r = results[i];
      json += std::string(i ? ", " : "") + "{\"name\": \"" + r.name +
              "\", \"ok\": " + (r.ok ? "true" : "false") +
              ", \"per_launch_ms\": " + std::to_string(r.per_launch_ms) +
              ", \"first_ms\": " + std::to_string(r.first_ms) + ", \"calls\": {";
      for (std::size_t c = 0; c < r.calls.size(); ++c) {
        json += std::string(c ? ", " : "") + "\"" + r.calls[c].first +
                "\": " + std::to_string(r.calls[c].second.ms);
      }
      json += "}}";
    }
    json += "]}\n";
    WriteFile(flags.json, json.data(), json.size());
  }
  cudaFree(out);
  return exit_code;
}

}  // namespace
}  // namespace gpuprof::bench

int main(int argc, char** argv) { return gpuprof::bench::Main(argc, argv); }
