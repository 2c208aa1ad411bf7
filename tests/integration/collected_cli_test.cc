// What was collected beside the ops and kernels, as `gpuprof stats`, `stats --format json` and
// `gpuprof report` show it (db/collected.h): the records lost per source at the top, the call stacks
// of the top ops and the time per nn.Module by its path, on the fixture run with module ranges and
// a count of lost records added (tests/unit/db/fixture_db.h FixtureCollectedSql).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

constexpr const char kLost[] =
    R"({"cupti_activity_buffers": 7, "session_buffer": 0, "after_stop": 0, "writer_queue": 3})";
constexpr const char kNoneLost[] =
    R"({"cupti_activity_buffers": 0, "session_buffer": 0, "after_stop": 0, "writer_queue": 0})";

class CollectedCliTest : public DbCliTest {
 protected:
  void Add(const std::string& lost) {
    ASSERT_TRUE(fixture::ExecSql(db_, fixture::FixtureCollectedSql({}, lost)).ok());
  }
};

TEST_F(CollectedCliTest, StatsShowsTheRecordsLostPerSourceFirst) {
  Add(kLost);
  CliResult result = Run("stats " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lost = Section(result.out, "Records lost before the profile");
  ASSERT_EQ(lost.size(), 4u) << result.out;
  EXPECT_THAT(lost[0], HasSubstr(": 10 ("));
  EXPECT_THAT(lost[2], HasSubstr("7  CUPTI activity buffers"));
  EXPECT_THAT(lost[3], HasSubstr("3  the DB writer"));
  // Before every other table.
  EXPECT_LT(result.out.find("Records lost before the profile"), result.out.find("Top ops by total time"));
}

TEST_F(CollectedCliTest, StatsHasNoLostTableWhenNothingWasLost) {
  Add(kNoneLost);
  CliResult result = Run("stats " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("Records lost")));
  EXPECT_THAT(result.out, HasSubstr("Top ops by total time"));
}

TEST_F(CollectedCliTest, StatsShowsModulesByPathAndTheTopOpsStacks) {
  Add("");
  CliResult result = Run("stats " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> modules = Section(result.out, "Modules by host time");
  ASSERT_EQ(modules.size(), 5u) << result.out;
  EXPECT_THAT(modules[0], HasSubstr("3 of 3 modules"));
  // calls, host ms, device ms, kernels, module
  EXPECT_THAT(modules[2], HasSubstr("1    0.430      0.120        2  Net"));
  EXPECT_THAT(modules[3], HasSubstr("1    0.315      0.100        1  net.0 (Linear)"));
  EXPECT_THAT(modules[4], HasSubstr("2    0.190      0.050        2  net.1 (ReLU)"));
  const std::vector<std::string> stacks = Section(result.out, "Call stacks of the top ops");
  ASSERT_EQ(stacks.size(), 3u) << result.out;
  EXPECT_THAT(stacks[2], HasSubstr("aten::linear  train.py:10 forward"));
}

TEST_F(CollectedCliTest, StatsJsonCarriesTheSameFigures) {
  Add(kLost);
  CliResult result = Run("stats --format json " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr(R"("source": "cupti_activity_buffers")"));
  EXPECT_THAT(result.out, HasSubstr(R"("records": 7)"));
  EXPECT_THAT(result.out, HasSubstr(R"j("name": "net.0 (Linear)")j"));
  EXPECT_THAT(result.out, HasSubstr(R"("host_ms": 0.315)"));
  EXPECT_THAT(result.out, HasSubstr(R"("device_ms": 0.1)"));
  EXPECT_THAT(result.out, HasSubstr(R"("train.py:10 forward")"));
}

TEST_F(CollectedCliTest, ReportHasTheLostRecordsOnTopAndTheModulesAndStacks) {
  Add(kLost);
  CliResult result = Run("report " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page = fixture::ReadFileBytes(run_dir_ + "/gpuprof_report.html");
  EXPECT_THAT(Figures(page, "lost-records"), ElementsAre("7", "3"));
  EXPECT_LT(page.find("<section id=\"lost\""), page.find("<section id=\"overview\""));
  EXPECT_THAT(Figures(page, "module-name"), ElementsAre("Net", "net.0 (Linear)", "net.1 (ReLU)"));
  EXPECT_THAT(Figures(page, "module-device-ms"), ElementsAre("0.120", "0.100", "0.050"));
  EXPECT_THAT(Figures(page, "stack-frames"), ElementsAre("train.py:10 forward"));
}

TEST_F(CollectedCliTest, ReportHasNoLostSectionWhenNothingWasLost) {
  Add(kNoneLost);
  CliResult result = Run("report " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page = fixture::ReadFileBytes(run_dir_ + "/gpuprof_report.html");
  EXPECT_THAT(page, Not(HasSubstr("<section id=\"lost\"")));
  EXPECT_THAT(page, HasSubstr("<section id=\"collected\">"));
}

}  // namespace
