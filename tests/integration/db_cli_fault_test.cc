// `gpuprof export / report / stats / check` on damaged or extreme DBs and outputs (issue 39): a
// STRING_IDS that repeats ids, a name of a megabyte, thousands of steps and impossible ones, NULL and
// impossible MEMORY_RECORD figures, a reversed session, -o /dev/stdout or /dev/stderr into a pipe,
// and an export interrupted by a signal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.h"
#include "db_cli_fixture.h"
#include "unit/db/fixture_db.h"
#include "unit/db/mini_json.h"

namespace {

namespace fs = std::filesystem;
namespace fixture = gpuprof::db::fixture;
using ::testing::HasSubstr;
using ::testing::Not;

using gpuprof::testing::CliResult;
using gpuprof::testing::DbCliTest;
using gpuprof::testing::RunShell;
using gpuprof::testing::ShellQuote;

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// "N slices" of export's summary line.
std::string Slices(const std::string& out) {
  std::smatch match;
  return std::regex_search(out, match, std::regex("([0-9]+) slices")) ? match[1].str() : "";
}

bool IsTrace(const std::string& text) {
  gpuprof::StatusOr<fixture::JsonValue> root = fixture::ParseJson(text);
  if (!root.ok()) return false;
  const fixture::JsonValue* events = root->Find("traceEvents");
  return events != nullptr && !events->array.empty();
}

TEST_F(DbCliTest, ExportResolvesARepeatedStringIdOnceAndCheckNamesIt) {
  CliResult before = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(dir_ + "/before.json"));
  ASSERT_EQ(before.exit_code, 0) << before.err;
  // STRING_IDS without its primary key, every row three times: each op's name, shapes and dtypes
  // joined three times each made 27 slices of one op.
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "CREATE TABLE s2 AS SELECT * FROM STRING_IDS; DROP TABLE STRING_IDS; "
                       "CREATE TABLE STRING_IDS (id INTEGER, value TEXT); "
                       "INSERT INTO STRING_IDS SELECT * FROM s2; INSERT INTO STRING_IDS SELECT * FROM s2; "
                       "INSERT INTO STRING_IDS SELECT * FROM s2; DROP TABLE s2;")
          .ok());
  CliResult after = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(dir_ + "/after.json"));
  ASSERT_EQ(after.exit_code, 0) << after.err;
  ASSERT_FALSE(Slices(before.out).empty()) << before.out;
  EXPECT_EQ(Slices(after.out), Slices(before.out)) << after.out;
  EXPECT_TRUE(IsTrace(fixture::ReadFileBytes(dir_ + "/after.json")));

  CliResult check = Run("check " + ShellQuote(db_));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_THAT(check.out, HasSubstr(db_ + ": STRING_IDS: "));
  EXPECT_THAT(check.out, HasSubstr("id(s) used by more than one row"));
}

TEST_F(DbCliTest, ReportCutsAHugeNameAndNotesItsLength) {
  // One op name and one kernel name of 1,000,004 characters: written whole, in every table row,
  // bar title and suggestion (a 20M-character name made a 300 MB page).
  ASSERT_TRUE(fixture::ExecSql(db_,
                               "INSERT INTO STRING_IDS VALUES (777777, 'huge' || hex(zeroblob(500000)));"
                               "UPDATE PYTORCH_API SET name = 777777 WHERE connectionId IS NOT NULL;"
                               "UPDATE COMPUTE_TASK_INFO SET name = 777777;")
                  .ok());
  const std::string page_path = dir_ + "/report.html";
  CliResult result = Run("report " + ShellQuote(run_dir_) + " -o " + ShellQuote(page_path));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page = fixture::ReadFileBytes(page_path);
  EXPECT_LT(page.size(), 400'000u) << "the 1 MB name is written whole";
  EXPECT_THAT(page, HasSubstr("… (1000004 bytes)"));
  EXPECT_THAT(page, Not(HasSubstr(std::string(5000, '0'))));
}

TEST_F(DbCliTest, ReportBoundsItsStepTableAndLeavesImpossibleStepsOut) {
  // 3000 more steps of 100 us after the session's two, and one impossible step: -9e18 to 9e18 ns.
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < 3002) "
                       "INSERT INTO STEP_TIME SELECT i, (SELECT startTimeNs FROM SESSION_TIME_INFO) + "
                       "2000000 + i * 100000, (SELECT startTimeNs FROM SESSION_TIME_INFO) + 2000000 + "
                       "i * 100000 + 100000 - i FROM n;"
                       "INSERT INTO STEP_TIME VALUES (9999, -9000000000000000000, 9000000000000000000);")
          .ok());
  const std::string page_path = dir_ + "/report.html";
  CliResult result = Run("report " + ShellQuote(run_dir_) + " -o " + ShellQuote(page_path));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page = fixture::ReadFileBytes(page_path);
  EXPECT_LE(Count(page, "data-figure=\"step-ms\""), 100u);
  EXPECT_THAT(page, HasSubstr("2902 more steps are not listed"));
  EXPECT_THAT(page, Not(HasSubstr(">9999</td>"))) << "the impossible step is listed";
  EXPECT_THAT(page, Not(HasSubstr("step 9999")));
  EXPECT_THAT(page, HasSubstr("STEP_TIME: 1 row(s) left out"));

  CliResult stats = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("note: STEP_TIME: 1 row(s) left out"));
}

TEST_F(DbCliTest, CheckFlagsNullAndImpossibleMemoryFiguresAndStatsLeavesThemOut) {
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "UPDATE MEMORY_RECORD SET component = NULL WHERE rowid = 1;"
                       "UPDATE MEMORY_RECORD SET deviceId = NULL WHERE rowid = 2;"
                       "UPDATE MEMORY_RECORD SET totalReserved = 9223372036854775807 WHERE rowid = 3;")
          .ok());
  CliResult check = Run("check " + ShellQuote(db_));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_THAT(check.out, HasSubstr(db_ + ": MEMORY_RECORD: 1 row(s) with NULL component (e.g. rowid 1)"));
  EXPECT_THAT(check.out, HasSubstr(db_ + ": MEMORY_RECORD: 1 row(s) with NULL deviceId (e.g. rowid 2)"));
  EXPECT_THAT(check.out,
              HasSubstr(db_ + ": MEMORY_RECORD: 1 row(s) whose totalAllocated, totalReserved or totalActive "
                              "is negative or above 1 PiB (e.g. rowid 3)"));

  CliResult stats = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("note: MEMORY_RECORD: 1 row(s) left out"));
  EXPECT_THAT(stats.out, Not(HasSubstr("TiB")));
  EXPECT_THAT(stats.out, Not(HasSubstr("8388608")));
}

TEST_F(DbCliTest, AReversedSessionIsFlaggedByCheckAndSaidByStats) {
  ASSERT_TRUE(fixture::ExecSql(db_, "UPDATE SESSION_TIME_INFO SET endTimeNs = startTimeNs - 5000000;").ok());
  CliResult check = Run("check " + ShellQuote(db_));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_THAT(check.out, HasSubstr(db_ + ": SESSION_TIME_INFO: startTimeNs "));
  CliResult stats = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("session reversed (it ends 5.000 ms before its start"));
  EXPECT_THAT(stats.out, Not(HasSubstr("session 0.000 ms")));
}

TEST_F(DbCliTest, ExportAndReportStreamIntoDevStdoutAndDevStderrWhenTheyArePipes) {
  const std::string gpuprof = ShellQuote(GPUPROF_CLI_PATH);
  const std::string rc = ShellQuote(dir_ + "/rc.txt");
  const std::string err = ShellQuote(dir_ + "/err.txt");
  // Standard output a pipe: /dev/stdout -> /proc/self/fd/1 -> "pipe:[N]", which no path names.
  CliResult out = RunShell("{ " + gpuprof + " export " + ShellQuote(db_) + " -o /dev/stdout 2>" + err +
                           "; echo $? >" + rc + "; } | cat");
  EXPECT_EQ(fixture::ReadFileBytes(dir_ + "/rc.txt"), "0\n") << fixture::ReadFileBytes(dir_ + "/err.txt");
  EXPECT_TRUE(IsTrace(out.out)) << out.out.substr(0, 300);
  EXPECT_THAT(fixture::ReadFileBytes(dir_ + "/err.txt"), HasSubstr("wrote /dev/stdout"));
  // Standard error a pipe (standard output a file): the trace comes through the pipe.
  CliResult through_err = RunShell("{ " + gpuprof + " export " + ShellQuote(db_) + " -o /dev/stderr 2>&1 >" +
                                   ShellQuote(dir_ + "/summary.txt") + "; echo $? >" + rc + "; } | cat");
  EXPECT_EQ(fixture::ReadFileBytes(dir_ + "/rc.txt"), "0\n") << through_err.out.substr(0, 300);
  EXPECT_TRUE(IsTrace(through_err.out)) << through_err.out.substr(0, 300);
  // The report too.
  CliResult page = RunShell("{ " + gpuprof + " report " + ShellQuote(db_) + " -o /dev/stdout 2>" + err +
                            "; echo $? >" + rc + "; } | cat");
  EXPECT_EQ(fixture::ReadFileBytes(dir_ + "/rc.txt"), "0\n") << fixture::ReadFileBytes(dir_ + "/err.txt");
  EXPECT_EQ(page.out.rfind("<!DOCTYPE html>", 0), 0u) << page.out.substr(0, 200);
}

// Starts `gpuprof export DB -o OUT` and returns its pid; SIGINT and SIGTERM at their defaults in it
// (a test run in the background of a shell inherits SIGINT ignored).
pid_t StartExport(const std::string& db, const std::string& out) {
  const pid_t pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execl(GPUPROF_CLI_PATH, GPUPROF_CLI_PATH, "export", db.c_str(), "-o", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST_F(DbCliTest, AnInterruptedExportLeavesNoTemporaryFile) {
  // 30,000 more ops, so that the export runs long enough to be interrupted while it writes.
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000) "
                       "INSERT INTO PYTORCH_API (startNs, endNs, globalTid, name, type) SELECT "
                       "startNs + i, endNs + i, globalTid, name, type FROM PYTORCH_API, n WHERE "
                       "PYTORCH_API.rowid = 1;")
          .ok());
  for (int signal_number : {SIGTERM, SIGINT}) {
    const std::string out = dir_ + "/trace.json";
    const pid_t pid = StartExport(db_, out);
    ASSERT_GT(pid, 0);
    const std::string temporary = out + ".tmp." + std::to_string(pid);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(temporary) && !fs::exists(out) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    kill(pid, signal_number);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && fs::exists(out)) GTEST_SKIP() << "the export ended before the signal came";
    ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
    EXPECT_EQ(WTERMSIG(status), signal_number) << "it ends as the signal would have";
    EXPECT_FALSE(fs::exists(temporary)) << temporary << " is left behind";
    EXPECT_FALSE(fs::exists(out));
  }
}

}  // namespace
