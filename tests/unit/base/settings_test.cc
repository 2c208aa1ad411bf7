// The settings declaration (base/settings.h): the table's own invariants, the one boolean dialect
// and ParseSettingText's checks, canonical forms and messages.
#include "base/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/metric_name.h"

namespace gpuprof::base {
namespace {

using ::testing::HasSubstr;

TEST(SettingsTest, RowsAreUniqueAndEveryDefaultParsesAsItsOwnCanonicalForm) {
  std::set<std::string_view> keys, envs, options;
  for (const SettingSpec& spec : Settings()) {
    EXPECT_EQ(&Spec(spec.id), &spec) << "rows in SettingId order";
    if (!spec.json_key.empty()) {
      EXPECT_TRUE(keys.insert(spec.json_key).second) << spec.json_key;
    }
    if (!spec.env.empty()) {
      EXPECT_TRUE(envs.insert(spec.env).second) << spec.env;
      EXPECT_EQ(spec.env.rfind("GPUPROF_", 0), 0u) << spec.env;
    }
    EXPECT_FALSE(spec.json_key.empty() && spec.env.empty()) << "a setting nobody can set";
    EXPECT_FALSE(spec.help.empty()) << spec.json_key;
    EXPECT_EQ(spec.cli.empty(), spec.commands == kNoCommand) << spec.json_key << ": options need a command";
    if (spec.default_value.empty() && spec.type != SettingType::kString) continue;  // "unset" (root pid)
    StatusOr<std::string> parsed = ParseSettingText(spec, spec.default_value, "default");
    ASSERT_TRUE(parsed.ok()) << spec.json_key << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, spec.default_value) << spec.json_key << ": defaults are written canonically";
  }
  EXPECT_EQ(Settings().size(), static_cast<std::size_t>(SettingId::kCount));
}

TEST(SettingsTest, OneBooleanDialect) {
  for (const char* on : {"1", "true", "on", "TRUE", "On"}) EXPECT_EQ(ParseBoolText(on), true) << on;
  for (const char* off : {"0", "false", "off", "False", "OFF"}) EXPECT_EQ(ParseBoolText(off), false) << off;
  for (const char* neither : {"", "yes", "no", "2", "truee", " 1"})
    EXPECT_EQ(ParseBoolText(neither), std::nullopt) << neither;
  // The same words for every boolean setting: false is off (GPUPROF_REPLAY_STRICT=false once meant on).
  for (const SettingSpec& spec : Settings()) {
    if (spec.type != SettingType::kBool) continue;
    EXPECT_EQ(*ParseSettingText(spec, "false", "x"), "0") << spec.json_key;
    EXPECT_EQ(*ParseSettingText(spec, "on", "x"), "1") << spec.json_key;
    EXPECT_FALSE(ParseSettingText(spec, "maybe", "x").ok()) << spec.json_key;
  }
}

TEST(SettingsTest, PassesAreTwoToAThousandWithOneDefaultOfFive) {
  const SettingSpec& passes = Spec(SettingId::kReplayPasses);
  EXPECT_EQ(passes.default_value, "5");
  EXPECT_EQ(*ParseSettingText(passes, "2", "--passes"), "2");
  EXPECT_EQ(*ParseSettingText(passes, "1000", "--passes"), "1000");
  for (const char* bad : {"1", "0", "1001", "-3", "three", "5x", ""}) {
    StatusOr<std::string> parsed = ParseSettingText(passes, bad, "GPUPROF_REPLAY_PASSES");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("GPUPROF_REPLAY_PASSES=")) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("must be an integer from 2 to 1000")) << bad;
  }
}

TEST(SettingsTest, ChoicesListsAndChecksAreTheRowsOwn) {
  EXPECT_EQ(*ParseSettingText(Spec(SettingId::kLogLevel), "INFO", "x"), "info") << "choices ignore case";
  EXPECT_THAT(
      ParseSettingText(Spec(SettingId::kReplayCacheControl), "some", "--cache-control").status().message(),
      HasSubstr("--cache-control=\"some\": expected one of all, none"));
  const SettingSpec& trace = Spec(SettingId::kCudaTrace);
  EXPECT_EQ(*ParseSettingText(trace, "nvtx,runtime", "x"), "nvtx,runtime");
  EXPECT_FALSE(ParseSettingText(trace, "Runtime", "x").ok()) << "list words are exact";
  EXPECT_THAT(ParseSettingText(trace, "none,driver", "x").status().message(),
              HasSubstr("none cannot be combined"));
  EXPECT_THAT(ParseSettingText(trace, "launches,driver", "x").status().message(),
              HasSubstr("give one of them"));
  EXPECT_THAT(ParseSettingText(Spec(SettingId::kReplayKernel), "regex:(", "-k").status().message(),
              HasSubstr("not a valid regular expression"));
  EXPECT_EQ(*ParseSettingText(Spec(SettingId::kReplayKernel), "regex:^gemm", "-k"), "regex:^gemm");
  EXPECT_THAT(ParseSettingText(Spec(SettingId::kWorkerName), "a/b", "x").status().message(),
              HasSubstr("a worker name is one directory-name component"));
}

// Issue 40: one metric-name grammar (base/metric_name.h) and one message, the --metrics row's and the
// catalog's alike.
TEST(SettingsTest, MetricsRowUsesTheOneMetricGrammarAndItsMessage) {
  const SettingSpec& metrics = Spec(SettingId::kReplayMetrics);
  for (std::string_view list :
       {"dram__bytes_read.sum", "a__b,c__d.e.f", "", "dram bytes", "x__y,", "x__y..z"}) {
    EXPECT_EQ(ParseSettingText(metrics, list, "--metrics").ok(), MetricListProblem(list).empty()) << list;
  }
  EXPECT_EQ(ParseSettingText(metrics, "dram__bytes_read.sum,dram bytes", "--metrics").status().message(),
            "--metrics=\"dram__bytes_read.sum,dram bytes\": " + MetricListProblem("dram bytes"));
  EXPECT_THAT(MetricListProblem("x__y,"), HasSubstr("an empty entry; expected a comma list"));
  EXPECT_TRUE(IsMetricName("sm__maximum_warps_per_active_cycle_pct"));
  EXPECT_FALSE(IsMetricName("regex:dram__.*"));
}

TEST(SettingsTest, TheTableAsJsonNamesEveryRow) {
  const std::string json = SettingsJson();
  for (const SettingSpec& spec : Settings()) {
    if (!spec.env.empty()) {
      EXPECT_THAT(json, HasSubstr("\"env\": \"" + std::string(spec.env) + "\"")) << spec.env;
    }
  }
  EXPECT_THAT(json,
              HasSubstr(R"("json_key": "replay_passes", "env": "GPUPROF_REPLAY_PASSES", "launcher_env": "", )"
                        R"("type": "int", "min": 2, "max": 1000, "choices": [], "default": "5")"));
}

}  // namespace
}  // namespace gpuprof::base
