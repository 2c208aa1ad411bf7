#include "session/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace gpuprof::session {
namespace {

using ::testing::HasSubstr;

EnvLookup Env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(SessionConfigTest, DefaultsWhenNothingIsSet) {
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->output_dir, "./gpuprof_output");
  EXPECT_EQ(config->worker_name, "");
  EXPECT_EQ(config->rank, -1);
  EXPECT_FALSE(config->follow_children);
  EXPECT_EQ(config->result_file, "");
  EXPECT_FALSE(config->log_level.has_value());
  EXPECT_EQ(config->flush_interval.count(), 200);
  EXPECT_TRUE(config->device);
  EXPECT_TRUE(ValidateConfig(*config).ok());
}

TEST(SessionConfigTest, ReadsEveryVariableTheCliSets) {
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"GPUPROF_OUTPUT_DIR", "/tmp/out"},
                                                              {"GPUPROF_WORKER_NAME", "trainer"},
                                                              {"GPUPROF_RANK", "3"},
                                                              {"GPUPROF_FOLLOW_CHILDREN", "1"},
                                                              {"GPUPROF_RESULT_FILE", "/tmp/result"},
                                                              {"GPUPROF_LOG_LEVEL", "info"},
                                                              {"GPUPROF_FLUSH_INTERVAL_MS", "50"},
                                                              {"GPUPROF_DEVICE", "0"},
                                                              {"GPUPROF_ROOT_PID", "1234"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->output_dir, "/tmp/out");
  EXPECT_EQ(config->worker_name, "trainer");
  EXPECT_EQ(config->rank, 3);
  EXPECT_TRUE(config->follow_children);
  EXPECT_EQ(config->result_file, "/tmp/result");
  EXPECT_EQ(config->log_level, base::LogLevel::kInfo);
  EXPECT_EQ(config->flush_interval.count(), 50);
  EXPECT_FALSE(config->device);
  EXPECT_EQ(config->root_pid, 1234u);
}

TEST(SessionConfigTest, EmptyVariablesCountAsUnset) {
  StatusOr<SessionConfig> config =
      ConfigFromEnvironment(Env({{"GPUPROF_OUTPUT_DIR", ""}, {"GPUPROF_RANK", ""}, {"GPUPROF_CONFIG", ""}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->output_dir, "./gpuprof_output");
  EXPECT_EQ(config->rank, -1);
}

TEST(SessionConfigTest, RankFallsBackToTheLaunchersRank) {
  EXPECT_EQ(ConfigFromEnvironment(Env({{"RANK", "5"}}))->rank, 5);
  EXPECT_EQ(ConfigFromEnvironment(Env({{"RANK", "5"}, {"GPUPROF_RANK", "2"}}))->rank, 2);
  // RANK is the launcher's variable: text that is not a rank is ignored, not an error.
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"RANK", "worker-a"}}));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->rank, -1);
}

TEST(SessionConfigTest, DeviceIdFromItsVariableElseTheLaunchersLocalRankElseJson) {
  EXPECT_EQ(ConfigFromEnvironment(Env({}))->device_id, -1);
  EXPECT_EQ(ConfigFromEnvironment(Env({{"LOCAL_RANK", "3"}}))->device_id, 3);
  EXPECT_EQ(ConfigFromEnvironment(Env({{"LOCAL_RANK", "3"}, {"GPUPROF_DEVICE_ID", "1"}}))->device_id, 1);
  EXPECT_EQ(ConfigFromEnvironment(Env({{"LOCAL_RANK", "gpu3"}}))->device_id, -1)
      << "the launcher's text is ignored";
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"LOCAL_RANK", "3"}}));
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(ApplyJsonConfig("{\"device_id\": 6}", "gpuprof_start", *config).ok());
  EXPECT_EQ(config->device_id, 6);
  Status bad = ApplyJsonConfig("{\"device_id\": -4}", "gpuprof_start", *config);
  EXPECT_THAT(bad.message(), HasSubstr("the device id must be an integer from -1"));
}

TEST(SessionConfigTest, WorldSizeFromItsVariableElseTheLaunchersElseJson) {
  EXPECT_EQ(ConfigFromEnvironment(Env({}))->world_size, -1);
  EXPECT_EQ(ConfigFromEnvironment(Env({{"WORLD_SIZE", "8"}}))->world_size, 8);
  EXPECT_EQ(ConfigFromEnvironment(Env({{"WORLD_SIZE", "8"}, {"GPUPROF_WORLD_SIZE", "2"}}))->world_size, 2);
  StatusOr<SessionConfig> zero = ConfigFromEnvironment(Env({{"GPUPROF_WORLD_SIZE", "0"}}));
  ASSERT_TRUE(zero.ok());
  EXPECT_THAT(ValidateConfig(*zero).message(), HasSubstr("world size 0 must be -1 (unknown) or at least 1"));
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"WORLD_SIZE", "8"}}));
  ASSERT_TRUE(config.ok());
  ASSERT_TRUE(ApplyJsonConfig("{\"world_size\": 4}", "gpuprof_start", *config).ok());
  EXPECT_EQ(config->world_size, 4);
}

TEST(SessionConfigTest, CudaTraceIsACommaListFromTheVariableOrJson) {
  using CudaTrace = SessionConfig::CudaTrace;
  EXPECT_EQ(ConfigFromEnvironment(Env({}))->cuda_trace, (CudaTrace{false, false, true, true}));
  EXPECT_EQ(CudaTraceText(ConfigFromEnvironment(Env({}))->cuda_trace), "launches,nvtx");
  EXPECT_EQ(ConfigFromEnvironment(Env({{"GPUPROF_CUDA_TRACE", "nvtx,runtime"}}))->cuda_trace,
            (CudaTrace{true, false, true, false}));
  EXPECT_EQ(ConfigFromEnvironment(Env({{"GPUPROF_CUDA_TRACE", "none"}}))->cuda_trace,
            (CudaTrace{false, false, false, false}));
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"GPUPROF_CUDA_TRACE", "driver"}}));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->cuda_trace, (CudaTrace{false, true, false, false}));
  ASSERT_TRUE(ApplyJsonConfig("{\"cuda_trace\": \"runtime,driver\"}", "gpuprof_start", *config).ok());
  EXPECT_EQ(config->cuda_trace, (CudaTrace{true, true, false, false}));
  EXPECT_THAT(config->ToJson(), HasSubstr("\"cuda_trace\": \"runtime,driver\""));
  EXPECT_EQ(CudaTraceText(CudaTrace{false, false, false, false}), "none");

  for (const char* bad : {"runtime,,nvtx", "kernel", "nvtx,nvtx", "", "none,runtime", "Runtime"}) {
    StatusOr<SessionConfig::CudaTrace> parsed = ParseCudaTrace(bad, "GPUPROF_CUDA_TRACE");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("GPUPROF_CUDA_TRACE=")) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("comma list of runtime, driver, launches, nvtx")) << bad;
  }
  EXPECT_THAT(ParseCudaTrace("nvtx,nvtx", "x").status().message(), HasSubstr("given twice"));
  EXPECT_THAT(ParseCudaTrace("kernel", "x").status().message(), HasSubstr("unknown entry \"kernel\""));
  EXPECT_FALSE(ApplyJsonConfig("{\"cuda_trace\": 3}", "gpuprof_start", *config).ok());
}

TEST(SessionConfigTest, CudaTraceLaunchesStandsInForRuntimeAndDriverNotBesideThem) {
  using CudaTrace = SessionConfig::CudaTrace;
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"GPUPROF_CUDA_TRACE", "launches,nvtx"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->cuda_trace, (CudaTrace{false, false, true, true}));
  EXPECT_EQ(CudaTraceText(config->cuda_trace), "launches,nvtx");
  ASSERT_TRUE(ApplyJsonConfig("{\"cuda_trace\": \"launches\"}", "gpuprof_start", *config).ok());
  EXPECT_EQ(config->cuda_trace, (CudaTrace{false, false, false, true}));
  EXPECT_THAT(config->ToJson(), HasSubstr("\"cuda_trace\": \"launches\""));
  for (const char* both : {"launches,runtime", "driver,launches", "launches,launches"}) {
    StatusOr<CudaTrace> parsed = ParseCudaTrace(both, "GPUPROF_CUDA_TRACE");
    ASSERT_FALSE(parsed.ok()) << both;
    EXPECT_THAT(parsed.status().message(), HasSubstr("GPUPROF_CUDA_TRACE=")) << both;
  }
  EXPECT_THAT(ParseCudaTrace("launches,runtime", "x").status().message(),
              HasSubstr("\"runtime\" every call of the runtime; give one of them"));
  EXPECT_THAT(ParseCudaTrace("driver,launches", "x").status().message(),
              HasSubstr("\"driver\" every call of the driver"));
}

TEST(SessionConfigTest, BadVariableNamesItAndWhatIsAccepted) {
  struct Case {
    const char* name;
    const char* value;
    const char* expected;
  };
  for (const Case& c :
       {Case{"GPUPROF_RANK", "abc", "GPUPROF_RANK=\"abc\": the rank must be an integer"},
        Case{"GPUPROF_RANK", "-2", "GPUPROF_RANK=-2: the rank must be an integer from -1"},
        Case{"GPUPROF_FOLLOW_CHILDREN", "maybe", "GPUPROF_FOLLOW_CHILDREN=\"maybe\": expected 0 or 1"},
        Case{"GPUPROF_LOG_LEVEL", "loud", "GPUPROF_LOG_LEVEL=\"loud\": expected one of debug"},
        Case{"GPUPROF_FLUSH_INTERVAL_MS", "0", "GPUPROF_FLUSH_INTERVAL_MS=0: the flush interval"},
        Case{"GPUPROF_WORKER_NAME", "a/b", "GPUPROF_WORKER_NAME=\"a/b\": a worker name is one"},
        Case{"GPUPROF_DEVICE", "gpu", "GPUPROF_DEVICE=\"gpu\": expected 0 or 1"},
        Case{"GPUPROF_DEVICE_ID", "x", "GPUPROF_DEVICE_ID=\"x\": the device id must be an integer"},
        Case{"GPUPROF_ROOT_PID", "0", "GPUPROF_ROOT_PID=0: the root pid must be an integer from 1"}}) {
    StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{c.name, c.value}}));
    ASSERT_FALSE(config.ok()) << c.name << "=" << c.value;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr(c.expected));
  }
}

TEST(SessionConfigTest, JsonKeysOverrideTheVariablesAndOthersAreKept) {
  StatusOr<SessionConfig> config =
      ConfigFromEnvironment(Env({{"GPUPROF_OUTPUT_DIR", "/from/env"}, {"GPUPROF_RANK", "1"}}));
  ASSERT_TRUE(config.ok());
  Status applied = ApplyJsonConfig(
      R"({"output_dir": "/from/json", "rank": 7, "follow_children": true, "record_shapes": true,
          "activities": ["cpu", "cuda"], "note": "caf\u00e9 \"x\""})",
      "test json", *config);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  EXPECT_EQ(config->output_dir, "/from/json");
  EXPECT_EQ(config->rank, 7);
  EXPECT_TRUE(config->follow_children);
  // The given members first, in their order, then every other declared setting in force.
  EXPECT_THAT(
      config->ToJson(),
      ::testing::StartsWith(
          R"({"output_dir": "/from/json", "rank": 7, "follow_children": true, "record_shapes": true, )"
          R"("activities": ["cpu", "cuda"], "note": "caf\u00e9 \"x\"", )"));
  EXPECT_THAT(config->ToJson(), HasSubstr(R"("started_by": "api")"));
}

TEST(SessionConfigTest, GpuprofConfigIsBelowTheSpecificVariables) {
  StatusOr<SessionConfig> config = ConfigFromEnvironment(
      Env({{"GPUPROF_CONFIG", R"({"output_dir": "/json", "worker_name": "w", "custom": 1})"},
           {"GPUPROF_OUTPUT_DIR", "/var"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->output_dir, "/var");
  EXPECT_EQ(config->worker_name, "w");
  // The stored JSON shows the resolved value of a recognized key.
  EXPECT_THAT(config->ToJson(), HasSubstr(R"("output_dir": "/var")"));
  EXPECT_THAT(config->ToJson(), HasSubstr(R"("custom": 1)"));
}

TEST(SessionConfigTest, ToJsonListsTheResolvedSettingsWhenNoJsonWasGiven) {
  SessionConfig config;
  config.output_dir = "/out";
  config.rank = 2;
  config.started_by = "injection";
  // Every declared setting with a JSON key, in table order (base/settings.h).
  EXPECT_THAT(config.ToJson(),
              ::testing::StartsWith(R"({"output_dir": "/out", "worker_name": "", "rank": 2, )"));
  EXPECT_THAT(config.ToJson(), HasSubstr(R"("follow_children": false, )"));
  EXPECT_THAT(config.ToJson(), HasSubstr(R"("started_by": "injection", )"));
  // Round trip: the stored text is itself an acceptable configuration.
  SessionConfig again;
  ASSERT_TRUE(ApplyJsonConfig(config.ToJson(), "round trip", again).ok());
  EXPECT_EQ(again.output_dir, "/out");
  EXPECT_EQ(again.rank, 2);
  EXPECT_EQ(again.started_by, "injection");
}

// The GPUPROF_REPLAY_* variables `gpuprof replay` sets, parsed here once (cupti no longer reads
// them itself): what cupti/replay_hook_test.cc's ReplayEnvironmentTest asserted of the old reader.
TEST(SessionConfigTest, ReplayIsOffUnlessAskedAndTakesTheDeclaredDefaults) {
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({}));
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->replay.enabled) << "GPUPROF_REPLAY unset: no replay";
  EXPECT_EQ(config->replay.passes, 5) << "one default of 5 passes";
  EXPECT_TRUE(config->replay.flush_l2) << "L2 flushed before each pass by default (B7)";
  EXPECT_EQ(config->replay.restore, replay::RestoreMode::kAuto);
  EXPECT_EQ(config->replay.device_reserve_bytes, std::uint64_t{2} << 30) << "B2's default reserve: 2 GiB";
  // Selection variables alone do not turn replay on: `gpuprof replay` says so with GPUPROF_REPLAY=1.
  EXPECT_FALSE(ConfigFromEnvironment(Env({{"GPUPROF_REPLAY_PASSES", "3"}}))->replay.enabled);
  EXPECT_TRUE(ConfigFromEnvironment(Env({{"GPUPROF_REPLAY", "1"}}))->replay.enabled);
}

TEST(SessionConfigTest, ReadsWhatGpuprofReplaySets) {
  StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{"GPUPROF_REPLAY", "1"},
                                                              {"GPUPROF_REPLAY_PASSES", "4"},
                                                              {"GPUPROF_REPLAY_KERNEL", "regex:gemm"},
                                                              {"GPUPROF_REPLAY_SKIP", "2"},
                                                              {"GPUPROF_REPLAY_COUNT", "3"},
                                                              {"GPUPROF_REPLAY_CACHE_CONTROL", "none"},
                                                              {"GPUPROF_REPLAY_RESTORE", "full"},
                                                              {"GPUPROF_REPLAY_STRICT", "1"},
                                                              {"GPUPROF_REPLAY_PRINTF_KERNELS", "0"},
                                                              {"GPUPROF_REPLAY_MALLOC_KERNELS", "1"},
                                                              {"GPUPROF_REPLAY_WITH_LIVE_ARRAYS", "1"},
                                                              {"GPUPROF_REPLAY_DEVICE_RESERVE_MIB", "512"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const replay::ReplayOptions options = ReplayOptionsFrom(config->replay);
  EXPECT_EQ(options.passes, 4);
  EXPECT_EQ(options.selector.name, "regex:gemm");
  EXPECT_EQ(options.selector.skip, 2u);
  EXPECT_EQ(options.selector.count, 3u);
  EXPECT_FALSE(config->replay.flush_l2);
  EXPECT_EQ(options.restore, replay::RestoreMode::kFull);
  EXPECT_TRUE(options.strict);
  EXPECT_FALSE(options.replay_printf_kernels);
  EXPECT_TRUE(options.replay_malloc_kernels);
  EXPECT_TRUE(options.replay_with_live_arrays);
  EXPECT_EQ(config->replay.device_reserve_bytes, std::uint64_t{512} << 20);
}

// Issue 19: the set, the sections and the metrics become one metric list; C3's clock control.
TEST(SessionConfigTest, CounterSettingsBecomeTheEnginesMetricList) {
  StatusOr<SessionConfig> config =
      ConfigFromEnvironment(Env({{"GPUPROF_REPLAY_METRICS", "dram__bytes_read.sum,my__own.sum"},
                                 {"GPUPROF_REPLAY_SECTION", "LaunchStats"},
                                 {"GPUPROF_REPLAY_SET", "basic"},
                                 {"GPUPROF_REPLAY_CLOCK_CONTROL", "base"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const replay::ReplayOptions options = ReplayOptionsFrom(config->replay);
  EXPECT_EQ(options.clock_control, replay::ClockControl::kBase);
  ASSERT_FALSE(options.metrics.empty());
  EXPECT_EQ(options.metrics.front(), "sm__throughput.avg.pct_of_peak_sustained_elapsed")
      << "basic's SpeedOfLight first";
  EXPECT_EQ(options.metrics.back(), "my__own.sum");
  EXPECT_EQ(std::count(options.metrics.begin(), options.metrics.end(), "launch__grid_size"), 1)
      << "LaunchStats is in basic already";

  // The defaults collect nothing and leave the clocks alone.
  const replay::ReplayOptions defaults = ReplayOptionsFrom(ConfigFromEnvironment(Env({}))->replay);
  EXPECT_TRUE(defaults.metrics.empty());
  EXPECT_EQ(defaults.clock_control, replay::ClockControl::kNone);
  EXPECT_EQ(SettingText(*ConfigFromEnvironment(Env({})), base::SettingId::kReplaySet), "none");

  // Through the JSON configuration as well (gpuprof_start's argument).
  SessionConfig json;
  ASSERT_TRUE(ApplyJsonConfig(R"({"replay_section": "Occupancy", "replay_set": "none"})", "test", json).ok());
  EXPECT_EQ(ReplayOptionsFrom(json.replay).metrics.front(), "sm__maximum_warps_per_active_cycle_pct");
  Status bad = ApplyJsonConfig(R"({"replay_set": "huge"})", "test", json);
  EXPECT_THAT(bad.message(), HasSubstr("replay_set"));
}

// C2: device printf is replayed by default; device malloc and live CUDA arrays are declined.
TEST(SessionConfigTest, SideEffectDefaultsReplayPrintfOnly) {
  const replay::ReplayOptions options = ReplayOptionsFrom(ConfigFromEnvironment(Env({}))->replay);
  EXPECT_TRUE(options.replay_printf_kernels);
  EXPECT_FALSE(options.replay_malloc_kernels);
  EXPECT_FALSE(options.replay_with_live_arrays);
  const replay::ReplayOptions engine_defaults;
  EXPECT_EQ(engine_defaults.replay_printf_kernels, options.replay_printf_kernels);
  EXPECT_EQ(engine_defaults.replay_malloc_kernels, options.replay_malloc_kernels);
  EXPECT_EQ(engine_defaults.replay_with_live_arrays, options.replay_with_live_arrays);
}

TEST(SessionConfigTest, BadReplayValuesNameTheVariable) {
  for (const auto& [variable, value, expected] :
       {std::tuple{"GPUPROF_REPLAY_PASSES", "three", "GPUPROF_REPLAY_PASSES=\"three\""},
        std::tuple{"GPUPROF_REPLAY_PASSES", "1",
                   "GPUPROF_REPLAY_PASSES=1: the replay passes must be an integer from 2"},
        std::tuple{"GPUPROF_REPLAY_PASSES", "1001", "from 2 to 1000"},
        std::tuple{"GPUPROF_REPLAY_CACHE_CONTROL", "some", "expected one of all, none"},
        std::tuple{"GPUPROF_REPLAY_DEVICE_RESERVE_MIB", "-1", "GPUPROF_REPLAY_DEVICE_RESERVE_MIB=-1"},
        std::tuple{"GPUPROF_REPLAY_KERNEL", "regex:(", "not a valid regular expression"},
        std::tuple{"GPUPROF_REPLAY_STRICT", "yes", "expected 0 or 1"},
        std::tuple{"GPUPROF_REPLAY_SECTION", "SpeedOfDark",
                   "GPUPROF_REPLAY_SECTION=\"SpeedOfDark\": unknown entry"},
        std::tuple{"GPUPROF_REPLAY_SECTION", "speedoflight", "SpeedOfLight, ComputeWorkloadAnalysis"},
        std::tuple{"GPUPROF_REPLAY_SET", "detailed",
                   "GPUPROF_REPLAY_SET=\"detailed\": expected one of none, basic, full"},
        std::tuple{"GPUPROF_REPLAY_METRICS", "dram bytes", "GPUPROF_REPLAY_METRICS=\"dram bytes\""},
        std::tuple{"GPUPROF_REPLAY_METRICS", "dram__bytes_read.sum,", "an empty entry"},
        std::tuple{"GPUPROF_REPLAY_CLOCK_CONTROL", "max", "expected one of none, base"}}) {
    StatusOr<SessionConfig> config = ConfigFromEnvironment(Env({{variable, value}}));
    ASSERT_FALSE(config.ok()) << variable << "=" << value;
    EXPECT_THAT(config.status().message(), HasSubstr(expected)) << variable << "=" << value;
  }
}

// One boolean dialect: replay_hook.cc once read GPUPROF_REPLAY_STRICT=false as on (anything but "0").
TEST(SessionConfigTest, StrictFalseMeansOff) {
  for (const char* off : {"0", "false", "off", "FALSE"}) {
    EXPECT_FALSE(ConfigFromEnvironment(Env({{"GPUPROF_REPLAY_STRICT", off}}))->replay.strict) << off;
  }
  for (const char* on : {"1", "true", "on"}) {
    EXPECT_TRUE(ConfigFromEnvironment(Env({{"GPUPROF_REPLAY_STRICT", on}}))->replay.strict) << on;
  }
}

TEST(SessionConfigTest, DefaultsAreTheDeclaredOnes) {
  const SessionConfig config;
  for (const base::SettingSpec& spec : base::Settings()) {
    if (spec.id == base::SettingId::kLogLevel) continue;  // unset: logging keeps its own level
    EXPECT_EQ(SettingText(config, spec.id), spec.default_value) << spec.json_key << spec.env;
  }
}

TEST(SessionConfigTest, MalformedJsonSaysWhereAndWhat) {
  struct Case {
    const char* json;
    const char* expected;
  };
  for (const Case& c :
       {Case{"", "offset 0: expected a JSON object"}, Case{"[1]", "offset 0: expected a JSON object"},
        Case{R"({"a": 1,})", "offset 8: expected a string key"},
        Case{R"({"a" 1})", "offset 5: expected ':' after key \"a\""},
        Case{R"({"a": 1} x)", "offset 9: unexpected text after the object"},
        Case{R"({"a": tru})", "offset 6: expected a value"}, Case{R"({"a": "x\q"})", "bad escape \\q"},
        Case{R"({"a": "\ud800"})", "unpaired surrogate"}, Case{R"({"a": 01})", "expected ',' or '}'"},
        Case{R"({"a": 1, "a": 2})", "offset 9: duplicate key \"a\""},
        Case{R"({"a": [1, {"b": }]})", "expected a value"},
        Case{"{\"a\": \"unterminated", "unterminated string"}}) {
    SessionConfig config;
    Status status = ApplyJsonConfig(c.json, "cfg", config);
    ASSERT_FALSE(status.ok()) << c.json;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("cfg: invalid JSON at "));
    EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.json;
  }
}

TEST(SessionConfigTest, DeepNestingIsRejected) {
  std::string json = R"({"a": )" + std::string(100, '[') + std::string(100, ']') + "}";
  SessionConfig config;
  Status status = ApplyJsonConfig(json, "cfg", config);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("nesting deeper than 64 levels"));
}

TEST(SessionConfigTest, RecognizedKeyWithWrongTypeNamesKeyAndValue) {
  struct Case {
    const char* json;
    const char* expected;
  };
  for (const Case& c : {Case{R"({"rank": "3"})", R"(key "rank" (offset 1) must be an integer, got "3")"},
                        Case{R"({"rank": 1.5})", "must be an integer, got 1.5"},
                        Case{R"({"rank": -7})", "the rank must be an integer from -1"},
                        Case{R"({"output_dir": 3})", R"(key "output_dir" (offset 1) must be a string)"},
                        Case{R"({"output_dir": ""})", "must be a non-empty directory path"},
                        Case{R"({"follow_children": 1})", "must be true or false, got 1"},
                        Case{R"({"log_level": "chatty"})", "must be one of \"debug\""},
                        Case{R"({"worker_name": "../x"})", "a worker name is one directory-name component"},
                        Case{R"({"flush_interval_ms": 0})", "the flush interval must be"}}) {
    SessionConfig config;
    Status status = ApplyJsonConfig(c.json, "cfg", config);
    ASSERT_FALSE(status.ok()) << c.json;
    EXPECT_THAT(status.message(), HasSubstr(c.expected)) << c.json;
  }
}

TEST(SessionConfigTest, FailedJsonLeavesTheConfigUnchanged) {
  SessionConfig config;
  config.output_dir = "/keep";
  ASSERT_FALSE(ApplyJsonConfig(R"({"output_dir": "/changed", "rank": "bad"})", "cfg", config).ok());
  EXPECT_EQ(config.output_dir, "/keep");
  EXPECT_TRUE(config.json_members.empty());
}

TEST(SessionConfigTest, ValidateRejectsAnEmptyOutputDirectory) {
  SessionConfig config;
  config.output_dir.clear();
  Status status = ValidateConfig(config);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("output directory is empty"));
}

TEST(SessionConfigTest, JsonQuoteEscapesControlCharacters) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\x01"), R"("a\"b\\c\nd\u0001")");
}

}  // namespace
}  // namespace gpuprof::session
