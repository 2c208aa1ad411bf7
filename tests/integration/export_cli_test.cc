// `gpuprof export` as a user meets it first (issue 39): without -o it writes beside the profile
// and says where, never over a file of the user's; the args read like torch's own Chrome trace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
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
using gpuprof::testing::ShellQuote;

// DbCliTest's fixture run; its Run takes the directory to run in.
class ExportCliTest : public gpuprof::testing::DbCliTest {};

TEST_F(ExportCliTest, WithoutOutputWritesBesideTheProfileAndSaysWhere) {
  // From another directory: the trace goes beside the profile, not into the current directory.
  fs::create_directories(dir_ + "/elsewhere");
  CliResult result = Run("export " + ShellQuote(db_), dir_ + "/elsewhere");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string trace = run_dir_ + "/gpuprof_trace.json";
  EXPECT_THAT(result.out, HasSubstr("wrote " + fs::absolute(trace).lexically_normal().string() + " ("));
  EXPECT_TRUE(fixture::ParseJson(fixture::ReadFileBytes(trace)).ok());
  EXPECT_TRUE(fs::is_empty(dir_ + "/elsewhere"));

  // The run directory itself, and again: a trace an earlier export wrote is replaced.
  result = Run("export " + ShellQuote(run_dir_));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("wrote " + trace));
}

TEST_F(ExportCliTest, TheDefaultNeverReplacesAFileGpuprofDidNotWrite) {
  const std::string trace = run_dir_ + "/gpuprof_trace.json";
  { std::ofstream(trace) << "my own notes\n"; }
  CliResult result = Run("export " + ShellQuote(run_dir_));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(trace + " exists and is not a trace gpuprof export wrote"));
  EXPECT_THAT(result.err, HasSubstr("--force"));
  EXPECT_THAT(result.err, HasSubstr("-o FILE"));
  EXPECT_EQ(fixture::ReadFileBytes(trace), "my own notes\n");

  result = Run("export --force " + ShellQuote(run_dir_));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fixture::ParseJson(fixture::ReadFileBytes(trace)).ok());
}

// torch's Chrome trace: "Input Dims": [[8, 16], [16, 32]], "Input type": ["float", "float"];
// not the DB's "8,16;\r\n16,32".
TEST_F(ExportCliTest, InputDimsAndTypesAreArraysAsInTorchsTrace) {
  const std::string trace = dir_ + "/trace.json";
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string text = fixture::ReadFileBytes(trace);
  EXPECT_THAT(text, HasSubstr(R"("Input Dims":[[8, 16], [16, 32]])"));
  EXPECT_THAT(text, HasSubstr(R"("Input type":["float", "float"])"));
  EXPECT_THAT(text, Not(HasSubstr("\\r\\n")));
  gpuprof::StatusOr<fixture::JsonValue> root = fixture::ParseJson(text);
  ASSERT_TRUE(root.ok()) << root.status().message();
  int with_dims = 0;
  for (const fixture::JsonValue& event : root->Find("traceEvents")->array) {
    const fixture::JsonValue* args = event.Find("args");
    const fixture::JsonValue* dims = args == nullptr ? nullptr : args->Find("Input Dims");
    if (dims == nullptr) continue;
    ++with_dims;
    ASSERT_EQ(dims->type, fixture::JsonValue::Type::kArray);
    ASSERT_EQ(dims->array.size(), 2u);
    EXPECT_EQ(dims->array[1].array[1].text, "32");
  }
  EXPECT_EQ(with_dims, 1);
}

TEST_F(ExportCliTest, ScalarInputsAndTextThatIsNotDims) {
  // A scalar input has no dims ([]); a shape text that is not integers stays text.
  ASSERT_TRUE(fixture::ExecSql(db_,
                               "INSERT INTO STRING_IDS VALUES (900001, '4;\r\n;\r\n2,3'), (900002, 's0,8');"
                               "UPDATE PYTORCH_API SET inputShapes = 900001 WHERE name = (SELECT id FROM "
                               "STRING_IDS WHERE value = 'aten::addmm');"
                               "UPDATE PYTORCH_API SET inputShapes = 900002 WHERE name = (SELECT id FROM "
                               "STRING_IDS WHERE value = 'aten::mm');")
                  .ok());
  const std::string trace = dir_ + "/trace.json";
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string text = fixture::ReadFileBytes(trace);
  EXPECT_THAT(text, HasSubstr(R"("Input Dims":[[4], [], [2, 3]])"));
  EXPECT_THAT(text, HasSubstr(R"("Input Dims":"s0,8")"));
}

// The thread_name metadata of `trace`, by tid.
std::map<double, std::string> ThreadNames(const std::string& trace) {
  std::map<double, std::string> names;
  gpuprof::StatusOr<fixture::JsonValue> root = fixture::ParseJson(fixture::ReadFileBytes(trace));
  EXPECT_TRUE(root.ok()) << root.status().message();
  if (!root.ok()) return names;
  for (const fixture::JsonValue& event : root->Find("traceEvents")->array) {
    if (event.Str("ph") == "M" && event.Str("name") == "thread_name" && event.Find("args") != nullptr)
      names[event.Num("tid")] = event.Find("args")->Str("name");
  }
  return names;
}

// Threads as Python names them (issue 39): a Python process's main thread (tid == pid; the
// fixture's pid is 4242) is "MainThread"; torch's own threads (the backward one) have no Python
// name and keep their number; a process without Python ops (a CUDA program, its NVTX marks
// included) keeps numbers.
TEST_F(ExportCliTest, APythonProcesssMainThreadIsMainThread) {
  const std::string trace = dir_ + "/trace.json";
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::map<double, std::string> names = ThreadNames(trace);
  EXPECT_EQ(names[4242], "MainThread");
  EXPECT_EQ(names[4243], "thread 4243");

  // Only an mstx row (50004), as a C++ program's NVTX mark leaves one: not a Python process.
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "DELETE FROM PYTORCH_API WHERE type != 50001 OR rowid != (SELECT MIN(rowid) FROM "
                       "PYTORCH_API); UPDATE PYTORCH_API SET type = 50004;")
          .ok());
  result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  names = ThreadNames(trace);
  ASSERT_TRUE(names.count(4242)) << "the CUDA API calls' thread";
  EXPECT_EQ(names[4242], "thread 4242");
}

// The names the program gave its threads (gpuprof_name_thread_v1: Python's threading names), kept
// in META_DATA gpuprof_thread_names, name every thread they cover; the others keep today's names.
TEST_F(ExportCliTest, ThreadsAreNamedAsThePythonPackageRecordedThem) {
  ASSERT_TRUE(fixture::ExecSql(db_,
                               "INSERT INTO META_DATA VALUES ('gpuprof_thread_names', "
                               "'{\"4243\": \"Thread-1 (worker)\", \"9999\": \"idle\"}');")
                  .ok());
  const std::string trace = dir_ + "/trace.json";
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::map<double, std::string> names = ThreadNames(trace);
  EXPECT_EQ(names[4243], "Thread-1 (worker)");
  EXPECT_EQ(names[4242], "MainThread") << "not in the row: as before";
  EXPECT_EQ(names.count(9999), 0u) << "a named thread without events gets no track";

  // A row that is not such an object: a note, and the threads keep their numbers.
  ASSERT_TRUE(
      fixture::ExecSql(db_, "UPDATE META_DATA SET value = '[1' WHERE name = 'gpuprof_thread_names';").ok());
  result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("gpuprof_thread_names: expected a JSON object"));
  EXPECT_EQ(ThreadNames(trace)[4243], "thread 4243");
}

}  // namespace
