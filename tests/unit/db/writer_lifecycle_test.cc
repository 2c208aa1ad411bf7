// The file's lifecycle: output layout, the .partial name while writing, the rename at Finalize,
// profiler_info json, crash safety (a SIGKILLed child leaves only .partial), an unfinalized writer,
// unwritable output directories, the bounded queue, and misuse (Finalize twice, Submit after).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "base/logging.h"
#include "db/output_layout.h"
#include "db/profile_writer.h"
#include "db/profile_writer_internal.h"
#include "fakes/thread_nice.h"
#include "writer_test_util.h"

namespace gpuprof::db {
namespace {

using testing::Exists;
using ::testing::HasSubstr;
using testing::Query;
using testing::QueryOne;
using testing::TempDir;
using thread_nice::ThisThreadsNice;
using thread_nice::ThreadsBelow;
using thread_nice::WaitForThreadsBelow;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<trace::Record> SomeOps(int n, std::int64_t t0 = 0) {
  std::vector<trace::Record> records;
  for (int i = 0; i < n; ++i) {
    trace::TorchOp op;
    op.name = "aten::add";
    op.start_ns = t0 + std::int64_t{i} * 10;
    op.end_ns = op.start_ns + 5;
    records.emplace_back(std::move(op));
  }
  return records;
}

class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* tz) {
    if (const char* old = std::getenv("TZ")) old_ = old;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~ScopedTimeZone() {
    if (old_.empty()) {
      unsetenv("TZ");
    } else {
      setenv("TZ", old_.c_str(), 1);
    }
    tzset();
  }

 private:
  std::string old_;
};

TEST(OutputLayoutTest, NamesFollowTheAscendLayout) {
  ScopedTimeZone utc("UTC");
  OutputLayout layout = MakeOutputLayout("/out", "", "node1", 4242, testing::kStartNs, 3);
  EXPECT_EQ(layout.run_dir, "/out/node1_4242_20240102030405678_ascend_pt");
  EXPECT_EQ(layout.output_dir, "/out/node1_4242_20240102030405678_ascend_pt/ASCEND_PROFILER_OUTPUT");
  EXPECT_EQ(
      layout.db_path,
      "/out/node1_4242_20240102030405678_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_3.db");
  EXPECT_EQ(layout.partial_path, layout.db_path + ".partial");
  EXPECT_EQ(layout.info_json_path, "/out/node1_4242_20240102030405678_ascend_pt/profiler_info_3.json");
}

TEST(OutputLayoutTest, WorkerNameAndNoRank) {
  ScopedTimeZone utc("UTC");
  OutputLayout layout = MakeOutputLayout("/out/", "trainer", "node1", 1, testing::kStartNs, -1);
  EXPECT_EQ(layout.run_dir, "/out/trainer_20240102030405678_ascend_pt");
  EXPECT_EQ(layout.db_path,
            "/out/trainer_20240102030405678_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db");
  EXPECT_EQ(layout.info_json_path, "/out/trainer_20240102030405678_ascend_pt/profiler_info.json");
}

// torch_npu's profiler_metadata.json beside each run: msprof-analyze's cluster analysis reads the
// job's parallel layout from it (ClusterBaseInfo, the step trace's dp/pp/tp indices); the same
// values are META_DATA's rows. Not distributed: both empty.
TEST(ProfileWriterLifecycleTest, WritesProfilerMetadataJsonWithTheJobsParallelLayout) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path(), /*rank=*/1);
  options.run.world_size = 2;
  auto writer = ProfileWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const OutputLayout layout = (*writer)->layout();
  EXPECT_EQ(layout.metadata_json_path, layout.run_dir + "/profiler_metadata.json");
  auto path = (*writer)->Finalize(testing::kStartNs + 5);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const std::string json = ReadFile(layout.metadata_json_path);
  const std::string args =
      R"({"world_size": 2, "rank": 1, "data_parallel_size": 2, "tensor_model_parallel_size": 1, )"
      R"("pipeline_model_parallel_size": 1})";
  const std::string groups =
      R"({"default_pg": {"group_name": "default_pg", "group_rank": 1, "global_ranks": [0, 1]}})";
  EXPECT_THAT(json, HasSubstr(R"("distributed_args": )" + args));
  EXPECT_THAT(json, HasSubstr(R"("parallel_group_info": )" + groups));
  EXPECT_EQ(QueryOne(*path, "SELECT value FROM META_DATA WHERE name = 'distributed_args'"), args);
  EXPECT_EQ(QueryOne(*path, "SELECT value FROM META_DATA WHERE name = 'parallel_group_info'"), groups);
  if (std::system("command -v python3 > /dev/null 2>&1") == 0) {
    const int rc = std::system(("python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); "
                                "sys.exit(d[\"distributed_args\"][\"data_parallel_size\"] != 2)' '" +
                                layout.metadata_json_path + "'")
                                   .c_str());
    EXPECT_EQ(rc, 0) << "profiler_metadata.json does not parse:\n" << json;
  }

  TempDir single;
  auto alone = ProfileWriter::Create(testing::TestOptions(single.path()));
  ASSERT_TRUE(alone.ok());
  ASSERT_TRUE((*alone)->Finalize(testing::kStartNs + 5).ok());
  EXPECT_EQ(ReadFile((*alone)->layout().metadata_json_path),
            "{\n  \"parallel_group_info\": {},\n  \"distributed_args\": {}\n}\n");
}

TEST(ProfileWriterLifecycleTest, WritesPartialThenRenamesAndWritesInfoJson) {
  TempDir dir;
  auto writer = ProfileWriter::Create(testing::TestOptions(dir.path(), /*rank=*/2));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  const OutputLayout layout = (*writer)->layout();
  EXPECT_THAT(layout.db_path, HasSubstr("/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_2.db"));
  EXPECT_THAT(layout.run_dir, HasSubstr("/testhost_100_"));
  EXPECT_TRUE(Exists(layout.partial_path));
  EXPECT_FALSE(Exists(layout.db_path));
  (*writer)->Submit(SomeOps(10));
  auto path = (*writer)->Finalize(testing::kStartNs + 5);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(*path, layout.db_path);
  EXPECT_TRUE(Exists(layout.db_path));
  EXPECT_FALSE(Exists(layout.partial_path));
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM PYTORCH_API"), "10");
  EXPECT_EQ(QueryOne(*path, "PRAGMA integrity_check"), "ok");
  // The side files (COMPUTE_TASK_INFO, CONNECTION_IDS) were merged and deleted: only the profile and
  // the analysis.db written from it.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(layout.output_dir)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("ascend_pytorch_profiler_2.db", "analysis.db"));
  EXPECT_EQ(layout.analysis_db_path, layout.output_dir + "/analysis.db");

  ASSERT_TRUE(Exists(layout.info_json_path));
  EXPECT_FALSE(Exists(layout.info_json_path + ".partial"));
  std::string json = ReadFile(layout.info_json_path);
  EXPECT_THAT(json, HasSubstr(R"("config": {"activities": ["cpu", "cuda"], "record_shapes": true})"));
  EXPECT_THAT(json, HasSubstr(R"("rank_id": 2)"));
  EXPECT_THAT(json, HasSubstr(R"("host_name": "testhost")"));
  EXPECT_THAT(json, HasSubstr("\"start_ns\": " + std::to_string(testing::kStartNs)));
  EXPECT_THAT(json, HasSubstr("\"end_ns\": " + std::to_string(testing::kStartNs + 5)));
  EXPECT_THAT(json, HasSubstr(R"("db": "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_2.db")"));
  if (std::system("command -v python3 > /dev/null 2>&1") == 0) {
    int rc = std::system(
        ("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '" + layout.info_json_path + "'")
            .c_str());
    EXPECT_EQ(rc, 0) << "profiler_info json does not parse:\n" << json;
  }
}

TEST(ProfileWriterLifecycleTest, TheWriterThreadsRunBelowTheProfiledProgramsPriority) {
  const int ours = ThisThreadsNice();
  if (ours >= 19) GTEST_SKIP() << "this test runs at nice " << ours << ": nothing lower to go to";
  ASSERT_EQ(ThreadsBelow(ours), 0);
  TempDir dir;
  auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  // The two writer threads and the three side files' threads.
  EXPECT_TRUE(WaitForThreadsBelow(ours, 5)) << ThreadsBelow(ours) << " threads below nice " << ours;
  (*writer)->Submit(SomeOps(10));
  auto path = (*writer)->Finalize(testing::kStartNs + 5);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM PYTORCH_API"), "10");
  EXPECT_EQ(ThisThreadsNice(), ours);
}

TEST(ProfileWriterLifecycleTest, NonObjectConfigIsEmbeddedAsAString) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path());
  options.run.config_json = "passes=3 \"quoted\"";
  auto writer = ProfileWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Finalize(testing::kStartNs + 1).ok());
  EXPECT_THAT(ReadFile((*writer)->layout().info_json_path), HasSubstr(R"("config": "passes=3 \"quoted\"")"));
}

TEST(ProfileWriterLifecycleTest, KilledWriterLeavesOnlyThePartialFile) {
  TempDir dir;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: write a profile half way, report its paths, wait to be killed.
    close(fds[0]);
    auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
    if (!writer.ok()) _exit(2);
    for (int i = 0; i < 20; ++i) (*writer)->Submit(SomeOps(1000, std::int64_t{i} * 100000));
    std::string line = (*writer)->layout().partial_path + "\n" + (*writer)->layout().db_path + "\n";
    if (write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
    close(fds[1]);
    for (;;) pause();
  }
  close(fds[1]);
  std::string paths;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) {
    paths.append(buf, static_cast<std::size_t>(n));
    if (std::count(paths.begin(), paths.end(), '\n') == 2) break;
  }
  close(fds[0]);
  // Let the writer thread get some rows onto disk before the kill.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  std::istringstream lines(paths);
  std::string partial, final_path;
  std::getline(lines, partial);
  std::getline(lines, final_path);
  ASSERT_FALSE(partial.empty());
  EXPECT_TRUE(Exists(partial)) << partial;
  EXPECT_FALSE(Exists(final_path)) << final_path;
  EXPECT_EQ(partial, final_path + kPartialSuffix);
  // Nothing anywhere under the output directory carries a final name.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) {
      EXPECT_THAT(entry.path().string(), HasSubstr(".partial")) << "final name after a kill";
    }
  }
}

// A write error (here: the file-size limit, as a full disk would do) stops the writer; later
// records are dropped and counted; Finalize returns the error naming the file and leaves only
// .partial. In a child process, because the limit applies to the whole process.
TEST(ProfileWriterLifecycleTest, WriteErrorStopsTheWriterAndFinalizeReportsIt) {
  TempDir dir;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);  // write(2) then fails with EFBIG instead of killing the process
    auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
    if (!writer.ok()) _exit(10);
    const OutputLayout layout = (*writer)->layout();
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = 4 << 20;
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(11);
    for (int b = 0; b < 100; ++b) {
      std::vector<trace::Record> tasks;
      tasks.reserve(5000);
      for (int i = 0; i < 5000; ++i) {
        trace::DeviceTask task;
        task.name = "kernel_" + std::to_string(i % 100);
        task.start_ns = std::int64_t{b} * 5000 + i;
        task.end_ns = task.start_ns + 1;
        task.correlation_id = static_cast<std::uint64_t>(b * 5000 + i);
        tasks.emplace_back(std::move(task));
      }
      (*writer)->Submit(std::move(tasks));
    }
    auto path = (*writer)->Finalize(testing::kStartNs + 1);
    if (path.ok()) _exit(12);
    if (path.status().message().find(layout.partial_path) == std::string::npos) _exit(13);
    if ((*writer)->stats().dropped_records == 0) _exit(14);
    if (Exists(layout.db_path)) _exit(15);
    if (!Exists(layout.partial_path)) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check failed in the child (see the exit codes in the test)";
}

TEST(ProfileWriterLifecycleTest, UnfinalizedWriterLeavesOnlyPartialAndSaysSo) {
  TempDir dir;
  OutputLayout layout;
  base::ScopedLogCapture capture;
  {
    auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
    ASSERT_TRUE(writer.ok());
    layout = (*writer)->layout();
    (*writer)->Submit(SomeOps(100));
    std::vector<trace::Record> tasks;
    tasks.reserve(100);
    for (int i = 0; i < 100; ++i) {
      trace::DeviceTask task;
      task.name = "k";
      task.start_ns = i;
      task.end_ns = i + 1;
      tasks.emplace_back(std::move(task));
    }
    (*writer)->Submit(std::move(tasks));
  }
  EXPECT_TRUE(Exists(layout.partial_path));
  // The kernel side file was merged on the way out, then deleted.
  EXPECT_EQ(QueryOne(layout.partial_path, "SELECT COUNT(*) FROM COMPUTE_TASK_INFO"), "100");
  EXPECT_EQ(QueryOne(layout.partial_path,
                     "SELECT COUNT(*) FROM COMPUTE_TASK_INFO c JOIN STRING_IDS s ON s.id = c.name "
                     "WHERE s.value = 'k'"),
            "100");
  EXPECT_FALSE(Exists(layout.partial_path + "-kernels"));
  EXPECT_FALSE(Exists(layout.db_path));
  EXPECT_FALSE(Exists(layout.info_json_path));
  EXPECT_EQ(capture.Count(layout.partial_path), 1);
  // What was streamed is still a readable SQLite file (committed on the way out). PYTORCH_API rows
  // are written only at Finalize, once their connection ids are known.
  EXPECT_EQ(QueryOne(layout.partial_path, "SELECT COUNT(*) FROM TASK"), "100");
  EXPECT_EQ(QueryOne(layout.partial_path, "SELECT COUNT(*) FROM PYTORCH_API"), "0");
}

TEST(ProfileWriterLifecycleTest, StalePartialOfTheSameNameIsReplaced) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path());
  OutputLayout layout = MakeOutputLayout(options.out_dir, "", options.run.hostname, options.run.pid,
                                         options.run.start_ns, options.run.rank);
  std::filesystem::create_directories(layout.output_dir);
  std::ofstream(layout.partial_path) << "garbage from a run that died";
  std::string db = testing::WriteProfile(options, {SomeOps(3)});
  EXPECT_EQ(db, layout.db_path);
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM PYTORCH_API"), "3");
  EXPECT_FALSE(Exists(layout.partial_path));
}

TEST(ProfileWriterLifecycleTest, ExistingFinalProfileIsNotOverwritten) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path());
  std::string db = testing::WriteProfile(options, {SomeOps(3)});
  auto second = ProfileWriter::Create(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(second.status().message(), HasSubstr(db));
  EXPECT_EQ(QueryOne(db, "SELECT COUNT(*) FROM PYTORCH_API"), "3");
}

TEST(ProfileWriterLifecycleTest, OutputDirBelowAFileIsAnErrorNamingThePath) {
  TempDir dir;
  std::string file = dir.path() + "/not_a_dir";
  std::ofstream(file) << "x";
  auto writer = ProfileWriter::Create(testing::TestOptions(file + "/profiles"));
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr(file + "/profiles/"));
  EXPECT_THAT(writer.status().message(), HasSubstr("cannot create profile directory"));
}

TEST(ProfileWriterLifecycleTest, UnwritableOutputDirIsAnErrorNamingThePath) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  std::string out = dir.path() + "/readonly";
  std::filesystem::create_directories(out);
  chmod(out.c_str(), 0500);
  auto writer = ProfileWriter::Create(testing::TestOptions(out));
  chmod(out.c_str(), 0700);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr(out));
}

TEST(ProfileWriterLifecycleTest, StalePartialThatCannotBeRemovedIsAnErrorNamingIt) {
  TempDir dir;
  WriterOptions options = testing::TestOptions(dir.path());
  OutputLayout layout = MakeOutputLayout(options.out_dir, "", options.run.hostname, options.run.pid,
                                         options.run.start_ns, options.run.rank);
  // A non-empty directory where the .partial file should go.
  std::filesystem::create_directories(layout.partial_path + "/blocker");
  auto writer = ProfileWriter::Create(options);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr(layout.partial_path));
}

TEST(ProfileWriterLifecycleTest, InvalidOptionsAreRejected) {
  WriterOptions options = testing::TestOptions("");
  EXPECT_EQ(ProfileWriter::Create(options).status().code(), StatusCode::kInvalidArgument);
  options.out_dir = "/tmp";
  options.batch_rows = 0;
  EXPECT_EQ(ProfileWriter::Create(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(ProfileWriterLifecycleTest, FullQueueDropsWholeSubmitsCountsThemAndWarnsOnce) {
  TempDir dir;
  base::ScopedLogCapture capture;
  auto writer = internal::CreateProfileWriter(testing::TestOptions(dir.path()), /*max_queued_records=*/8);
  ASSERT_TRUE(writer.ok());
  (*writer)->Submit(SomeOps(9));  // alone over the limit: dropped, whatever the writer thread does
  (*writer)->Submit(SomeOps(9));
  (*writer)->Submit(SomeOps(4));
  auto path = (*writer)->Finalize(testing::kStartNs + 1);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  WriterStats stats = (*writer)->stats();
  EXPECT_EQ(stats.dropped_records, 18u);
  EXPECT_EQ(stats.records, 4u);
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM PYTORCH_API"), "4");
  EXPECT_EQ(capture.Count("dropping records"), 1);
}

TEST(ProfileWriterLifecycleTest, FinalizeTwiceFailsAndLaterSubmitsAreDropped) {
  TempDir dir;
  auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Finalize(testing::kStartNs + 1).ok());
  (*writer)->Submit(SomeOps(5));
  EXPECT_EQ((*writer)->stats().dropped_records, 5u);
  auto again = (*writer)->Finalize(testing::kStartNs + 2);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
}

TEST(ProfileWriterLifecycleTest, ConcurrentSubmittersLoseNothing) {
  TempDir dir;
  auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
  ASSERT_TRUE(writer.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&writer, t] {
      for (int b = 0; b < 25; ++b) (*writer)->Submit(SomeOps(40, std::int64_t{t * 25 + b} * 1000));
    });
  }
  for (auto& thread : threads) thread.join();
  auto path = (*writer)->Finalize(testing::kStartNs + 1);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(QueryOne(*path, "SELECT COUNT(*) FROM PYTORCH_API"), "4000");
  EXPECT_EQ((*writer)->stats().records, 4000u);
}

// WriterStats::rows counts every row in the final file: enum and metadata rows written at Create,
// streamed rows, the side files' rows and the derived tables.
TEST(ProfileWriterLifecycleTest, StatsRowsEqualTheRowsInTheFinalFile) {
  TempDir dir;
  auto writer = ProfileWriter::Create(testing::TestOptions(dir.path()));
  ASSERT_TRUE(writer.ok());
  (*writer)->Submit(SomeOps(300));
  std::vector<trace::Record> tasks;
  for (int i = 0; i < 200; ++i) {
    trace::DeviceTask task;
    task.name = "kernel_" + std::to_string(i % 7);
    task.start_ns = testing::kStartNs + i;
    task.end_ns = task.start_ns + 1;
    task.correlation_id = static_cast<std::uint64_t>(i + 1);
    tasks.emplace_back(std::move(task));
  }
  (*writer)->Submit(std::move(tasks));
  auto path = (*writer)->Finalize(testing::kStartNs + 1'000'000);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  std::uint64_t in_file = 0;
  for (const std::string& table : Query(*path, "SELECT name FROM sqlite_master WHERE type = 'table'")) {
    in_file += std::stoull(QueryOne(*path, "SELECT COUNT(*) FROM \"" + table + "\""));
  }
  EXPECT_EQ((*writer)->stats().rows, in_file);
}

}  // namespace
}  // namespace gpuprof::db
