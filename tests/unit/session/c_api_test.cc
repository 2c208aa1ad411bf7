// The C API of libgpuprof.so, called in-process as an application would (linked, not dlopened).
// Each test stops what it started, so the process's session state is clean for the next one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
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
using ::testing::UnorderedElementsAre;

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
  EXPECT_THAT(gpuprof::session::testing::DbResultLines(dir_ / "result"),
              ::testing::ElementsAre("db " + dbs[0]));
}

TEST_F(GpuprofCApiTest, AWindowDbHoldsWhatWasCollectedBetweenItsBeginAndEnd) {
  char path[4096] = {};
  EXPECT_EQ(gpuprof_window_begin_v1((dir_ / "window").c_str()), GPUPROF_ERROR_NOT_STARTED);
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_window_end_v1(), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("no window DB"));
  EXPECT_EQ(gpuprof_window_db_v1(path, sizeof(path)), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_EQ(gpuprof_window_begin_v1(""), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuprof_mark("before"), GPUPROF_OK);
  // A window nobody reads is deleted unfinalized by the next one.
  ASSERT_EQ(gpuprof_window_begin_v1((dir_ / "unread").c_str()), GPUPROF_OK) << gpuprof_last_error();
  ASSERT_EQ(gpuprof_window_end_v1(), GPUPROF_OK) << gpuprof_last_error();
  ASSERT_EQ(gpuprof_window_begin_v1((dir_ / "window").c_str()), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_window_begin_v1((dir_ / "window").c_str()), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("already"));
  EXPECT_EQ(gpuprof_mark("inside"), GPUPROF_OK);
  ASSERT_EQ(gpuprof_window_end_v1(), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_mark("after"), GPUPROF_OK);
  ASSERT_EQ(gpuprof_window_db_v1(path, 4), GPUPROF_ERROR_INVALID_ARGUMENT);  // finalized, but too long
  ASSERT_EQ(gpuprof_window_db_v1(path, sizeof(path)), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_THAT(FinalDbs(dir_ / "window"), ElementsAre(std::string(path)));
  EXPECT_THAT(MarkMessages(path), ElementsAre("inside"));
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_THAT(FinalDbs(dir_ / "unread"), IsEmpty());
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(MarkMessages(dbs[0]),
              UnorderedElementsAre("before", "inside", "after"));  // the run's DB is whole
}

// gpuprof_mark_v1 / gpuprof_range_start_v1: the domain is kept; a device-linked range whose thread
// launched nothing (no device here) stays host-only; a marker takes no flag, a range no unknown one.
TEST_F(GpuprofCApiTest, MstxV1KeepsTheDomainAndRefusesBadFlags) {
  gpuprof_mstx_v1 mark{sizeof(gpuprof_mstx_v1), 0, "loaded", "io", 0};
  EXPECT_EQ(gpuprof_mark_v1(&mark), GPUPROF_ERROR_NOT_STARTED);
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_mark_v1(&mark), GPUPROF_OK) << gpuprof_last_error();
  gpuprof_mstx_v1 range{sizeof(gpuprof_mstx_v1), GPUPROF_MSTX_STREAM, "1024-mm", "mfu_flops", 0};
  uint64_t id = 0;
  ASSERT_EQ(gpuprof_range_start_v1(&range, &id), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_range_end(id), GPUPROF_OK) << gpuprof_last_error();
  range.domain = nullptr;
  range.flags = GPUPROF_MSTX_DEVICE;
  ASSERT_EQ(gpuprof_range_start_v1(&range, &id), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_range_end(id), GPUPROF_OK) << gpuprof_last_error();
  mark.flags = GPUPROF_MSTX_DEVICE;
  EXPECT_EQ(gpuprof_mark_v1(&mark), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("flags"));
  range.flags = 4;
  EXPECT_EQ(gpuprof_range_start_v1(&range, &id), GPUPROF_ERROR_INVALID_ARGUMENT);
  range.flags = 0;
  range.size = 8;
  EXPECT_EQ(gpuprof_range_start_v1(&range, &id), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_mstx_v1.size"));
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(
      gpuprof::session::testing::Query(
          dbs[0],
          "SELECT m.value, d.value, e.eventType, e.connectionId = 4294967295 FROM MSTX_EVENTS e "
          "JOIN STRING_IDS d ON d.id = e.domainId JOIN STRING_IDS m ON m.id = e.message ORDER BY e.startNs"),
      ElementsAre("loaded|io|3|0", "1024-mm|mfu_flops|2|1", "1024-mm|default|2|1"));
}

TEST_F(GpuprofCApiTest, RecordedRangesKeepTheirDomainTimesAndThread) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  gpuprof_range_v1 range{};
  range.size = sizeof(range);
  range.start_ns = 1'700'000'000'000'000'000;
  range.end_ns = range.start_ns + 250;
  range.tid = 4242;
  range.domain = "Module";
  range.message = "Linear";
  EXPECT_EQ(gpuprof_record_range_v1(&range), GPUPROF_OK) << gpuprof_last_error();
  range.domain = "";
  EXPECT_EQ(gpuprof_record_range_v1(&range), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("domain"));
  range.domain = "Module";
  range.end_ns = range.start_ns - 1;
  EXPECT_EQ(gpuprof_record_range_v1(&range), GPUPROF_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(gpuprof::session::testing::Query(
                  dbs[0],
                  "SELECT e.endNs - e.startNs, e.globalTid & 4294967295, d.value, m.value, t.name "
                  "FROM MSTX_EVENTS e JOIN STRING_IDS d ON d.id = e.domainId JOIN STRING_IDS m ON "
                  "m.id = e.message JOIN ENUM_MSTX_EVENT_TYPE t ON t.id = e.eventType"),
              ElementsAre("250|4242|Module|Linear|start/end"));
}

// gpuprof_name_thread_v1: one META_DATA row of every name (docs/db_gpuprof_tables.md), the latest
// name of a tid kept, JSON-escaped; bad arguments refused.
TEST_F(GpuprofCApiTest, ThreadNamesGoToOneMetaDataRow) {
  EXPECT_EQ(gpuprof_name_thread_v1(4242, "MainThread"), GPUPROF_ERROR_NOT_STARTED);
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_name_thread_v1(4243, "Thread-1"), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_name_thread_v1(4243, "Thread-1 (\"worker\")"), GPUPROF_OK);
  EXPECT_EQ(gpuprof_name_thread_v1(4242, "MainThread"), GPUPROF_OK);
  EXPECT_EQ(gpuprof_name_thread_v1(0, "x"), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_name_thread_v1(0, \"x\"): tid"));
  EXPECT_EQ(gpuprof_name_thread_v1(1, ""), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuprof_name_thread_v1(1, nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  EXPECT_THAT(gpuprof::session::testing::Query(
                  dbs[0], "SELECT value FROM META_DATA WHERE name = 'gpuprof_thread_names'"),
              ElementsAre(R"x({"4242": "MainThread", "4243": "Thread-1 (\"worker\")"})x"));
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
  EXPECT_THAT(gpuprof::session::testing::DbResultLines(dir_ / "result"), SizeIs(2));
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
  EXPECT_STREQ(gpuprof_status_string(GPUPROF_ERROR_UNAVAILABLE), "GPUPROF_ERROR_UNAVAILABLE");
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

// The framework records the PyTorch extension writes (issue 6): ops with a step, a forward/backward
// pair and shapes, allocator events with their totals, and a GC pause land in the seed's tables.
TEST_F(GpuprofCApiTest, FrameworkRecordsFillTheSeedTables) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  const std::int64_t t0 = 1'700'000'000'000'000'000;
  const auto tid = static_cast<std::uint32_t>(gettid());
  auto op = [&](const char* name, std::int64_t start, std::int64_t end, std::int64_t seq, std::uint64_t fwd) {
    gpuprof_torch_op_v1 record{};
    record.size = sizeof(record);
    record.tid = tid;
    record.start_ns = t0 + start;
    record.end_ns = t0 + end;
    record.name = name;
    record.sequence_number = seq;
    record.fwd_thread_id = fwd;
    record.type = GPUPROF_TORCH_OP;
    return record;
  };
  gpuprof_torch_op_v1 step = op("ProfilerStep#1", 0, 1000, -1, 0);
  gpuprof_torch_op_v1 forward = op("aten::addmm", 100, 400, 7, 0);
  forward.input_dtypes = "float;float;float";
  forward.input_shapes = "[4, 8];[4, 16];[16, 8]";
  const char* frames[] = {"train.py(12): forward", "train.py(30): <module>"};
  forward.call_stack = frames;
  forward.call_stack_depth = 2;
  gpuprof_torch_op_v1 backward = op("AddmmBackward0", 500, 900, 7, tid);
  for (gpuprof_torch_op_v1* record : {&forward, &backward, &step}) {
    ASSERT_EQ(gpuprof_record_torch_op_v1(record), GPUPROF_OK) << gpuprof_last_error();
  }
  gpuprof_allocator_event_v1 malloc_event{};
  malloc_event.size = sizeof(malloc_event);
  malloc_event.tid = tid;
  malloc_event.time_ns = t0 + 150;
  malloc_event.device = 0;
  malloc_event.action = GPUPROF_ALLOC_MALLOC;
  malloc_event.ptr = 0x1000;
  malloc_event.bytes = 512;
  malloc_event.total_allocated = 512;
  malloc_event.total_reserved = 2048;
  malloc_event.total_active = 512;
  gpuprof_allocator_event_v1 free_event = malloc_event;
  free_event.time_ns = t0 + 950;
  free_event.action = GPUPROF_ALLOC_FREE;
  free_event.total_allocated = 0;
  free_event.total_active = 0;
  ASSERT_EQ(gpuprof_record_allocator_event_v1(&malloc_event), GPUPROF_OK) << gpuprof_last_error();
  ASSERT_EQ(gpuprof_record_allocator_event_v1(&free_event), GPUPROF_OK) << gpuprof_last_error();
  gpuprof_gc_event_v1 gc{};
  gc.size = sizeof(gc);
  gc.start_ns = t0 + 960;
  gc.end_ns = t0 + 990;
  ASSERT_EQ(gpuprof_record_gc_event_v1(&gc), GPUPROF_OK) << gpuprof_last_error();
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();

  std::vector<std::string> dbs = FinalDbs(dir_ / "out");
  ASSERT_THAT(dbs, SizeIs(1));
  using gpuprof::session::testing::Query;
  EXPECT_THAT(
      Query(dbs[0],
            "SELECT s.value FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name ORDER BY p.startNs"),
      ElementsAre("ProfilerStep#1", "aten::addmm", "AddmmBackward0"));
  EXPECT_THAT(Query(dbs[0],
                    "SELECT d.value || ' ' || sh.value FROM PYTORCH_API p JOIN STRING_IDS d ON d.id = "
                    "p.inputDtypes JOIN STRING_IDS sh ON sh.id = p.inputShapes"),
              ElementsAre("float;float;float [4, 8];[4, 16];[16, 8]"));
  EXPECT_THAT(Query(dbs[0], "SELECT COUNT(*) FROM PYTORCH_CALLCHAINS"), ElementsAre("2"));
  EXPECT_THAT(Query(dbs[0], "SELECT id, startNs - " + std::to_string(t0) + ", endNs - " + std::to_string(t0) +
                                " FROM STEP_TIME"),
              ElementsAre("1|0|1000"));
  // The pair shares one connection id; the forward op has fwdThreadId 0, the backward one not.
  EXPECT_THAT(Query(dbs[0],
                    "SELECT COUNT(DISTINCT c.connectionId) FROM PYTORCH_API p JOIN CONNECTION_IDS c ON "
                    "c.id = p.connectionId WHERE p.sequenceNumber = 7"),
              ElementsAre("1"));
  EXPECT_THAT(
      Query(dbs[0], "SELECT fwdThreadId != 0 FROM PYTORCH_API WHERE sequenceNumber = 7 ORDER BY startNs"),
      ElementsAre("0", "1"));
  EXPECT_THAT(Query(dbs[0],
                    "SELECT totalAllocated, totalReserved, totalActive FROM MEMORY_RECORD ORDER BY "
                    "timestamp"),
              ElementsAre("512|2048|512", "0|2048|0"));
  EXPECT_THAT(Query(dbs[0], "SELECT size FROM OP_MEMORY"), ElementsAre("512"));
  EXPECT_THAT(Query(dbs[0], "SELECT endNs - startNs FROM GC_RECORD"), ElementsAre("30"));
}

TEST_F(GpuprofCApiTest, FrameworkRecordArgumentsAreValidated) {
  ASSERT_EQ(gpuprof_start(nullptr), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_record_torch_op_v1(nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_torch_op_v1 is NULL"));
  gpuprof_torch_op_v1 op{};
  op.size = 8;
  EXPECT_EQ(gpuprof_record_torch_op_v1(&op), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("set it to sizeof(gpuprof_torch_op_v1)"));
  op.size = sizeof(op);
  op.type = GPUPROF_TORCH_OP;
  op.start_ns = 1'700'000'000'000'000'000;
  op.end_ns = op.start_ns + 1;
  EXPECT_EQ(gpuprof_record_torch_op_v1(&op), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("name is NULL or empty"));
  op.name = "aten::relu";
  op.end_ns = op.start_ns - 1;
  EXPECT_EQ(gpuprof_record_torch_op_v1(&op), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("is before start_ns"));
  op.end_ns = op.start_ns + 1;
  op.call_stack_depth = 3;
  EXPECT_EQ(gpuprof_record_torch_op_v1(&op), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("call_stack is NULL"));
  op.call_stack_depth = 0;
  op.type = 7;
  EXPECT_EQ(gpuprof_record_torch_op_v1(&op), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("type 7"));
  gpuprof_allocator_event_v1 event{};
  event.size = sizeof(event);
  event.time_ns = 1;
  event.action = 9;
  EXPECT_EQ(gpuprof_record_allocator_event_v1(&event), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("action 9"));
  gpuprof_gc_event_v1 gc{};
  gc.size = sizeof(gc);
  EXPECT_EQ(gpuprof_record_gc_event_v1(&gc), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("start_ns must be Unix-epoch"));
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK);
}

TEST_F(GpuprofCApiTest, DeviceCorrelationIsOfferedOnlyWhileASessionCollectsDeviceActivity) {
  gpuprof_device_correlation_v1 correlation{};
  EXPECT_EQ(gpuprof_get_device_correlation_v1(nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuprof_get_device_correlation_v1(&correlation), GPUPROF_ERROR_NOT_STARTED);
  // A session without device collection (this build or machine has no GPU): nothing to tag.
  ASSERT_EQ(gpuprof_start("{\"device\": false}"), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_get_device_correlation_v1(&correlation), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("no device activity"));
  EXPECT_EQ(correlation.push, nullptr);
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
}

TEST_F(GpuprofCApiTest, ReplayConfigurationIsCheckedThenDeclinedWithoutDeviceCollection) {
  gpuprof_replay_config_v1 config{};
  EXPECT_EQ(gpuprof_configure_replay_v1(nullptr), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("config->size is 0"));
  config.size = sizeof(config);
  config.passes = 0;
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(),
              HasSubstr("replay_passes=0: the replay passes must be an integer from 2 to 1000"));
  config.passes = 3;
  config.kernel = "regex:(";
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("not a valid regular expression"));
  config.kernel = "regex:gemm";
  // Issue 19's appended fields: checked against the catalog; a caller's shorter struct has none.
  config.section = "SpeedOfDark";
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(),
              HasSubstr("replay_section=\"SpeedOfDark\": unknown entry \"SpeedOfDark\""));
  config.size = offsetof(gpuprof_replay_config_v1, reserved2);
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_NOT_STARTED) << "the section is not read";
  config.size = sizeof(config);
  config.section = "SpeedOfLight";
  config.set = "detailed";
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("replay_set=\"detailed\": expected one of none, basic, full"));
  config.set = "basic";
  config.metrics = "dram__bytes_read.sum";
  config.clock_control = "locked";
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("replay_clock_control=\"locked\": expected one of none, base"));
  config.size = offsetof(gpuprof_replay_config_v1, clock_control);
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_NOT_STARTED) << "clock_control is not read";
  config.size = sizeof(config);
  config.clock_control = "base";
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_NOT_STARTED) << "no session";
  ASSERT_EQ(gpuprof_start("{\"device\": false}"), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_configure_replay_v1(&config), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("no kernel to replay"));
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
}

// Issue 40: replay settings by name, each parsed by the settings table (its messages), graph replay
// and the counter range among them.
TEST_F(GpuprofCApiTest, ReplaySettingsByNameAreTheTablesThenDeclinedWithoutDeviceCollection) {
  const char* keys[] = {"replay_graph", "replay_counter_range", "replay_passes"};
  const char* values[] = {"graph", "user", "3"};
  EXPECT_EQ(gpuprof_configure_replay_settings_v1(nullptr, values, 1), GPUPROF_ERROR_INVALID_ARGUMENT);
  const char* bad_key[] = {"replay_grpah"};
  EXPECT_EQ(gpuprof_configure_replay_settings_v1(bad_key, values, 1), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(),
              HasSubstr("no setting has the key \"replay_grpah\"; did you mean replay_graph?"));
  const char* bad_value[] = {"graphs"};
  EXPECT_EQ(gpuprof_configure_replay_settings_v1(keys, bad_value, 1), GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("replay_graph=\"graphs\": expected one of off, graph, node"));
  EXPECT_EQ(gpuprof_configure_replay_settings_v1(keys, values, 3), GPUPROF_ERROR_NOT_STARTED) << "no session";
  ASSERT_EQ(gpuprof_start("{\"device\": false}"), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_configure_replay_settings_v1(keys, values, 3), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("no kernel to replay"));
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
}

// Issue 40 (range replay by training step): the optimizer step's boundary needs a session and is a
// no-op in one that does not replay (the fake collector's test in replay_settings_test.cc shows it
// reaching the device collector).
TEST_F(GpuprofCApiTest, ReplayStepBoundaryNeedsASessionAndDoesNothingWithoutReplay) {
  EXPECT_EQ(gpuprof_replay_step_boundary_v1(), GPUPROF_ERROR_NOT_STARTED);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_replay_step_boundary_v1()"));
  ASSERT_EQ(gpuprof_start("{\"device\": false}"), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_EQ(gpuprof_replay_step_boundary_v1(), GPUPROF_OK) << gpuprof_last_error();
  EXPECT_STREQ(gpuprof_last_error(), "");
  ASSERT_EQ(gpuprof_stop(), GPUPROF_OK) << gpuprof_last_error();
}

TEST_F(GpuprofCApiTest, FrameworkRecordsWithoutASessionSayNoneIsRunning) {
  gpuprof_gc_event_v1 gc{};
  gc.size = sizeof(gc);
  gc.start_ns = 1'700'000'000'000'000'000;
  gc.end_ns = gc.start_ns + 5;
  EXPECT_EQ(gpuprof_record_gc_event_v1(&gc), GPUPROF_ERROR_NOT_STARTED);
}

// Issue 19: --query-metrics asks the library; a build without CUDA says what is needed.
TEST_F(GpuprofCApiTest, QueryMetricsChecksArgumentsAndNamesTheCudaBuildWhenItHasNoBackend) {
  char out[64] = {};
  size_t required = 0;
  EXPECT_EQ(gpuprof_query_metrics_v1(-1, nullptr, out, sizeof(out), &required),
            GPUPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("gpuprof_query_metrics_v1(-1)"));
  EXPECT_EQ(gpuprof_query_metrics_v1(0, nullptr, nullptr, 8, &required), GPUPROF_ERROR_INVALID_ARGUMENT);
#ifndef GPUPROF_TEST_HAVE_CUDA
  EXPECT_EQ(gpuprof_query_metrics_v1(0, nullptr, out, sizeof(out), &required), GPUPROF_ERROR_UNAVAILABLE);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("GPUPROF_ENABLE_CUDA"));
#elif !GPUPROF_TEST_HAVE_RANGE_PROFILER
  EXPECT_EQ(gpuprof_query_metrics_v1(0, nullptr, out, sizeof(out), &required), GPUPROF_ERROR_UNAVAILABLE);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("counter backend"));
#endif
#if !defined(GPUPROF_TEST_HAVE_CUDA) || !GPUPROF_TEST_HAVE_RANGE_PROFILER
  EXPECT_EQ(gpuprof_query_metrics_v1(0, "GH100", out, sizeof(out), &required), GPUPROF_ERROR_UNAVAILABLE);
  EXPECT_THAT(gpuprof_last_error(), HasSubstr("\"GH100\""));
#endif
}

}  // namespace
