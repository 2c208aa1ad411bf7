// Every declared setting (base/settings.h) walked from the command line to the component that
// uses it and back out of the DB: a non-default value given on the command line (or, for a setting
// without an option, in its variable) reaches the application's environment as the setting's
// variable, is parsed by session/config into the typed field the components read, reaches the
// replay engine's options where it is a replay setting, and is recorded in META_DATA's config.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "base/settings.h"
#include "cli/cli11.h"
#include "cli/setting_options.h"
#include "replay/metric_catalog.h"
#include "session/config.h"
#include "session/replay_settings.h"
#include "session/session.h"
#include "unit/session/session_test_util.h"

namespace gpuprof::cli {
namespace {

using base::SettingCommand;
using base::SettingId;
using base::SettingSpec;
using base::SettingType;
using session::testing::TempDir;

// A valid value of `spec` other than its default, as canonical text.
std::string OtherValue(const SettingSpec& spec, const TempDir& dir) {
  switch (spec.type) {
    case SettingType::kBool: return spec.default_value == "1" ? "0" : "1";
    case SettingType::kInt: {
      const std::int64_t base = spec.default_value.empty() ? spec.min : base::SettingInt(spec.default_value);
      return std::to_string(base + 2 <= spec.max ? base + 2 : spec.min);
    }
    case SettingType::kChoice:
      for (std::string_view choice : base::SettingChoices(spec)) {
        if (choice != spec.default_value) return std::string(choice);
      }
      break;
    case SettingType::kList:
      if (spec.id == SettingId::kReplaySection) return "Occupancy,SpeedOfLight";
      return "runtime,nvtx";
    case SettingType::kString:
      if (spec.id == SettingId::kOutputDir) return dir / "walk_out";
      if (spec.id == SettingId::kResultFile) return dir / "results";
      if (spec.id == SettingId::kReplayKernel) return "regex:walk.*";
      if (spec.id == SettingId::kReplayMetrics) return "dram__bytes_read.sum,walk__er.sum";
      return "walker";
  }
  ADD_FAILURE() << spec.json_key << ": no other value";
  return "";
}

// The command-line words that set `value` for `spec` (a flag's positive or negative form).
std::vector<std::string> Words(const SettingSpec& spec, const std::string& value) {
  std::vector<std::string> names;
  for (std::string_view name : base::SettingListWords(spec.cli)) names.emplace_back(name);
  if (spec.type == SettingType::kBool) {
    for (const std::string& name : names) {
      const bool negative = name.front() == '!';
      if (negative == (value == "0")) return {negative ? name.substr(1) : name};
    }
    ADD_FAILURE() << spec.cli << " has no form that sets " << value;
    return {};
  }
  return {names.back(), value};
}

std::string CommandName(SettingCommand command) {
  return command == base::kRunCommand ? "run" : command == base::kReplayCommand ? "replay" : "demo";
}

// The setting as the config JSON shows it.
std::string JsonValue(const SettingSpec& spec, const std::string& canonical) {
  if (spec.type == SettingType::kBool) return canonical == "1" ? "true" : "false";
  if (spec.type == SettingType::kInt) return canonical;
  return base::JsonQuote(canonical);
}

// Parses `args` (argv[0] included) with `app`; CLI11's errors fail the test.
void Parse(CLI::App& app, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  EXPECT_NO_THROW(app.parse(static_cast<int>(argv.size()), argv.data())) << args.back();
}

// The application's environment a command's options make.
std::map<std::string, std::string> EnvironmentOf(const SettingOptions& options) {
  std::map<std::string, std::string> env;
  for (auto& [name, text] : options.Environment()) env[name] = text;
  return env;
}

TEST(SettingWalkTest, EveryOptionReachesTheApplicationAsItsVariableAndTheSessionParsesItBack) {
  TempDir dir;
  int walked = 0;
  for (const SettingSpec& spec : base::Settings()) {
    for (SettingCommand command : {base::kRunCommand, base::kReplayCommand, base::kDemoCommand}) {
      if (spec.cli.empty() || (spec.commands & command) == 0) continue;
      const std::string value = OtherValue(spec, dir);
      CLI::App app{"walk"};
      CLI::App* sub = app.add_subcommand(CommandName(command));
      SettingOptions options(*sub, command);
      std::vector<std::string> args = {"gpuprof", CommandName(command)};
      for (std::string& word : Words(spec, value)) args.push_back(std::move(word));
      Parse(app, args);
      EXPECT_TRUE(options.given(spec.id)) << spec.cli;
      EXPECT_EQ(options.value(spec.id), value) << spec.cli;

      // The environment the command hands the application, as the session reads it.
      std::map<std::string, std::string> env = EnvironmentOf(options);
      ASSERT_EQ(env.count(std::string(spec.env)), 1u) << spec.cli << " is not handed on as " << spec.env;
      EXPECT_EQ(env[std::string(spec.env)], value) << spec.env;
      StatusOr<session::SessionConfig> config =
          session::ConfigFromEnvironment([&](const char* name) -> const char* {
            auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
          });
      ASSERT_TRUE(config.ok()) << CommandName(command) << " " << spec.cli << ": "
                               << config.status().ToString();
      EXPECT_EQ(session::SettingText(*config, spec.id), value) << spec.json_key;
      ++walked;
    }
  }
  EXPECT_GE(walked, 20) << "every option of run, replay and demo";
}

TEST(SettingWalkTest, OptionsNotGivenHandOnTheDeclaredDefaultExceptInheritedOnes) {
  CLI::App app{"walk"};
  CLI::App* sub = app.add_subcommand("replay");
  SettingOptions options(*sub, base::kReplayCommand);
  Parse(app, {"gpuprof", "replay"});
  std::map<std::string, std::string> env = EnvironmentOf(options);
  EXPECT_EQ(env["GPUPROF_REPLAY_PASSES"], "5");
  EXPECT_EQ(env["GPUPROF_REPLAY_CACHE_CONTROL"], "all");
  EXPECT_EQ(env["GPUPROF_REPLAY_DEVICE_RESERVE_MIB"], "2048");
  EXPECT_EQ(env["GPUPROF_FOLLOW_CHILDREN"], "0") << "the command line decides, not an inherited variable";

  CLI::App run_app{"walk"};
  CLI::App* run = run_app.add_subcommand("run");
  SettingOptions run_options(*run, base::kRunCommand);
  Parse(run_app, {"gpuprof", "run"});
  EXPECT_EQ(EnvironmentOf(run_options).count("GPUPROF_CUDA_TRACE"), 0u)
      << "cuda_trace is inherited: gpuprof's own variable passes through";
  EXPECT_EQ(EnvironmentOf(run_options)["GPUPROF_TORCH_RECORD_SHAPES"], "1");
}

TEST(SettingWalkTest, EverySettingReachesItsComponentAndTheDb) {
  TempDir dir;
  // Every setting with a variable, at a value other than its default, at once.
  std::map<std::string, std::string> env;
  std::map<SettingId, std::string> expected;
  for (const SettingSpec& spec : base::Settings()) {
    if (spec.env.empty()) continue;
    // The log level stays as the test runs it (it is global to the process).
    if (spec.id == SettingId::kLogLevel) continue;
    expected[spec.id] = OtherValue(spec, dir);
    env[std::string(spec.env)] = expected[spec.id];
  }
  StatusOr<session::SessionConfig> config =
      session::ConfigFromEnvironment([&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      });
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  for (const auto& [id, value] : expected) {
    EXPECT_EQ(session::SettingText(*config, id), value) << base::Spec(id).env;
  }

  // The replay engine's options, as the CUPTI device collector makes them.
  const replay::ReplayOptions replay = session::ReplayOptionsFrom(config->replay);
  EXPECT_EQ(replay.passes, base::SettingInt(expected[SettingId::kReplayPasses]));
  EXPECT_EQ(replay.selector.name, expected[SettingId::kReplayKernel]);
  EXPECT_EQ(replay.selector.skip,
            static_cast<std::uint64_t>(base::SettingInt(expected[SettingId::kReplaySkip])));
  EXPECT_EQ(replay.selector.count,
            static_cast<std::uint64_t>(base::SettingInt(expected[SettingId::kReplayCount])));
  EXPECT_EQ(replay::RestoreModeName(replay.restore), expected[SettingId::kReplayRestore]);
  EXPECT_EQ(replay::SnapshotStorageName(replay.storage), expected[SettingId::kReplayStorage]);
  EXPECT_EQ(replay.strict, expected[SettingId::kReplayStrict] == "1");
  EXPECT_EQ(replay.replay_printf_kernels, expected[SettingId::kReplayPrintfKernels] == "1");
  EXPECT_EQ(replay.replay_malloc_kernels, expected[SettingId::kReplayMallocKernels] == "1");
  EXPECT_EQ(replay.replay_with_live_arrays, expected[SettingId::kReplayWithLiveArrays] == "1");
  EXPECT_EQ(config->replay.flush_l2, expected[SettingId::kReplayCacheControl] == "all");
  EXPECT_EQ(replay::ClockControlName(replay.clock_control), expected[SettingId::kReplayClockControl]);
  EXPECT_EQ(config->replay.counter_range, expected[SettingId::kReplayCounterRange]);  // the counter backend's
  EXPECT_EQ(replay::GraphReplayName(replay.graph_replay), expected[SettingId::kReplayGraph]);
  // Range replay (issue 40): the mode, the delimiter (nvtx: the first choice after the default) with
  // its name, and the caps.
  EXPECT_TRUE(replay.range_replay) << expected[SettingId::kReplayMode];
  EXPECT_EQ(replay::RangeDelimiterName(replay.range_delimiter), expected[SettingId::kReplayRange]);
  EXPECT_EQ(replay.range_nvtx_name, expected[SettingId::kReplayNvtxInclude]);
  EXPECT_EQ(replay.max_range_operations,
            static_cast<std::uint64_t>(base::SettingInt(expected[SettingId::kReplayMaxRangeOperations])));
  EXPECT_EQ(replay.max_range_host_bytes,
            static_cast<std::uint64_t>(base::SettingInt(expected[SettingId::kReplayMaxRangeHostMib])) << 20);
  EXPECT_TRUE(session::CheckRangeSettings(config->replay).ok())
      << "range mode, nvtx, a name: they go together";
  // The metrics: the set's sections, then --section's, then --metrics, each once (metric_catalog.h).
  StatusOr<std::vector<std::string>> metrics =
      replay::ExpandMetricRequest(expected[SettingId::kReplayMetrics], expected[SettingId::kReplaySection],
                                  expected[SettingId::kReplaySet]);
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  EXPECT_EQ(replay.metrics, *metrics);
  EXPECT_EQ(replay.metrics.back(), "walk__er.sum");
  EXPECT_EQ(config->replay.device_reserve_bytes,
            static_cast<std::uint64_t>(base::SettingInt(expected[SettingId::kReplayDeviceReserveMib])) << 20);

  // And back out of the DB: META_DATA's gpuprof_config holds every setting in force.
  config->started_by = "walker";
  StatusOr<std::unique_ptr<session::Session>> started = session::Session::Start(*config, {});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  ASSERT_TRUE((*started)->Stop().ok());
  const std::vector<std::string> dbs = session::testing::FinalDbs(expected[SettingId::kOutputDir]);
  ASSERT_EQ(dbs.size(), 1u);
  const std::vector<std::string> stored =
      session::testing::Query(dbs.front(), "SELECT value FROM META_DATA WHERE name = 'gpuprof_config'");
  ASSERT_EQ(stored.size(), 1u);
  for (const SettingSpec& spec : base::Settings()) {
    if (spec.json_key.empty()) continue;
    const std::string value =
        spec.id == SettingId::kStartedBy ? "walker" : session::SettingText(*config, spec.id);
    EXPECT_THAT(stored.front(),
                ::testing::HasSubstr("\"" + std::string(spec.json_key) + "\": " + JsonValue(spec, value)))
        << spec.json_key;
  }
}

// The setting a range setting needs beside it (base::CheckRangeSettings): --range nvtx, the NVTX
// range's name.
std::vector<session::NamedSetting> WithCompanions(const SettingSpec& spec, const std::string& value) {
  std::vector<session::NamedSetting> named = {{spec.json_key, value}};
  if (spec.id == SettingId::kReplayRange && value == "nvtx")
    named.push_back({"replay_nvtx_include", "walker"});
  return named;
}

// The program's route (gpuprof.KernelReplay, gpuprof_configure_replay_settings_v1): every replay
// setting named by its key reaches the session's replay settings as the table parses it, except the
// three read only when the process starts, which are refused saying so.
TEST(SettingWalkTest, EveryReplaySettingAProgramNamesReachesTheSessionsReplaySettings) {
  TempDir dir;
  int walked = 0;
  for (const SettingSpec& spec : base::Settings()) {
    if (spec.json_key.substr(0, 7) != "replay_") continue;
    const std::string value = OtherValue(spec, dir);
    const std::vector<session::NamedSetting> named = WithCompanions(spec, value);
    StatusOr<session::ReplaySettings> settings =
        session::ProgramReplaySettings(session::SessionConfig(), named);
    if (spec.id == SettingId::kReplayFromScript || spec.id == SettingId::kReplayDeviceReserveMib) {
      ASSERT_FALSE(settings.ok()) << spec.json_key;
      EXPECT_THAT(settings.status().message(), ::testing::HasSubstr("fixed when the process starts"));
      continue;
    }
    ASSERT_TRUE(settings.ok()) << spec.json_key << ": " << settings.status().ToString();
    session::SessionConfig config;
    config.replay = *settings;
    EXPECT_EQ(session::SettingText(config, spec.id), value) << spec.json_key;
    ++walked;
  }
  EXPECT_GE(walked, 22) << "every replay setting a program may set";
}

}  // namespace
}  // namespace gpuprof::cli
