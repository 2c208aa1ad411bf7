#include "session/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/clock.h"
#include "base/logging.h"
#include "db/output_layout.h"
#include "fakes/thread_nice.h"
#include "unit/session/fake_device_collector.h"
#include "unit/session/session_test_util.h"

namespace gpuprof::session {
namespace {

using ::testing::ElementsAre;
using testing::FakeDeviceState;
using testing::FakeFactory;
using testing::FinalDbs;
using ::testing::HasSubstr;
using testing::MarkRows;
using ::testing::Not;
using testing::PartialDbs;
using testing::Query;
using ::testing::SizeIs;
using testing::TempDir;

SessionConfig TestConfig(const TempDir& dir) {
  SessionConfig config;
  config.output_dir = dir / "out";
  config.result_file = dir / "result";
  config.rank = 0;
  return config;
}

std::unique_ptr<Session> MustStart(SessionConfig config, SessionOptions options = {}) {
  StatusOr<std::unique_ptr<Session>> session = Session::Start(std::move(config), std::move(options));
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  return session.ok() ? std::move(session).value() : nullptr;
}

// Polls `done` for up to 10 s (flusher timing), so tests never assert on wall time.
template <typename Fn>
bool Eventually(Fn&& done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

const std::string kPid = std::to_string(getpid());

TEST(SessionTest, StartWritesPartialAndStopFinalizesWithMarksAndRanges) {
  TempDir dir;
  auto session = MustStart(TestConfig(dir));
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->running());
  EXPECT_FALSE(session->has_device_collector());
  EXPECT_EQ(PartialDbs(dir / "out"), std::vector<std::string>{session->partial_path()});
  EXPECT_THAT(session->db_path(), HasSubstr("/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"));

  ASSERT_TRUE(session->Mark("first").ok());
  StatusOr<std::uint64_t> range = session->RangeStart("work");
  ASSERT_TRUE(range.ok());
  EXPECT_NE(*range, 0u);
  ASSERT_TRUE(session->Mark("inside").ok());
  ASSERT_TRUE(session->RangeEnd(*range).ok());

  ASSERT_TRUE(session->Stop().ok());
  EXPECT_FALSE(session->running());
  EXPECT_TRUE(session->finalized());
  EXPECT_EQ(FinalDbs(dir / "out"), std::vector<std::string>{session->db_path()});
  EXPECT_THAT(PartialDbs(dir / "out"), SizeIs(0));
  // eventType 3: marker_ex (msprof's marks), 2: start/end range; the pid half of globalTid is ours.
  EXPECT_THAT(MarkRows(session->db_path()),
              ElementsAre("first|3|" + kPid, "work|2|" + kPid, "inside|3|" + kPid));
  EXPECT_THAT(Query(session->db_path(), "SELECT value FROM META_DATA WHERE name = 'gpuprof_config'"),
              ElementsAre(HasSubstr("\"rank\": 0")));
}

TEST(SessionTest, ResultFileGetsOneDbLinePerStop) {
  TempDir dir;
  auto session = MustStart(TestConfig(dir));
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Stop().ok());
  ASSERT_TRUE(session->Stop().ok());  // idempotent: no second line
  // The partial file is named when it is created, so that `gpuprof run` can tell this run's
  // unfinished files from another run's; the DB when it is final.
  EXPECT_EQ(testing::ReadFile(dir / "result"),
            "partial " + session->partial_path() + "\n" + "db " + session->db_path() + "\n");
}

TEST(SessionTest, StopIsIdempotentAndLaterCallsSayItStopped) {
  TempDir dir;
  auto session = MustStart(TestConfig(dir));
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_TRUE(session->Stop().ok());
  Status mark = session->Mark("late");
  EXPECT_EQ(mark.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(mark.message(), HasSubstr("the session of pid " + kPid + " has stopped"));
  EXPECT_EQ(session->Flush().code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(session->Append(trace::Mark{}));
  EXPECT_EQ(session->RangeStart("late").status().code(), StatusCode::kFailedPrecondition);
}

TEST(SessionTest, RangeEndOfAnUnknownIdIsNotFound) {
  TempDir dir;
  auto session = MustStart(TestConfig(dir));
  ASSERT_NE(session, nullptr);
  StatusOr<std::uint64_t> range = session->RangeStart("r");
  ASSERT_TRUE(range.ok());
  ASSERT_TRUE(session->RangeEnd(*range).ok());
  Status again = session->RangeEnd(*range);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr("no open range with id " + std::to_string(*range)));
  ASSERT_TRUE(session->Stop().ok());
}

TEST(SessionTest, RangesStillOpenAtStopEndThere) {
  TempDir dir;
  auto session = MustStart(TestConfig(dir));
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->RangeStart("never ended").ok());
  const std::int64_t before_stop = base::EpochNowNs();
  ASSERT_TRUE(session->Stop().ok());
  std::vector<std::string> rows = Query(
      session->db_path(), "SELECT eventType, endNs >= " + std::to_string(before_stop) + " FROM MSTX_EVENTS");
  EXPECT_THAT(rows, ElementsAre("2|1"));
}

TEST(SessionTest, FlusherDrainsOnItsInterval) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.flush_interval = std::chrono::milliseconds(5);
  SessionOptions options;
  options.collector.flush_threshold = 0;
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(session->Mark("m" + std::to_string(i)).ok());
  EXPECT_TRUE(Eventually([&] { return session->buffered_records() == 0; }));
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(MarkRows(session->db_path()), SizeIs(10));
}

// Under `gpuprof run` (root pid and result file set) the flusher keeps a count of what it drained
// beside the result file, for run's live line; the last one says the DB is being written.
TEST(SessionTest, UnderRunTheFlusherWritesTheCountsForTheLiveLine) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.root_pid = static_cast<std::uint32_t>(getpid());
  config.flush_interval = std::chrono::milliseconds(5);
  SessionOptions options;
  options.collector.flush_threshold = 0;
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  auto call = [](bool launches) {
    trace::ApiCall c;
    c.name = launches ? "cudaLaunchKernel" : "cudaGetDevice";
    c.launches_device_work = launches;
    return c;
  };
  auto task = [](trace::TaskKind kind) {
    trace::DeviceTask t;
    t.kind = kind;
    t.name = "k";
    return t;
  };
  auto replay = [](bool replayed) {
    trace::ReplayResult r;
    r.record.replayed = replayed;
    r.record.kernel_name = "k";
    return r;
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session->Append(call(true)));
  ASSERT_TRUE(session->Append(call(false)));
  ASSERT_TRUE(session->Append(task(trace::TaskKind::kKernel)));
  ASSERT_TRUE(session->Append(task(trace::TaskKind::kKernel)));
  ASSERT_TRUE(session->Append(task(trace::TaskKind::kMemcpy)));
  for (int i = 0; i < 4; ++i) {
    trace::TorchOp op;
    op.name = "aten::add";
    ASSERT_TRUE(session->Append(std::move(op)));
  }
  ASSERT_TRUE(session->Append(replay(true)));
  ASSERT_TRUE(session->Append(replay(false)));
  const std::string path = db::RunProgressPath(config.result_file, static_cast<std::uint32_t>(getpid()));
  const db::RunProgress expected{3, 2, 4, 1, 1, 0};
  db::RunProgress seen;
  EXPECT_TRUE(Eventually([&] {
    return db::ParseRunProgress(testing::ReadFile(path), &seen) && seen == expected;
  })) << testing::ReadFile(path);
  ASSERT_TRUE(session->Stop().ok());
  ASSERT_TRUE(db::ParseRunProgress(testing::ReadFile(path), &seen));
  EXPECT_EQ(seen, (db::RunProgress{3, 2, 4, 1, 1, 1})) << "finalizing";
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(SessionTest, NoProgressFileOutsideRunOrWithProgressOff) {
  for (bool under_run : {false, true}) {
    TempDir dir;
    SessionConfig config = TestConfig(dir);
    config.root_pid = under_run ? static_cast<std::uint32_t>(getpid()) : 0;
    config.progress = !under_run;  // under run, but --progress off
    config.flush_interval = std::chrono::milliseconds(5);
    auto session = MustStart(config);
    ASSERT_NE(session, nullptr);
    trace::TorchOp op;
    op.name = "aten::add";
    ASSERT_TRUE(session->Append(std::move(op)));
    ASSERT_TRUE(session->Stop().ok());
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(db::kRunProgressInfix))) << under_run;
    }
  }
}

TEST(SessionTest, TheFlusherAndTheWriterRunBelowTheProfiledProgramsPriority) {
  const int ours = thread_nice::ThisThreadsNice();
  if (ours >= 19) GTEST_SKIP() << "this test runs at nice " << ours << ": nothing lower to go to";
  ASSERT_EQ(thread_nice::ThreadsBelow(ours), 0);
  TempDir dir;
  auto session = MustStart(TestConfig(dir));
  ASSERT_NE(session, nullptr);
  // The flusher, and the writer's two threads and three side files (ProfileWriterLifecycleTest
  // counts those five alone).
  EXPECT_TRUE(thread_nice::WaitForThreadsBelow(ours, 6))
      << thread_nice::ThreadsBelow(ours) << " threads below nice " << ours;
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_EQ(thread_nice::ThisThreadsNice(), ours);
}

TEST(SessionTest, FlushThresholdWakesTheFlusherBeforeItsInterval) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.flush_interval = std::chrono::milliseconds(60'000);  // never, within the test
  SessionOptions options;
  options.collector.flush_threshold = 100;
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 150; ++i) ASSERT_TRUE(session->Mark("m").ok());
  // The 100th record woke the flusher, which drained everything buffered at that point.
  EXPECT_TRUE(Eventually([&] { return session->buffered_records() < 100; }));
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(MarkRows(session->db_path()), SizeIs(150));
}

TEST(SessionTest, FlushHandsEverythingToTheWriter) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.flush_interval = std::chrono::milliseconds(60'000);
  SessionOptions options;
  options.collector.flush_threshold = 0;
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(session->Mark("m").ok());
  EXPECT_EQ(session->buffered_records(), 20u);
  ASSERT_TRUE(session->Flush().ok());
  EXPECT_EQ(session->buffered_records(), 0u);
  ASSERT_TRUE(session->Stop().ok());
}

TEST(SessionTest, RecordsOverTheCapAreDroppedAndCounted) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.flush_interval = std::chrono::milliseconds(60'000);
  SessionOptions options;
  options.collector.flush_threshold = 0;
  options.collector.max_buffered_records = 10;
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  int refused = 0;
  for (int i = 0; i < 15; ++i) {
    Status mark = session->Mark("m");
    if (!mark.ok()) {
      ++refused;
      EXPECT_EQ(mark.code(), StatusCode::kResourceExhausted);
      EXPECT_THAT(mark.message(), HasSubstr("buffer of 10 records is full"));
    }
  }
  EXPECT_EQ(refused, 5);
  EXPECT_EQ(session->dropped_records(), 5u);
  base::ScopedLogCapture capture;
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_EQ(capture.Count("5 records were dropped before reaching"), 1);
  EXPECT_THAT(MarkRows(session->db_path()), SizeIs(10));
}

// The losses reach the DB per source (META_DATA gpuprof_lost_records, db/lost_records.h): the
// device collector's, the session buffer's, those after the stop and the writer's.
TEST(SessionTest, RecordsLostPerSourceAreWrittenToTheDb) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.flush_interval = std::chrono::milliseconds(60'000);
  auto state = std::make_shared<FakeDeviceState>();
  state->lost = {{"cupti_activity_buffers", 7}};
  SessionOptions options;
  options.device_factory = FakeFactory(state);
  options.collector.flush_threshold = 0;
  options.collector.max_buffered_records = 10;
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 15; ++i) static_cast<void>(session->Mark("m"));
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(
      Query(session->db_path(), "SELECT value FROM META_DATA WHERE name = 'gpuprof_lost_records'"),
      ElementsAre(
          R"({"cupti_activity_buffers": 7, "session_buffer": 5, "after_stop": 0, "writer_queue": 0})"));
}

TEST(SessionTest, InvalidConfigurationIsRejectedBeforeAnyFileIsMade) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.flush_interval = std::chrono::milliseconds(0);
  StatusOr<std::unique_ptr<Session>> session = Session::Start(config);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(session.status().message(), HasSubstr("flush interval 0 ms"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

TEST(SessionTest, UnusableOutputDirectoryNamesThePath) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.output_dir = dir / "a_file";
  { std::ofstream(config.output_dir) << "not a directory"; }
  StatusOr<std::unique_ptr<Session>> session = Session::Start(config);
  ASSERT_FALSE(session.ok());
  EXPECT_THAT(session.status().message(),
              HasSubstr("starting the profile of pid " + kPid + " in " + config.output_dir));
}

TEST(SessionTest, RelativePathsAreResolvedAtStart) {
  TempDir dir;
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  SessionConfig config;
  config.output_dir = "rel_out";
  config.result_file = "rel_result";
  auto session = MustStart(config);
  std::filesystem::current_path(cwd);  // the program moves on; the session keeps its paths
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->config().output_dir, dir / "rel_out");
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(FinalDbs(dir / "rel_out"), SizeIs(1));
  EXPECT_THAT(testing::DbResultLines(dir / "rel_result"), ElementsAre("db " + session->db_path()));
  EXPECT_THAT(session->db_path(), ::testing::StartsWith(dir.path()));
}

TEST(SessionTest, SessionsStartedTogetherUnderOneNameGetTheirOwnFiles) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.worker_name = "same";
  auto first = MustStart(config);
  auto second = MustStart(config);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first->partial_path(), second->partial_path());
  ASSERT_TRUE(first->Mark("one").ok());
  ASSERT_TRUE(second->Mark("two").ok());
  ASSERT_TRUE(first->Stop().ok());
  ASSERT_TRUE(second->Stop().ok());
  EXPECT_THAT(FinalDbs(dir / "out"), SizeIs(2));
  EXPECT_THAT(testing::MarkMessages(first->db_path()), ElementsAre("one"));
  EXPECT_THAT(testing::MarkMessages(second->db_path()), ElementsAre("two"));
}

TEST(SessionTest, DestructorStopsARunningSession) {
  TempDir dir;
  std::string db_path;
  {
    auto session = MustStart(TestConfig(dir));
    ASSERT_NE(session, nullptr);
    ASSERT_TRUE(session->Mark("bye").ok());
    db_path = session->db_path();
  }
  EXPECT_EQ(FinalDbs(dir / "out"), std::vector<std::string>{db_path});
  EXPECT_THAT(testing::MarkMessages(db_path), ElementsAre("bye"));
}

TEST(SessionTest, DeviceRecordsReachTheDbAndStopFlushesTheDeviceFirst) {
  TempDir dir;
  auto device = std::make_shared<FakeDeviceState>();
  device->devices = {{0, "Fake GPU"}};
  const auto pid = static_cast<std::uint32_t>(getpid());
  device->on_flush = [&] {
    // The last buffer arrives during Stop's flush: it must still make it into the DB.
    trace::DeviceTask late = testing::Kernel(2, base::EpochNowNs(), "late_kernel");
    late.pid = pid;
    EXPECT_TRUE(device->Deliver(late));
  };
  SessionOptions options;
  options.device_factory = FakeFactory(device);
  auto session = MustStart(TestConfig(dir), std::move(options));
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->has_device_collector());
  const std::int64_t t = base::EpochNowNs();
  EXPECT_TRUE(device->Deliver(testing::Launch(1, t, pid)));
  trace::DeviceTask kernel = testing::Kernel(1, t + 100, "my_kernel");
  kernel.pid = pid;
  EXPECT_TRUE(device->Deliver(kernel));
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(device->Calls(), ElementsAre("Devices", "Start", "Flush", "Stop"));
  EXPECT_THAT(Query(session->db_path(),
                    "SELECT s.value FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
                    "JOIN STRING_IDS s ON s.id = c.name ORDER BY t.startNs"),
              ElementsAre("my_kernel", "late_kernel"));
  EXPECT_THAT(Query(session->db_path(), "SELECT name FROM NPU_INFO"), ElementsAre("Fake GPU"));
}

TEST(SessionTest, DeviceCollectorThatCannotStartLeavesAHostOnlySession) {
  TempDir dir;
  auto device = std::make_shared<FakeDeviceState>();
  device->start_result = UnavailableError("CUPTI is already in use by 'other tool'");
  SessionOptions options;
  options.device_factory = FakeFactory(device);
  base::ScopedLogCapture capture;
  auto session = MustStart(TestConfig(dir), std::move(options));
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(session->has_device_collector());
  EXPECT_EQ(
      capture.Count("device collection is off for this run (pid " + kPid +
                    "): CUPTI is already in use by 'other tool'; the application runs without GPU data"),
      1);
  ASSERT_TRUE(session->Mark("host only").ok());
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_THAT(device->Calls(), ElementsAre("Devices", "Start"));  // never flushed or stopped
  EXPECT_THAT(testing::MarkMessages(session->db_path()), ElementsAre("host only"));
}

TEST(SessionTest, DeviceFactoryErrorLeavesAHostOnlySession) {
  TempDir dir;
  SessionOptions options;
  options.device_factory = [](const SessionConfig&) -> StatusOr<std::unique_ptr<DeviceCollector>> {
    return UnavailableError("CUPTI unavailable: libcupti.so.13: cannot open shared object file");
  };
  base::ScopedLogCapture capture;
  auto session = MustStart(TestConfig(dir), std::move(options));
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(session->has_device_collector());
  EXPECT_EQ(capture.Count("device collection is off for this run"), 1);
  ASSERT_TRUE(session->Stop().ok());
}

TEST(SessionTest, DeviceOffInConfigurationSkipsTheFactory) {
  TempDir dir;
  SessionConfig config = TestConfig(dir);
  config.device = false;
  bool called = false;
  SessionOptions options;
  options.device_factory = [&](const SessionConfig&) -> StatusOr<std::unique_ptr<DeviceCollector>> {
    called = true;
    return std::unique_ptr<DeviceCollector>();
  };
  auto session = MustStart(config, std::move(options));
  ASSERT_NE(session, nullptr);
  EXPECT_FALSE(called);
  ASSERT_TRUE(session->Stop().ok());
}

TEST(SessionTest, DeviceTeardownStopsAndFinalizes) {
  TempDir dir;
  auto device = std::make_shared<FakeDeviceState>();
  SessionOptions options;
  options.device_factory = FakeFactory(device);
  auto session = MustStart(TestConfig(dir), std::move(options));
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Mark("before teardown").ok());
  std::thread driver([&] { device->hooks.on_teardown(); });  // e.g. the last context going away
  driver.join();
  EXPECT_FALSE(session->running());
  EXPECT_TRUE(session->finalized());
  EXPECT_THAT(device->Calls(), ElementsAre("Devices", "Start", "Flush", "Stop"));
  EXPECT_TRUE(session->Stop().ok());  // at exit: nothing more to do
  EXPECT_THAT(device->Calls(), SizeIs(4));
  EXPECT_THAT(testing::DbResultLines(dir / "result"), ElementsAre("db " + session->db_path()));
}

TEST(SessionTest, TeardownHookFiredInsideStopDoesNotDeadlock) {
  TempDir dir;
  auto device = std::make_shared<FakeDeviceState>();
  device->on_flush = [&] { device->hooks.on_teardown(); };  // re-enters Stop on the same thread
  SessionOptions options;
  options.device_factory = FakeFactory(device);
  auto session = MustStart(TestConfig(dir), std::move(options));
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Stop().ok());
  EXPECT_TRUE(session->finalized());
}

}  // namespace
}  // namespace gpuprof::session
