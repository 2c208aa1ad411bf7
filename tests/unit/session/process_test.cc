// Process-level behaviour of libgpuprof.so, observed from outside: the exit handler, fork()
// (rule C5), and one session per process with two copies of the library loaded.
// The scenarios run in session_process_helper (GPUPROF_SESSION_HELPER).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <set>

#include "unit/session/session_test_util.h"

namespace gpuprof::session {
namespace {

using ::testing::AllOf;
using testing::DbResultLines;
using ::testing::Each;
using ::testing::ElementsAre;
using testing::FinalDbs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Lines;
using ::testing::Not;
using testing::PartialDbs;
using testing::ProgramResult;
using testing::Query;
using testing::ReadFile;
using testing::RunProgram;
using ::testing::SizeIs;
using ::testing::StartsWith;
using testing::TempDir;

class GpuprofProcessTest : public ::testing::Test {
 protected:
  // `other_library`: a library the scenario loads beside libgpuprof.so (with_copy: a copy of it).
  ProgramResult Run(const std::string& scenario, std::map<std::string, std::string> extra_env = {},
                    bool with_copy = false, const std::string& other_library = "", int expected_signal = 0) {
    std::vector<std::string> argv = {GPUPROF_SESSION_HELPER, scenario, GPUPROF_LIBRARY_PATH};
    if (!other_library.empty()) {
      argv.push_back(other_library);
    } else if (with_copy) {
      // The same library under another name and directory: a second, independent copy.
      const std::string copy = dir_ / "copy/libgpuprof_copy.so";
      std::filesystem::create_directories(dir_ / "copy");
      std::filesystem::copy_file(GPUPROF_LIBRARY_PATH, copy,
                                 std::filesystem::copy_options::overwrite_existing);
      argv.push_back(copy);
    }
    std::map<std::string, std::string> env = {{"GPUPROF_OUTPUT_DIR", dir_ / "out"},
                                              {"GPUPROF_RESULT_FILE", dir_ / "result"},
                                              {"GPUPROF_DEVICE", "0"},
                                              {"GPUPROF_FLUSH_INTERVAL_MS", "10"}};
    if (scenario.rfind("fork", 0) == 0) {
      // A fork child inherits memory that only the stacks of the parent's other threads referenced
      // (they do not exist in the child); LeakSanitizer reports it when the child exits. Such
      // memory was allocated on those threads or by the writer they ran.
      const std::string suppressions = dir_ / "lsan_fork.supp";
      std::ofstream(suppressions)
          << "leak:std_thread.h\nleak:__cxa_thread_atexit_impl\nleak:profile_writer.cc\n"
             "leak:libsqlite3.so\n";
      env["LSAN_OPTIONS"] = "suppressions=" + suppressions + ":print_suppressions=0";
    }
    for (auto& [key, value] : extra_env) env[key] = value;
    ProgramResult result = RunProgram(argv, env, dir_.path());
    if (expected_signal == 0) {
      EXPECT_EQ(result.exit_code, 0) << "signal " << result.signal << "\nstderr:\n" << result.err;
    } else {
      EXPECT_EQ(result.signal, expected_signal) << "exit " << result.exit_code << "\nstderr:\n" << result.err;
    }
    return result;
  }

  std::vector<std::string> ResultLines() { return DbResultLines(dir_ / "result"); }

  TempDir dir_;
};

// Every row's message and pid, as "message|pid", distinct.
std::set<std::string> MessagesAndPids(const std::string& db) {
  std::vector<std::string> rows = Query(db,
                                        "SELECT DISTINCT s.value, m.globalTid >> 32 FROM MSTX_EVENTS m "
                                        "JOIN STRING_IDS s ON s.id = m.message");
  return {rows.begin(), rows.end()};
}

int ChildPid(const ProgramResult& result) {
  for (const std::string& line : Lines(result.out)) {
    if (line.rfind("child ", 0) == 0) return std::stoi(line.substr(6));
  }
  ADD_FAILURE() << "no child pid in the helper's output:\n" << result.out;
  return -1;
}

TEST_F(GpuprofProcessTest, ExitHandlerFinalizesASessionNeverStopped) {
  Run("exit-without-stop");
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(PartialDbs(dir_ / "out"), IsEmpty());
  EXPECT_THAT(testing::MarkMessages(dbs[0]), ElementsAre("before exit"));
  EXPECT_THAT(ResultLines(), ElementsAre("db " + dbs[0]));
}

// SIGTERM, SIGHUP, SIGQUIT and (in a program that does not handle it) SIGINT end a process without
// its exit handlers: the profile is finalized first, then the signal ends the process as it would
// have (issue 21: 0 of 12 SIGTERM'd runs kept their DB).
TEST_F(GpuprofProcessTest, AKillingSignalFinalizesTheProfileThenEndsTheProcess) {
  for (int signal_number : {SIGTERM, SIGHUP, SIGQUIT, SIGINT}) {
    SCOPED_TRACE("signal " + std::to_string(signal_number));
    std::filesystem::remove_all(dir_ / "out");
    ProgramResult result = Run("ended-by-signal", {{"GPUPROF_TEST_SIGNAL", std::to_string(signal_number)}},
                               false, "", signal_number);
    std::vector<std::string> dbs = FinalDbs(dir_ / "out");
    ASSERT_THAT(dbs, SizeIs(1)) << result.err;
    EXPECT_THAT(PartialDbs(dir_ / "out"), IsEmpty());
    EXPECT_THAT(testing::MarkMessages(dbs[0]), ElementsAre("before signal"));
    EXPECT_THAT(result.err, HasSubstr("finalizing the profile"));
  }
}

// A handler the program installed itself is its own: it runs, and the program ends as it chooses.
TEST_F(GpuprofProcessTest, AProgramsOwnSignalHandlerStillRuns) {
  ProgramResult result = Run("handles-signal");
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(testing::MarkMessages(dbs[0]), ElementsAre("after its handler"));
  EXPECT_THAT(result.err, Not(HasSubstr("finalizing the profile")));
}

TEST_F(GpuprofProcessTest, ForkChildNeverTouchesTheParentsDb) {
  ProgramResult result = Run("fork");
  const int child = ChildPid(result);
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1)) << "without follow_children the child writes no DB";
  EXPECT_THAT(PartialDbs(dir_ / "out"), IsEmpty());
  EXPECT_THAT(ResultLines(), ElementsAre("db " + dbs[0]));
  // The parent's DB finalized with the parent's records only: nothing of the child, every row
  // under the parent's pid (the helper's pid is in the run directory's name).
  std::set<std::string> rows = MessagesAndPids(dbs[0]);
  EXPECT_THAT(rows, Each(Not(StartsWith("child-"))));
  ASSERT_FALSE(rows.empty());
  const std::string parent_pid = rows.begin()->substr(rows.begin()->find('|') + 1);
  EXPECT_NE(parent_pid, std::to_string(child));
  EXPECT_THAT(rows, AllOf(::testing::Contains("parent-before|" + parent_pid),
                          ::testing::Contains("parent-after|" + parent_pid),
                          ::testing::Contains("parent-range|" + parent_pid),
                          ::testing::Contains("parent-bg|" + parent_pid)));
  EXPECT_THAT(rows, SizeIs(4));
  EXPECT_THAT(dbs[0], HasSubstr("_" + parent_pid + "_"));
  EXPECT_THAT(Query(dbs[0], "PRAGMA integrity_check"), ElementsAre("ok"));
}

TEST_F(GpuprofProcessTest, FollowChildrenGivesTheChildItsOwnDbUnderItsPid) {
  ProgramResult result = Run("fork", {{"GPUPROF_FOLLOW_CHILDREN", "1"}});
  const std::string child = std::to_string(ChildPid(result));
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(2));
  EXPECT_THAT(PartialDbs(dir_ / "out"), IsEmpty());
  EXPECT_THAT(ResultLines(), SizeIs(2));
  const bool first_is_child = dbs[0].find("_" + child + "_") != std::string::npos;
  const std::string child_db = first_is_child ? dbs[0] : dbs[1];
  const std::string parent_db = first_is_child ? dbs[1] : dbs[0];
  ASSERT_THAT(child_db, HasSubstr("_" + child + "_"));
  EXPECT_THAT(MessagesAndPids(child_db),
              ElementsAre("child-1|" + child, "child-2|" + child, "child-3|" + child));
  // A framework record made in the child carries the child's pid (the cached pid is refreshed at
  // fork), in both halves of globalTid.
  const std::string child_tid = std::to_string((std::stoll(child) << 32) | std::stoll(child));
  EXPECT_THAT(Query(child_db, "SELECT globalTid FROM GC_RECORD"), ElementsAre(child_tid));
  std::set<std::string> parent_rows = MessagesAndPids(parent_db);
  EXPECT_THAT(parent_rows, Each(Not(StartsWith("child-"))));
  EXPECT_THAT(parent_rows, SizeIs(4));
  EXPECT_THAT(Query(parent_db, "PRAGMA integrity_check"), ElementsAre("ok"));
  // The child's run records where it came from.
  EXPECT_THAT(Query(child_db, "SELECT value FROM META_DATA WHERE name = 'gpuprof_config'"),
              ElementsAre(AllOf(HasSubstr("\"started_by\": \"fork\""), HasSubstr("\"parent_pid\": "))));
}

TEST_F(GpuprofProcessTest, FollowedForkChildrenOfABusyWriterAllFinishTheirDbs) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer runtime's allocator is not fork-safe (gcc 12): a child allocating while "
                  "a busy parent thread held its lock hangs, which is what this test provokes";
#endif
  Run("fork-busy", {{"GPUPROF_FOLLOW_CHILDREN", "1"}});
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(31));  // the parent and its 30 children
  EXPECT_THAT(PartialDbs(dir_ / "out"), IsEmpty());
  EXPECT_THAT(ResultLines(), SizeIs(31));
}

TEST_F(GpuprofProcessTest, TwoCopiesOfTheLibraryShareOneSession) {
  Run("two-copies", {}, /*with_copy=*/true);
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(testing::MarkMessages(dbs[0]), ElementsAre("after-b-stopped", "range-via-b", "via-a", "via-b"));
  EXPECT_THAT(testing::Query(dbs[0], "SELECT endNs - startNs FROM GC_RECORD"), ElementsAre("42"))
      << "the GC event recorded through the attached copy";
  EXPECT_THAT(ResultLines(), ElementsAre("db " + dbs[0]));
}

TEST_F(GpuprofProcessTest, CopyLoadedLocallyIsFoundByTheScanOfLoadedObjects) {
  Run("local-copy-first", {}, /*with_copy=*/true);
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(testing::MarkMessages(dbs[0]), ElementsAre("via-global", "via-local"));
}

TEST_F(GpuprofProcessTest, ACopyAttachesToAnOlderCopysSessionAndSaysWhatItCannotForward) {
  Run("older-copy", {}, /*with_copy=*/false, GPUPROF_OLDER_COPY_STUB);
  EXPECT_THAT(FinalDbs(dir_ / "out"), IsEmpty()) << "the older copy owns the session: no DB of our own";
}

TEST_F(GpuprofProcessTest, TwoCopiesAtExitFinalizeOneDb) {
  Run("two-copies-exit", {}, /*with_copy=*/true);
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(PartialDbs(dir_ / "out"), IsEmpty());
  EXPECT_THAT(testing::MarkMessages(dbs[0]), ElementsAre("via-a", "via-b"));
  EXPECT_THAT(ResultLines(), SizeIs(1));
}

}  // namespace
}  // namespace gpuprof::session
