// The C API of libgpuprof.so, called in-process as an application would (linked, not dlopened).
// Each test stops what it started, so the process's session state is clean for the next one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gpuprof/gpuprof_c.h"
#include "unit/session/session_test_util.h"

namespace {

using gpuprof::session::testing::FinalDbs;
using gpuprof::session::testing::MarkMessages;
using gpuprof::session::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const std::string kPid = std::to_string(getpid());

class GpuprofCApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Set before any session reads the environment; no other thread runs yet.
    setenv("GPUPROF_OUTPUT_DIR", (dir_ / "out").c_str(), 1);
    setenv("GPUPROF_RESULT_FILE", (dir_ / "result").c_str(), 1);
    setenv("GPUPROF_DEVICE", "0", 1);
    unsetenv("GPUPROF_CONFIG");
  }
  void TearDown() override {
    while (gpuprof_stop() == GPUPROF_OK) {
    }
  }
  TempDir dir_;
};

TEST_F(GpuprofCApiTest, StartMarkRangeStopWritesOneDb) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_STREQ(gpuprof_last_error(), "");
  EXPECT_EQ(gpuprof_mark("hello"), GPUPROF_OK);
  std::uint64_t range = 0;
  ASSERT_EQ(gpuprof_range_start("step 1", &range), GPUPROF_OK);
  EXPECT_NE(range, 0u);
  EXPECT_EQ(gpuprof_flush(), GPUPROF_OK);
  EXPECT_EQ(gpuprof_range_end(range), GPUPROF_OK);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(MarkMessages(dbs[0]), ElementsAre("hello", "step 1"));
  EXPECT_EQ(gpuprof::session::testing::ReadFile(dir_ / "result"), "db " + dbs[0] + "\n");
}

TEST_F(GpuprofCApiTest, ConfigJsonOverridesTheEnvironment) {
  const std::string json =
      R"({"output_dir": ")" + (dir_ / "json_out") + R"(", "rank": 4, "experiment": "a"})";
  ASSERT_EQ(gpuprof_start(json.c_str()), GPUPROF_OK) << gpuprof_last_error();
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
  std::vector<std::string> dbs = FinalDbs(dir_ / "json_out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(dbs[0], HasSubstr("ascend_pytorch_profiler_4.db"));
  EXPECT_THAT(
      gpuprof::session::testing::Query(dbs[0], "SELECT value FROM META_DATA WHERE name = 'gpuprof_config'"),
      ElementsAre(HasSubstr(R"("experiment": "a")")));
}

TEST_F(GpuprofCApiTest, StartsAreCountedAndTheLastStopFinalizes) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK);
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK);  // joins
  EXPECT_NE(gpuprof_active_session_v1(), nullptr);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
  EXPECT_THAT(FinalDbs(dir_ / "out"), IsEmpty());  // still running
  EXPECT_EQ(gpuprof_mark("still on"), GPUPROF_OK);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
  EXPECT_EQ(gpuprof_active_session_v1(), nullptr);
  ASSERT_THAT(FinalDbs(dir_ / "out"), SizeIs(1));
  EXPECT_EQ(gpuprof_stop(), GPUPROF_ERROR_NOT_STARTED);
}

TEST_F(GpuprofCApiTest, AfterAStopANewStartWritesANewDb) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
  EXPECT_THAT(FinalDbs(dir_ / "out"), SizeIs(2));
  EXPECT_THAT(gpuprof::session::testing::Lines(gpuprof::session::testing::ReadFile(dir_ / "result")),
              SizeIs(2));
}

TEST_F(GpuprofCApiTest, CallsWithoutASessionSayNoneIsRunning) {
  EXPECT_EQ(gpuprof_mark("x"), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_EQ(std::string(gpuprof_last_error()),
            "gpuprof_mark(message=\"x\"): no gpuprof session is running in pid " + kPid);
  std::uint64_t range = 7;
  EXPECT_EQ(gpuprof_range_start("r", &range), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_EQ(range, 0u);
  EXPECT_EQ(gpuprof_range_end(3), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_range_end(range_id=3): no gpuprof session"));
  EXPECT_EQ(gpuprof_flush(), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_EQ(gpuprof_stop(), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_STREQ(gpuprof_last_error(),
               ("gpuprof_stop(): no gpuprof session is running in pid " + kPid).c_str());
}

TEST_F(GpuprofCApiTest, ArgumentsAreValidatedWithContext) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK);
  EXPECT_EQ(gpuprof_mark(nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gpuprof_last_error(), "gpuprof_mark(message=NULL): message is NULL");
  EXPECT_EQ(gpuprof_mark(""), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gpuprof_last_error(), "gpuprof_mark(message=\"\"): message is empty");
  std::string huge(GPUPROF_MAX_MESSAGE_BYTES + 1, 'x');
  EXPECT_EQ(gpuprof_mark(huge.c_str()), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(),
              HasSubstr("x\"...): message is longer than GPUPROF_MAX_MESSAGE_BYTES (65536)"));
  huge.pop_back();
  EXPECT_EQ(gpuprof_mark(huge.c_str()), GPUPROF_OK);  // exactly the limit
  EXPECT_EQ(gpuprof_range_start("r", nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gpuprof_last_error(), "gpuprof_range_start(message=\"r\"): range_id is NULL");
  EXPECT_EQ(gpuprof_range_end(0), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_range_end(range_id=0): 0 is never a range id"));
  EXPECT_EQ(gpuprof_range_end(987654321), GPUPROF_ERROR_RANGE_NOT_FOUND);
  EXPECT_THAT(gpuprof_last_error(),
              HasSubstr("gpuprof_range_end(range_id=987654321): no open range with id 987654321"));
  EXPECT_EQ(gpuprof_mark("fine"), GPUPROF_OK);
  EXPECT_STREQ(gpuprof_last_error(), "");  // a success clears it
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
}

TEST_F(GpuprofCApiTest, InvalidConfigurationIsRejectedWithTheKey) {
  EXPECT_EQ(gpuprof_start(R"({"rank": "zero"})"), GPUPROF_ERROR_INVALID_CONFIG);
  EXPECT_THAT(
      gpuprof_last_error(),
      HasSubstr(
          R"(gpuprof_start("{\"rank\": \"zero\"}"): config json: key "rank" (offset 1) must be an integer)"));
  EXPECT_EQ(gpuprof_start("not json"), GPUPROF_ERROR_INVALID_CONFIG);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("config json: invalid JSON at offset 0"));
  setenv("GPUPROF_RANK", "abc", 1);
  EXPECT_EQ(gpuprof_start(nullptr), GPUPROF_ERROR_INVALID_CONFIG);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("GPUPROF_RANK=\"abc\""));
  unsetenv("GPUPROF_RANK");
  EXPECT_EQ(gpuprof_active_session_v1(), nullptr);
}

TEST_F(GpuprofCApiTest, UnwritableOutputIsAnOutputError) {
  const std::string file = dir_ / "file";
  { std::ofstream(file) << "x"; }
  const std::string json = R"({"output_dir": ")" + file + R"("})";
  EXPECT_EQ(gpuprof_start(json.c_str()), GPUPROF_ERROR_OUTPUT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("starting the profile of pid " + kPid + " in " + file));
}

TEST_F(GpuprofCApiTest, StatusStringsNameEveryCode) {
  EXPECT_STREQ(gpuprof_status_string(GPUPROF_OK), "GPUPROF_OK");
  EXPECT_STREQ(gpuprof_status_string(GPUPROF_ERROR_FORK_CHILD), "GPUPROF_ERROR_FORK_CHILD");
  EXPECT_STREQ(gpuprof_status_string(GPUPROF_ERROR_INTERNAL), "GPUPROF_ERROR_INTERNAL");
  EXPECT_STREQ(gpuprof_status_string(99), "GPUPROF_UNKNOWN_STATUS");
  EXPECT_STREQ(gpuprof_status_string(-1), "GPUPROF_UNKNOWN_STATUS");
}

TEST_F(GpuprofCApiTest, LastErrorIsPerThread) {
  EXPECT_EQ(gpuprof_mark(nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  std::thread other([] {
    EXPECT_STREQ(gpuprof_last_error(), "");
    EXPECT_EQ(gpuprof_mark(""), GPUPROF_ERROR_INVALID_ARGUMENT);
  });
  other.join();
  EXPECT_STREQ(gpuprof_last_error(), "gpuprof_mark(message=NULL): message is NULL");
}

TEST_F(GpuprofCApiTest, RangesMayEndOnAnotherThread) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK);
  std::uint64_t range = 0;
  ASSERT_EQ(gpuprof_range_start("handed over", &range), GPUPROF_OK);
  std::thread other([range] { EXPECT_EQ(gpuprof_range_end(range), GPUPROF_OK) << gpuprof_last_error(); });
  other.join();
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  // Started on this thread, ended on the other.
  EXPECT_THAT(gpuprof::session::testing::Query(dbs[0], "SELECT globalTid != endGlobalTid FROM MSTX_EVENTS"),
              ElementsAre("1"));
}

}  // namespace
