// The CUPTI adapter under a real Session: synthetic activity buffers through the fake CuptiApi end
// up as DB rows. No GPU, no libcuda, no libcupti.
#include "session/cupti_device_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "base/logging.h"
#include "session/session.h"
#include "unit/cupti/fake_cupti.h"
#include "unit/session/session_test_util.h"

namespace gpuprof::session {
namespace {

using cupti::testing::ActivityBuffer;
using cupti::testing::FakeCuptiApi;
using cupti::testing::FakeDriverApi;
using cupti::testing::MakeApi;
using cupti::testing::MakeKernel;
using cupti::testing::MakeMemcpy;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Query;
using testing::TempDir;

class CuptiDeviceCollectorTest : public ::testing::Test {
 protected:
  CuptiDeviceCollectorTest() {
    fake_ = new FakeCuptiApi;  // owned by the subscriber once loaded
    fake_->timestamp = 1'000;
    fake_->callback_names[{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}] =
        "cudaLaunchKernel_v7000";
    loaders_.cupti = [this]() -> StatusOr<std::unique_ptr<cupti::CuptiApi>> {
      ++cupti_loads_;
      if (handed_over_) return UnavailableError("the fake CUPTI was loaded already");
      handed_over_ = true;
      return std::unique_ptr<cupti::CuptiApi>(fake_);
    };
    loaders_.driver = [this]() -> StatusOr<std::unique_ptr<cupti::DriverApi>> {
      ++driver_loads_;
      if (!driver_present_) return UnavailableError("libcuda.so.1: cannot open shared object file");
      auto driver = std::make_unique<FakeDriverApi>();
      driver->device_names = {"NVIDIA H200"};
      if (driver_loads_ <= driver_uninitialized_loads_) driver->count_result = CUDA_ERROR_NOT_INITIALIZED;
      if (driver_loads_ > driver_deinitialized_after_) driver->count_result = CUDA_ERROR_DEINITIALIZED;
      return std::unique_ptr<cupti::DriverApi>(std::move(driver));
    };
  }
  ~CuptiDeviceCollectorTest() override {
    if (!handed_over_) delete fake_;
  }

  std::unique_ptr<Session> Start(std::string started_by = "api",
                                 SessionConfig::CudaTrace cuda_trace = SessionConfig().cuda_trace) {
    // The process environment's settings (the replay tests set GPUPROF_REPLAY* there), as a session
    // started from the injection library reads them.
    StatusOr<SessionConfig> from_environment = ConfigFromEnvironment(ProcessEnvironment());
    EXPECT_TRUE(from_environment.ok()) << from_environment.status().ToString();
    SessionConfig config = from_environment.ok() ? *from_environment : SessionConfig();
    config.output_dir = dir_ / "out";
    config.cuda_trace = cuda_trace;
    config.started_by = std::move(started_by);
    SessionOptions options;
    options.device_factory = CuptiDeviceCollectorFactory(loaders_);
    StatusOr<std::unique_ptr<Session>> session = Session::Start(config, std::move(options));
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return session.ok() ? std::move(session).value() : nullptr;
  }

  TempDir dir_;
  FakeCuptiApi* fake_;
  CuptiLoaders loaders_;
  bool handed_over_ = false;
  bool driver_present_ = true;
  int driver_uninitialized_loads_ = 0;        // the first N driver loads answer CUDA_ERROR_NOT_INITIALIZED
  int driver_deinitialized_after_ = 1 << 20;  // loads past the N-th answer CUDA_ERROR_DEINITIALIZED
  int cupti_loads_ = 0;
  int driver_loads_ = 0;
};

// cuda_trace runtime,driver,nvtx: an activity record for every runtime and driver call.
constexpr SessionConfig::CudaTrace kEveryCall{
    .runtime = true, .driver = true, .nvtx = true, .launches = false};

TEST_F(CuptiDeviceCollectorTest, ActivityBuffersBecomeRowsAndStopFlushesAndUnsubscribes) {
  auto session = Start("api", kEveryCall);
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->has_device_collector());
  EXPECT_EQ(fake_->subscriber_name, "gpuprof");
  ActivityBuffer buffer;
  buffer
      .Add(MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 5, 2'000,
                   2'100, 9))
      .Add(MakeKernel(5, 3'000, 4'000, "_Z6vecAddPfS_S_i"))
      .Add(MakeMemcpy(6, 5'000, 5'500, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1024));
  ASSERT_TRUE(fake_->Deliver(buffer));
  ASSERT_TRUE(session->Flush().ok());
  EXPECT_THAT(fake_->flush_flags, Contains(static_cast<std::uint32_t>(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)));
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_EQ(fake_->unsubscribe_calls, 1);

  const std::string db = session->db_path();
  EXPECT_THAT(Query(db, "SELECT COUNT(*) FROM TASK"), ElementsAre("2"));
  EXPECT_THAT(
      Query(db, "SELECT s.value LIKE '%vecAdd%' FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s ON s.id = c.name"),
      ElementsAre("1"));
  EXPECT_THAT(Query(db, "SELECT size, memcpyOperation FROM MEMCPY_INFO"), ElementsAre("1024|1"));
  // The kernel's TASK row joins its launch through the correlation id.
  EXPECT_THAT(Query(db,
                    "SELECT COUNT(*) FROM TASK t JOIN CANN_API a ON a.connectionId = t.connectionId "
                    "JOIN STRING_IDS s ON s.id = a.name WHERE s.value = 'launch'"),
              ElementsAre("1"));
  EXPECT_THAT(Query(db, "SELECT name FROM NPU_INFO"), ElementsAre("NVIDIA H200"));
}

TEST_F(CuptiDeviceCollectorTest, TakenCuptiSlotLeavesAHostOnlySessionAndNamesTheHolder) {
  fake_->subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake_->holder_name = "CUPTI for Kineto";
  base::ScopedLogCapture capture;
  auto session = Start();
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(session->has_device_collector());
  EXPECT_EQ(capture.Count("'CUPTI for Kineto'"), 1);
  ASSERT_TRUE(session->Mark("host only").ok());
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(testing::MarkMessages(session->db_path()), ElementsAre("host only"));
}

TEST_F(CuptiDeviceCollectorTest, ProcessWithoutADriverDoesNotLoadCupti) {
  driver_present_ = false;
  auto session = Start();
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(session->has_device_collector());
  EXPECT_EQ(cupti_loads_, 0);
  ASSERT_TRUE(session->Stop().ok());
}

// Started from the injection, the driver is inside cuInit: the device names are asked for at the
// stop instead (on the H100, every DB of `gpuprof run`/`replay` had an empty NPU_INFO).
TEST_F(CuptiDeviceCollectorTest, StartFromInjectionAsksTheDriverForDeviceNamesOnlyAtTheStop) {
  auto session = Start("injection");
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->has_device_collector());
  EXPECT_EQ(driver_loads_, 1);  // the factory's presence check only: the driver is inside cuInit
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(Query(session->db_path(), "SELECT name FROM NPU_INFO"), ElementsAre("NVIDIA H200"));
}

// A Python script starts its session before torch initializes CUDA: the start's device query finds
// the driver uninitialized, so the names are asked for again at the stop (on the H100 NPU_INFO was
// empty in every DB of a script-started session, so the step roofline had no roofs).
TEST_F(CuptiDeviceCollectorTest, StartBeforeCudaIsInitializedAsksForDeviceNamesAgainAtTheStop) {
  driver_uninitialized_loads_ = 2;  // the factory's presence check and the start's query
  auto session = Start("api");
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->has_device_collector());
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(Query(session->db_path(), "SELECT name FROM NPU_INFO"), ElementsAre("NVIDIA H200"));
}

// The same script's session may stop at exit, after the driver is gone (on the H100: "cuDeviceGetCount
// failed: CUDA error 4"): the names asked for when the first context was made are kept.
TEST_F(CuptiDeviceCollectorTest, StopAfterTheDriverIsGoneKeepsTheNamesOfTheFirstContext) {
  driver_uninitialized_loads_ = 2;  // the presence check and the start's query
  driver_deinitialized_after_ = 3;  // the first context's query answers; the stop's does not
  auto session = Start("api");
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(
      fake_->enabled_callbacks.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED}));
  fake_->ResourceCallback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  fake_->ResourceCallback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED);  // asked once
  EXPECT_EQ(driver_loads_, 3);
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_EQ(driver_loads_, 4);
  EXPECT_THAT(Query(session->db_path(), "SELECT name FROM NPU_INFO"), ElementsAre("NVIDIA H200"));
}

// Named at the start: no context callback, no further query.
TEST_F(CuptiDeviceCollectorTest, NamesKnownAtTheStartNeedNoContextCallback) {
  auto session = Start("api");
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(
      fake_->enabled_callbacks.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED}));
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(Query(session->db_path(), "SELECT name FROM NPU_INFO"), ElementsAre("NVIDIA H200"));
}

// C1's API callback domains cost a callback per CUDA call; without replay gpuprof makes no CUDA
// calls of its own while collecting, so they stay off. Replay turns them on (its own work is
// filtered and its hook sees every launch).
TEST_F(CuptiDeviceCollectorTest, ApiCallbackDomainsAreOnOnlyWhenReplayIsConfigured) {
  {
    auto session = Start();
    ASSERT_NE(session, nullptr);
    EXPECT_FALSE(fake_->enabled_domains.contains(CUPTI_CB_DOMAIN_RUNTIME_API));
    EXPECT_FALSE(fake_->enabled_domains.contains(CUPTI_CB_DOMAIN_DRIVER_API));
    ASSERT_TRUE(session->Stop().ok());
  }
  handed_over_ = false;
  fake_ = new FakeCuptiApi;
  fake_->timestamp = 1'000;
  setenv("GPUPROF_REPLAY", "1", 1);  // what `gpuprof replay` sets
  auto session = Start();
  unsetenv("GPUPROF_REPLAY");
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(fake_->enabled_domains.contains(CUPTI_CB_DOMAIN_RUNTIME_API));
  EXPECT_TRUE(fake_->enabled_domains.contains(CUPTI_CB_DOMAIN_DRIVER_API));
  ASSERT_TRUE(session->Stop().ok());
}

TEST_F(CuptiDeviceCollectorTest, CudaTraceChoosesTheApiAndNvtxActivityKinds) {
  struct Case {
    const char* what;
    SessionConfig::CudaTrace trace;
    bool runtime, driver, marker;
  };
  const Case cases[] = {
      // The default, launches,nvtx: the API calls come from callbacks, not activity records.
      {"default", SessionConfig().cuda_trace, false, false, true},
      {"runtime,driver,nvtx", kEveryCall, true, true, true},
      {"runtime", {.runtime = true, .driver = false, .nvtx = false, .launches = false}, true, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    if (handed_over_) {  // each session loads its own fake CUPTI
      handed_over_ = false;
      fake_ = new FakeCuptiApi;
      fake_->timestamp = 1'000;
    }
    auto session = Start("api", c.trace);
    ASSERT_NE(session, nullptr);
    auto enabled = [&](CUpti_ActivityKind kind) {
      return std::find(fake_->enabled_kinds.begin(), fake_->enabled_kinds.end(), kind) !=
             fake_->enabled_kinds.end();
    };
    EXPECT_TRUE(enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    EXPECT_TRUE(enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
    EXPECT_EQ(enabled(CUPTI_ACTIVITY_KIND_RUNTIME), c.runtime);
    EXPECT_EQ(enabled(CUPTI_ACTIVITY_KIND_DRIVER), c.driver);
    EXPECT_EQ(enabled(CUPTI_ACTIVITY_KIND_MARKER), c.marker);
    ASSERT_TRUE(session->Stop().ok());
  }
}

TEST_F(CuptiDeviceCollectorTest, CudaTraceLaunchesTurnsOnTheLaunchCallbacksAndKeepsOpIdsOutOfCupti) {
  fake_->callback_names = {
      {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
       "cudaLaunchKernel_v7000"},
      {{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020}, "cudaGetDevice_v3020"}};
  auto session = Start(
      "api", SessionConfig::CudaTrace{.runtime = false, .driver = false, .nvtx = true, .launches = true});
  ASSERT_NE(session, nullptr);
  auto enabled = [&](CUpti_ActivityKind kind) {
    return std::find(fake_->enabled_kinds.begin(), fake_->enabled_kinds.end(), kind) !=
           fake_->enabled_kinds.end();
  };
  EXPECT_FALSE(enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
  EXPECT_FALSE(enabled(CUPTI_ACTIVITY_KIND_DRIVER));
  EXPECT_TRUE(enabled(CUPTI_ACTIVITY_KIND_MARKER));
  EXPECT_EQ(fake_->enabled_callbacks.count(
                {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}),
            1u);
  EXPECT_EQ(fake_->enabled_callbacks.count(
                {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020}),
            0u);
  // The torch hooks' per-op pushes go to the launch tracer's thread-local stack, not to CUPTI.
  DeviceCollector::CorrelationFunctions correlation = session->DeviceCorrelation();
  ASSERT_NE(correlation.push, nullptr);
  EXPECT_EQ(correlation.push(88), 0);
  EXPECT_EQ(cupti::CurrentExternalId(), 88u);
  EXPECT_EQ(correlation.pop(), 0);
  EXPECT_EQ(cupti::CurrentExternalId(), 0u);
  ASSERT_TRUE(session->Stop().ok());
}

// gpuprof.profile(kernel_replay=...) reaches the collector; without `gpuprof replay --from-script`
// it is declined with how to start the program instead.
TEST_F(CuptiDeviceCollectorTest, ReplayFromTheProgramIsDeclinedWithHowToStartUnlessArmed) {
  ReplaySettings options = SessionConfig().replay;
  options.passes = 3;
  {
    auto session = Start("injection");
    ASSERT_NE(session, nullptr);
    Status declined = session->ConfigureReplay(options);
    EXPECT_EQ(declined.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(declined.message(), HasSubstr("started by `gpuprof run`"));
    EXPECT_THAT(declined.message(), HasSubstr("gpuprof replay --from-script -- COMMAND"));
    ASSERT_TRUE(session->Stop().ok());
  }
  auto restart = [&](const char* variable) {
    handed_over_ = false;
    fake_ = new FakeCuptiApi;
    fake_->timestamp = 1'000;
    // `gpuprof replay` sets GPUPROF_REPLAY=1 beside its selection or --from-script.
    if (variable != nullptr)
      setenv(variable, variable == std::string("GPUPROF_REPLAY_PASSES") ? "3" : "1", 1);
    if (variable != nullptr) setenv("GPUPROF_REPLAY", "1", 1);
    auto session = Start("injection");
    if (variable != nullptr) unsetenv(variable);
    unsetenv("GPUPROF_REPLAY");
    return session;
  };
  {
    auto session = restart("GPUPROF_REPLAY_PASSES");
    ASSERT_NE(session, nullptr);
    Status declined = session->ConfigureReplay(options);
    EXPECT_EQ(declined.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(declined.message(), HasSubstr("command line's replay settings are in force"));
    ASSERT_TRUE(session->Stop().ok());
  }
  {
    auto session = restart("GPUPROF_REPLAY_FROM_SCRIPT");
    ASSERT_NE(session, nullptr);
    EXPECT_TRUE(fake_->enabled_domains.contains(CUPTI_CB_DOMAIN_DRIVER_API)) << "armed: launches are watched";
    Status configured = session->ConfigureReplay(options);
    // Here no CUDA device can be set up (no driver); on a GPU it succeeds (GpuRunTest).
    EXPECT_NE(configured.code(), StatusCode::kFailedPrecondition) << configured.ToString();
    ASSERT_TRUE(session->Stop().ok());
  }
}

TEST(LoadedObjectPathTest, FindsALoadedLibraryByItsFileNamePrefix) {
  EXPECT_THAT(LoadedObjectPath("libc.so"), ::testing::EndsWith("libc.so.6"));
  EXPECT_EQ(LoadedObjectPath("libnot-loaded-anywhere.so"), "");
}

}  // namespace
}  // namespace gpuprof::session
