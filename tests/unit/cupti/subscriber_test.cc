#include "cupti/subscriber.h"

#include <generated_nvtx_meta.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/logging.h"
#include "trace/trace_buffer.h"
#include "unit/cupti/fake_cupti.h"

namespace gpuprof::cupti {
namespace {

using testing::ActivityBuffer;
using ::testing::Contains;
using testing::FakeCuptiApi;
using ::testing::HasSubstr;
using testing::MakeApi;
using testing::MakeExternalCorrelation;
using testing::MakeKernel;
using testing::MakeMarker;
using testing::MakeMemcpy;
using ::testing::Not;

std::uint64_t CorrelationOf(const trace::Record& record) {
  if (const auto* call = std::get_if<trace::ApiCall>(&record)) return call->correlation_id;
  if (const auto* task = std::get_if<trace::DeviceTask>(&record)) return task->correlation_id;
  return 0;
}

class CuptiSubscriberTest : public ::testing::Test {
 protected:
  CuptiSubscriberTest() : api_(std::make_shared<FakeCuptiApi>()) {}

  RecordSink Sink() {
    return [this](std::vector<trace::Record>&& records) {
      ++sink_calls_;
      for (trace::Record& record : records) received_.push_back(std::move(record));
    };
  }
  std::unique_ptr<CuptiSubscriber> StartOrDie(SubscriberOptions options = {}) {
    options.pid = 4242;
    auto subscriber = CuptiSubscriber::Start(api_, Sink(), std::move(options));
    EXPECT_TRUE(subscriber.ok()) << subscriber.status().ToString();
    return subscriber.ok() ? std::move(subscriber).value() : nullptr;
  }
  bool Enabled(CUpti_ActivityKind kind) const {
    return std::count(api_->enabled_kinds.begin(), api_->enabled_kinds.end(), kind) >
           std::count(api_->disabled_kinds.begin(), api_->disabled_kinds.end(), kind);
  }

  std::shared_ptr<FakeCuptiApi> api_;
  std::vector<trace::Record> received_;
  int sink_calls_ = 0;
};

// ---- Start --------------------------------------------------------------------------------------

TEST_F(CuptiSubscriberTest, StartSubscribesAsGpuprofAndEnablesTheActivityKinds) {
  auto subscriber = StartOrDie();
  ASSERT_NE(subscriber, nullptr);
  EXPECT_TRUE(subscriber->running());
  EXPECT_EQ(api_->subscribe_calls, 1);
  EXPECT_EQ(api_->subscriber_name, "gpuprof");
  EXPECT_EQ(api_->params_struct_size, sizeof(CUpti_SubscriberParams));
  EXPECT_TRUE(Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_KERNEL));  // serializes kernels: never
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MARKER,
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}) {
    EXPECT_TRUE(Enabled(kind)) << "kind " << kind;
  }
  EXPECT_EQ(api_->thread_id_type, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  EXPECT_NE(api_->buffer_requested, nullptr);
  EXPECT_NE(api_->buffer_completed, nullptr);
  EXPECT_THAT(
      api_->enabled_callbacks,
      Contains(std::make_pair(static_cast<int>(CUPTI_CB_DOMAIN_RESOURCE),
                              static_cast<std::uint32_t>(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING))));
  EXPECT_THAT(api_->enabled_domains, Contains(static_cast<int>(CUPTI_CB_DOMAIN_RUNTIME_API)));
  EXPECT_THAT(api_->enabled_domains, Contains(static_cast<int>(CUPTI_CB_DOMAIN_DRIVER_API)));
}

TEST_F(CuptiSubscriberTest, OptionsLeaveOutApiNvtxAndInternalFiltering) {
  SubscriberOptions options;
  options.runtime_api = false;
  options.driver_api = false;
  options.nvtx = false;
  options.filter_internal_work = false;
  options.flush_period_ms = 250;
  auto subscriber = StartOrDie(options);
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_DRIVER));
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_MARKER));
  EXPECT_TRUE(api_->enabled_domains.empty());
  EXPECT_EQ(api_->flush_period_ms, 250u);
}

TEST_F(CuptiSubscriberTest, TakenSlotIsUnavailableNamingTheHolder) {
  api_->subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  api_->holder_name = "CUPTI for Kineto";
  auto subscriber = CuptiSubscriber::Start(api_, Sink());
  ASSERT_FALSE(subscriber.ok());
  EXPECT_EQ(subscriber.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(subscriber.status().message(), HasSubstr("'CUPTI for Kineto'"));
  EXPECT_THAT(subscriber.status().message(), HasSubstr("no GPU activity"));
  EXPECT_TRUE(api_->enabled_kinds.empty());
  EXPECT_EQ(api_->buffer_requested, nullptr);
}

TEST_F(CuptiSubscriberTest, TakenSlotWithoutAHolderNameSaysAnotherTool) {
  api_->subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  auto subscriber = CuptiSubscriber::Start(api_, Sink());
  ASSERT_FALSE(subscriber.ok());
  EXPECT_THAT(subscriber.status().message(), HasSubstr("another tool"));
}

TEST_F(CuptiSubscriberTest, CuptiThatCannotStartIsUnavailable) {
  // Without a driver, CUPTI 13's cuptiSubscribe_v2 answers CUPTI_ERROR_UNKNOWN (seen in CI).
  for (CUptiResult result : {CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_UNKNOWN}) {
    api_->subscribe_result = result;
    auto subscriber = CuptiSubscriber::Start(api_, Sink());
    ASSERT_FALSE(subscriber.ok());
    EXPECT_EQ(subscriber.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(subscriber.status().message(), HasSubstr("cuptiSubscribe_v2 failed: CUPTI_ERROR_"));
    EXPECT_THAT(subscriber.status().message(), HasSubstr("no GPU activity"));
  }
  EXPECT_TRUE(api_->enabled_kinds.empty());
}

TEST_F(CuptiSubscriberTest, RequiredKindFailureRollsEverythingBack) {
  api_->failing_kinds.insert(CUPTI_ACTIVITY_KIND_MEMSET);
  auto subscriber = CuptiSubscriber::Start(api_, Sink());
  ASSERT_FALSE(subscriber.ok());
  EXPECT_EQ(subscriber.status().code(), StatusCode::kInternal);
  EXPECT_THAT(subscriber.status().message(), HasSubstr("CUPTI_ACTIVITY_KIND_MEMSET"));
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
  EXPECT_TRUE(api_->enabled_domains.empty());
  EXPECT_EQ(api_->unsubscribe_calls, 1);
  // The process-wide slot was released: a later Start works.
  api_->failing_kinds.clear();
  EXPECT_NE(StartOrDie(), nullptr);
}

TEST_F(CuptiSubscriberTest, OptionalKindFailureWarnsAndCollectsWithoutIt) {
  base::ScopedLogCapture capture;
  api_->failing_kinds.insert(CUPTI_ACTIVITY_KIND_MARKER);
  auto subscriber = StartOrDie();
  ASSERT_NE(subscriber, nullptr);
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_MARKER));
  EXPECT_EQ(capture.Count("CUPTI_ACTIVITY_KIND_MARKER"), 1);
}

TEST_F(CuptiSubscriberTest, SecondSubscriberInTheProcessIsRefused) {
  auto first = StartOrDie();
  auto other_api = std::make_shared<FakeCuptiApi>();
  auto second = CuptiSubscriber::Start(other_api, Sink());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(other_api->subscribe_calls, 0);
}

TEST_F(CuptiSubscriberTest, BadOptionsAreInvalidArgument) {
  SubscriberOptions options;
  options.buffer_bytes = 100;
  EXPECT_EQ(CuptiSubscriber::Start(api_, Sink(), options).status().code(), StatusCode::kInvalidArgument);
  options = {};
  options.subscriber_name = std::string(CUPTI_SUBSCRIBER_NAME_MAX_LEN + 1, 'x');
  EXPECT_EQ(CuptiSubscriber::Start(api_, Sink(), options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CuptiSubscriber::Start(api_, RecordSink()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(api_->subscribe_calls, 0);
}

// ---- buffers --------------------------------------------------------------------------------------

TEST_F(CuptiSubscriberTest, CompletedBufferReachesTheSinkTranslated) {
  api_->timestamp = 1'000;
  api_->callback_names[{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}] =
      "cudaLaunchKernel_v7000";
  auto subscriber = StartOrDie();
  ActivityBuffer buffer;
  buffer
      .Add(MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, 2'000,
                   2'100, 9))
      .Add(MakeKernel(5, 3'000, 4'000, "_Z6vecAddPfS_S_i"))
      .Add(MakeMemcpy(6, 5'000, 5'500, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1024));
  ASSERT_TRUE(api_->Deliver(buffer));
  ASSERT_EQ(received_.size(), 3u);
  EXPECT_EQ(sink_calls_, 1);  // one vector per buffer
  const auto& call = std::get<trace::ApiCall>(received_[0]);
  EXPECT_EQ(call.name, "cudaLaunchKernel");
  EXPECT_TRUE(call.launches_device_work);
  const auto& kernel = std::get<trace::DeviceTask>(received_[1]);
  EXPECT_EQ(kernel.short_name, "vecAdd");
  EXPECT_EQ(kernel.pid, 4242u);
  // Times are epoch ns through the converter sampled at Start.
  EXPECT_EQ(kernel.start_ns, subscriber->time().ToEpochNs(3'000));
  EXPECT_EQ(kernel.end_ns - kernel.start_ns, 1'000);
  EXPECT_GT(kernel.start_ns, std::int64_t{1'600'000'000} * 1'000'000'000);
  EXPECT_EQ(std::get<trace::DeviceTask>(received_[2]).memcpy_operation, 1u);

  const SubscriberStats stats = subscriber->stats();
  EXPECT_EQ(stats.buffers_completed, 1u);
  EXPECT_EQ(stats.records_parsed, 3u);
  EXPECT_EQ(stats.records_emitted, 3u);
  EXPECT_EQ(stats.translator.kernels, 1u);
}

TEST_F(CuptiSubscriberTest, EmptyBufferCallsNoSink) {
  auto subscriber = StartOrDie();
  ASSERT_TRUE(api_->Deliver(ActivityBuffer()));
  EXPECT_EQ(sink_calls_, 0);
  EXPECT_EQ(subscriber->stats().buffers_completed, 1u);
}

TEST_F(CuptiSubscriberTest, UnparsableRecordStopsTheBufferAndIsCounted) {
  auto subscriber = StartOrDie();
  ActivityBuffer buffer;
  buffer.Add(MakeKernel(1, 1, 2, "k")).Add(testing::Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_INVALID));
  ASSERT_TRUE(api_->Deliver(buffer));
  EXPECT_EQ(received_.size(), 1u);  // what was parsed before the error still arrives
  EXPECT_EQ(subscriber->stats().parse_errors, 1u);
}

TEST_F(CuptiSubscriberTest, BuffersBeyondTheCapAreRefusedAndReused) {
  SubscriberOptions options;
  options.max_buffers = 2;
  options.buffer_bytes = 4096;
  auto subscriber = StartOrDie(options);
  std::uint8_t* buffers[3] = {};
  std::size_t size = 0;
  std::size_t max_records = 0;
  for (auto*& buffer : buffers) api_->buffer_requested(&buffer, &size, &max_records);
  EXPECT_NE(buffers[0], nullptr);
  EXPECT_NE(buffers[1], nullptr);
  EXPECT_EQ(buffers[2], nullptr);  // CUPTI drops (and counts) what it cannot store
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(subscriber->stats().buffers_refused, 1u);
  api_->buffer_completed(nullptr, 0, buffers[0], 4096, 0);
  std::uint8_t* again = nullptr;
  api_->buffer_requested(&again, &size, &max_records);
  EXPECT_EQ(again, buffers[0]);  // from the pool
  EXPECT_EQ(size, 4096u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(again) % 8, 0u);
  api_->buffer_completed(nullptr, 0, again, 4096, 0);
  api_->buffer_completed(nullptr, 0, buffers[1], 4096, 0);
}

TEST_F(CuptiSubscriberTest, DroppedRecordsAreCountedAndReportedInOneLineAtStop) {
  api_->dropped_per_call = 3;
  auto subscriber = StartOrDie();
  ASSERT_TRUE(api_->Deliver(ActivityBuffer()));
  ASSERT_TRUE(api_->Deliver(ActivityBuffer()));
  EXPECT_EQ(subscriber->stats().cupti_dropped_records, 6u);
  base::ScopedLogCapture capture;
  api_->dropped_per_call = 0;
  ASSERT_TRUE(subscriber->Stop().ok());
  EXPECT_EQ(capture.Count("dropped"), 1);
  EXPECT_EQ(capture.Count("CUPTI dropped 6 activity records"), 1);
}

TEST_F(CuptiSubscriberTest, NoDropsNoWarning) {
  auto subscriber = StartOrDie();
  base::ScopedLogCapture capture;
  ASSERT_TRUE(subscriber->Stop().ok());
  EXPECT_EQ(capture.Count("dropped"), 0);
}

TEST_F(CuptiSubscriberTest, ThrowingSinkIsContainedAndCounted) {
  auto subscriber = CuptiSubscriber::Start(
      api_, [](std::vector<trace::Record>&&) { throw std::runtime_error("sink is full"); });
  ASSERT_TRUE(subscriber.ok());
  ActivityBuffer buffer;
  buffer.Add(MakeKernel(1, 1, 2, "k")).Add(MakeKernel(2, 3, 4, "k"));
  ASSERT_TRUE(api_->Deliver(buffer));  // no exception escapes into "CUPTI"
  EXPECT_EQ((*subscriber)->stats().records_lost, 2u);
}

TEST_F(CuptiSubscriberTest, SinkToAppendsToARecordCollector) {
  trace::RecordCollector collector;
  auto subscriber = CuptiSubscriber::Start(api_, SinkTo(collector));
  ASSERT_TRUE(subscriber.ok());
  ActivityBuffer buffer;
  buffer.Add(MakeKernel(1, 1, 2, "k")).Add(MakeMemcpy(2, 3, 4, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 64));
  ASSERT_TRUE(api_->Deliver(buffer));
  const std::vector<trace::Record> drained = collector.Drain();
  ASSERT_EQ(drained.size(), 2u);
  EXPECT_EQ(std::get<trace::DeviceTask>(drained[1]).memcpy_operation, 3u);
}

TEST_F(CuptiSubscriberTest, BuffersCompletingOnSeveralThreadsAllReachTheSink) {
  // CUPTI may complete buffers on its worker thread and on flushing threads at once.
  std::mutex mu;
  std::size_t kernels = 0;
  auto subscriber = CuptiSubscriber::Start(api_, [&](std::vector<trace::Record>&& records) {
    std::lock_guard<std::mutex> lock(mu);
    kernels += records.size();
  });
  ASSERT_TRUE(subscriber.ok());
  constexpr int kThreads = 4;
  constexpr int kBuffers = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (int b = 0; b < kBuffers; ++b) {
        ActivityBuffer buffer;
        for (std::uint32_t i = 0; i < 10; ++i)
          buffer.Add(MakeKernel(static_cast<std::uint32_t>(t * 10000 + b * 10) + i + 1, 1, 2, "k"));
        EXPECT_TRUE(api_->Deliver(buffer));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(kernels, std::size_t{kThreads} * kBuffers * 10);
  EXPECT_EQ((*subscriber)->stats().buffers_completed, std::uint64_t{kThreads} * kBuffers);
  EXPECT_TRUE((*subscriber)->Stop().ok());
}

// ---- C1: gpuprof's own work ------------------------------------------------------------------

TEST_F(CuptiSubscriberTest, InternalWorkNeverReachesTheSink) {
  auto subscriber = StartOrDie();
  {
    ScopedInternalWork internal;  // e.g. a snapshot copy and a hash kernel
    api_->ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, 70);
    api_->ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, 70,
                      CUPTI_API_EXIT);
    api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 71);
  }
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                    72);  // the app's
  // Device records first, API records in a later buffer: the filter does not depend on the order.
  ActivityBuffer device;
  device.Add(MakeMemcpy(70, 1, 2, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 64))
      .Add(MakeKernel(71, 3, 4, "hash"))
      .Add(MakeKernel(72, 5, 6, "app_kernel"));
  ActivityBuffer host;
  host.Add(MakeApi(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, 70, 1, 2, 1))
      .Add(MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 71, 3, 4, 1))
      .Add(
          MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 72, 5, 6, 1));
  ASSERT_TRUE(api_->Deliver(device));
  ASSERT_TRUE(api_->Deliver(host));
  ASSERT_EQ(received_.size(), 2u);
  for (const trace::Record& record : received_) EXPECT_EQ(CorrelationOf(record), 72u);
  EXPECT_EQ(subscriber->stats().internal_records_dropped, 4u);
  EXPECT_EQ(subscriber->internal_work_filter().size(), 2u);  // entry callbacks only
}

TEST_F(CuptiSubscriberTest, ApiCallbacksOutsideTheGuardMarkNothing) {
  auto subscriber = StartOrDie();
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5);
  EXPECT_EQ(subscriber->internal_work_filter().size(), 0u);
}

// Range replay's default delimiter: the runtime's cudaProfilerStart/Stop reach the replay hook as
// the driver's cuProfilerStart/Stop (on the H100 no range began from the driver's callbacks alone).
class DelimiterObserver final : public DriverApiObserver {
 public:
  void OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept override {
    if (call.callbackSite == CUPTI_API_ENTER) seen.push_back(cbid);
  }
  std::vector<CUpti_CallbackId> seen;
};

TEST_F(CuptiSubscriberTest, TheRuntimesProfilerStartAndStopReachTheReplayHookAsTheDriversCalls) {
  DelimiterObserver observer;
  SubscriberOptions options;
  options.driver_api_observer = &observer;
  auto subscriber = StartOrDie(options);
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, 7);
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 8);
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, 9);
  EXPECT_EQ(observer.seen, (std::vector<CUpti_CallbackId>{CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
                                                          CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}));
}

// Replay inside the application's cuLaunchKernel callback (issue 40, item 4): one timing pass
// with kernel records on, then a counter pass with CUPTI's kernel records held off on the
// launch's context (cuptiActivityDisableContext), so CUPTI writes no record for that launch.
class CounterPassObserver final : public DriverApiObserver {
 public:
  CounterPassObserver(FakeCuptiApi& api, CUcontext context) : api_(api), context_(context) {}
  void OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept override {
    if (cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || call.callbackSite != CUPTI_API_ENTER) return;
    ScopedInternalWork internal;
    api_.ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, call.correlationId, CUPTI_API_ENTER, context_);
    if (!HoldOffKernelRecords(context_)) return;
    api_.ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, call.correlationId, CUPTI_API_ENTER, context_);
    ResumeKernelRecords(context_);
  }

 private:
  FakeCuptiApi& api_;
  CUcontext context_;
};

TEST_F(CuptiSubscriberTest, ALaunchWhoseKernelRecordsWereHeldOffTakesNotTheApplicationsKernel) {
  api_->callback_names[{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}] =
      "cuLaunchKernel";
  int context_storage = 0;
  auto* context = reinterpret_cast<CUcontext>(&context_storage);
  CounterPassObserver observer(*api_, context);
  SubscriberOptions options;
  options.driver_api_observer = &observer;
  auto subscriber = StartOrDie(options);
  api_->ApiCallback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 90, CUPTI_API_ENTER,
                    context);  // the application's launch
  EXPECT_FALSE(KernelRecordsHeldOff(context));
  // CUPTI's records: the timing pass's kernel, then the application's (none of the counter pass).
  ActivityBuffer device;
  device.Add(MakeKernel(90, 1, 2, "fma_loop")).Add(MakeKernel(90, 5, 6, "fma_loop"));
  ASSERT_TRUE(api_->Deliver(device));
  ASSERT_EQ(received_.size(), 1u) << "the application's kernel record was taken for the counter pass's";
  const auto* kernel = std::get_if<trace::DeviceTask>(&received_[0]);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->correlation_id, 90u);
  EXPECT_EQ(kernel->start_ns, subscriber->time().ToEpochNs(5));
  EXPECT_EQ(subscriber->stats().internal_records_dropped, 1u);
  EXPECT_EQ(subscriber->stats().internal_kernels_dropped, 1u);
  EXPECT_EQ(subscriber->stats().nested_kernels_unseen, 0u);
  // Where the kernel records went, in one debug line at Stop (the GPU experiment reads it).
  const base::LogLevel level = base::CurrentLogLevel();
  base::SetLogLevel(base::LogLevel::kDebug);
  base::ScopedLogCapture capture;
  ASSERT_TRUE(subscriber->Stop().ok());
  base::SetLogLevel(level);
  EXPECT_EQ(capture.Count("kernel records: 2 from CUPTI, 1 of them gpuprof's own (C1), 1 to the trace; 0 "
                          "expected for gpuprof's nested launches never came; kernel tracing held off"),
            1);
}

// ---- launch_api_callbacks (LaunchApiTracer through the subscriber) ------------------------------
// The tracer's own behaviour, without the subscriber: launch_api_tracer_test.cc.

class LaunchApiCallbacksTest : public CuptiSubscriberTest, protected testing::LaunchApiIds {
 protected:
  LaunchApiCallbacksTest() { NameAll(*api_); }
  std::unique_ptr<CuptiSubscriber> StartTracing() {
    SubscriberOptions options;
    options.runtime_api = false;
    options.driver_api = false;
    options.launch_api_callbacks = true;
    options.filter_internal_work = false;  // as a session without replay runs
    return StartOrDie(options);
  }
  void Call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::uint32_t correlation) {
    api_->ApiCallback(domain, cbid, correlation, CUPTI_API_ENTER);
    api_->ApiCallback(domain, cbid, correlation, CUPTI_API_EXIT);
  }
  bool CallbackOn(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const {
    return api_->enabled_callbacks.count({domain, cbid}) == 1;
  }
  std::vector<trace::ApiCall> Calls() const {
    std::vector<trace::ApiCall> calls;
    for (const trace::Record& record : received_)
      if (const auto* call = std::get_if<trace::ApiCall>(&record)) calls.push_back(*call);
    return calls;
  }
};

TEST_F(LaunchApiCallbacksTest, OnlyTheTracedCallbacksAreOnAndTheApiActivityKindsOff) {
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  EXPECT_TRUE(CallbackOn(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch));
  EXPECT_TRUE(CallbackOn(CUPTI_CB_DOMAIN_RUNTIME_API, kCopy));
  EXPECT_TRUE(CallbackOn(CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch));
  EXPECT_FALSE(CallbackOn(CUPTI_CB_DOMAIN_RUNTIME_API, kGetDevice));
  EXPECT_FALSE(CallbackOn(CUPTI_CB_DOMAIN_DRIVER_API, kDriverQuery));
  EXPECT_TRUE(api_->enabled_domains.empty()) << "no whole-domain callbacks";
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_DRIVER));
  EXPECT_TRUE(Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  ASSERT_TRUE(subscriber->Stop().ok());
  EXPECT_FALSE(CallbackOn(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch)) << "Stop turns them off";
  EXPECT_FALSE(CallbackOn(CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch));
}

TEST_F(LaunchApiCallbacksTest, ALaunchIsOneRowAndTheRuntimesOwnDriverCallIsNotRecorded) {
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  const std::int64_t before = base::EpochNowNs();
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 11, CUPTI_API_ENTER);
  Call(CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 12);  // inside cudaLaunchKernel: the runtime's
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 11, CUPTI_API_EXIT);
  Call(CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch, 13);  // the application's own driver launch
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kCopy, 14);
  {
    ScopedInternalWork internal;  // gpuprof's own copy
    Call(CUPTI_CB_DOMAIN_RUNTIME_API, kCopy, 15);
  }
  const std::int64_t after = base::EpochNowNs();
  EXPECT_TRUE(received_.empty()) << "the calls wait for a buffer or a flush";
  ASSERT_TRUE(subscriber->Flush().ok());
  const std::vector<trace::ApiCall> calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].name, "cudaLaunchKernel");
  EXPECT_EQ(calls[0].correlation_id, 11u);
  EXPECT_EQ(calls[1].name, "cuLaunchKernel");
  EXPECT_EQ(calls[1].correlation_id, 13u);
  EXPECT_EQ(calls[2].name, "cudaMemcpyAsync");
  EXPECT_EQ(calls[2].correlation_id, 14u);
  for (const trace::ApiCall& call : calls) {
    EXPECT_TRUE(call.launches_device_work) << call.name;
    EXPECT_EQ(call.pid, 4242u);
    EXPECT_EQ(call.tid, static_cast<std::uint32_t>(gettid()));
    EXPECT_LE(before, call.start_ns);
    EXPECT_LE(call.start_ns, call.end_ns);
    EXPECT_LE(call.end_ns, after);
  }
}

TEST_F(LaunchApiCallbacksTest, CallsRideAlongWithACompletedBufferAndStopEmitsTheRest) {
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 21);
  ActivityBuffer buffer;
  buffer.Add(MakeKernel(21, 3'000, 4'000, "k"));
  ASSERT_TRUE(api_->Deliver(buffer));
  ASSERT_EQ(received_.size(), 2u);
  EXPECT_EQ(CorrelationOf(received_[0]), 21u);
  EXPECT_EQ(std::get<trace::ApiCall>(received_[1]).name, "cudaLaunchKernel");
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 22);
  ASSERT_TRUE(subscriber->Stop().ok());
  ASSERT_EQ(Calls().size(), 2u);
  EXPECT_EQ(Calls()[1].correlation_id, 22u);
}

TEST_F(LaunchApiCallbacksTest, WithReplaysWholeDomainsOnUntracedCallsAreIgnored) {
  SubscriberOptions options;
  options.runtime_api = false;
  options.driver_api = false;
  options.launch_api_callbacks = true;  // filter_internal_work stays on: every API callback arrives
  auto subscriber = StartOrDie(options);
  ASSERT_NE(subscriber, nullptr);
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 31, CUPTI_API_ENTER);
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kGetDevice, 32);
  api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 31, CUPTI_API_EXIT);
  Call(CUPTI_CB_DOMAIN_DRIVER_API, kDriverQuery, 33);
  ASSERT_TRUE(subscriber->Flush().ok());
  ASSERT_EQ(Calls().size(), 1u);
  EXPECT_EQ(Calls()[0].correlation_id, 31u);
}

TEST_F(LaunchApiCallbacksTest, ACallbackCuptiRefusesIsSkippedWithOneWarningAndTheRestAreTraced) {
  api_->failing_callbacks = {{CUPTI_CB_DOMAIN_RUNTIME_API, kCopy}};
  base::ScopedLogCapture capture;
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr) << "kernels are still collected";
  EXPECT_TRUE(CallbackOn(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch));
  EXPECT_FALSE(CallbackOn(CUPTI_CB_DOMAIN_RUNTIME_API, kCopy));
  EXPECT_EQ(capture.Count("CUPTI refused the callbacks of 1 API call(s)"), 1);
  EXPECT_EQ(capture.Count("(first: cudaMemcpyAsync_v3020: CUPTI error"), 1) << "the fake names no message";
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 51);
  ASSERT_TRUE(subscriber->Flush().ok());
  EXPECT_EQ(Calls().size(), 1u);
}

TEST_F(LaunchApiCallbacksTest, NothingToTraceStillCollectsKernelsAndSaysWhatIsMissing) {
  api_->callback_names.clear();
  base::ScopedLogCapture capture;
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  EXPECT_EQ(capture.Count("no runtime or driver call could be traced, so CANN_API stays empty"), 1);
  EXPECT_TRUE(Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

TEST_F(LaunchApiCallbacksTest, EachCallCarriesTheExternalIdOnTopOfItsThreadsStack) {
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  EXPECT_EQ(CurrentExternalId(), 0u);
  PushExternalId(70);  // an op
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 41);
  PushExternalId(71);  // a nested op
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kCopy, 42);
  PopExternalId();
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 43);                               // back in the outer op
  std::thread([&] { Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 44); }).join();  // another thread: none
  PopExternalId();
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, 45);  // outside every op
  PopExternalId();                                 // one pop too many is harmless
  EXPECT_EQ(CurrentExternalId(), 0u);
  ASSERT_TRUE(subscriber->Flush().ok());
  std::vector<std::pair<std::uint64_t, std::uint32_t>> links;
  for (const trace::Record& record : received_)
    if (const auto* link = std::get_if<trace::ExternalCorrelation>(&record))
      links.emplace_back(link->external_id, link->correlation_id);
  EXPECT_THAT(links, ::testing::ElementsAre(std::pair<std::uint64_t, std::uint32_t>{70, 41},
                                            std::pair<std::uint64_t, std::uint32_t>{71, 42},
                                            std::pair<std::uint64_t, std::uint32_t>{70, 43}));
  EXPECT_EQ(Calls().size(), 5u);
}

TEST_F(LaunchApiCallbacksTest, WithoutBuffersOrFlushesTheWaitingCallsAreBoundedAndReachTheSink) {
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  // A program that launches for a long while without CUPTI completing a buffer: past 65536 waiting
  // calls, the thread that completes one hands them over itself.
  constexpr std::uint32_t kBound = std::uint32_t{1} << 16;
  for (std::uint32_t i = 1; i < kBound; ++i) Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, i);
  EXPECT_TRUE(received_.empty());
  Call(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, kBound);
  EXPECT_EQ(Calls().size(), kBound);
  EXPECT_EQ(sink_calls_, 1);
}

TEST_F(LaunchApiCallbacksTest, CallsFromManyThreadsWhileFlushingAreEachRecordedOnceWithTheirThread) {
  auto subscriber = StartTracing();
  ASSERT_NE(subscriber, nullptr);
  constexpr int kThreads = 4;
  constexpr std::uint32_t kCallsEach = 2000;
  std::mutex sink_mutex;  // the fixture's sink is not thread-safe; Flush runs it on this thread only
  std::vector<std::thread> threads;
  std::vector<std::uint32_t> tids(kThreads);
  std::atomic<int> done{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[static_cast<std::size_t>(t)] = static_cast<std::uint32_t>(gettid());
      for (std::uint32_t i = 0; i < kCallsEach; ++i) {
        // Through the CUPTI callback as the fake delivers it; correlation ids unique per thread.
        const std::uint32_t correlation = static_cast<std::uint32_t>(t) * kCallsEach + i + 1;
        api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, correlation, CUPTI_API_ENTER);
        api_->ApiCallback(CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch, correlation, CUPTI_API_EXIT);
      }
      done.fetch_add(1);
    });
  }
  while (done.load() < kThreads) {
    std::lock_guard lock(sink_mutex);
    ASSERT_TRUE(subscriber->Flush().ok());
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(subscriber->Stop().ok());
  const std::vector<trace::ApiCall> calls = Calls();
  ASSERT_EQ(calls.size(), std::size_t{kThreads} * kCallsEach);
  std::vector<bool> seen(std::size_t{kThreads} * kCallsEach + 1, false);
  for (const trace::ApiCall& call : calls) {
    ASSERT_LT(call.correlation_id, seen.size());
    EXPECT_FALSE(seen[call.correlation_id]) << call.correlation_id;
    seen[call.correlation_id] = true;
    EXPECT_EQ(call.tid, tids[(call.correlation_id - 1) / kCallsEach]);
  }
  EXPECT_EQ(subscriber->stats().launch_api_calls_lost, 0u);
}

// ---- resource callbacks -------------------------------------------------------------------------

TEST_F(CuptiSubscriberTest, ContextDestructionFlushes) {
  auto subscriber = StartOrDie();
  api_->ResourceCallback(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  ASSERT_EQ(api_->flush_flags.size(), 1u);
  EXPECT_EQ(api_->flush_flags[0], 0u);
}

TEST_F(CuptiSubscriberTest, ModuleLoadAndUnloadReachTheHook) {
  std::vector<ModuleEvent> events;
  SubscriberOptions options;
  options.on_module = [&events](const ModuleEvent& event) { events.push_back(event); };
  auto subscriber = StartOrDie(options);
  EXPECT_THAT(api_->enabled_callbacks,
              Contains(std::make_pair(static_cast<int>(CUPTI_CB_DOMAIN_RESOURCE),
                                      static_cast<std::uint32_t>(CUPTI_CBID_RESOURCE_MODULE_LOADED))));
  static const char kCubin[] =
      "\x7f"
      "ELF fake cubin";
  CUpti_ModuleResourceData module{};
  module.moduleId = 17;
  module.pCubin = kCubin;
  module.cubinSize = sizeof(kCubin);
  api_->ResourceCallback(CUPTI_CBID_RESOURCE_MODULE_LOADED, &module);
  api_->ResourceCallback(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, &module);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, ModuleEvent::Kind::kLoaded);
  EXPECT_EQ(events[0].module_id, 17u);
  EXPECT_EQ(events[0].cubin, kCubin);
  EXPECT_EQ(events[0].cubin_size, sizeof(kCubin));
  EXPECT_EQ(events[1].kind, ModuleEvent::Kind::kUnloadStarting);
}

TEST_F(CuptiSubscriberTest, WithoutAModuleHookModuleCallbacksStayOff) {
  auto subscriber = StartOrDie();
  EXPECT_THAT(api_->enabled_callbacks,
              Not(Contains(std::make_pair(static_cast<int>(CUPTI_CB_DOMAIN_RESOURCE),
                                          static_cast<std::uint32_t>(CUPTI_CBID_RESOURCE_MODULE_LOADED)))));
}

// ---- Flush / Stop ------------------------------------------------------------------------------

TEST_F(CuptiSubscriberTest, FlushForwardsTheForcedFlag) {
  auto subscriber = StartOrDie();
  ASSERT_TRUE(subscriber->Flush().ok());
  ASSERT_TRUE(subscriber->Flush(/*forced=*/true).ok());
  ASSERT_EQ(api_->flush_flags.size(), 2u);
  EXPECT_EQ(api_->flush_flags[0], 0u);
  EXPECT_EQ(api_->flush_flags[1], static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
}

TEST_F(CuptiSubscriberTest, StopDisablesForceFlushesThenUnsubscribes) {
  auto subscriber = StartOrDie();
  // Records still inside CUPTI come out during Stop's forced flush and reach the sink.
  api_->on_flush = [this](std::uint32_t) {
    ActivityBuffer buffer;
    buffer.Add(MakeKernel(3, 1, 2, "last"));
    api_->Deliver(buffer);
  };
  api_->calls.clear();
  ASSERT_TRUE(subscriber->Stop().ok());
  EXPECT_FALSE(subscriber->running());
  ASSERT_EQ(received_.size(), 1u);
  EXPECT_EQ(std::get<trace::DeviceTask>(received_[0]).name, "last");
  ASSERT_GE(api_->calls.size(), 3u);
  EXPECT_EQ(api_->calls.front().rfind("disable", 0), 0u);
  EXPECT_EQ(api_->calls[api_->calls.size() - 2],
            "flush " + std::to_string(static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
  EXPECT_EQ(api_->calls.back(), "unsubscribe");
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_TRUE(api_->enabled_domains.empty());
  // Idempotent, and Flush after Stop is a precondition error.
  EXPECT_TRUE(subscriber->Stop().ok());
  EXPECT_EQ(api_->unsubscribe_calls, 1);
  EXPECT_EQ(subscriber->Flush().code(), StatusCode::kFailedPrecondition);
}

TEST_F(CuptiSubscriberTest, BufferReturnedAfterStopIsFreedUnread) {
  auto subscriber = StartOrDie();
  std::uint8_t* buffer = nullptr;
  std::size_t size = 0;
  std::size_t max_records = 0;
  api_->buffer_requested(&buffer, &size, &max_records);
  ASSERT_NE(buffer, nullptr);
  ASSERT_TRUE(subscriber->Stop().ok());
  const auto kernel = MakeKernel(1, 1, 2, "late");
  std::memcpy(buffer, &kernel, sizeof(kernel));
  api_->buffer_completed(nullptr, 0, buffer, size, sizeof(kernel));  // freed, not translated
  EXPECT_TRUE(received_.empty());
  // And a new subscriber may start after the old one stopped.
  subscriber.reset();
  EXPECT_NE(StartOrDie(), nullptr);
}

TEST_F(CuptiSubscriberTest, OpenNvtxRangesAreClosedAtStop) {
  auto subscriber = StartOrDie();
  ActivityBuffer buffer;
  buffer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 10, 1, "epoch", nullptr));
  ASSERT_TRUE(api_->Deliver(buffer));
  EXPECT_TRUE(received_.empty());
  ASSERT_TRUE(subscriber->Stop().ok());
  ASSERT_EQ(received_.size(), 1u);
  const auto& mark = std::get<trace::Mark>(received_[0]);
  EXPECT_EQ(mark.message, "epoch");
  EXPECT_GE(mark.end_ns, mark.start_ns);
}

TEST_F(CuptiSubscriberTest, RangeEndedOnAnotherThreadRecordsTheEndingThread) {
  auto subscriber = StartOrDie();
  EXPECT_TRUE(api_->enabled_callbacks.count({CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeEnd}));
  // nvtxRangeEnd(7) called on this thread; CUPTI's END marker names the starting thread (1).
  nvtxRangeEnd_params params{7};
  CUpti_NvtxData nvtx{};
  nvtx.functionName = "nvtxRangeEnd";
  nvtx.functionParams = &params;
  subscriber->OnCallback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeEnd, &nvtx);
  ActivityBuffer buffer;
  buffer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 7, 10, 1, "cross", nullptr));
  buffer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 7, 20, 1, nullptr, nullptr));
  buffer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 8, 30, 1, "same", nullptr));
  buffer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 8, 40, 1, nullptr, nullptr));
  ASSERT_TRUE(api_->Deliver(buffer));
  ASSERT_EQ(received_.size(), 1u) << "the range without a seen end is held back";
  const auto& cross = std::get<trace::Mark>(received_[0]);
  EXPECT_EQ(cross.tid, 1u);
  EXPECT_EQ(cross.end_tid, static_cast<std::uint32_t>(gettid()));
  ASSERT_TRUE(subscriber->Stop().ok());
  ASSERT_EQ(received_.size(), 2u);
  const auto& same = std::get<trace::Mark>(received_[1]);
  EXPECT_EQ(same.message, "same");
  EXPECT_EQ(same.end_tid, 1u) << "a range with no recorded end keeps the marker's thread";
}

TEST_F(CuptiSubscriberTest, RangeWhoseEndMarkerNeverArrivesEndsWhereTheEndCallbackSawIt) {
  auto subscriber = StartOrDie();
  ActivityBuffer buffer;
  buffer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 11, 10, 1, "lost_end", nullptr));
  ASSERT_TRUE(api_->Deliver(buffer));
  nvtxRangeEnd_params params{11};
  CUpti_NvtxData nvtx{};
  nvtx.functionParams = &params;
  const std::int64_t before = base::EpochNowNs();
  subscriber->OnCallback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeEnd, &nvtx);
  const std::int64_t after = base::EpochNowNs();
  ASSERT_TRUE(subscriber->Stop().ok());
  ASSERT_EQ(received_.size(), 1u);
  const auto& mark = std::get<trace::Mark>(received_[0]);
  EXPECT_EQ(mark.end_tid, static_cast<std::uint32_t>(gettid()));
  EXPECT_GE(mark.end_ns, before);
  EXPECT_LE(mark.end_ns, after);
}

TEST_F(CuptiSubscriberTest, EndCallbackSeenAfterItsMarkerStillSetsTheEndingThread) {
  auto subscriber = StartOrDie();
  ActivityBuffer first;
  first.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 9, 10, 1, "late", nullptr));
  first.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 9, 20, 1, nullptr, nullptr));
  ASSERT_TRUE(api_->Deliver(first));
  EXPECT_TRUE(received_.empty());
  nvtxRangeEnd_params params{9};
  CUpti_NvtxData nvtx{};
  nvtx.functionParams = &params;
  subscriber->OnCallback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeEnd, &nvtx);
  ActivityBuffer next;
  next.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 10, 30, 1, "mark", nullptr));
  ASSERT_TRUE(api_->Deliver(next));
  ASSERT_EQ(received_.size(), 2u);
  const auto& late = std::get<trace::Mark>(received_[0]);
  EXPECT_EQ(late.message, "late");
  EXPECT_EQ(late.end_tid, static_cast<std::uint32_t>(gettid()));
}

TEST_F(CuptiSubscriberTest, DestructorStops) {
  { auto subscriber = StartOrDie(); }
  EXPECT_EQ(api_->unsubscribe_calls, 1);
  EXPECT_FALSE(Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

TEST_F(CuptiSubscriberTest, ExternalCorrelationsReachTheSinkAsRecords) {
  auto subscriber = StartOrDie();
  ActivityBuffer buffer;
  buffer.Add(MakeExternalCorrelation(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 900, 5));
  ASSERT_TRUE(api_->Deliver(buffer));
  ASSERT_EQ(received_.size(), 1u);
  const auto& link = std::get<trace::ExternalCorrelation>(received_[0]);
  EXPECT_EQ(link.external_id, 900u);
  EXPECT_EQ(link.correlation_id, 5u);
}

}  // namespace
}  // namespace gpuprof::cupti
