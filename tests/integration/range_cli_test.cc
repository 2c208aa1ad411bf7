// `gpuprof stats`, `stats --csv=ranges` and `gpuprof report` on a DB the ProfileWriter wrote from
// range replay records (tests/unit/db/range_fixture.h): each range's kernels in execution order
// with their median, spread, counters and bottleneck word, and the report's step roofline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "integration/cli_harness.h"
#include "unit/db/range_fixture.h"
#include "unit/db/writer_test_util.h"

namespace {

using gpuprof::testing::CliResult;
using gpuprof::testing::RunShell;
using gpuprof::testing::ShellQuote;
using ::testing::HasSubstr;
namespace dbt = gpuprof::db::testing;

class RangeCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dbt::WriteProfile(dbt::TestOptions(dir_.path()), {gpuprof::db::fixture::RangeRecords()});
    ASSERT_FALSE(db_.empty());
  }
  CliResult Run(const std::string& args) const {
    return RunShell(std::string(GPUPROF_CLI_PATH) + " " + args + " 2>" + ShellQuote(dir_.path() + "/err"),
                    dir_.path() + "/err");
  }

  dbt::TempDir dir_;
  std::string db_;
};

TEST_F(RangeCliTest, StatsListsEachRangesKernelsInOrderWithMedianSpreadAndBound) {
  CliResult result = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::size_t at = result.out.find("Range replay (2 range(s)");
  ASSERT_NE(at, std::string::npos) << result.out;
  const std::string section = result.out.substr(at);
  EXPECT_THAT(section, HasSubstr("  range 1 (device 0, 5 launches, 192.5 µs of medians)\n"));
  // Execution order, not time order; median of {120, 90, 100} is 100, spread (120-90)/100.
  const std::size_t gemm = section.find("gemm");
  const std::size_t copy = section.find("copy");
  const std::size_t tiny = section.find("tiny");
  ASSERT_NE(gemm, std::string::npos);
  EXPECT_LT(gemm, copy);
  EXPECT_LT(copy, tiny);
  EXPECT_THAT(
      section,
      HasSubstr("    0      100.0  90.0–120.0  30.0 %       75.0      40.0         50.0  compute  gemm\n"));
  EXPECT_THAT(section, HasSubstr("memory   copy"));
  EXPECT_THAT(section, HasSubstr("launch   tiny"));
  EXPECT_THAT(section, HasSubstr("latency  wait"));
  EXPECT_THAT(section, HasSubstr("-        untimed"));
  EXPECT_THAT(section, HasSubstr("  range 2 (device 0): not replayed (range-too-large)\n"));
}

TEST_F(RangeCliTest, CsvRangesHasOneRowPerLaunchWithTheColumnsOfTheTable) {
  CliResult result = Run("stats --csv=ranges " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(
      result.out,
      "rank,deviceId,rangeId,rangeLaunch,kernelId,kernel,replayed,declineReason,passes,medianNs,minNs,maxNs,"
      "spreadPct,computePct,memoryPct,occupancyPct,bottleneck,flops,dramBytes,durationNs\n"
      "0,0,1,0,0,gemm,1,,3,100000,90000,120000,30,75,40,50,compute,6e+09,1e+06,1e+05\n"
      "0,0,1,1,1,copy,1,,3,50000,50000,50000,0,20,85,,memory,2e+06,3e+09,50000\n"
      "0,0,1,2,2,tiny,1,,3,2500,2000,3000,40,5,5,,launch,1000,4096,2500\n"
      "0,0,1,3,3,wait,1,,3,20000,20000,20000,0,20,30,10,latency,1e+07,4e+06,20000\n"
      "0,0,1,4,4,untimed,1,,3,20000,20000,20000,0,,,,,,,20000\n"
      "0,0,2,0,5,range 2,0,range-too-large,0,,,,,,,,,,,\n");
  // Numbers as --csv writes them: the shortest text that reads back as the same double.
  // The metric CSV is still what --csv prints.
  CliResult metrics = Run("stats --csv " + ShellQuote(db_));
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_EQ(metrics.out.substr(0, metrics.out.find('\n')),
            "rank,kernelId,kernel,launchIndex,metric,unit,value,passes");
}

// The step roofline: one dot per kernel with FLOP and DRAM byte counts (untimed has none), the
// roofs of the device the DB names (NVIDIA H200), and the per-kernel table beside it.
TEST_F(RangeCliTest, ReportDrawsTheStepRooflineWithOneDotPerCountedKernel) {
  CliResult result = Run("report -o - " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& page = result.out;
  ASSERT_THAT(page, HasSubstr("<section id=\"ranges\">"));
  std::size_t dots = 0;
  for (std::size_t at = page.find("class=\"roofline-dot\""); at != std::string::npos;
       at = page.find("class=\"roofline-dot\"", at + 1)) {
    ++dots;
  }
  EXPECT_EQ(dots, 4u);
  EXPECT_THAT(page, HasSubstr("<title>#0 gemm: 100.0 µs, 6000.000 FLOP/byte, 60TFLOP/s, compute</title>"));
  EXPECT_THAT(page, HasSubstr("4 of 5 kernels drawn"));
  EXPECT_THAT(page, HasSubstr("Roofs: H200 SXM datasheet peaks (dense)"));
  EXPECT_THAT(page, HasSubstr("DRAM 4.8TB/s"));
  EXPECT_THAT(page, HasSubstr("FP32 67TFLOP/s"));
  EXPECT_THAT(page, HasSubstr("FP16/BF16 tensor 989.5TFLOP/s"));
  EXPECT_THAT(page, HasSubstr("<table class=\"sortable\" id=\"range-0-0-1\">"));
  EXPECT_THAT(page, HasSubstr("Range 2 (device 0, NVIDIA H200)</h4><p class=\"absent\">Range: not replayed: "
                              "range-too-large</p>"));
}

}  // namespace
