// The controller's counter passes (issue 19) through the fake counter backend: passes run until the
// backend has every one it needs, each from the timing passes' inputs; launch__* metrics come from
// the launch; every way of getting no counters leaves the launch replayed and timed and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "base/hash.h"
#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/fake_clock_api.h"
#include "fakes/fake_counter_backend.h"
#include "fakes/replay_rig.h"
#include "replay/controller.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::host::FaultPoint;
using device::host::Kernel;
using device::host::KernelContext;
using gpuprof::testing::FakeClockApi;
using gpuprof::testing::FakeCounterBackend;
using gpuprof::testing::ReplayRig;

// x[i] = x[i] * 3 + 1, logging the hash of its input and the pass it ran in.
struct InPlace {
  std::mutex mu;
  std::vector<int> passes;
  std::vector<std::uint64_t> inputs;
  Kernel Make(DevicePtr buffer, std::size_t count) {
    return Kernel{"in_place", [this, buffer, count](const KernelContext& context) {
                    auto* x = reinterpret_cast<std::uint32_t*>(buffer);
                    {
                      std::lock_guard<std::mutex> lock(mu);
                      passes.push_back(context.pass);
                      inputs.push_back(base::HashBytes(x, count * sizeof(std::uint32_t)));
                    }
                    for (std::size_t i = 0; i < count; ++i) x[i] = x[i] * 3 + 1;
                  }};
  }
};

class ControllerCountersTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kCount = 4096;

  void SetUp() override {
    backend_ = std::make_shared<FakeCounterBackend>();
    backend_->metrics["dram__bytes_read.sum"] = {"byte", 2, 1.5e9};
    backend_->metrics["smsp__inst_executed.sum"] = {"inst", 1, 4096};
  }

  std::uint32_t* Words() { return reinterpret_cast<std::uint32_t*>(buffer_); }

  Controller& Configure(std::vector<std::string> metrics, int passes = 2, bool with_backend = true) {
    ReplayOptions options;
    options.passes = passes;
    options.selector.count = count_;
    options.chunk_size = 4096;
    options.metrics = std::move(metrics);
    options.clock_control = clock_control_;
    Controller& controller = rig_.Configure(options);
    if (with_backend) controller.SetCounterBackend(backend_);
    // Allocated once recording is on, so the snapshot tracks it.
    auto ptr = rig_.platform().Malloc(0, kCount * sizeof(std::uint32_t));
    EXPECT_TRUE(ptr.ok());
    buffer_ = ptr.ok() ? *ptr : 0;
    for (std::size_t i = 0; i < kCount; ++i) Words()[i] = static_cast<std::uint32_t>(i);
    return controller;
  }

  void Launch(const Kernel& kernel) {
    auto& platform = rig_.platform();
    ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), kernel).ok());
    ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  }

  // The buffer holds exactly one application of the kernel to its first contents.
  void ExpectRanOnce() {
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(Words()[i], static_cast<std::uint32_t>(i) * 3 + 1) << "word " << i;
    }
  }

  ReplayRig rig_;
  std::shared_ptr<FakeCounterBackend> backend_;
  ClockControl clock_control_ = ClockControl::kNone;
  std::uint64_t count_ = 0;  // the selector's count (0: every launch)
  DevicePtr buffer_ = 0;
};

TEST_F(ControllerCountersTest, CounterPassesFollowTheTimingPassesOnIdenticalInputs) {
  Configure({"dram__bytes_read.sum", "smsp__inst_executed.sum"});
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  // 2 timing passes, then 2 + 1 counter passes.
  EXPECT_EQ(kernel.passes, (std::vector<int>{1, 2, 3, 4, 5}));
  for (std::uint64_t input : kernel.inputs) EXPECT_EQ(input, kernel.inputs.front()) << "every pass's input";
  ExpectRanOnce();
  EXPECT_EQ(backend_->begin_passes, 3);
  EXPECT_EQ(backend_->end_passes, 3);
  EXPECT_EQ(backend_->finishes, 1);

  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  const ReplayRecord& r = records[0];
  EXPECT_TRUE(r.replayed);
  EXPECT_TRUE(r.deterministic);
  EXPECT_EQ(r.passes.size(), 2u) << "counter passes are not timing passes";
  EXPECT_EQ(r.counter_passes, 3);
  EXPECT_TRUE(r.counter_status.empty()) << r.counter_status;
  ASSERT_EQ(r.metrics.size(), 2u);
  EXPECT_EQ(r.metrics[0].name, "dram__bytes_read.sum");
  EXPECT_EQ(r.metrics[0].unit, "byte");
  EXPECT_DOUBLE_EQ(r.metrics[0].value, 1.5e9);
  EXPECT_EQ(r.metrics[0].passes, 2);
  EXPECT_EQ(r.metrics[1].name, "smsp__inst_executed.sum");
  EXPECT_EQ(r.metrics[1].passes, 1);
  EXPECT_NE(r.passes.back().output_hash, 0u) << "the last timing pass's output is still hashed";
  EXPECT_EQ(r.clock_control, ClockControl::kNone);
  EXPECT_FALSE(r.caches_flushed) << "the host executor flushes no cache";
}

TEST_F(ControllerCountersTest, LaunchMetricsComeFromTheLaunchWithoutACounterPass) {
  Configure({"launch__grid_size", "launch__block_size"});
  InPlace kernel;
  Kernel k = kernel.Make(buffer_, kCount);
  device::LaunchShape shape;
  shape.grid[0] = 64;
  shape.grid[1] = 2;
  shape.grid[2] = 1;
  shape.block[0] = 128;
  shape.block[1] = 1;
  shape.block[2] = 1;
  k.shape = shape;
  Launch(k);
  EXPECT_EQ(kernel.passes, (std::vector<int>{1, 2})) << "no counter pass for launch metrics";
  EXPECT_EQ(backend_->begins, 0);
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(records[0].metrics.size(), 2u) << records[0].counter_status;
  EXPECT_EQ(records[0].metrics[0].name, "launch__grid_size");
  EXPECT_DOUBLE_EQ(records[0].metrics[0].value, 128);
  EXPECT_EQ(records[0].metrics[0].passes, 0);
  EXPECT_DOUBLE_EQ(records[0].metrics[1].value, 128);
  EXPECT_EQ(records[0].counter_passes, 0);
  ExpectRanOnce();
}

TEST_F(ControllerCountersTest, WithoutABackendTheLaunchIsTimedAndSaysWhyOnce) {
  Configure({"dram__bytes_read.sum"}, 2, /*with_backend=*/false);
  base::ScopedLogCapture warnings;
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  Launch(kernel.Make(buffer_, kCount));
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 2u);
  for (const ReplayRecord& r : records) {
    EXPECT_TRUE(r.replayed);
    EXPECT_EQ(r.passes.size(), 2u);
    EXPECT_TRUE(r.metrics.empty());
    EXPECT_NE(r.counter_status.find("no counter backend"), std::string::npos) << r.counter_status;
  }
  EXPECT_EQ(warnings.Count("no hardware counters"), 1) << "one warning per reason";
}

TEST_F(ControllerCountersTest, ABackendErrorNamesItsFixAndRunsNoCounterPass) {
  Configure({"dram__bytes_read.sum"});
  backend_->begin_error = FailedPreconditionError(
      "GPU performance counters are restricted to admin users (NVreg_RestrictProfilingToAdminUsers)");
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  EXPECT_EQ(kernel.passes, (std::vector<int>{1, 2}));
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_EQ(records[0].counter_passes, 0);
  EXPECT_NE(records[0].counter_status.find("NVreg_RestrictProfilingToAdminUsers"), std::string::npos);
  ExpectRanOnce();
}

TEST_F(ControllerCountersTest, AnUnknownMetricIsTheBackendsMessage) {
  Configure({"dram__bytes_raed.sum"});
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_NE(records[0].counter_status.find("unknown metric dram__bytes_raed.sum"), std::string::npos)
      << records[0].counter_status;
}

TEST_F(ControllerCountersTest, APlanAboveTheCapIsRefusedWithTheCount) {
  backend_->metrics["big.sum"] = {"", 200, 1};
  Configure({"big.sum"});
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records[0].counter_status.find("need 200 counter passes, more than the 128 allowed"),
            std::string::npos)
      << records[0].counter_status;
  EXPECT_EQ(backend_->begins, 0);
}

TEST_F(ControllerCountersTest, ABackendThatKeepsAskingIsStoppedPastItsPlan) {
  backend_->extra_passes = 50;
  Configure({"smsp__inst_executed.sum"});
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_EQ(records[0].counter_passes, 3) << "plan 1 + 2 of slack";
  EXPECT_NE(records[0].counter_status.find("still wanted passes after 3 (planned 1)"), std::string::npos)
      << records[0].counter_status;
  EXPECT_TRUE(records[0].metrics.empty());
  ExpectRanOnce();
}

TEST_F(ControllerCountersTest, ARestoreThatFailsBeforeACounterPassStopsTheReplay) {
  Configure({"smsp__inst_executed.sum"});
  InPlace kernel;
  // The restore before timing pass 2 succeeds; every restore after it fails (the full-restore
  // fallback included), so the one before the counter pass cannot repair.
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 10, 1);
  Launch(kernel.Make(buffer_, kCount));
  auto records = rig_.controller()->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].replayed);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kRestoreFailed) << records[0].decline_detail;
  EXPECT_EQ(backend_->begin_passes, 0);
}

// --clock-control base (C3) through a fake NVML: the clocks are locked for every pass, timing and
// counter, and free again when the launch returns; a device that cannot lock is asked once.
// A kernel that notes, at each pass, the SM clock the fake NVML has locked (0: free).
Kernel ClockWatcher(FakeClockApi& nvml, std::vector<std::uint32_t>& seen) {
  return Kernel{"clock_watcher", [&nvml, &seen](const KernelContext&) { seen.push_back(nvml.locked_sm); }};
}

TEST_F(ControllerCountersTest, ClockControlBaseLocksEveryPassAndRestoresBeforeTheLaunchReturns) {
  clock_control_ = ClockControl::kBase;
  Controller& controller = Configure({"dram__bytes_read.sum"});
  auto nvml = std::make_shared<FakeClockApi>();
  controller.SetClockApi(nvml);
  std::vector<std::uint32_t> seen;
  Launch(ClockWatcher(*nvml, seen));
  // 2 timing passes, then the 2 counter passes dram__bytes_read.sum needs: all at the base SM clock.
  EXPECT_EQ(seen, (std::vector<std::uint32_t>(4, nvml->base_sm)));
  EXPECT_EQ(nvml->locked_sm, 0u) << "the SM clock is free again when the launch returns";
  EXPECT_EQ(nvml->locked_memory, 0u);
  auto records = controller.records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].clock_control, ClockControl::kBase);
  EXPECT_EQ(records[0].metrics.size(), 1u);
}

TEST_F(ControllerCountersTest, ClockControlNoneNeverCallsNvml) {
  Controller& controller = Configure({});
  auto nvml = std::make_shared<FakeClockApi>();
  controller.SetClockApi(nvml);
  std::vector<std::uint32_t> seen;
  Launch(ClockWatcher(*nvml, seen));
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{0, 0}));
  EXPECT_TRUE(nvml->calls.empty());
  ASSERT_EQ(controller.records().size(), 1u);
  EXPECT_EQ(controller.records()[0].clock_control, ClockControl::kNone);
}

TEST_F(ControllerCountersTest, ClockControlBaseNotPermittedWarnsOnceAndTheLaunchesRunAsTheyAre) {
  clock_control_ = ClockControl::kBase;
  Controller& controller = Configure({});
  auto nvml = std::make_shared<FakeClockApi>();
  nvml->sm_result = {ClockCallCode::kNoPermission, "Insufficient Permissions"};
  controller.SetClockApi(nvml);
  base::ScopedLogCapture warnings;
  std::vector<std::uint32_t> seen;
  Launch(ClockWatcher(*nvml, seen));
  Launch(ClockWatcher(*nvml, seen));
  EXPECT_EQ(seen, (std::vector<std::uint32_t>(4, 0))) << "both launches replayed at the clocks as they are";
  EXPECT_EQ(std::count(nvml->calls.begin(), nvml->calls.end(), "base 0"), 1) << "NVML is asked once";
  EXPECT_EQ(warnings.Count("cannot lock the SM clock"), 1);
  EXPECT_EQ(warnings.Count("root"), 1) << "the warning names the fix";
  auto records = controller.records();
  ASSERT_EQ(records.size(), 2u);
  for (const ReplayRecord& r : records) {
    EXPECT_TRUE(r.replayed);
    EXPECT_EQ(r.clock_control, ClockControl::kNone) << "the record says the policy in force";
  }
}

TEST_F(ControllerCountersTest, ClockControlBaseWithoutNvmlWarnsOnce) {
  clock_control_ = ClockControl::kBase;
  Configure({});
  base::ScopedLogCapture warnings;
  std::vector<std::uint32_t> seen;
  FakeClockApi unused;
  Launch(ClockWatcher(unused, seen));
  Launch(ClockWatcher(unused, seen));
  EXPECT_EQ(warnings.Count("NVML is not available"), 1);
  ASSERT_EQ(rig_.controller()->records().size(), 2u);
  EXPECT_EQ(rig_.controller()->records()[1].clock_control, ClockControl::kNone);
}

// What the backend keeps between launches (the CUDA one: enabled profilers) goes when no launch
// will be collected: after the selector's last one, and when replay is reconfigured.
TEST_F(ControllerCountersTest, TheBackendIsToldToIdleAfterTheSelectorsLastLaunch) {
  count_ = 2;
  Configure({"dram__bytes_read.sum"});
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  EXPECT_EQ(backend_->idles, 0) << "one more launch is still to be collected";
  Launch(kernel.Make(buffer_, kCount));
  EXPECT_EQ(backend_->idles, 1);
  EXPECT_EQ(backend_->finishes, 2);
}

TEST_F(ControllerCountersTest, ReconfiguringTellsTheBackendToIdle) {
  Controller& controller = Configure({"dram__bytes_read.sum"});
  InPlace kernel;
  Launch(kernel.Make(buffer_, kCount));
  EXPECT_EQ(backend_->idles, 0) << "no count: every launch may still come";
  ReplayOptions paused = controller.options();
  paused.passes = 1;
  ASSERT_TRUE(controller.Reconfigure(paused).ok());
  EXPECT_EQ(backend_->idles, 1);
}

}  // namespace
}  // namespace gpuprof::replay
