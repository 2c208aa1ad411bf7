// libgpuprof_inject.so on CPU: inject_host plays the CUDA driver and calls InitializeInjection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "unit/session/session_test_util.h"

namespace gpuprof::session {
namespace {

using testing::CountOccurrences;
using testing::DbResultLines;
using ::testing::ElementsAre;
using testing::FinalDbs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Lines;
using testing::MarkMessages;
using testing::ProgramResult;
using testing::ReadFile;
using testing::RunProgram;
using ::testing::SizeIs;
using testing::TempDir;

// stdout of a command, or nullopt when it cannot run.
std::optional<std::string> Capture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  if (pclose(pipe) != 0) return std::nullopt;
  return out;
}

// Names of the defined dynamic symbols of a shared object (nm -D --defined-only).
std::optional<std::vector<std::string>> ExportedSymbols(const std::string& library) {
  std::optional<std::string> out = Capture("nm -D --defined-only '" + library + "' 2>/dev/null");
  if (!out) return std::nullopt;
  std::vector<std::string> names;
  for (const std::string& line : Lines(*out)) {
    const std::size_t space = line.rfind(' ');
    if (space != std::string::npos) names.push_back(line.substr(space + 1));
  }
  return names;
}

class InjectTest : public ::testing::Test {
 protected:
  ProgramResult Host(const std::string& inject, std::map<std::string, std::string> extra_env, int marks = 3) {
    std::map<std::string, std::string> env = {{"GPUPROF_OUTPUT_DIR", dir_ / "out"},
                                              {"GPUPROF_RESULT_FILE", dir_ / "result"},
                                              {"GPUPROF_DEVICE", "0"}};
    for (auto& [key, value] : extra_env) env[key] = value;
    return RunProgram({GPUPROF_INJECT_HOST, inject, std::to_string(marks), "42"}, env, dir_.path());
  }
  // The injection library alone in a directory of its own (no libgpuprof.so beside it).
  std::string LonelyInject() {
    std::filesystem::create_directories(dir_ / "alone");
    const std::string copy = dir_ / "alone/libgpuprof_inject.so";
    std::filesystem::copy_file(GPUPROF_INJECT_PATH, copy, std::filesystem::copy_options::overwrite_existing);
    return copy;
  }
  TempDir dir_;
};

TEST_F(InjectTest, InitializeInjectionStartsTheSessionAndExitFinalizesIt) {
  ProgramResult result = Host(GPUPROF_INJECT_PATH, {});
  EXPECT_EQ(result.exit_code, 42) << result.err;
  EXPECT_EQ(CountOccurrences(result.err, "[gpuprof]"), 0) << result.err;
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1)) << result.err;
  EXPECT_THAT(MarkMessages(dbs[0]), ElementsAre("host-mark-0", "host-mark-1", "host-mark-2"));
  EXPECT_THAT(DbResultLines(dir_ / "result"), ElementsAre("db " + dbs[0]));
  EXPECT_THAT(testing::Query(dbs[0], "SELECT value FROM META_DATA WHERE name = 'gpuprof_config'"),
              ElementsAre(HasSubstr("\"started_by\": \"injection\"")));
}

TEST_F(InjectTest, GpuprofLibraryNamesTheLibraryToLoad) {
  ProgramResult result = Host(LonelyInject(), {{"GPUPROF_LIBRARY", GPUPROF_LIBRARY_PATH}});
  EXPECT_EQ(result.exit_code, 42) << result.err;
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(1)) << result.err;
}

TEST_F(InjectTest, MissingLibraryIsOneLineAndTheProgramRunsOn) {
  ProgramResult result = Host(GPUPROF_INJECT_PATH, {{"GPUPROF_LIBRARY", "/nonexistent/libgpuprof.so"}});
  EXPECT_EQ(result.exit_code, 42);
  EXPECT_EQ(CountOccurrences(result.err, "[gpuprof]"), 1) << result.err;
  EXPECT_EQ(Lines(result.err).size(), 1u) << result.err;
  EXPECT_THAT(result.err, HasSubstr("cannot load /nonexistent/libgpuprof.so (from GPUPROF_LIBRARY)"));
  EXPECT_THAT(result.err, HasSubstr("the application runs without profiling"));
  EXPECT_EQ(result.out, "no gpuprof_mark\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
}

TEST_F(InjectTest, NoLibraryBesideOrOnTheSearchPathIsOneLine) {
  ProgramResult result = Host(LonelyInject(), {{"LD_LIBRARY_PATH", dir_ / "alone"}});
  EXPECT_EQ(result.exit_code, 42);
  EXPECT_EQ(Lines(result.err).size(), 1u) << result.err;
  EXPECT_THAT(result.err, HasSubstr("[gpuprof] injection (pid "));
  EXPECT_THAT(result.err, HasSubstr("cannot load libgpuprof.so (from the loader's search path)"));
}

TEST_F(InjectTest, LogLevelOffSilencesTheFailureLine) {
  ProgramResult result = Host(
      GPUPROF_INJECT_PATH, {{"GPUPROF_LIBRARY", "/nonexistent/libgpuprof.so"}, {"GPUPROF_LOG_LEVEL", "off"}});
  EXPECT_EQ(result.exit_code, 42);
  EXPECT_EQ(result.err, "");
}

TEST_F(InjectTest, InvalidConfigurationIsOneLineAndNoProfile) {
  ProgramResult result = Host(GPUPROF_INJECT_PATH, {{"GPUPROF_RANK", "abc"}});
  EXPECT_EQ(result.exit_code, 42);
  EXPECT_EQ(CountOccurrences(result.err, "[gpuprof]"), 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("profiling is off for pid"));
  EXPECT_THAT(result.err, HasSubstr("gpuprof_start_from_environment(): GPUPROF_RANK=\"abc\""));
  EXPECT_THAT(FinalDbs(dir_ / "out"), IsEmpty());
  EXPECT_EQ(result.out, "mark 0 refused\nmark 1 refused\nmark 2 refused\n");
}

TEST_F(InjectTest, TheProcessGpuprofRunStartedIsProfiled) {
  ProgramResult result = Host(GPUPROF_INJECT_PATH, {{"GPUPROF_ROOT_PID", testing::kOwnPid}});
  EXPECT_EQ(result.exit_code, 42) << result.err;
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(1)) << result.err;
}

TEST_F(InjectTest, DescendantOfTheProfiledProcessIsSkippedWithoutFollowChildren) {
  // GPUPROF_ROOT_PID names another process: this one was exec'd by the application.
  ProgramResult result =
      Host(GPUPROF_INJECT_PATH, {{"GPUPROF_ROOT_PID", "1"}, {"GPUPROF_FOLLOW_CHILDREN", "0"}});
  EXPECT_EQ(result.exit_code, 42);
  EXPECT_EQ(result.err, "");  // not a failure: nothing to say at the default log level
  EXPECT_THAT(FinalDbs(dir_ / "out"), IsEmpty());
  EXPECT_EQ(result.out, "mark 0 refused\nmark 1 refused\nmark 2 refused\n");
}

TEST_F(InjectTest, DescendantIsProfiledWithFollowChildren) {
  ProgramResult result =
      Host(GPUPROF_INJECT_PATH, {{"GPUPROF_ROOT_PID", "1"}, {"GPUPROF_FOLLOW_CHILDREN", "1"}});
  EXPECT_EQ(result.exit_code, 42) << result.err;
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(1)) << result.err;
}

// gpuprof's Python start-up code marks torchrun's launcher: GPUPROF_SKIP_PID = its pid. Its ranks
// inherit the variable but have other pids.
TEST_F(InjectTest, TheProcessNamedBySkipPidIsNotProfiledAndOthersAre) {
  ProgramResult skipped = Host(GPUPROF_INJECT_PATH, {{"GPUPROF_SKIP_PID", testing::kOwnPid}});
  EXPECT_EQ(skipped.exit_code, 42) << skipped.err;
  EXPECT_THAT(FinalDbs(dir_ / "out"), IsEmpty());
  ProgramResult other = Host(GPUPROF_INJECT_PATH, {{"GPUPROF_SKIP_PID", "1"}});
  EXPECT_EQ(other.exit_code, 42) << other.err;
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(1)) << other.err;
}

TEST_F(InjectTest, SecondCallIsANoOp) {
  ProgramResult result = Host(GPUPROF_INJECT_PATH, {{"HOST_CALL_TWICE", "1"}});
  EXPECT_EQ(result.exit_code, 42) << result.err;
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(1));
  EXPECT_THAT(DbResultLines(dir_ / "result"), SizeIs(1));
}

TEST_F(InjectTest, ExportsOnlyInitializeInjection) {
  std::optional<std::vector<std::string>> symbols = ExportedSymbols(GPUPROF_INJECT_PATH);
  if (!symbols) GTEST_SKIP() << "nm is not available";
  EXPECT_THAT(*symbols, ElementsAre("InitializeInjection"));
}

TEST_F(InjectTest, NeedsNoGpuprofSqliteOrCudaLibrary) {
  std::optional<std::string> dynamic =
      Capture("readelf -d '" + std::string(GPUPROF_INJECT_PATH) + "' 2>/dev/null");
  if (!dynamic) GTEST_SKIP() << "readelf is not available";
  std::string needed;
  for (const std::string& line : Lines(*dynamic)) {
    if (line.find("(NEEDED)") != std::string::npos) needed += line + "\n";
  }
  EXPECT_THAT(needed, HasSubstr("libc.so"));
  for (const char* library : {"libgpuprof", "libsqlite3", "libcuda", "libcupti", "libstdc++"}) {
    EXPECT_THAT(needed, ::testing::Not(HasSubstr(library))) << needed;
  }
}

TEST(GpuprofLibraryTest, ExportsOnlyTheCApi) {
  std::optional<std::vector<std::string>> symbols = ExportedSymbols(GPUPROF_LIBRARY_PATH);
  if (!symbols) GTEST_SKIP() << "nm is not available";
  EXPECT_THAT(*symbols, ::testing::Each(::testing::StartsWith("gpuprof_")));
  EXPECT_THAT(*symbols, ::testing::IsSupersetOf(
                            {"gpuprof_start", "gpuprof_start_from_environment", "gpuprof_stop",
                             "gpuprof_flush", "gpuprof_mark", "gpuprof_range_start", "gpuprof_range_end",
                             "gpuprof_last_error", "gpuprof_status_string", "gpuprof_active_session_v1"}));
}

}  // namespace
}  // namespace gpuprof::session
