// The metric catalog (replay/metric_catalog.h): Nsight Compute's sections and sets expanded into
// one ordered metric list, the launch__* metrics computed from the launch's shape, and the
// suggestions for an unknown name.
#include "replay/metric_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/settings.h"

namespace gpuprof::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const SectionSpec& section) {
  return {section.metrics.begin(), section.metrics.end()};
}

TEST(MetricCatalogTest, SectionsHaveUniqueNamesTitlesAndWellFormedMetrics) {
  ASSERT_GE(Sections().size(), 5u);
  std::vector<std::string_view> seen;
  for (const SectionSpec& section : Sections()) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), section.name), 0) << section.name;
    seen.push_back(section.name);
    EXPECT_FALSE(section.title.empty()) << section.name;
    EXPECT_FALSE(section.metrics.empty()) << section.name;
    EXPECT_EQ(FindSection(section.name), &section);
    for (std::string_view metric : section.metrics) EXPECT_TRUE(IsMetricName(metric)) << metric;
  }
  for (std::string_view name :
       {"SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats"}) {
    EXPECT_NE(FindSection(name), nullptr) << name;
  }
  EXPECT_EQ(FindSection("speedoflight"), nullptr) << "case-sensitive, as ncu";
}

TEST(MetricCatalogTest, SpeedOfLightBlockHasEverythingAConsumerPrints) {
  const std::vector<std::string> sol = Names(*FindSection("SpeedOfLight"));
  const std::vector<std::string> memory = Names(*FindSection("MemoryWorkloadAnalysis"));
  const std::vector<std::string> occupancy = Names(*FindSection("Occupancy"));
  const auto has = [](const std::vector<std::string>& list, std::string_view name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  EXPECT_TRUE(has(sol, "sm__throughput.avg.pct_of_peak_sustained_elapsed"));
  EXPECT_TRUE(has(sol, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
  EXPECT_TRUE(has(sol, "gpu__time_duration.sum"));
  EXPECT_TRUE(has(memory, "dram__bytes_read.sum"));
  EXPECT_TRUE(has(memory, "dram__bytes_write.sum"));
  EXPECT_TRUE(has(occupancy, "sm__warps_active.avg.pct_of_peak_sustained_active"));
  EXPECT_TRUE(has(occupancy, "sm__maximum_warps_per_active_cycle_pct"));
}

TEST(MetricCatalogTest, BasicSetIsNcusBasicAndFullHasEverySection) {
  // ncu's basic set, in the order ncu prints the sections.
  EXPECT_THAT(SetSections("basic"),
              ElementsAre("SpeedOfLight", "LaunchStats", "Occupancy", "WorkloadDistribution"));
  std::vector<std::string_view> all;
  for (const SectionSpec& section : Sections()) all.push_back(section.name);
  EXPECT_EQ(SetSections("full"), all);
  EXPECT_TRUE(SetSections("detailed").empty());
  EXPECT_TRUE(SetSections("").empty());
  EXPECT_THAT(std::vector<std::string_view>(SetNames().begin(), SetNames().end()),
              ElementsAre("basic", "full"));
}

TEST(MetricCatalogTest, ExpansionIsSetThenSectionsThenMetricsEachOnce) {
  StatusOr<std::vector<std::string>> expanded =
      ExpandMetricRequest("dram__bytes_read.sum,my__own.sum,my__own.sum", "Occupancy,SpeedOfLight", "");
  ASSERT_TRUE(expanded.ok()) << expanded.status().ToString();
  std::vector<std::string> expected = Names(*FindSection("Occupancy"));
  for (const std::string& m : Names(*FindSection("SpeedOfLight"))) {
    if (std::find(expected.begin(), expected.end(), m) == expected.end()) expected.push_back(m);
  }
  expected.push_back("dram__bytes_read.sum");
  expected.push_back("my__own.sum");
  EXPECT_EQ(*expanded, expected);

  // The set comes first; a section already in it adds nothing.
  StatusOr<std::vector<std::string>> with_set =
      ExpandMetricRequest("gpu__time_duration.sum", "SpeedOfLight", "basic");
  ASSERT_TRUE(with_set.ok()) << with_set.status().ToString();
  StatusOr<std::vector<std::string>> set_only = ExpandMetricRequest("", "", "basic");
  ASSERT_TRUE(set_only.ok());
  EXPECT_EQ(*with_set, *set_only);
  EXPECT_EQ(set_only->front(), FindSection(SetSections("basic").front())->metrics.front());
  for (const std::string& m : *set_only) EXPECT_EQ(std::count(set_only->begin(), set_only->end(), m), 1) << m;

  StatusOr<std::vector<std::string>> nothing = ExpandMetricRequest("", "", "");
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->empty());
}

TEST(MetricCatalogTest, UnknownSectionOrSetIsAnErrorListingTheKnownNames) {
  StatusOr<std::vector<std::string>> section = ExpandMetricRequest("", "SpeedOfLight,SpeedOfDark", "");
  ASSERT_FALSE(section.ok());
  EXPECT_EQ(section.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(section.status().message(), HasSubstr("unknown section \"SpeedOfDark\""));
  for (const SectionSpec& s : Sections())
    EXPECT_THAT(section.status().message(), HasSubstr(std::string(s.name)));

  StatusOr<std::vector<std::string>> set = ExpandMetricRequest("", "", "detailed");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("unknown set \"detailed\""));
  EXPECT_THAT(set.status().message(), HasSubstr("basic, full"));

  EXPECT_FALSE(ExpandMetricRequest("", "Occupancy,", "").ok()) << "an empty entry";
}

TEST(MetricCatalogTest, MetricNamesAreCheckedForFormOnly) {
  for (std::string_view good : {"dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                                "launch__grid_size", "sm__maximum_warps_per_active_cycle_pct", "x__y.z"}) {
    EXPECT_TRUE(IsMetricName(good)) << good;
    EXPECT_TRUE(ExpandMetricRequest(good, "", "").ok()) << good;
  }
  for (std::string_view bad :
       {"", "dram_bytes.sum", "__bytes.sum", "dram__", "dram__bytes..sum", "dram__bytes.sum.",
        "dram__bytes read.sum", "regex:dram__.*", "1dram__bytes.sum", "dram__bytes-read"}) {
    EXPECT_FALSE(IsMetricName(bad)) << bad;
  }
  StatusOr<std::vector<std::string>> bad = ExpandMetricRequest("dram__bytes_read.sum,dram bytes", "", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("\"dram bytes\" is not a metric name"));
  EXPECT_THAT(bad.status().message(), HasSubstr("unit__counter"));
  EXPECT_FALSE(ExpandMetricRequest("dram__bytes_read.sum,", "", "").ok()) << "an empty entry";
}

TEST(MetricCatalogTest, LaunchMetricsComeFromTheShape) {
  device::LaunchShape shape;
  shape.grid[0] = 64;
  shape.grid[1] = 2;
  shape.grid[2] = 1;
  shape.block[0] = 96;  // 3 warps
  shape.block[1] = 1;
  shape.block[2] = 1;
  shape.registers_per_thread = 40;
  shape.static_shared_bytes = 4096;
  shape.dynamic_shared_bytes = 1024;
  shape.active_blocks_per_sm = 8;
  shape.max_warps_per_sm = 64;
  shape.sm_count = 4;
  const auto value = [&](std::string_view name) {
    StatusOr<MetricValue> v = LaunchMetric(name, shape);
    EXPECT_TRUE(v.ok()) << name << ": " << v.status().ToString();
    if (v.ok()) {
      EXPECT_EQ(v->name, name);
      EXPECT_EQ(v->passes, 0);
    }
    return v.ok() ? *v : MetricValue{};
  };
  EXPECT_EQ(value("launch__grid_size").value, 128);
  EXPECT_EQ(value("launch__grid_size").unit, "block");
  EXPECT_EQ(value("launch__block_size").value, 96);
  EXPECT_EQ(value("launch__block_size").unit, "thread");
  EXPECT_EQ(value("launch__thread_count").value, 128 * 96);
  EXPECT_EQ(value("launch__registers_per_thread").value, 40);
  EXPECT_EQ(value("launch__registers_per_thread").unit, "register/thread");
  EXPECT_EQ(value("launch__shared_mem_per_block_static").value, 4096);
  EXPECT_EQ(value("launch__shared_mem_per_block_static").unit, "byte/block");
  EXPECT_EQ(value("launch__shared_mem_per_block_dynamic").value, 1024);
  EXPECT_DOUBLE_EQ(value("launch__waves_per_multiprocessor").value, 128.0 / (8 * 4));
  EXPECT_EQ(value("launch__occupancy_limit_warps").value, 21);  // floor(64 / 3)
  EXPECT_DOUBLE_EQ(value("sm__maximum_warps_per_active_cycle_pct").value, 100.0 * 8 * 3 / 64);
  EXPECT_EQ(value("sm__maximum_warps_per_active_cycle_pct").unit, "percent");

  // Every launch metric is one, and computes for a complete shape.
  for (std::string_view name : LaunchMetricNames()) {
    EXPECT_TRUE(IsLaunchMetric(name)) << name;
    EXPECT_TRUE(IsMetricName(name)) << name;
    value(name);
  }
  const std::vector<MetricInfo> infos = LaunchMetricInfos();
  ASSERT_EQ(infos.size(), LaunchMetricNames().size());
  for (std::size_t i = 0; i < infos.size(); ++i) {
    EXPECT_EQ(infos[i].name, LaunchMetricNames()[i]);
    EXPECT_EQ(infos[i].unit, value(infos[i].name).unit) << infos[i].name;
    EXPECT_FALSE(infos[i].description.empty()) << infos[i].name;
  }
  EXPECT_FALSE(IsLaunchMetric("dram__bytes_read.sum"));
  EXPECT_EQ(LaunchMetric("dram__bytes_read.sum", shape).status().code(), StatusCode::kNotFound);

  // What the backend did not report is unavailable, not zero.
  device::LaunchShape unknown;
  unknown.grid[0] = unknown.grid[1] = unknown.grid[2] = 1;
  EXPECT_EQ(LaunchMetric("launch__grid_size", unknown)->value, 1);
  EXPECT_EQ(LaunchMetric("launch__waves_per_multiprocessor", unknown).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(LaunchMetric("sm__maximum_warps_per_active_cycle_pct", unknown).status().code(),
            StatusCode::kUnavailable);
}

TEST(MetricCatalogTest, EveryLaunchMetricOfASectionIsALaunchMetricAndNoOtherIs) {
  for (const SectionSpec& section : Sections()) {
    for (std::string_view metric : section.metrics) {
      if (metric.substr(0, 8) == "launch__") {
        EXPECT_TRUE(IsLaunchMetric(metric)) << metric;
      }
    }
  }
  for (std::string_view metric : FindSection("SpeedOfLight")->metrics) EXPECT_FALSE(IsLaunchMetric(metric));
}

TEST(MetricCatalogTest, NearestNamesAreByEditDistanceThenSharedPrefix) {
  const std::vector<std::string> known = {"dram__bytes_read.sum", "dram__bytes_write.sum", "dram__bytes.sum",
                                          "gpu__time_duration.sum", "lts__t_bytes.sum"};
  EXPECT_THAT(NearestMetricNames("dram__bytes_reed.sum", known, 1), ElementsAre("dram__bytes_read.sum"));
  EXPECT_THAT(NearestMetricNames("dram__bytes_read.sum", known, 2),
              ElementsAre("dram__bytes_write.sum", "dram__bytes.sum"))
      << "the name itself is left out";
  EXPECT_EQ(NearestMetricNames("x", known).size(), 3u);
  EXPECT_TRUE(NearestMetricNames("x", {}).empty());
  EXPECT_TRUE(NearestMetricNames("x", known, 0).empty());
}

// base/settings.cc cannot see the catalog, so its --section choices, --set choices and --metrics
// form check mirror it; they must say the same.
TEST(MetricCatalogTest, SettingsRowsAgreeWithTheCatalog) {
  std::vector<std::string_view> sections;
  for (const SectionSpec& section : Sections()) sections.push_back(section.name);
  EXPECT_EQ(base::SettingChoices(base::Spec(base::SettingId::kReplaySection)), sections);

  std::vector<std::string_view> sets = {"none"};
  sets.insert(sets.end(), SetNames().begin(), SetNames().end());
  EXPECT_EQ(base::SettingChoices(base::Spec(base::SettingId::kReplaySet)), sets);

  const base::SettingSpec& metrics = base::Spec(base::SettingId::kReplayMetrics);
  for (std::string_view list :
       {"dram__bytes_read.sum", "a__b,c__d.e.f", "launch__grid_size", "", "dram_bytes.sum", "__x", "x__",
        "x__y.", "x__y..z", "x__y,", ",x__y", "x__y z", "9x__y", "x-y__z", "regex:x__y",
        "x__y.sum,gpu__time_duration.sum"}) {
    EXPECT_EQ(base::ParseSettingText(metrics, list, "--metrics").ok(), ExpandMetricRequest(list, "", "").ok())
        << "\"" << list << "\"";
  }
}

}  // namespace
}  // namespace gpuprof::replay
