// Warm-up in the cluster summary of `gpuprof stats DIR` and the report's cluster section (issue 41):
// left out of the ranks' means, the slowest rank and the spread by default, said in one line naming
// --include-warmup, and counted with that flag. Two fixture ranks (steps 1 [0,1000) and 2
// [1000,1900) us) made into three steps each:
//   rank 0: 1.000, 1.000, 0.800 ms (step 2 runs to 2000 us, step 3 [2000,2800))
//   rank 1: 1000.000 (step 1 starts 1 s before its end: the planted warm-up), 0.900, 0.900 ms
// Step 2's slowest is rank 0, step 3's rank 1, step 1's rank 1: with the warm-up left out the
// ranks tie (the first, rank 0, is named); counted, rank 1 is slowest in 2 of 3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "db_cli_fixture.h"
#include "unit/db/fixture_db.h"

namespace {

namespace fixture = gpuprof::db::fixture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using gpuprof::testing::CliResult;
using gpuprof::testing::DbCliTest;
using gpuprof::testing::Figures;
using gpuprof::testing::Section;
using gpuprof::testing::ShellQuote;
using gpuprof::testing::Words;

constexpr const char kNote[] =
    "  note: step 1 is left out as warm-up (on rank 1: 1000.0 ms against a median of 0.900 ms for the "
    "others); --include-warmup counts it\n";

// The first five cells of a per-rank row: rank, device, steps, mean step ms, max step ms.
std::vector<std::string> First5(const std::string& row) {
  std::vector<std::string> words = Words(row);
  words.resize(std::min<std::size_t>(words.size(), 5));
  return words;
}

class WarmupCliTest : public DbCliTest {
 protected:
  void SetUp() override {
    DbCliTest::SetUp();
    fixture::FixtureOptions rank1;
    rank1.rank = 1;
    gpuprof::StatusOr<std::string> db1 = fixture::WriteFixtureRun(dir_ + "/runs", "node1_1_20240101", rank1);
    ASSERT_TRUE(db1.ok()) << db1.status().message();
    auto at = [](std::int64_t micros) {
      return std::to_string(fixture::FixtureOptions{}.base_ns + micros * 1000);
    };
    ASSERT_TRUE(fixture::ExecSql(db_, "UPDATE STEP_TIME SET endNs = " + at(2000) +
                                          " WHERE id = 2; INSERT INTO STEP_TIME VALUES (3, " + at(2000) +
                                          ", " + at(2800) + ")")
                    .ok());
    ASSERT_TRUE(fixture::ExecSql(*db1, "UPDATE STEP_TIME SET startNs = " + at(1000 - 1'000'000) +
                                           " WHERE id = 1; INSERT INTO STEP_TIME VALUES (3, " + at(1900) +
                                           ", " + at(2800) + ")")
                    .ok());
    runs_ = dir_ + "/runs";
  }

  std::string runs_;
};

TEST_F(WarmupCliTest, StatsLeavesTheWarmUpOutOfTheClusterFiguresAndSaysSo) {
  CliResult result = Run("stats " + ShellQuote(runs_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("Cluster: 2 ranks (" + runs_ + ")\n" + kNote, 0), 0u) << result.out;

  // rank, device, steps, mean ms, max ms, ...: over steps 2 and 3.
  std::vector<std::string> ranks = Section(result.out, "Per rank:");
  ASSERT_EQ(ranks.size(), 4u) << result.out;
  EXPECT_THAT(First5(ranks[2]), ElementsAre("0", "0", "2", "0.900", "1.000"));
  EXPECT_THAT(First5(ranks[3]), ElementsAre("1", "0", "2", "0.900", "0.900"));

  // The per-step table still lists step 1, marked; the job's figures leave it out.
  std::vector<std::string> steps = Section(result.out, "Per step:");
  ASSERT_EQ(steps.size(), 6u) << result.out;
  EXPECT_THAT(Words(steps[2]),
              ElementsAre("1", "1.000", "1000.000", "1", "999.000", "warm-up,", "left", "out"));
  EXPECT_THAT(Words(steps[3]), ElementsAre("2", "1.000", "0.900", "0", "0.100"));
  EXPECT_THAT(Words(steps[4]), ElementsAre("3", "0.800", "0.900", "1", "0.100"));
  EXPECT_EQ(
      steps[5],
      "  Over the 2 step(s) compared (warm-up left out): slowest most often rank 0 (1 of 2), spread mean "
      "0.100 ms, largest 0.100 ms (step 2)");
}

TEST_F(WarmupCliTest, StatsWithIncludeWarmupCountsIt) {
  CliResult result = Run("stats --include-warmup " + ShellQuote(runs_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(
      result.out.rfind(
          "Cluster: 2 ranks (" + runs_ + ")\n  note: the warm-up steps are counted (--include-warmup)\n", 0),
      0u)
      << result.out;
  EXPECT_THAT(result.out, Not(HasSubstr(kNote)));
  std::vector<std::string> ranks = Section(result.out, "Per rank:");
  ASSERT_EQ(ranks.size(), 4u) << result.out;
  EXPECT_THAT(First5(ranks[2]), ElementsAre("0", "0", "3", "0.933", "1.000"));
  EXPECT_THAT(First5(ranks[3]), ElementsAre("1", "0", "3", "333.933", "1000.000"));
  std::vector<std::string> steps = Section(result.out, "Per step:");
  ASSERT_EQ(steps.size(), 6u) << result.out;
  EXPECT_THAT(Words(steps[2]), ElementsAre("1", "1.000", "1000.000", "1", "999.000", "warm-up,", "counted"));
  EXPECT_THAT(steps[5], HasSubstr("Over the 3 step(s) compared: slowest most often rank 1 (2 of 3)"));
  EXPECT_THAT(steps[5], HasSubstr("largest 999.000 ms (step 1)"));
}

TEST_F(WarmupCliTest, ReportsClusterSectionLeavesTheWarmUpOutUnlessIncluded) {
  const std::string out = dir_ + "/cluster.html";
  CliResult result = Run("report " + ShellQuote(runs_) + " -o " + ShellQuote(out));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::string page = fixture::ReadFileBytes(out);
  const std::string cluster = page.substr(page.find("<section id=\"cluster\">"));
  EXPECT_THAT(cluster,
              HasSubstr("<p class=\"note\" id=\"cluster-warmup\">step 1 is left out as warm-up (on rank "
                        "1: 1000.0 ms against a median of 0.900 ms for the others); --include-warmup "
                        "counts it</p>"));
  EXPECT_THAT(Figures(page, "cluster-mean-step-ms"), ElementsAre("0.900", "0.900"));
  EXPECT_THAT(Figures(page, "cluster-slowest-rank"), ElementsAre("0"));
  EXPECT_THAT(Figures(page, "cluster-mean-spread-ms"), ElementsAre("0.100"));
  EXPECT_THAT(cluster, HasSubstr("warm-up step, outside the colour scale")) << "the heat map's legend";
  EXPECT_THAT(cluster, HasSubstr("warm-up, left out"));

  result = Run("report --include-warmup " + ShellQuote(runs_) + " -o " + ShellQuote(out));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  page = fixture::ReadFileBytes(out);
  EXPECT_THAT(page, HasSubstr("The warm-up steps are counted (--include-warmup)."));
  EXPECT_THAT(page, Not(HasSubstr("--include-warmup counts it")));
  EXPECT_THAT(Figures(page, "cluster-mean-step-ms"), ElementsAre("0.933", "333.933"));
  EXPECT_THAT(Figures(page, "cluster-slowest-rank"), ElementsAre("1"));
  EXPECT_THAT(page, Not(HasSubstr("warm-up step, outside the colour scale")));
  EXPECT_THAT(page, HasSubstr("warm-up, counted"));
}

}  // namespace
