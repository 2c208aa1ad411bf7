// The replay settings a program sets by name (session/replay_settings.h): parsed by the settings
// table on top of the process's own, and carried down the session's one replay path to the device
// collector, whose ReplayOptionsFrom is what the replay controller gets. Issue 40: the first C API's
// struct had no field for graph replay or the counter range, so a program could not ask for them.
#include "session/replay_settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "base/settings.h"
#include "session/session.h"
#include "unit/session/fake_device_collector.h"
#include "unit/session/session_test_util.h"

namespace gpuprof::session {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

StatusOr<ReplaySettings> Named(std::vector<NamedSetting> named,
                               const SessionConfig& process = SessionConfig()) {
  return ProgramReplaySettings(process, named);
}

// A session whose device collector is the fake that records the calls made on it.
StatusOr<std::unique_ptr<Session>> StartWithFakeDevice(const testing::TempDir& dir,
                                                       std::shared_ptr<testing::FakeDeviceState> state) {
  SessionConfig config;
  config.output_dir = dir / "out";
  config.rank = 0;
  return Session::Start(config, {.device_factory = testing::FakeFactory(std::move(state))});
}

TEST(ProgramReplaySettingsTest, GraphReplayAndCounterSettingsReachTheDeviceCollectorAndTheEnginesOptions) {
  StatusOr<ReplaySettings> settings = Named({{"replay_graph", "graph"},
                                             {"replay_counter_range", "USER"},
                                             {"replay_metrics", "dram__bytes_read.sum"},
                                             {"replay_passes", "3"},
                                             {"replay_cache_control", "none"}});
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->graph_replay, replay::GraphReplay::kGraph);
  EXPECT_EQ(settings->counter_range, "user") << "the row's canonical form";

  // Down the session's replay path, as gpuprof_configure_replay_settings_v1 sends it.
  testing::TempDir dir;
  auto state = std::make_shared<testing::FakeDeviceState>();
  StatusOr<std::unique_ptr<Session>> session = StartWithFakeDevice(dir, state);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ASSERT_TRUE((*session)->ConfigureReplay(*settings).ok());
  ASSERT_EQ(state->replays.size(), 1u);
  const ReplaySettings& reached = state->replays.front();
  EXPECT_EQ(reached.counter_range, "user") << "the counter backend's range (CuptiDeviceCollector)";
  EXPECT_FALSE(reached.flush_l2);
  const replay::ReplayOptions options = ReplayOptionsFrom(reached);  // what the controller gets
  EXPECT_EQ(options.graph_replay, replay::GraphReplay::kGraph);
  EXPECT_EQ(options.passes, 3);
  EXPECT_THAT(options.metrics, ElementsAre("dram__bytes_read.sum"));
  ASSERT_TRUE((*session)->Stop().ok());
}

TEST(ProgramReplaySettingsTest, UnnamedSettingsKeepTheProcesssOwnAndPassesOnePauses) {
  SessionConfig process;
  ASSERT_TRUE(SetSetting(process, base::SettingId::kReplayGraph, "node", "--graph-replay").ok());
  ASSERT_TRUE(SetSetting(process, base::SettingId::kReplayStorage, "pinned", "--storage").ok());
  StatusOr<ReplaySettings> settings = Named({{"replay_kernel", "regex:gemm"}}, process);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->graph_replay, replay::GraphReplay::kNode) << "gpuprof replay --graph-replay node";
  EXPECT_EQ(settings->storage, replay::SnapshotStorage::kPinnedHost);
  EXPECT_EQ(settings->kernel, "regex:gemm");

  StatusOr<ReplaySettings> paused = Named({{"replay_passes", "1"}});
  ASSERT_TRUE(paused.ok()) << paused.status().ToString();
  EXPECT_EQ(paused->passes, 1);
  EXPECT_TRUE(Named({}).ok()) << "nothing named: the process's own settings";
}

TEST(ProgramReplaySettingsTest, ABadNameOrValueGetsTheSettingsTablesMessage) {
  const auto message = [](std::vector<NamedSetting> named) {
    StatusOr<ReplaySettings> settings = Named(std::move(named));
    EXPECT_EQ(settings.status().code(), StatusCode::kInvalidArgument);
    return std::string(settings.status().message());
  };
  EXPECT_EQ(message({{"replay_grpah", "graph"}}),
            "no setting has the key \"replay_grpah\"; did you mean replay_graph?");
  EXPECT_EQ(message({{"replay_graph", "graphs"}}),
            "replay_graph=\"graphs\": expected one of off, graph, node");
  EXPECT_THAT(message({{"replay_metrics", "dram bytes"}}),
              HasSubstr("replay_metrics=\"dram bytes\": \"dram bytes\" is not a metric name"));
  EXPECT_THAT(message({{"replay_passes", "0"}}),
              HasSubstr("replay_passes=0: the replay passes must be an integer"));
  EXPECT_EQ(
      message({{"replay_device_reserve_mib", "64"}}),
      "replay_device_reserve_mib is fixed when the process starts: give `gpuprof replay --device-reserve`");
  EXPECT_THAT(message({{"replay_from_script", "1"}}), HasSubstr("fixed when the process starts"));
  EXPECT_THAT(message({{"output_dir", "/tmp"}}), HasSubstr("output_dir is not a replay setting"));
  EXPECT_THAT(message({{"replay_skip", "1"}, {"replay_skip", "2"}}), HasSubstr("replay_skip is given twice"));
}

// Issue 40 (range replay, REPLAY_SPEC.md W1): the mode, the delimiter and the caps reach the engine's
// options; --nvtx-include implies --range nvtx.
TEST(ProgramReplaySettingsTest, RangeReplaySettingsReachTheEnginesOptions) {
  StatusOr<ReplaySettings> step = Named({{"replay_mode", "range"},
                                         {"replay_range", "step"},
                                         {"replay_max_range_operations", "5000"},
                                         {"replay_max_range_host_mib", "3"}});
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  replay::ReplayOptions options = ReplayOptionsFrom(*step);
  EXPECT_TRUE(options.range_replay);
  EXPECT_EQ(options.range_delimiter, replay::RangeDelimiter::kStep);
  EXPECT_EQ(options.max_range_operations, 5000u);
  EXPECT_EQ(options.max_range_host_bytes, 3u << 20);

  StatusOr<ReplaySettings> nvtx = Named({{"replay_mode", "range"}, {"replay_nvtx_include", "train_step"}});
  ASSERT_TRUE(nvtx.ok()) << nvtx.status().ToString();
  options = ReplayOptionsFrom(*nvtx);
  EXPECT_EQ(options.range_delimiter, replay::RangeDelimiter::kNvtx) << "--nvtx-include implies --range nvtx";
  EXPECT_EQ(options.range_nvtx_name, "train_step");

  // KernelReplay(range="step") as the issue writes it: the delimiter implies range replay.
  StatusOr<ReplaySettings> implied = Named({{"replay_range", "step"}});
  ASSERT_TRUE(implied.ok()) << implied.status().ToString();
  options = ReplayOptionsFrom(*implied);
  EXPECT_TRUE(options.range_replay) << "--range step implies --replay-mode range";
  EXPECT_EQ(options.range_delimiter, replay::RangeDelimiter::kStep);
  implied = Named({{"replay_nvtx_include", "fwd"}});
  ASSERT_TRUE(implied.ok()) << implied.status().ToString();
  EXPECT_TRUE(ReplayOptionsFrom(*implied).range_replay) << "--nvtx-include implies --replay-mode range";

  options = ReplayOptionsFrom(SessionConfig().replay);
  EXPECT_FALSE(options.range_replay) << "kernel mode by default";
  EXPECT_EQ(options.range_delimiter, replay::RangeDelimiter::kProfilerApi)
      << "cudaProfilerStart/Stop, as ncu";
}

TEST(ProgramReplaySettingsTest, RangeSettingsThatDoNotGoTogetherAreRefusedNamingBoth) {
  const auto message = [](std::vector<NamedSetting> named) {
    StatusOr<ReplaySettings> settings = Named(std::move(named));
    EXPECT_EQ(settings.status().code(), StatusCode::kInvalidArgument);
    return std::string(settings.status().message());
  };
  EXPECT_EQ(message({{"replay_mode", "ranges"}}), "replay_mode=\"ranges\": expected one of kernel, range");
  EXPECT_EQ(message({{"replay_mode", "range"}, {"replay_range", "steps"}}),
            "replay_range=\"steps\": expected one of profiler, nvtx, step");
  EXPECT_THAT(
      message({{"replay_max_range_operations", "0"}}),
      HasSubstr("replay_max_range_operations=0: the replay max range operations must be an integer from 1"));
  EXPECT_EQ(
      message({{"replay_mode", "kernel"}, {"replay_range", "step"}}),
      "--range (replay_range) step delimits the ranges of range replay, but --replay-mode (replay_mode) is "
      "kernel: drop one of them");
  EXPECT_EQ(
      message({{"replay_nvtx_include", "fwd"}, {"replay_mode", "kernel"}}),
      "--nvtx-include (replay_nvtx_include) \"fwd\" delimits the ranges of range replay, but --replay-mode "
      "(replay_mode) is kernel: drop one of them");
  EXPECT_EQ(message({{"replay_mode", "range"}, {"replay_range", "step"}, {"replay_nvtx_include", "fwd"}}),
            "--nvtx-include (replay_nvtx_include) \"fwd\" delimits ranges by an NVTX range, but --range "
            "(replay_range) step delimits them by training step: give one of them");
  EXPECT_EQ(message({{"replay_mode", "range"}, {"replay_range", "nvtx"}}),
            "--range (replay_range) nvtx needs the NVTX range's name: add --nvtx-include NAME "
            "(replay_nvtx_include)");
}

// Issue 40 (--range step): gpuprof_replay_step_boundary_v1's way through the session reaches the
// device collector, which ends the step's range (CuptiDeviceCollector: CudaReplayHook::StepBoundary).
TEST(ReplayStepBoundaryTest, ReachesTheDeviceCollector) {
  testing::TempDir dir;
  auto state = std::make_shared<testing::FakeDeviceState>();
  StatusOr<std::unique_ptr<Session>> session = StartWithFakeDevice(dir, state);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  (*session)->ReplayStepBoundary();
  (*session)->ReplayStepBoundary();
  ASSERT_TRUE((*session)->Stop().ok());
  EXPECT_THAT(state->Calls(), ::testing::Contains("ReplayStepBoundary").Times(2));
}

}  // namespace
}  // namespace gpuprof::session
