// RangeProfilerBackend against a fake CuptiApi (the call sequence, the errors that name the fix),
// and against the real host API for a named chip (no GPU needed; skipped where libcupti does not
// load).
#include "cupti/range_profiler_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cupti/internal_work.h"

namespace gpuprof::cupti {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The profiler half of CUPTI, scripted; the tracing half is never called here.
class FakeCounterCupti final : public CuptiApi {
 public:
  // --- behaviour -------------------------------------------------------------------------
  std::map<std::string, std::string> units = {
      {"dram__bytes_read.sum", "byte"},
      {"smsp__inst_executed.sum", "instruction"},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "percent"}};
  std::map<std::string, int> passes = {{"dram__bytes_read.sum", 1},
                                       {"smsp__inst_executed.sum", 1},
                                       {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 3}};
  std::map<std::string, double> values = {{"dram__bytes_read.sum", 4096.0},
                                          {"smsp__inst_executed.sum", 1000.0},
                                          {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 42.5}};
  CUptiResult enable_result = CUPTI_SUCCESS;
  CUptiResult start_result = CUPTI_SUCCESS;
  Status counter_status = OkStatus();

  // --- what was called -------------------------------------------------------------------
  std::vector<std::string> calls;
  int host_objects = 0;
  int live_host_objects = 0;
  CUpti_RangeProfiler_SetConfig_Params last_config{};
  CUcontext enabled_context = nullptr;

  // --- tracing: unused -------------------------------------------------------------------
  CUptiResult GetResultString(CUptiResult result, const char** str) override {
    static const std::map<CUptiResult, const char*> kNames = {
        {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
        {CUPTI_ERROR_HARDWARE_BUSY, "CUPTI_ERROR_HARDWARE_BUSY"}};
    auto it = kNames.find(result);
    *str = it != kNames.end() ? it->second : "CUPTI_ERROR_OTHER";
    return CUPTI_SUCCESS;
  }
  CUptiResult GetVersion(std::uint32_t*) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult Subscribe(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*,
                        CUpti_SubscriberParams*) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult Unsubscribe(CUpti_SubscriberHandle) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult EnableCallback(std::uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                             CUpti_CallbackId) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult EnableDomain(std::uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult GetCallbackName(CUpti_CallbackDomain, std::uint32_t, const char**) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult SetThreadIdType(CUpti_ActivityThreadIdType) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult GetTimestamp(std::uint64_t*) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult ActivityEnable(CUpti_ActivityKind) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult ActivityDisable(CUpti_ActivityKind) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
                                        CUpti_BuffersCallbackCompleteFunc) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityGetNextRecord(std::uint8_t*, std::size_t, CUpti_Activity**) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityGetNumDroppedRecords(CUcontext, std::uint32_t, std::size_t*) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityFlushAll(std::uint32_t) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult ActivityFlushPeriod(std::uint32_t) override { return CUPTI_ERROR_NOT_SUPPORTED; }
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind, std::uint64_t) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind, std::uint64_t*) override {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }

  // --- counters ----------------------------------------------------------------------------
  Status CounterApiStatus() override { return counter_status; }
  CUptiResult ProfilerInitialize(CUpti_Profiler_Initialize_Params*) override {
    calls.push_back("ProfilerInitialize");
    return CUPTI_SUCCESS;
  }
  CUptiResult DeviceGetChipName(CUpti_Device_GetChipName_Params* p) override {
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
  }
  CUptiResult HostInitialize(CUpti_Profiler_Host_Initialize_Params* p) override {
    if (p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER || std::string(p->pChipName) != "GH100") {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    objects_.push_back({});
    p->pHostObject = reinterpret_cast<CUpti_Profiler_Host_Object*>(objects_.size());
    ++host_objects;
    ++live_host_objects;
    return CUPTI_SUCCESS;
  }
  CUptiResult HostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params*) override {
    --live_host_objects;
    return CUPTI_SUCCESS;
  }
  CUptiResult HostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params* p) override {
    static const char* kCounters[] = {"dram__bytes_read", "smsp__inst_executed"};
    static const char* kThroughputs[] = {"sm__throughput"};
    p->numMetrics = 0;
    if (p->metricType == CUPTI_METRIC_TYPE_COUNTER) {
      p->ppMetricNames = kCounters;
      p->numMetrics = 2;
    } else if (p->metricType == CUPTI_METRIC_TYPE_THROUGHPUT) {
      p->ppMetricNames = kThroughputs;
      p->numMetrics = 1;
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult HostGetSubMetrics(CUpti_Profiler_Host_GetSubMetrics_Params* p) override {
    static const char* kCounterSubs[] = {".sum", ".avg", ".sum.per_second"};
    static const char* kThroughputSubs[] = {".avg.pct_of_peak_sustained_elapsed"};
    if (p->metricType == CUPTI_METRIC_TYPE_COUNTER) {
      p->ppSubMetrics = kCounterSubs;
      p->numOfSubmetrics = 3;
    } else {
      p->ppSubMetrics = kThroughputSubs;
      p->numOfSubmetrics = 1;
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult HostGetMetricProperties(CUpti_Profiler_Host_GetMetricProperties_Params* p) override {
    std::string name = p->pMetricName;
    if (name == "dram__bytes_read" || name == "smsp__inst_executed") name += ".sum";
    if (name == "sm__throughput") name += ".avg.pct_of_peak_sustained_elapsed";
    auto it = units.find(name);
    if (it == units.end()) return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->pDimUnit = it->second.c_str();
    p->pDescription = "a fake metric";
    return CUPTI_SUCCESS;
  }
  CUptiResult HostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) override {
    Object& object = ObjectOf(p->pHostObject);
    if (object.imaged) return CUPTI_ERROR_UNKNOWN;  // as the real one: one configuration per object
    for (std::size_t i = 0; i < p->numMetrics; ++i) object.metrics.emplace_back(p->ppMetricNames[i]);
    return CUPTI_SUCCESS;
  }
  CUptiResult HostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) override {
    p->configImageSize = 8;
    return CUPTI_SUCCESS;
  }
  CUptiResult HostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) override {
    Object& object = ObjectOf(p->pHostObject);
    object.imaged = true;
    int total = 0;
    for (const std::string& metric : object.metrics) total += passes.at(metric);
    std::fill(p->pConfigImage, p->pConfigImage + p->configImageSize, std::uint8_t{0});
    p->pConfigImage[0] = static_cast<std::uint8_t>(total);  // the fake's "image": its pass count
    return CUPTI_SUCCESS;
  }
  CUptiResult HostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) override {
    p->numOfPasses = p->pConfigImage[0];
    return CUPTI_SUCCESS;
  }
  CUptiResult HostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) override {
    calls.push_back("Evaluate");
    // Range r of a collection of several (range replay) reads each value plus 1000 * r.
    if (p->rangeIndex >= last_config.maxRangesPerPass || p->pCounterDataImage == nullptr) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    for (std::size_t i = 0; i < p->numMetrics; ++i) {
      p->pMetricValues[i] = values.at(p->ppMetricNames[i]) + 1000.0 * static_cast<double>(p->rangeIndex);
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerEnable(CUpti_RangeProfiler_Enable_Params* p) override {
    calls.push_back("Enable");
    if (enable_result != CUPTI_SUCCESS) return enable_result;
    enabled_context = p->ctx;
    p->pRangeProfilerObject = reinterpret_cast<CUpti_RangeProfiler_Object*>(&range_object_);
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerDisable(CUpti_RangeProfiler_Disable_Params*) override {
    calls.push_back("Disable");
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) override {
    calls.push_back("GetCounterDataSize(" + std::to_string(p->numMetrics) + " metrics, " +
                    std::to_string(p->maxNumOfRanges) + " range)");
    p->counterDataSize = 64;
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerCounterDataImageInitialize(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params*) override {
    calls.push_back("CounterDataImageInitialize");
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) override {
    calls.push_back("SetConfig");
    last_config = *p;
    config_passes_ = p->pConfig[0];
    stops_ = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerStart(CUpti_RangeProfiler_Start_Params*) override {
    calls.push_back("Start");
    return start_result;
  }
  CUptiResult RangeProfilerStop(CUpti_RangeProfiler_Stop_Params* p) override {
    calls.push_back("Stop");
    ++stops_;
    p->isAllPassSubmitted = stops_ >= config_passes_ ? 1 : 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params*) override {
    calls.push_back("PushRange");
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params*) override {
    calls.push_back("PopRange");
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) override {
    calls.push_back("DecodeData");
    p->numOfRangeDropped = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult RangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) override {
    p->numTotalRanges = stops_ > 0 ? last_config.maxRangesPerPass : 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult ActivityDisableContext(CUcontext, CUpti_ActivityKind kind) override {
    calls.push_back(kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? "KernelActivityOff" : "ActivityOff");
    return CUPTI_SUCCESS;
  }
  CUptiResult ActivityEnableContext(CUcontext, CUpti_ActivityKind kind) override {
    calls.push_back(kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? "KernelActivityOn" : "ActivityOn");
    return CUPTI_SUCCESS;
  }

 private:
  struct Object {
    std::vector<std::string> metrics;
    bool imaged = false;
  };
  Object& ObjectOf(CUpti_Profiler_Host_Object* handle) {
    return objects_.at(reinterpret_cast<std::size_t>(handle) - 1);
  }
  std::vector<Object> objects_;
  int range_object_ = 0;
  int config_passes_ = 0;
  int stops_ = 0;
};

CUcontext FakeContext() { return reinterpret_cast<CUcontext>(std::uintptr_t{0x1000}); }

RangeProfilerOptions Options(CounterRange range = CounterRange::kAuto) {
  RangeProfilerOptions options;
  options.range = range;
  options.context_of = [](int) -> StatusOr<CUcontext> { return FakeContext(); };
  return options;
}

// Runs the controller's loop: BeginPass/EndPass until every pass is submitted (at most `cap`).
StatusOr<int> RunPasses(replay::CounterCollection& collection, int cap = 16) {
  for (int pass = 1; pass <= cap; ++pass) {
    GPUPROF_RETURN_IF_ERROR(collection.BeginPass());
    GPUPROF_ASSIGN_OR_RETURN(bool done, collection.EndPass());
    if (done) return pass;
  }
  return InternalError("never submitted");
}

TEST(RangeProfilerBackendTest, PlanBeginPassesFinishGiveTheValuesInOrder) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  const std::vector<std::string> metrics = {"dram__bytes_read.sum",
                                            "sm__throughput.avg.pct_of_peak_sustained_elapsed"};
  auto plan = (*backend)->Plan(0, metrics);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->passes, 4);
  EXPECT_THAT(plan->metric_passes, ElementsAre(1, 3));
  EXPECT_THAT(plan->units, ElementsAre("byte", "percent"));

  auto collection = (*backend)->Begin(0, metrics);
  ASSERT_TRUE(collection.ok()) << collection.status().message();
  EXPECT_EQ(api->enabled_context, FakeContext());
  EXPECT_EQ(api->last_config.replayMode, CUPTI_UserReplay);
  EXPECT_EQ(api->last_config.range, CUPTI_AutoRange);
  EXPECT_EQ(api->last_config.maxRangesPerPass, 1u);
  EXPECT_EQ(api->last_config.numNestingLevels, 1);
  EXPECT_EQ(api->last_config.passIndex, 0u);
  auto passes = RunPasses(**collection);
  ASSERT_TRUE(passes.ok()) << passes.status().message();
  EXPECT_EQ(*passes, 4);
  auto values = (*collection)->Finish();
  ASSERT_TRUE(values.ok()) << values.status().message();
  ASSERT_EQ(values->size(), 2u);
  EXPECT_EQ((*values)[0].name, "dram__bytes_read.sum");
  EXPECT_EQ((*values)[0].unit, "byte");
  EXPECT_EQ((*values)[0].value, 4096.0);
  EXPECT_EQ((*values)[0].passes, 1);
  EXPECT_EQ((*values)[1].name, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ((*values)[1].value, 42.5);
  EXPECT_EQ((*values)[1].passes, 3);
  EXPECT_THAT(api->calls,
              ElementsAre("ProfilerInitialize", "Enable", "GetCounterDataSize(2 metrics, 1 range)",
                          "CounterDataImageInitialize", "SetConfig", "Start", "Stop", "Start", "Stop",
                          "Start", "Stop", "Start", "Stop", "DecodeData", "Evaluate"));
  EXPECT_EQ((*backend)->EnabledContexts(), 1u) << "kept enabled for the next launch";
}

TEST(RangeProfilerBackendTest, ARangeCountsEachLaunchInItsOwnAutoRangeWithOneStartStopPerPass) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  const std::vector<std::string> metrics = {"dram__bytes_read.sum"};
  auto collection = (*backend)->BeginRange(0, metrics, 3);
  ASSERT_TRUE(collection.ok()) << collection.status().message();
  EXPECT_EQ(api->last_config.range, CUPTI_AutoRange);
  EXPECT_EQ(api->last_config.maxRangesPerPass, 3u);
  auto passes = RunPasses(**collection);
  ASSERT_TRUE(passes.ok()) << passes.status().message();
  EXPECT_EQ(*passes, 1);
  auto values = (*collection)->FinishPerLaunch();
  ASSERT_TRUE(values.ok()) << values.status().message();
  ASSERT_EQ(values->size(), 3u);
  for (std::size_t launch = 0; launch < 3; ++launch) {
    ASSERT_EQ((*values)[launch].size(), 1u);
    EXPECT_EQ((*values)[launch][0].value, 4096.0 + 1000.0 * static_cast<double>(launch));
    EXPECT_EQ((*values)[launch][0].unit, "byte");
  }
  EXPECT_THAT(api->calls,
              ElementsAre("ProfilerInitialize", "Enable", "GetCounterDataSize(1 metrics, 3 range)",
                          "CounterDataImageInitialize", "SetConfig", "Start", "Stop", "DecodeData",
                          "Evaluate", "Evaluate", "Evaluate"));
  // User ranges would measure one range per pass: a range's launches need auto ranges.
  RangeProfilerOptions user = Options();
  user.range = CounterRange::kUser;
  auto user_backend = MakeRangeProfilerBackend(api, user);
  ASSERT_TRUE(user_backend.ok());
  auto refused = (*user_backend)->BeginRange(0, metrics, 3);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("--counter-range"));
}

TEST(RangeProfilerBackendTest, TheNextLaunchReusesTheEnabledProfilerUntilIdle) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  const std::vector<std::string> metrics = {"dram__bytes_read.sum"};
  for (int launch = 0; launch < 2; ++launch) {
    auto collection = (*backend)->Begin(0, metrics);
    ASSERT_TRUE(collection.ok()) << collection.status().message();
    ASSERT_TRUE(RunPasses(**collection).ok());
    ASSERT_TRUE((*collection)->Finish().ok());
    if (launch == 0) api->calls.clear();
  }
  // No Enable, no sizing: a fresh image and SetConfig on the kept profiler.
  EXPECT_THAT(api->calls, ElementsAre("CounterDataImageInitialize", "SetConfig", "Start", "Stop",
                                      "DecodeData", "Evaluate"));
  api->calls.clear();
  (*backend)->Idle();
  EXPECT_THAT(api->calls, ElementsAre("Disable"));
  EXPECT_EQ((*backend)->EnabledContexts(), 0u);
  api->calls.clear();
  auto again = (*backend)->Begin(0, metrics);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(api->calls, ElementsAre("Enable", "GetCounterDataSize(1 metrics, 1 range)",
                                      "CounterDataImageInitialize", "SetConfig"))
      << "after Idle the next collection enables again";
}

TEST(RangeProfilerBackendTest, AnotherMetricListResizesTheImageOnTheSameProfiler) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  for (const std::vector<std::string>& metrics :
       {std::vector<std::string>{"dram__bytes_read.sum"},
        std::vector<std::string>{"dram__bytes_read.sum", "smsp__inst_executed.sum"}}) {
    api->calls.clear();
    auto collection = (*backend)->Begin(0, metrics);
    ASSERT_TRUE(collection.ok());
    ASSERT_TRUE(RunPasses(**collection).ok());
    ASSERT_TRUE((*collection)->Finish().ok());
  }
  EXPECT_THAT(api->calls,
              ElementsAre("GetCounterDataSize(2 metrics, 1 range)", "CounterDataImageInitialize", "SetConfig",
                          "Start", "Stop", "Start", "Stop", "DecodeData", "Evaluate"));
}

TEST(RangeProfilerBackendTest, AFailedCollectionDisablesAndTheNextOneEnablesAgain) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  api->start_result = CUPTI_ERROR_UNKNOWN;
  {
    auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
    ASSERT_TRUE(collection.ok());
    EXPECT_FALSE((*collection)->BeginPass().ok());
  }  // dropped mid-way, as the controller drops a collection whose pass failed
  EXPECT_EQ(api->calls.back(), "Disable");
  EXPECT_EQ((*backend)->EnabledContexts(), 0u);
  api->start_result = CUPTI_SUCCESS;
  api->calls.clear();
  auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_TRUE(collection.ok());
  EXPECT_EQ(api->calls.front(), "Enable");
}

TEST(RangeProfilerBackendTest, OneCollectionPerContextAtATime) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  auto first = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_TRUE(first.ok());
  auto second = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("already running on this CUDA context"));
  (*backend)->Idle();  // while `first` collects: it is disabled when it ends, not now
  EXPECT_EQ((*backend)->EnabledContexts(), 1u);
  ASSERT_TRUE(RunPasses(**first).ok());
  ASSERT_TRUE((*first)->Finish().ok());
  EXPECT_EQ(api->calls.back(), "Disable");
  EXPECT_EQ((*backend)->EnabledContexts(), 0u);
}

TEST(RangeProfilerBackendTest, WithoutKeepEnabledEveryLaunchEnablesAndDisables) {
  auto api = std::make_shared<FakeCounterCupti>();
  RangeProfilerOptions options = Options();
  options.keep_enabled = false;
  auto backend = MakeRangeProfilerBackend(api, options);
  ASSERT_TRUE(backend.ok());
  auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_TRUE(collection.ok());
  ASSERT_TRUE(RunPasses(**collection).ok());
  ASSERT_TRUE((*collection)->Finish().ok());
  EXPECT_EQ(api->calls.back(), "Disable");
  EXPECT_EQ((*backend)->EnabledContexts(), 0u);
}

TEST(RangeProfilerBackendTest, KernelActivityIsHeldOffFromBeginToFinishOnly) {
  auto api = std::make_shared<FakeCounterCupti>();
  RangeProfilerOptions options = Options();
  options.hold_off_kernel_activity = true;
  auto backend = MakeRangeProfilerBackend(api, options);
  ASSERT_TRUE(backend.ok());
  EXPECT_FALSE(KernelRecordsHeldOff(FakeContext()));
  auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_TRUE(collection.ok());
  // The subscriber counts no kernel record for gpuprof's launches on the context meanwhile.
  EXPECT_TRUE(KernelRecordsHeldOff(FakeContext()));
  ASSERT_TRUE(RunPasses(**collection).ok());
  ASSERT_TRUE((*collection)->Finish().ok());
  EXPECT_FALSE(KernelRecordsHeldOff(FakeContext()));
  EXPECT_THAT(api->calls,
              ElementsAre("ProfilerInitialize", "KernelActivityOff", "Enable",
                          "GetCounterDataSize(1 metrics, 1 range)", "CounterDataImageInitialize", "SetConfig",
                          "Start", "Stop", "DecodeData", "Evaluate", "KernelActivityOn"));
  // A collection that fails to start still turns the records back on.
  api->enable_result = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  (*backend)->Idle();
  api->calls.clear();
  EXPECT_FALSE((*backend)->Begin(0, {"dram__bytes_read.sum"}).ok());
  EXPECT_THAT(api->calls, ElementsAre("KernelActivityOff", "Enable", "KernelActivityOn"));
  EXPECT_FALSE(KernelRecordsHeldOff(FakeContext()));
}

TEST(RangeProfilerBackendTest, PlansAreCachedPerMetricList) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  ASSERT_TRUE((*backend)->Plan(0, {"dram__bytes_read.sum", "smsp__inst_executed.sum"}).ok());
  const int made = api->host_objects;
  ASSERT_TRUE((*backend)->Plan(0, {"dram__bytes_read.sum", "smsp__inst_executed.sum"}).ok());
  EXPECT_EQ(api->host_objects, made);
  // A new list reuses the single-metric counts it shares.
  ASSERT_TRUE((*backend)->Plan(0, {"smsp__inst_executed.sum"}).ok());
  EXPECT_EQ(api->host_objects, made + 1);
}

TEST(RangeProfilerBackendTest, UserRangePushesAndPopsAroundEachPass) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options(CounterRange::kUser));
  ASSERT_TRUE(backend.ok());
  auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_TRUE(collection.ok()) << collection.status().message();
  EXPECT_EQ(api->last_config.range, CUPTI_UserRange);
  api->calls.clear();
  ASSERT_TRUE(RunPasses(**collection).ok());
  ASSERT_TRUE((*collection)->Finish().ok());
  EXPECT_THAT(api->calls, ElementsAre("Start", "PushRange", "PopRange", "Stop", "DecodeData", "Evaluate"));
}

TEST(RangeProfilerBackendTest, EnableWithoutPrivilegesNamesTheDriverSettingAndTheWaysOut) {
  auto api = std::make_shared<FakeCounterCupti>();
  api->enable_result = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
  ASSERT_FALSE(collection.ok());
  const std::string& message = collection.status().message();
  EXPECT_THAT(message, HasSubstr("cuptiRangeProfilerEnable failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
  EXPECT_THAT(message, HasSubstr("NVreg_RestrictProfilingToAdminUsers"));
  EXPECT_THAT(message, HasSubstr("RmProfilingAdminOnly"));
  EXPECT_THAT(message, HasSubstr("CAP_SYS_ADMIN"));
  EXPECT_THAT(message, HasSubstr("NVreg_RestrictProfilingToAdminUsers=0"));
  EXPECT_THAT(message, HasSubstr("https://developer.nvidia.com/ERR_NVGPUCTRPERM"));
}

TEST(RangeProfilerBackendTest, BusyCountersNameDcgmAndTheProfilerIsDisabled) {
  auto api = std::make_shared<FakeCounterCupti>();
  api->start_result = CUPTI_ERROR_HARDWARE_BUSY;
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  {
    auto collection = (*backend)->Begin(0, {"dram__bytes_read.sum"});
    ASSERT_TRUE(collection.ok());
    Status begun = (*collection)->BeginPass();
    ASSERT_FALSE(begun.ok());
    EXPECT_EQ(begun.code(), StatusCode::kUnavailable);
    EXPECT_THAT(begun.message(), HasSubstr("CUPTI_ERROR_HARDWARE_BUSY"));
    EXPECT_THAT(begun.message(), HasSubstr("dcgmi profile --pause"));
  }
  EXPECT_EQ(api->calls.back(), "Disable");  // the dropped collection leaves no profiler enabled
}

TEST(RangeProfilerBackendTest, UnknownMetricListsTheNearestKnownNames) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  auto plan = (*backend)->Plan(0, {"smsp__inst_executed.sum", "dram__bytes_reed.sum"});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(plan.status().message(), HasSubstr("unknown metric 'dram__bytes_reed.sum' on GH100"));
  EXPECT_THAT(plan.status().message(), HasSubstr("nearest known: dram__bytes_read.sum"));
}

TEST(RangeProfilerBackendTest, ListMetricsJoinsBaseMetricsAndSubmetricsWithUnits) {
  auto api = std::make_shared<FakeCounterCupti>();
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_TRUE(backend.ok());
  auto metrics = (*backend)->ListMetrics(0);
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  std::map<std::string, std::string> units;
  for (const replay::MetricInfo& info : *metrics) units[info.name] = info.unit;
  EXPECT_EQ(units.at("dram__bytes_read.sum"), "byte");
  EXPECT_EQ(units.at("dram__bytes_read.sum.per_second"), "byte/second");
  EXPECT_EQ(units.at("sm__throughput.avg.pct_of_peak_sustained_elapsed"), "percent");
  EXPECT_EQ(metrics->size(), 7u);
}

TEST(RangeProfilerBackendTest, CuptiWithoutTheCounterApiIsOneUnavailable) {
  auto api = std::make_shared<FakeCounterCupti>();
  api->counter_status =
      UnavailableError("hardware counters unavailable: libcupti.so lacks cuptiRangeProfilerEnable");
  auto backend = MakeRangeProfilerBackend(api, Options());
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(backend.status().message(), HasSubstr("cuptiRangeProfilerEnable"));
}

TEST(CounterStatusTest, MigAndMpsAreNotSupported) {
  Status mig = CounterStatus(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, "cuptiRangeProfilerEnable",
                             "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED");
  EXPECT_EQ(mig.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(mig.message(), HasSubstr("not supported on a MIG instance"));
  Status other =
      CounterStatus(CUPTI_ERROR_NOT_SUPPORTED, "cuptiRangeProfilerEnable", "CUPTI_ERROR_NOT_SUPPORTED");
  EXPECT_THAT(other.message(), HasSubstr("MPS"));
  EXPECT_TRUE(CounterStatus(CUPTI_SUCCESS, "x", "").ok());
  Status plain =
      CounterStatus(CUPTI_ERROR_UNKNOWN, "cuptiRangeProfilerStop", "CUPTI_ERROR_UNKNOWN", "device 0");
  EXPECT_EQ(plain.message(), "cuptiRangeProfilerStop failed: CUPTI_ERROR_UNKNOWN (device 0)");
}

// ---- the real host API (libcupti's Profiler Host API works without a GPU for a named chip) ---

TEST(RangeProfilerHostApiTest, Gh100MetricsPassesAndConfigImageWithoutAGpu) {
  StatusOr<std::unique_ptr<CuptiApi>> loaded = LoadCuptiApi();
  if (!loaded.ok()) GTEST_SKIP() << "skipped: " << loaded.status().message();
  std::shared_ptr<CuptiApi> api(std::move(loaded).value());
  if (Status counters = api->CounterApiStatus(); !counters.ok())
    GTEST_SKIP() << "skipped: " << counters.message();

  RangeProfilerOptions options;
  options.chip_of = [](int) -> StatusOr<std::string> { return std::string("GH100"); };
  auto backend = MakeRangeProfilerBackend(api, options);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  auto metrics = (*backend)->ListMetrics(0);
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  std::set<std::string> names;
  for (const replay::MetricInfo& info : *metrics) names.insert(info.name);
  EXPECT_TRUE(names.contains("dram__bytes_read.sum"));
  EXPECT_TRUE(names.contains("dram__bytes_write.sum"));
  EXPECT_TRUE(names.contains("smsp__inst_executed.sum"));
  EXPECT_TRUE(names.contains("sm__throughput.avg.pct_of_peak_sustained_elapsed"));

  // Nsight Compute's SpeedOfLight section.
  const std::vector<std::string> speed_of_light = {
      "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
      "gpu__time_duration.sum",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "l1tex__throughput.avg.pct_of_peak_sustained_active",
      "lts__throughput.avg.pct_of_peak_sustained_elapsed",
      "sm__cycles_elapsed.avg.per_second",
      "dram__cycles_elapsed.avg.per_second",
      "gpc__cycles_elapsed.max"};
  auto plan = (*backend)->Plan(0, speed_of_light);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_GE(plan->passes, 1);
  ASSERT_EQ(plan->metric_passes.size(), speed_of_light.size());
  for (int passes : plan->metric_passes) {
    EXPECT_GE(passes, 1);
    EXPECT_LE(passes, plan->passes);
  }
  EXPECT_EQ(plan->units[0], "percent");
  EXPECT_EQ(plan->units[2], "nanosecond");
  auto simple =
      (*backend)->Plan(0, {"dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum"});
  ASSERT_TRUE(simple.ok()) << simple.status().message();
  EXPECT_GE(simple->passes, 1);
  EXPECT_THAT(simple->units, ElementsAre("byte", "byte", "instruction"));

  auto unknown = (*backend)->Plan(0, {"dram__bytes_reed.sum"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("dram__bytes_read.sum"));

  // The config image itself, straight from the host API.
  CUpti_Profiler_Host_Initialize_Params init{};
  init.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = "GH100";
  ASSERT_EQ(api->HostInitialize(&init), CUPTI_SUCCESS);
  std::vector<const char*> raw;
  for (const std::string& name : speed_of_light) raw.push_back(name.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = init.pHostObject;
  add.ppMetricNames = raw.data();
  add.numMetrics = raw.size();
  ASSERT_EQ(api->HostConfigAddMetrics(&add), CUPTI_SUCCESS);
  CUpti_Profiler_Host_GetConfigImageSize_Params size{};
  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = init.pHostObject;
  ASSERT_EQ(api->HostGetConfigImageSize(&size), CUPTI_SUCCESS);
  EXPECT_GT(size.configImageSize, 0u);
  CUpti_Profiler_Host_Deinitialize_Params done{};
  done.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  done.pHostObject = init.pHostObject;
  EXPECT_EQ(api->HostDeinitialize(&done), CUPTI_SUCCESS);
}

// A counter data image recorded on the H200 by bench/counter_floor --save-image (one launch of
// fma_loop), with the values that run evaluated (values.txt): the backend's own evaluation, on a
// machine without a GPU, gives the same values.
TEST(RangeProfilerHostApiTest, EvaluatesTheCounterDataImageRecordedOnTheH200) {
  StatusOr<std::unique_ptr<CuptiApi>> loaded = LoadCuptiApi();
  if (!loaded.ok()) GTEST_SKIP() << "skipped: " << loaded.status().message();
  std::shared_ptr<CuptiApi> api(std::move(loaded).value());
  if (Status counters = api->CounterApiStatus(); !counters.ok())
    GTEST_SKIP() << "skipped: " << counters.message();

  const std::string dir = std::string(GPUPROF_TEST_DATA_DIR) + "/h200_counter_data";
  std::ifstream values_file(dir + "/values.txt");
  ASSERT_TRUE(values_file) << dir << "/values.txt";
  std::string chip;
  std::vector<std::string> names;
  std::vector<double> expected;
  for (std::string line; std::getline(values_file, line);) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "chip") words >> chip;
    if (key == "metric") {
      std::string name;
      std::string value;
      words >> name >> value;
      names.push_back(name);
      expected.push_back(std::stod(value));
    }
  }
  ASSERT_EQ(chip, "GH100");
  ASSERT_FALSE(names.empty());
  std::ifstream image_file(dir + "/counter_data.bin", std::ios::binary);
  ASSERT_TRUE(image_file) << dir << "/counter_data.bin";
  const std::vector<std::uint8_t> image((std::istreambuf_iterator<char>(image_file)),
                                        std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), 0u);

  RangeProfilerOptions options;
  options.chip_of = [chip](int) -> StatusOr<std::string> { return chip; };
  auto backend = MakeRangeProfilerBackend(api, options);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  StatusOr<std::vector<replay::MetricValue>> values = (*backend)->EvaluateImage(0, names, image);
  ASSERT_TRUE(values.ok()) << values.status().message();
  ASSERT_EQ(values->size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ((*values)[i].name, names[i]);
    EXPECT_DOUBLE_EQ((*values)[i].value, expected[i]) << names[i];
    EXPECT_FALSE((*values)[i].unit.empty()) << names[i];
    EXPECT_GE((*values)[i].passes, 1) << names[i];
  }
  // The kernel did work: an instruction count that is not zero (fma_loop's, exact on the H200).
  const auto inst = std::find(names.begin(), names.end(), "smsp__inst_executed.sum");
  ASSERT_NE(inst, names.end());
  EXPECT_GT((*values)[static_cast<std::size_t>(inst - names.begin())].value, 0.0);

  // A damaged image is an error naming the CUPTI call, not a value.
  std::vector<std::uint8_t> damaged = image;
  std::fill(damaged.begin(),
            damaged.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(256, damaged.size())), 0);
  StatusOr<std::vector<replay::MetricValue>> bad = (*backend)->EvaluateImage(0, names, damaged);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("cupti"));
}

TEST(RangeProfilerHostApiTest, QueryMetricsForANamedChip) {
  if (!LoadCuptiApi().ok()) GTEST_SKIP() << "skipped: " << LoadCuptiApi().status().message();
  auto metrics = QueryMetrics(0, "GH100");
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  EXPECT_GT(metrics->size(), 1000u);
}

}  // namespace
}  // namespace gpuprof::cupti

namespace gpuprof::cupti {
namespace {

// Without a chip name the query asks the driver for the device's chip. Where there is no driver or
// no GPU (CI) it says so and names --chip; it used to crash inside cuptiDeviceGetChipName, which
// needs an initialized driver.
TEST(QueryMetricsTest, WithoutAChipAndWithoutAGpuItNamesTheWayOut) {
  StatusOr<std::vector<replay::MetricInfo>> metrics = QueryMetrics(0, "");
  if (metrics.ok()) {
    EXPECT_FALSE(metrics->empty()) << "a GPU is present: its metrics are listed";
  } else {
    EXPECT_NE(metrics.status().message().find("--chip GH100"), std::string::npos)
        << metrics.status().ToString();
  }
}

}  // namespace
}  // namespace gpuprof::cupti
