#include "base/logging.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace gpuprof::base {
namespace {

// The level is process-wide: every test that changes it puts the previous one back.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = CurrentLogLevel(); }
  void TearDown() override { SetLogLevel(saved_); }

 private:
  LogLevel saved_ = LogLevel::kWarning;
};

TEST_F(LoggingTest, ParsesEveryLevelNameCaseInsensitively) {
  EXPECT_EQ(ParseLogLevel("debug", LogLevel::kOff), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("info", LogLevel::kOff), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("warning", LogLevel::kOff), LogLevel::kWarning);
  EXPECT_EQ(ParseLogLevel("warn", LogLevel::kOff), LogLevel::kWarning);
  EXPECT_EQ(ParseLogLevel("error", LogLevel::kOff), LogLevel::kError);
  EXPECT_EQ(ParseLogLevel("off", LogLevel::kDebug), LogLevel::kOff);
  EXPECT_EQ(ParseLogLevel("DEBUG", LogLevel::kOff), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("Warning", LogLevel::kOff), LogLevel::kWarning);
}

TEST_F(LoggingTest, UnknownLevelNameYieldsFallback) {
  EXPECT_EQ(ParseLogLevel("", LogLevel::kInfo), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("verbose", LogLevel::kError), LogLevel::kError);
  EXPECT_EQ(ParseLogLevel(" debug", LogLevel::kWarning), LogLevel::kWarning);
}

TEST_F(LoggingTest, LevelNamesRoundTrip) {
  for (LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError, LogLevel::kOff}) {
    EXPECT_EQ(ParseLogLevel(LogLevelName(level), LogLevel::kInfo), level) << LogLevelName(level);
  }
}

TEST_F(LoggingTest, SetLogLevelChangesWhatIsEnabled) {
  SetLogLevel(LogLevel::kInfo);
  EXPECT_EQ(CurrentLogLevel(), LogLevel::kInfo);
  EXPECT_FALSE(LogEnabled(LogLevel::kDebug));
  EXPECT_TRUE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));

  SetLogLevel(LogLevel::kOff);
  EXPECT_FALSE(LogEnabled(LogLevel::kError));
}

// What a user reads (issue 39): the level in words and the text, no "file.cc:line" of gpuprof's.
TEST_F(LoggingTest, UserFacingLinesCarryNoSourceLocation) {
  for (LogLevel level : {LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    SetLogLevel(level);
    ScopedLogCapture capture;
    GPUPROF_LOG(kError) << "replay declined for k1: " << 3;
    ASSERT_EQ(capture.lines().size(), 1u);
    EXPECT_EQ(capture.lines()[0], "[gpuprof] error: replay declined for k1: 3");
    EXPECT_EQ(capture.lines()[0].find(".cc:"), std::string::npos) << capture.lines()[0];
  }
  SetLogLevel(LogLevel::kWarning);
  ScopedLogCapture capture;
  GPUPROF_LOG(kWarning) << "w";
  GPUPROF_LOG(kInfo) << "not shown";
  ASSERT_EQ(capture.lines().size(), 1u);
  EXPECT_EQ(capture.lines()[0], "[gpuprof] warning: w");
}

// GPUPROF_LOG_LEVEL=debug is the developer's: every line then says where it came from.
TEST_F(LoggingTest, DebugLevelLinesHaveLevelLetterFileAndLine) {
  SetLogLevel(LogLevel::kDebug);
  ScopedLogCapture capture;
  std::string kernel = "k1";
  GPUPROF_LOG(kWarning) << "replay declined for " << kernel << ": " << 3;
  const int line = __LINE__ - 1;

  ASSERT_EQ(capture.lines().size(), 1u);
  EXPECT_EQ(capture.lines()[0],
            "[gpuprof] W logging_test.cc:" + std::to_string(line) + "] replay declined for k1: 3");
}

TEST_F(LoggingTest, EachLevelHasItsLetterAtDebugLevel) {
  SetLogLevel(LogLevel::kDebug);
  ScopedLogCapture capture;
  GPUPROF_LOG(kDebug) << "d";
  GPUPROF_LOG(kInfo) << "i";
  GPUPROF_LOG(kWarning) << "w";
  GPUPROF_LOG(kError) << "e";

  ASSERT_EQ(capture.lines().size(), 4u);
  EXPECT_EQ(capture.lines()[0].rfind("[gpuprof] D ", 0), 0u) << capture.lines()[0];
  EXPECT_EQ(capture.lines()[1].rfind("[gpuprof] I ", 0), 0u) << capture.lines()[1];
  EXPECT_EQ(capture.lines()[2].rfind("[gpuprof] W ", 0), 0u) << capture.lines()[2];
  EXPECT_EQ(capture.lines()[3].rfind("[gpuprof] E ", 0), 0u) << capture.lines()[3];
}

TEST_F(LoggingTest, MessagesBelowLevelAreNotEmitted) {
  SetLogLevel(LogLevel::kWarning);
  ScopedLogCapture capture;
  GPUPROF_LOG(kDebug) << "debug line";
  GPUPROF_LOG(kInfo) << "info line";
  GPUPROF_LOG(kWarning) << "warning line";
  GPUPROF_LOG(kError) << "error line";

  EXPECT_EQ(capture.Count("debug line"), 0);
  EXPECT_EQ(capture.Count("info line"), 0);
  EXPECT_EQ(capture.Count("warning line"), 1);
  EXPECT_EQ(capture.Count("error line"), 1);
  EXPECT_EQ(capture.lines().size(), 2u);
}

TEST_F(LoggingTest, MessagesBelowLevelAreNotFormatted) {
  int calls = 0;
  auto describe = [&calls] {
    ++calls;
    return std::string("expensive");
  };

  SetLogLevel(LogLevel::kError);
  ScopedLogCapture capture;
  GPUPROF_LOG(kInfo) << describe();
  GPUPROF_LOG(kWarning) << describe();
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(capture.lines().empty());

  GPUPROF_LOG(kError) << describe();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(capture.Count("expensive"), 1);
}

TEST_F(LoggingTest, OffEmitsNothing) {
  SetLogLevel(LogLevel::kOff);
  ScopedLogCapture capture;
  GPUPROF_LOG(kError) << "nothing";
  EXPECT_TRUE(capture.lines().empty());
}

TEST_F(LoggingTest, LogInUnbracedIfElseBindsToTheCallersIf) {
  SetLogLevel(LogLevel::kDebug);
  ScopedLogCapture capture;
  bool took_else = false;
  for (bool condition : {true, false}) {
    if (condition)
      GPUPROF_LOG(kInfo) << "then-branch";
    else
      took_else = true;
  }
  EXPECT_TRUE(took_else);
  EXPECT_EQ(capture.Count("then-branch"), 1);
}

TEST_F(LoggingTest, EmitLogLineWritesOneLineWithTheFileBaseName) {
  SetLogLevel(LogLevel::kDebug);
  ScopedLogCapture capture;
  EmitLogLine(LogLevel::kError, "/a/b/c/session.cc", 77, "text");
  ASSERT_EQ(capture.lines().size(), 1u);
  EXPECT_EQ(capture.lines()[0], "[gpuprof] E session.cc:77] text");
}

TEST_F(LoggingTest, CaptureSeesOnlyLinesEmittedWhileInstalled) {
  SetLogLevel(LogLevel::kInfo);
  GPUPROF_LOG(kInfo) << "before";
  std::optional<ScopedLogCapture> capture(std::in_place);
  GPUPROF_LOG(kInfo) << "during";
  std::vector<std::string> lines = capture->lines();
  capture.reset();
  GPUPROF_LOG(kInfo) << "after";

  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("during"), std::string::npos);
}

TEST_F(LoggingTest, NestedCaptureTakesLinesAndRestoresOuterOnExit) {
  SetLogLevel(LogLevel::kInfo);
  ScopedLogCapture outer;
  GPUPROF_LOG(kInfo) << "one";
  {
    ScopedLogCapture inner;
    GPUPROF_LOG(kInfo) << "two";
    EXPECT_EQ(inner.Count("two"), 1);
    EXPECT_EQ(inner.lines().size(), 1u);
  }
  GPUPROF_LOG(kInfo) << "three";

  EXPECT_EQ(outer.Count("one"), 1);
  EXPECT_EQ(outer.Count("two"), 0);
  EXPECT_EQ(outer.Count("three"), 1);
}

TEST_F(LoggingTest, CountMatchesSubstrings) {
  SetLogLevel(LogLevel::kInfo);
  ScopedLogCapture capture;
  GPUPROF_LOG(kWarning) << "declined: graph launch";
  GPUPROF_LOG(kWarning) << "declined: stream capture";
  GPUPROF_LOG(kWarning) << "replayed";
  EXPECT_EQ(capture.Count("declined"), 2);
  EXPECT_EQ(capture.Count("graph"), 1);
  EXPECT_EQ(capture.Count("absent"), 0);
}

// GPUPROF_LOG_LEVEL is read once, on first use, so it is tested in a fresh process: the
// "threadsafe" death-test style re-executes this binary for the statement, and the statement
// is the child's first use of logging.
TEST(LoggingDeathTest, LevelComesFromEnvironmentOnFirstUseOnly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* original = std::getenv("GPUPROF_LOG_LEVEL");
  std::optional<std::string> saved =
      original == nullptr ? std::nullopt : std::optional<std::string>(original);

  ASSERT_EQ(setenv("GPUPROF_LOG_LEVEL", "Debug", /*overwrite=*/1), 0);
  EXPECT_EXIT(
      {
        bool first_read_is_debug = CurrentLogLevel() == LogLevel::kDebug;
        setenv("GPUPROF_LOG_LEVEL", "error", 1);
        bool still_debug = CurrentLogLevel() == LogLevel::kDebug;
        std::exit(first_read_is_debug && still_debug ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  ASSERT_EQ(setenv("GPUPROF_LOG_LEVEL", "nonsense", 1), 0);
  EXPECT_EXIT(std::exit(CurrentLogLevel() == LogLevel::kWarning ? 0 : 1), ::testing::ExitedWithCode(0), "")
      << "an unknown GPUPROF_LOG_LEVEL falls back to warning";
  ASSERT_EQ(unsetenv("GPUPROF_LOG_LEVEL"), 0);
  EXPECT_EXIT(std::exit(CurrentLogLevel() == LogLevel::kWarning ? 0 : 1), ::testing::ExitedWithCode(0), "")
      << "the default level is warning";

  if (saved) setenv("GPUPROF_LOG_LEVEL", saved->c_str(), 1);
}

}  // namespace
}  // namespace gpuprof::base
