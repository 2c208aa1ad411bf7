// LaunchApiTracer on its own (no subscriber): which callbacks Enable turns on and Disable off, what
// OnApi records for an entry/exit pair, the runtime's own driver calls left out, the per-thread
// external-id stack, and what Take hands over. The fake CuptiApi supplies the callback names; the
// callbacks are driven with CUpti_CallbackData built here. The subscriber's use of the tracer
// (launch_api_callbacks) is tested in subscriber_test.cc.
#include "cupti/launch_api_tracer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "unit/cupti/fake_cupti.h"

namespace gpuprof::cupti {
namespace {

using testing::FakeCuptiApi;
using ::testing::HasSubstr;

TEST(LaunchApiTracerNamesTest, TracesLaunchesCopiesAllocationsAndWaitsNotQueries) {
  for (const char* name : {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaGraphLaunch_v10000",
                           "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020", "cudaMallocAsync_v11020",
                           "cudaFree_v3020", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020"}) {
    EXPECT_TRUE(IsTracedApi(CUPTI_CB_DOMAIN_RUNTIME_API, name)) << name;
  }
  for (const char* name : {"cuLaunchKernel", "cuLaunchKernelEx", "cuMemcpyHtoDAsync_v2", "cuMemAlloc_v2",
                           "cuMemFree_v2", "cuCtxSynchronize", "cuStreamWaitEvent"}) {
    EXPECT_TRUE(IsTracedApi(CUPTI_CB_DOMAIN_DRIVER_API, name)) << name;
  }
  for (const char* name : {"cudaGetDevice_v3020", "cudaGetLastError_v3020", "cudaStreamIsCapturing_v10000",
                           "cudaEventRecord_v3020", "cudaSetDevice_v3020"}) {
    EXPECT_FALSE(IsTracedApi(CUPTI_CB_DOMAIN_RUNTIME_API, name)) << name;
  }
  EXPECT_FALSE(IsTracedApi(CUPTI_CB_DOMAIN_DRIVER_API, "cuCtxGetCurrent"));
  EXPECT_FALSE(IsTracedApi(CUPTI_CB_DOMAIN_DRIVER_API, "cudaLaunchKernel_v7000")) << "a runtime name";
  EXPECT_FALSE(IsTracedApi(CUPTI_CB_DOMAIN_NVTX, "cuLaunchKernel"));
}

class LaunchApiTracerTest : public ::testing::Test, protected testing::LaunchApiIds {
 protected:
  static constexpr std::uint32_t kPid = 4242;

  LaunchApiTracerTest() { NameAll(api_); }
  void EnableOrDie(LaunchApiTracer& tracer) {
    const Status enabled = tracer.Enable(api_, handle_);
    ASSERT_TRUE(enabled.ok()) << enabled.ToString();
  }
  static std::size_t Site(LaunchApiTracer& tracer, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          std::uint32_t correlation, CUpti_ApiCallbackSite site) {
    CUpti_CallbackData data{};
    data.callbackSite = site;
    data.functionName = "fake";
    data.correlationId = correlation;
    return tracer.OnApi(domain, cbid, data);
  }
  // Entry then exit; returns what the exit returned (calls waiting for Take).
  static std::size_t Call(LaunchApiTracer& tracer, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          std::uint32_t correlation) {
    EXPECT_EQ(Site(tracer, domain, cbid, correlation, CUPTI_API_ENTER), 0u) << "an entry completes nothing";
    return Site(tracer, domain, cbid, correlation, CUPTI_API_EXIT);
  }
  static std::vector<trace::ApiCall> Calls(const std::vector<trace::Record>& records) {
    std::vector<trace::ApiCall> calls;
    for (const trace::Record& record : records)
      if (const auto* call = std::get_if<trace::ApiCall>(&record)) calls.push_back(*call);
    return calls;
  }

  FakeCuptiApi api_;
  CUpti_SubscriberHandle handle_ = nullptr;  // the fake does not look at it
  LaunchApiTracer tracer_{kPid};
};

TEST_F(LaunchApiTracerTest, EnableTurnsOnTheTracedCallbacksOnlyAndDisableTurnsThemOff) {
  EnableOrDie(tracer_);
  const std::set<std::pair<int, std::uint32_t>> traced = {{CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch},
                                                          {CUPTI_CB_DOMAIN_RUNTIME_API, kCopy},
                                                          {CUPTI_CB_DOMAIN_RUNTIME_API, kSync},
                                                          {CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch}};
  EXPECT_EQ(api_.enabled_callbacks, traced);
  EXPECT_TRUE(api_.enabled_domains.empty()) << "no whole-domain callbacks";
  EXPECT_TRUE(tracer_.Disable(api_, handle_).ok());
  EXPECT_TRUE(api_.enabled_callbacks.empty());
  EXPECT_TRUE(tracer_.Disable(api_, handle_).ok()) << "a second Disable has nothing left to turn off";
}

TEST_F(LaunchApiTracerTest, DisableReportsTheFirstFailureAndStillTurnsTheRestOff) {
  EnableOrDie(tracer_);
  api_.failing_disables = {{CUPTI_CB_DOMAIN_RUNTIME_API, kCopy}};
  const Status disabled = tracer_.Disable(api_, handle_);
  EXPECT_FALSE(disabled.ok());
  EXPECT_THAT(disabled.message(), HasSubstr("cuptiEnableCallback(0) failed"));
  const std::set<std::pair<int, std::uint32_t>> left = {{CUPTI_CB_DOMAIN_RUNTIME_API, kCopy}};
  EXPECT_EQ(api_.enabled_callbacks, left) << "only the one CUPTI refused stays on";
}

TEST_F(LaunchApiTracerTest, UntracedAndUnknownCallbacksRecordNothing) {
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 1), 0u) << "before Enable nothing is traced";
  EnableOrDie(tracer_);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kGetDevice, 2), 0u);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_DRIVER_API, kDriverQuery, 3), 0u);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE + 7, 4), 0u);
  EXPECT_TRUE(tracer_.Take().empty());
}

TEST_F(LaunchApiTracerTest, ACompletedCallIsOneApiCallWithItsThreadTimesAndNormalizedName) {
  EnableOrDie(tracer_);
  const std::int64_t before = base::EpochNowNs();
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 11), 1u);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kSync, 12), 2u);
  const std::int64_t after = base::EpochNowNs();
  const std::vector<trace::Record> records = tracer_.Take();
  const std::vector<trace::ApiCall> calls = Calls(records);
  ASSERT_EQ(records.size(), 2u) << "no external id pushed: no ExternalCorrelation";
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "cudaLaunchKernel") << "the runtime's version suffix is dropped";
  EXPECT_EQ(calls[0].correlation_id, 11u);
  EXPECT_TRUE(calls[0].launches_device_work);
  EXPECT_EQ(calls[1].name, "cudaStreamSynchronize");
  EXPECT_FALSE(calls[1].launches_device_work) << "a wait launches nothing";
  for (const trace::ApiCall& call : calls) {
    EXPECT_EQ(call.pid, kPid);
    EXPECT_EQ(call.tid, static_cast<std::uint32_t>(gettid()));
    EXPECT_LE(before, call.start_ns);
    EXPECT_LE(call.start_ns, call.end_ns);
    EXPECT_LE(call.end_ns, after);
  }
  EXPECT_TRUE(tracer_.Take().empty()) << "Take hands each call over once";
  EXPECT_EQ(tracer_.lost(), 0u);
}

TEST_F(LaunchApiTracerTest, TheRuntimesOwnDriverCallIsNotRecordedTheApplicationsIs) {
  EnableOrDie(tracer_);
  EXPECT_EQ(Site(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 21, CUPTI_API_ENTER), 0u);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 22), 0u) << "inside cudaLaunchKernel";
  EXPECT_EQ(Site(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 21, CUPTI_API_EXIT), 1u);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 23), 2u) << "the application's own";
  const std::vector<trace::ApiCall> calls = Calls(tracer_.Take());
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "cudaLaunchKernel");
  EXPECT_EQ(calls[0].correlation_id, 21u);
  EXPECT_EQ(calls[1].name, "cuLaunchKernel");
  EXPECT_EQ(calls[1].correlation_id, 23u);
}

TEST_F(LaunchApiTracerTest, AnExitWhoseEntryWasNotSeenLastsNoTime) {
  EnableOrDie(tracer_);
  EXPECT_EQ(Site(tracer_, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 31, CUPTI_API_EXIT), 1u);
  const std::vector<trace::ApiCall> calls = Calls(tracer_.Take());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_GT(calls[0].end_ns, 0);
  EXPECT_EQ(calls[0].start_ns, calls[0].end_ns);
}

// A tracer disabled in the middle of a runtime call (its exit never came) must not make the next
// tracer take this thread's driver calls for the runtime's own.
TEST_F(LaunchApiTracerTest, EnableForgetsACallTheLastTracerLeftOpen) {
  {
    LaunchApiTracer earlier(kPid);
    EnableOrDie(earlier);
    EXPECT_EQ(Site(earlier, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 41, CUPTI_API_ENTER), 0u);
    EXPECT_TRUE(earlier.Disable(api_, handle_).ok());
  }
  EnableOrDie(tracer_);
  EXPECT_EQ(Call(tracer_, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 42), 1u);
  const std::vector<trace::ApiCall> calls = Calls(tracer_.Take());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].correlation_id, 42u);
}

TEST_F(LaunchApiTracerTest, TakeFollowsEachCallWithTheExternalIdOnTopOfItsThreadsStack) {
  EnableOrDie(tracer_);
  PushExternalId(70);
  Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 51);
  PushExternalId(71);
  Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kCopy, 52);
  PopExternalId();
  PopExternalId();
  Call(tracer_, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 53);  // outside every op: no link
  const std::vector<trace::Record> records = tracer_.Take();
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(std::get<trace::ApiCall>(records[0]).correlation_id, 51u);
  const auto& first = std::get<trace::ExternalCorrelation>(records[1]);
  EXPECT_EQ(first.external_id, 70u);
  EXPECT_EQ(first.correlation_id, 51u);
  EXPECT_EQ(std::get<trace::ApiCall>(records[2]).correlation_id, 52u);
  const auto& nested = std::get<trace::ExternalCorrelation>(records[3]);
  EXPECT_EQ(nested.external_id, 71u);
  EXPECT_EQ(nested.correlation_id, 52u);
  EXPECT_EQ(std::get<trace::ApiCall>(records[4]).correlation_id, 53u);
}

TEST(ExternalIdStackTest, DeeperThan64TheCallsTakeTheIdAtDepth64) {
  EXPECT_EQ(CurrentExternalId(), 0u);
  for (std::uint64_t id = 1; id <= 70; ++id) PushExternalId(id);
  EXPECT_EQ(CurrentExternalId(), 64u);
  for (int i = 0; i < 6; ++i) PopExternalId();  // back to depth 64
  EXPECT_EQ(CurrentExternalId(), 64u);
  PopExternalId();
  EXPECT_EQ(CurrentExternalId(), 63u);
  for (int i = 0; i < 63; ++i) PopExternalId();
  EXPECT_EQ(CurrentExternalId(), 0u);
  PopExternalId();  // one pop too many is harmless
  EXPECT_EQ(CurrentExternalId(), 0u);
  PushExternalId(5);
  EXPECT_EQ(CurrentExternalId(), 5u);
  PopExternalId();
}

}  // namespace
}  // namespace gpuprof::cupti
