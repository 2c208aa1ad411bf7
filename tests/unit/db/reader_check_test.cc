// `check` on the DB_SPEC fixture (clean) and on fixtures with one thing broken each: the problem
// is reported once, on the right table, in words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "db/check.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_check");
    ASSERT_FALSE(dir_.empty());
    path_ = dir_ + "/ascend_pytorch_profiler_0.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // The problems of the fixture after `damage_sql`, as "<table>: <problem>" lines.
  std::vector<std::string> Problems(const std::string& damage_sql,
                                    const fixture::FixtureOptions& options = {}) {
    Status written = fixture::WriteFixtureDb(path_, options);
    EXPECT_TRUE(written.ok()) << written.message();
    if (!damage_sql.empty()) {
      Status damaged = fixture::ExecSql(path_, damage_sql);
      EXPECT_TRUE(damaged.ok()) << damaged.message();
    }
    StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path_);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    if (!reader.ok()) return {"(open failed)"};
    StatusOr<CheckReport> report = CheckProfileDb(**reader);
    EXPECT_TRUE(report.ok()) << report.status().message();
    if (!report.ok()) return {"(check failed)"};
    report_ = *report;
    std::vector<std::string> lines;
    for (const CheckProblem& problem : report->problems)
      lines.push_back(problem.table + ": " + problem.problem);
    return lines;
  }

  std::string dir_;
  std::string path_;
  CheckReport report_;
};

TEST_F(CheckTest, FixtureBuiltFromTheSpecDdlIsClean) {
  EXPECT_THAT(Problems(""), ElementsAre());
  EXPECT_EQ(report_.tables,
            34u);  // 29 format tables (no optional device tables) + 4 GPUPROF_* with rows or not
  EXPECT_GT(report_.rows, 50u);
}

TEST_F(CheckTest, OptionalDeviceTablesAreCheckedOnlyWhenPresent) {
  EXPECT_THAT(Problems("CREATE TABLE NPU_MEM (type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, "
                       "deviceId INTEGER);"),
              ElementsAre());
  EXPECT_THAT(Problems("CREATE TABLE NPU_MEM (type INTEGER, ddr NUMERIC);"),
              ElementsAre("NPU_MEM: column 3 missing: expected 'hbm NUMERIC'",
                          "NPU_MEM: column 4 missing: expected 'timestampNs INTEGER'",
                          "NPU_MEM: column 5 missing: expected 'deviceId INTEGER'"));
}

TEST_F(CheckTest, MissingTableAndIndex) {
  EXPECT_THAT(Problems("DROP TABLE STEP_TIME; DROP INDEX TaskIndex;"),
              ElementsAre("STEP_TIME: table missing (DB_SPEC.md lists it in the exact DDL)",
                          "TASK: index TaskIndex (startNs, globalTaskId) missing"));
}

TEST_F(CheckTest, ColumnTypeOrderAndPrimaryKeyDifferences) {
  // torch_npu's own declaration: startNs/endNs TEXT.
  std::vector<std::string> problems = Problems(
      "DROP TABLE PYTORCH_API; CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, "
      "connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, "
      "inputShapes INTEGER, callchainId INTEGER, type INTEGER, extra INTEGER);"
      "DROP TABLE STRING_IDS; CREATE TABLE STRING_IDS (value TEXT, id INTEGER);");
  EXPECT_THAT(problems,
              ::testing::Contains("PYTORCH_API: column 1 is 'startNs TEXT', expected 'startNs INTEGER'"));
  EXPECT_THAT(problems,
              ::testing::Contains("PYTORCH_API: column 2 is 'endNs TEXT', expected 'endNs INTEGER'"));
  // A column appended after the format's (as MindStudio Insight adds) is accepted.
  EXPECT_THAT(problems, ::testing::Not(::testing::Contains(::testing::HasSubstr("extra"))));
  EXPECT_THAT(problems,
              ::testing::Contains("STRING_IDS: column 1 is 'value TEXT', expected 'id INTEGER PRIMARY KEY'"));
}

TEST_F(CheckTest, EnumRowsAndSchemaVersion) {
  EXPECT_THAT(Problems("UPDATE ENUM_API_TYPE SET name = 'python_trace' WHERE id = 50003;"
                       "DELETE FROM ENUM_MSTX_EVENT_TYPE WHERE id = 3;"
                       "INSERT INTO ENUM_MEMCPY_OPERATION VALUES (9, 'teleport');"
                       "DELETE FROM ENUM_MODULE;"
                       "UPDATE META_DATA SET value = '1.1.0' WHERE name = 'SCHEMA_VERSION';"
                       "DELETE FROM META_DATA WHERE name = 'SCHEMA_VERSION_MICRO';"),
              ElementsAre("ENUM_API_TYPE: row 50003 is named 'python_trace', expected 'trace'",
                          "ENUM_MSTX_EVENT_TYPE: missing row (3, 'marker_ex')",
                          "ENUM_MEMCPY_OPERATION: unexpected row (9, 'teleport')",
                          "ENUM_MODULE: enum table is empty (msprof's id/name rows expected)",
                          "META_DATA: SCHEMA_VERSION is '1.1.0', expected '1.2.0'",
                          "META_DATA: no SCHEMA_VERSION_MICRO row (expected '0')"));
}

TEST_F(CheckTest, UnresolvedStringIds) {
  EXPECT_THAT(
      Problems("UPDATE PYTORCH_API SET name = 999999 WHERE rowid = 1;"
               "UPDATE MEMORY_RECORD SET component = 4294967295;"
               "UPDATE OP_MEMORY SET name = 4294967295;"             // allowed: memory no op claimed
               "UPDATE TASK SET taskType = NULL WHERE rowid = 1;"),  // NULL is not a reference
      ElementsAre("PYTORCH_API: 1 distinct name value(s) not in STRING_IDS (e.g. 999999)",
                  "MEMORY_RECORD: 1 distinct component value(s) not in STRING_IDS (e.g. 4294967295)"));
}

TEST_F(CheckTest, ConnectionIdsMustMatchPytorchApiBothWays) {
  EXPECT_THAT(
      Problems("INSERT INTO CONNECTION_IDS VALUES (99, 12345);"
               "UPDATE PYTORCH_API SET connectionId = 77 WHERE rowid = 1;"
               "UPDATE PYTORCH_API SET connectionId = 2 WHERE rowid = 6;"),
      ElementsAre("CONNECTION_IDS: 1 id value(s) that no PYTORCH_API.connectionId references (e.g. 99)",
                  "PYTORCH_API: 1 connectionId value(s) with no CONNECTION_IDS row (e.g. 77); ops "
                  "without a link must hold NULL",
                  "PYTORCH_API: 1 connectionId value(s) shared by several rows (e.g. 2); each API row has "
                  "its own CONNECTION_IDS index"));
}

TEST_F(CheckTest, KernelWithoutNodeLaunchRow) {
  EXPECT_THAT(
      Problems("DELETE FROM CANN_API WHERE connectionId = 101;"),
      ElementsAre("TASK: 1 kernel connectionId value(s) with no CANN_API node/launch row (e.g. 101)"));
  // Without any host API rows there is nothing to join to: not a problem.
  EXPECT_THAT(Problems("DELETE FROM CANN_API;"), ElementsAre());
}

TEST_F(CheckTest, StepIdsTimesAndSingletonTables) {
  EXPECT_THAT(
      Problems("INSERT INTO STEP_TIME VALUES ('step3', 0, 1);"
               "UPDATE PYTORCH_API SET endNs = startNs - 1 WHERE rowid = 2;"
               "INSERT INTO RANK_DEVICE_MAP VALUES (1, 1);"
               "UPDATE SESSION_TIME_INFO SET startTimeNs = endTimeNs + 1;"),
      ElementsAre("STEP_TIME: 1 row(s) whose id is stored as text, not integer (msprof-analyze compares it "
                  "with an int step id)",
                  "PYTORCH_API: 1 row(s) with startNs > endNs (e.g. rowid 2)",
                  "RANK_DEVICE_MAP: has 2 rows, expected exactly one (msprof-analyze CROSS JOINs it with "
                  "its queries)",
                  "SESSION_TIME_INFO: startTimeNs 1700000000125456790 > endTimeNs 1700000000125456789"));
}

TEST_F(CheckTest, EveryTableEmptyIsReportedNotFatal) {
  fixture::FixtureOptions empty;
  empty.with_rows = false;
  std::vector<std::string> problems = Problems("", empty);
  EXPECT_THAT(problems, ::testing::Contains("ENUM_API_TYPE: missing row (50003, 'trace')"));
  EXPECT_THAT(problems, ::testing::Contains("META_DATA: no SCHEMA_VERSION row (expected '1.2.0')"));
  EXPECT_THAT(problems,
              ::testing::Contains("RANK_DEVICE_MAP: has 0 rows, expected exactly one (msprof-analyze CROSS "
                                  "JOINs it with its queries)"));
  EXPECT_THAT(problems, ::testing::Contains("SESSION_TIME_INFO: has 0 rows, expected one"));
  EXPECT_EQ(report_.rows, 0u);
}

TEST_F(CheckTest, ReplayTablesFollowTheirDocumentation) {
  EXPECT_THAT(
      Problems("DELETE FROM GPUPROF_REPLAY_PASS WHERE kernelId = 1 AND pass = 3;"
               "INSERT INTO GPUPROF_REPLAY_PASS (kernelId, pass) VALUES (9, 1);"
               "UPDATE GPUPROF_REPLAY_KERNEL SET name = 777777 WHERE id = 3;"
               "DROP INDEX GpuprofReplayPassIndex;"),
      ElementsAre("GPUPROF_REPLAY_PASS: index GpuprofReplayPassIndex (kernelId, pass) missing",
                  "GPUPROF_REPLAY_KERNEL: 1 distinct name value(s) not in STRING_IDS (e.g. 777777)",
                  "GPUPROF_REPLAY_PASS: 1 kernelId value(s) with no GPUPROF_REPLAY_KERNEL row (e.g. 9)",
                  "GPUPROF_REPLAY_KERNEL: 1 row(s) whose passes differs from their GPUPROF_REPLAY_PASS rows "
                  "(e.g. id 1)"));
  EXPECT_THAT(Problems("ALTER TABLE GPUPROF_REPLAY_PASS DROP COLUMN matchesPass1;"),
              ElementsAre("GPUPROF_REPLAY_PASS: column 11 missing: expected 'matchesPass1 INTEGER'"));
  fixture::FixtureOptions no_replay;
  no_replay.with_replay_tables = false;
  EXPECT_THAT(Problems("", no_replay), ElementsAre());  // optional: a run without replay has none
}

TEST_F(CheckTest, ReplayMetricRowsReferToKernelRowsAndStrings) {
  EXPECT_THAT(
      Problems("INSERT INTO GPUPROF_REPLAY_METRIC VALUES (42, 13, 20, 1.0, 1);"
               "UPDATE GPUPROF_REPLAY_METRIC SET unit = 888888 WHERE name = 14;"
               "DROP INDEX GpuprofReplayMetricIndex;"),
      ElementsAre("GPUPROF_REPLAY_METRIC: index GpuprofReplayMetricIndex (kernelId) missing",
                  "GPUPROF_REPLAY_METRIC: 1 distinct unit value(s) not in STRING_IDS (e.g. 888888)",
                  "GPUPROF_REPLAY_METRIC: 1 kernelId value(s) with no GPUPROF_REPLAY_KERNEL row (e.g. 42)"));
  // A DB written before range replay: its last column missing is named.
  EXPECT_THAT(Problems("ALTER TABLE GPUPROF_REPLAY_KERNEL DROP COLUMN rangeLaunch;"),
              ElementsAre("GPUPROF_REPLAY_KERNEL: column 29 missing: expected 'rangeLaunch INTEGER'"));
  EXPECT_THAT(
      Problems("INSERT INTO GPUPROF_REPLAY_GRAPH_NODE VALUES (42, 1, 9, 1, 100);"),
      ElementsAre(
          "GPUPROF_REPLAY_GRAPH_NODE: 1 kernelId value(s) with no GPUPROF_REPLAY_KERNEL row (e.g. 42)"));
}

// A DB written before hardware counters: no GPUPROF_REPLAY_METRIC, no counter columns. The table is
// optional; the missing columns are reported as for any older GPUPROF_REPLAY_KERNEL.
TEST_F(CheckTest, DbWithoutTheMetricTableNeedsNone) {
  EXPECT_THAT(Problems("DROP TABLE GPUPROF_REPLAY_METRIC;"), ElementsAre());
}

TEST(FormatProblemTest, DbTableProblem) {
  EXPECT_EQ(FormatProblem("/p/x.db", {"TASK", "index TaskIndex (startNs, globalTaskId) missing"}),
            "/p/x.db: TASK: index TaskIndex (startNs, globalTaskId) missing");
}

TEST(ExpectedTablesTest, CoversTheSpecDdl) {
  std::size_t required = 0;
  for (const ExpectedTable& table : ExpectedTables()) required += table.required ? 1 : 0;
  EXPECT_EQ(required, 29u);
  EXPECT_EQ(ExpectedTables().size(), 39u);  // + 5 optional device tables + 5 GPUPROF_* tables
}

}  // namespace
}  // namespace gpuprof::db
