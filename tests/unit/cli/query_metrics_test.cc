// `gpuprof replay --query-metrics`: the launch metrics from the catalog, the counter metrics from
// libgpuprof.so (dlopen'ed; here the library this build made), and the JSON between them.
#include "cli/query_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace gpuprof::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(QueryMetricsTest, ParsesTheLibrarysJson) {
  StatusOr<std::vector<replay::MetricInfo>> metrics = ParseMetricsJson(
      "[{\"name\": \"dram__bytes_read.sum\", \"unit\": \"byte\", \"description\": \"DRAM \\\"read\\\" "
      "bytes\"},\n"
      " {\"description\": \"\", \"name\": \"gpu__time_duration.sum\", \"unit\": \"nsecond\"}]");
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  ASSERT_EQ(metrics->size(), 2u);
  EXPECT_EQ((*metrics)[0].name, "dram__bytes_read.sum");
  EXPECT_EQ((*metrics)[0].unit, "byte");
  EXPECT_EQ((*metrics)[0].description, "DRAM \"read\" bytes");
  EXPECT_EQ((*metrics)[1].name, "gpu__time_duration.sum");
  EXPECT_EQ((*metrics)[1].unit, "nsecond");
  EXPECT_TRUE(ParseMetricsJson(" [ ] ")->empty());
  for (const char* bad : {"", "{}", "[", "[{\"name\": 1}]", "[{\"name\": \"x\"}", "[{\"name\": \"x\"}] x"}) {
    EXPECT_FALSE(ParseMetricsJson(bad).ok()) << bad;
  }
}

TEST(QueryMetricsTest, PrintsTheLaunchMetricsAndWhyThereAreNoCounterMetrics) {
  QueryMetricsOptions options;
  std::ostringstream table;
  PrintMetrics(table, options, StatusOr<std::vector<replay::MetricInfo>>(UnavailableError("no CUPTI here")));
  EXPECT_THAT(table.str(), HasSubstr("launch__grid_size"));
  EXPECT_THAT(table.str(), HasSubstr("register/thread"));
  EXPECT_THAT(table.str(), HasSubstr("Counter metrics of device 0: none listed: no CUPTI here"));

  options.json = true;
  options.chip = "GH100";
  std::ostringstream json;
  PrintMetrics(
      json, options,
      StatusOr<std::vector<replay::MetricInfo>>(std::vector<replay::MetricInfo>{{"a__b.sum", "byte", "d"}}));
  EXPECT_THAT(json.str(), HasSubstr("\"source\": \"GH100\""));
  EXPECT_THAT(json.str(), HasSubstr("\"counter_metrics\": [{\"name\": \"a__b.sum\", \"unit\": \"byte\""));
  EXPECT_THAT(json.str(), HasSubstr("\"counter_error\": null"));
  EXPECT_THAT(json.str(), HasSubstr("\"name\": \"sm__maximum_warps_per_active_cycle_pct\""));
}

TEST(QueryMetricsTest, AMissingLibraryIsUnavailableNamingIt) {
  QueryMetricsOptions options;
  options.library = "/nonexistent/libgpuprof.so";
  StatusOr<std::vector<replay::MetricInfo>> metrics = QueryCounterMetrics(options);
  ASSERT_FALSE(metrics.ok());
  EXPECT_EQ(metrics.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(metrics.status().message(), HasSubstr("/nonexistent/libgpuprof.so"));
}

// This build's libgpuprof.so answers through gpuprof_query_metrics_v1; without a counter backend
// it says what is needed rather than listing nothing.
TEST(QueryMetricsTest, TheBuiltLibraryAnswersOrSaysWhatIsMissing) {
  QueryMetricsOptions options;
  options.library = GPUPROF_TEST_SESSION_LIBRARY;
  StatusOr<std::vector<replay::MetricInfo>> metrics = QueryCounterMetrics(options);
  if (metrics.ok()) {
    EXPECT_FALSE(metrics->empty());
  } else {
    EXPECT_EQ(metrics.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(metrics.status().message(), HasSubstr("gpuprof_query_metrics_v1(0)"));
    EXPECT_THAT(metrics.status().message(), Not(HasSubstr("cannot load")));
  }
}

}  // namespace
}  // namespace gpuprof::cli
