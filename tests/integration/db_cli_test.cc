// Runs `gpuprof stats`, `gpuprof export --format perfetto` and `gpuprof check` (GPUPROF_CLI_PATH)
// on fixture DBs built from DB_SPEC.md's DDL (tests/unit/db/fixture_db.h), and on bad input: a
// missing path, a file that is not SQLite, a foreign SQLite file, a truncated copy, empty tables, a
// directory without DBs. Every case checks the exit code and the message, and that no sanitizer
// report appeared (the sanitizers' exit codes are moved off 1, which is our "bad input").
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
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
using gpuprof::testing::DbCliTest;
using gpuprof::testing::Figures;
using gpuprof::testing::RunShell;
using gpuprof::testing::Section;
using gpuprof::testing::ShellQuote;
using gpuprof::testing::Words;

// The row of a stats table whose last column is `name`: its whitespace-separated cells.
std::vector<std::string> RowNamed(const std::vector<std::string>& section, const std::string& name) {
  for (const std::string& line : section) {
    if (line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0) {
      return Words(line);
    }
  }
  return {};
}

TEST_F(DbCliTest, StatsPrintsEveryTableForAFixtureRun) {
  CliResult result = Run("stats " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_THAT(result.out, HasSubstr("gpuprof stats: " + db_));
  EXPECT_THAT(result.out, HasSubstr("rank 0, device 0, host fixture-host, session 2.000 ms"));

  // calls, total ms, avg µs, %, name
  std::vector<std::string> total = Section(result.out, "Top ops by total time");
  ASSERT_FALSE(total.empty()) << result.out;
  EXPECT_THAT(total[0], HasSubstr("7 of 7 names, 9 calls"));
  EXPECT_THAT(RowNamed(total, "ProfilerStep#*"),
              ::testing::ElementsAre("2", "1.900", "950.0", "90.5", "ProfilerStep#*"));
  EXPECT_THAT(RowNamed(total, "aten::linear"),
              ::testing::ElementsAre("1", "0.300", "300.0", "14.3", "aten::linear"));
  // calls, self ms, avg self µs, total ms, %, name
  std::vector<std::string> self = Section(result.out, "Top ops by self time");
  EXPECT_THAT(RowNamed(self, "aten::linear"),
              ::testing::ElementsAre("1", "0.100", "100.0", "0.300", "4.8", "aten::linear"));
  EXPECT_THAT(RowNamed(self, "AddmmBackward0"),
              ::testing::ElementsAre("1", "0.040", "40.0", "0.200", "1.9", "AddmmBackward0"));
  // The odd name is escaped for the terminal, not printed raw.
  EXPECT_THAT(result.out, HasSubstr("weird \"op\"\\\\t\\x01\xEF\xBF\xBD"));
  EXPECT_THAT(result.out, Not(HasSubstr("\x01")));

  std::vector<std::string> kernels = Section(result.out, "Top kernels by total time");
  EXPECT_THAT(kernels[0], HasSubstr("3 of 3 names, 4 launches, 0.250 ms"));
  EXPECT_THAT(RowNamed(kernels, "relu_kernel"),
              ::testing::ElementsAre("2", "0.050", "25.0", "30.0", "20.0", "relu_kernel"));
  EXPECT_THAT(RowNamed(Section(result.out, "Device tasks by type"), "MEMCPY_ASYNC"),
              ::testing::ElementsAre("1", "0.010", "MEMCPY_ASYNC"));

  std::vector<std::string> memory = Section(result.out, "Peak memory per device");
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_THAT(Words(memory[2]), ::testing::ElementsAre("0", "PTA", "3", "MiB", "4", "MiB", "3", "MiB", "3"));

  std::vector<std::string> steps = Section(result.out, "Steps");
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0], "Steps (2: avg 0.950 ms, min 0.900 ms, max 1.000 ms)");
  EXPECT_THAT(steps[1], HasSubstr("step = N of ProfilerStep#N: the profile's step() calls counted from 0"));
  EXPECT_THAT(Words(steps[4]), ::testing::ElementsAre("2", "1.000", "0.900"));
  EXPECT_THAT(result.out, HasSubstr("GC: 2 pause(s), total 0.030 ms, longest 0.020 ms"));

  // dev, launches, passes, min, median, max, restored/pass (2 words), deterministic, kernel
  std::vector<std::string> replay = Section(result.out, "Kernel replay");
  EXPECT_THAT(RowNamed(replay, "gemm_kernel<float>"),
              ::testing::ElementsAre("0", "1", "3", "98.0", "100.0", "102.0", "4", "KiB", "yes",
                                     "gemm_kernel<float>"));
  EXPECT_THAT(RowNamed(replay, "gemm_bwd_kernel"),
              ::testing::ElementsAre("0", "1", "2", "100.0", "105.0", "110.0", "2", "KiB", "no", "(1", "of",
                                     "1)", "gemm_bwd_kernel"));
  EXPECT_THAT(RowNamed(Section(result.out, "Launches not replayed"), "relu_kernel"),
              ::testing::ElementsAre("0", "1", "graph-launch", "relu_kernel"));
}

TEST_F(DbCliTest, StatsPrintsASpeedOfLightBlockPerReplayedKernelWithCounters) {
  CliResult result = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(
      Section(result.out, "Speed of light"),
      ::testing::ElementsAre(
          "Speed of light (hardware counters of replayed launches: mean over the launches; 2 of 2 "
          "kernel/device groups)",
          "  gemm_bwd_kernel  (device 0, 0 of 1 replayed launch with counters; clock control none; cache "
          "control all)",
          "    duration                 105.0 µs (replay passes, min–max 100.0 – 110.0 µs)",
          std::string("    no counters: ") + fixture::kFixtureCounterStatus,
          "  gemm_kernel<float>  (device 0, 1 of 1 replayed launch with counters; clock control base; cache "
          "control all)",
          "    duration                 99.5 µs", "    compute (SM) throughput  61.2 %",
          "    memory throughput        40.5 %", "    DRAM read                1 MiB",
          "    DRAM write               512 KiB", "    achieved occupancy       47.5 %",
          "  (every value: gpuprof stats --csv)"));
}

TEST_F(DbCliTest, StatsSpeedOfLightShowsRangesMissingMetricsAndTheoreticalOccupancy) {
  // A second gemm launch (id 4): another SM throughput, a theoretical occupancy, no DRAM counters,
  // no duration; and a launch of gemm_bwd whose counters worked.
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "INSERT INTO GPUPROF_REPLAY_KERNEL (id, deviceId, name, replayed, launchIndex, "
                       "passes, clockControl, cacheControl) VALUES (4, 0, 5, 1, 3, 0, 'none', 'all'), "
                       "(5, 0, 9, 1, 4, 0, 'none', 'all');"
                       "INSERT INTO STRING_IDS VALUES (30, 'sm__maximum_warps_per_active_cycle_pct');"
                       "INSERT INTO GPUPROF_REPLAY_METRIC VALUES (4, 14, 21, 70.0, 1), "
                       "(4, 30, 21, 50.0, 0), (5, 16, 22, 2048.0, 1);")
          .ok());
  CliResult result = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> sol = Section(result.out, "Speed of light");
  EXPECT_THAT(
      sol, ::testing::Contains("    compute (SM) throughput  65.6 %  (min–max 61.2 % – 70.0 %, 2 launches)"));
  EXPECT_THAT(sol, ::testing::Contains("    theoretical occupancy    50.0 %"));
  EXPECT_THAT(sol,
              ::testing::Contains(
                  "  gemm_kernel<float>  (device 0, 2 of 2 replayed launches with counters; clock control "
                  "base/none; cache control all)"));
  // gemm_bwd: one launch with counters, one without; its missing metrics print "-".
  EXPECT_THAT(sol, ::testing::Contains("    DRAM read                2 KiB"));
  EXPECT_THAT(sol, ::testing::Contains("    DRAM write               -"));
  EXPECT_THAT(sol, ::testing::Contains(std::string("    no counters: ") + fixture::kFixtureCounterStatus +
                                       " (1 of 2 launches)"));
}

TEST_F(DbCliTest, StatsCsvPrintsEveryMetricRow) {
  // A kernel name that needs CSV quoting.
  ASSERT_TRUE(
      fixture::ExecSql(db_, "UPDATE STRING_IDS SET value = 'gemm<float>(float*, int \"q\")' WHERE id = 5;")
          .ok());
  CliResult result = Run("stats --csv " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::string kernel = "0,1,\"gemm<float>(float*, int \"\"q\"\")\",0,";
  EXPECT_EQ(result.out,
            "rank,kernelId,kernel,launchIndex,metric,unit,value,passes\n" + kernel +
                "gpu__time_duration.sum,nanosecond,99500,1\n" + kernel +
                "sm__throughput.avg.pct_of_peak_sustained_elapsed,percent,61.25,1\n" + kernel +
                "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,percent,40.5,2\n" + kernel +
                "dram__bytes_read.sum,byte,1048576,1\n" + kernel + "dram__bytes_write.sum,byte,524288,1\n" +
                kernel + "sm__warps_active.avg.pct_of_peak_sustained_active,percent,47.5,1\n" + kernel +
                "launch__grid_size,,128,0\n");
  EXPECT_EQ(Run("stats --csv --top 3 " + ShellQuote(db_)).exit_code, 2);  // --top does not apply
  CliResult help = Run("stats --help");
  EXPECT_THAT(help.out, HasSubstr("--csv"));
  EXPECT_THAT(help.out, HasSubstr("rank,kernelId,kernel,launchIndex,metric,unit,value,passes"));
}

TEST_F(DbCliTest, StatsOfADbWrittenBeforeCountersIsAsBefore) {
  CliResult now = Run("stats " + ShellQuote(db_));
  ASSERT_TRUE(fixture::ExecSql(db_, fixture::kFixtureBeforeCountersSql).ok());
  CliResult before = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.out, Not(HasSubstr("Speed of light")));
  EXPECT_EQ(Section(before.out, "Kernel replay"), Section(now.out, "Kernel replay"));
  EXPECT_EQ(Section(before.out, "Launches not replayed"), Section(now.out, "Launches not replayed"));
  CliResult csv = Run("stats --csv " + ShellQuote(db_));
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, "rank,kernelId,kernel,launchIndex,metric,unit,value,passes\n");
  EXPECT_THAT(csv.err, HasSubstr("no GPUPROF_REPLAY_METRIC table"));
}

TEST_F(DbCliTest, StatsCoversEveryRankOfADirectory) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  ASSERT_TRUE(fixture::WriteFixtureRun(dir_ + "/runs", "node1_1_20240101", rank1).ok());
  CliResult result = Run("stats " + ShellQuote(dir_ + "/runs"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("ascend_pytorch_profiler_0.db\n  rank 0,"));
  EXPECT_THAT(result.out, HasSubstr("ascend_pytorch_profiler_1.db\n  rank 1,"));
  EXPECT_LT(result.out.find("rank 0,"), result.out.find("rank 1,"));
}

// Two ranks: the cluster summary comes first, then each DB's own sections. The fixture's steps are
// 1 [0,1000) and 2 [1000,1900) us with kernels [180,280) [470,490) [750,850) in step 1 and
// [1120,1150) in step 2 (compute 220 and 30 us). Rank 0 gets a collective [800,900) (50 us of it
// outside the kernel [750,850)); rank 1 has none and its step 2 runs to 2100 us.
//   rank 0: 1900 us of steps: compute 250 (13.2%), comm not overlapped 50 (2.6%), idle 1600 (84.2%)
//   rank 1: 2100 us of steps: compute 250 (11.9%), comm not overlapped 0, idle 1850 (88.1%)
TEST_F(DbCliTest, StatsOfTwoRanksStartsWithTheClusterSummary) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  gpuprof::StatusOr<std::string> db1 = fixture::WriteFixtureRun(dir_ + "/runs", "node1_1_20240101", rank1);
  ASSERT_TRUE(db1.ok()) << db1.status().message();
  auto at = [](std::int64_t micros) {
    return std::to_string(fixture::FixtureOptions{}.base_ns + micros * 1000);
  };
  ASSERT_TRUE(fixture::ExecSql(db_, "INSERT INTO COMMUNICATION_OP (startNs, endNs, opId) VALUES (" + at(800) +
                                        ", " + at(900) + ", 0)")
                  .ok());
  ASSERT_TRUE(fixture::ExecSql(*db1, "UPDATE STEP_TIME SET endNs = " + at(2100) + " WHERE id = 2").ok());

  // Both steps counted (warm-up: warmup_cli_test.cc).
  const std::string runs = dir_ + "/runs";
  CliResult result = Run("stats --include-warmup " + ShellQuote(runs));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out.rfind("Cluster: 2 ranks (" + runs + ")\n", 0), 0u) << result.out;

  // rank, device, steps, mean ms, max ms, compute %, comm not overlapped %, idle %, compute from
  std::vector<std::string> ranks = Section(result.out, "Per rank:");
  ASSERT_EQ(ranks.size(), 4u) << result.out;
  EXPECT_THAT(Words(ranks[1]), ::testing::ElementsAre("rank", "device", "steps", "mean", "step", "ms", "max",
                                                      "step", "ms", "compute", "%", "comm", "not",
                                                      "overlapped", "%", "idle", "%", "compute", "from"));
  EXPECT_THAT(Words(ranks[2]),
              ::testing::ElementsAre("0", "0", "2", "0.950", "1.000", "13.2", "2.6", "84.2", "kernels"));
  EXPECT_THAT(Words(ranks[3]),
              ::testing::ElementsAre("1", "0", "2", "1.050", "1.100", "11.9", "0.0", "88.1", "kernels"));

  // step, ms on rank 0, ms on rank 1, slowest rank, spread ms
  std::vector<std::string> steps = Section(result.out, "Per step:");
  ASSERT_EQ(steps.size(), 5u) << result.out;
  EXPECT_THAT(Words(steps[1]),
              ::testing::ElementsAre("step", "rank", "0", "rank", "1", "slowest", "spread", "ms"));
  EXPECT_THAT(Words(steps[2]),
              ::testing::ElementsAre("1", "1.000", "1.000", "0", "0.000", "warm-up,", "counted"));
  EXPECT_THAT(Words(steps[3]), ::testing::ElementsAre("2", "0.900", "1.100", "1", "0.200"));
  EXPECT_EQ(
      steps[4],
      "  Over the 2 step(s) compared: slowest most often rank 0 (1 of 2), spread mean 0.100 ms, largest "
      "0.200 ms (step 2)");

  // Then both DBs' own sections, after the summary.
  const std::size_t summary_end = result.out.find("gpuprof stats: ");
  ASSERT_NE(summary_end, std::string::npos);
  EXPECT_LT(result.out.find("Per step:"), summary_end);
  EXPECT_THAT(result.out, HasSubstr("gpuprof stats: " + db_ + "\n"));
  EXPECT_THAT(result.out, HasSubstr("gpuprof stats: " + *db1 + "\n"));
}

TEST_F(DbCliTest, TwoDbsOfOneRankAreNamedInAWarningAndShownAsProfilesNotRanks) {
  gpuprof::StatusOr<std::string> again = fixture::WriteFixtureRun(dir_ + "/runs", "node0_2_20240102");
  ASSERT_TRUE(again.ok()) << again.status().message();
  for (const std::string& command :
       std::vector<std::string>{"stats", "check", "export -o " + ShellQuote(dir_ + "/t.json")}) {
    CliResult result = Run(command + " " + ShellQuote(dir_ + "/runs"));
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr("gpuprof: warning: 2 DBs are rank 0: " + db_ + ", " + *again))
        << command;
    if (command != "stats") continue;
    EXPECT_THAT(result.out, HasSubstr("Comparison: 2 profiles ("));
    EXPECT_THAT(result.out, HasSubstr("not the ranks of one job"));
    EXPECT_THAT(result.out, HasSubstr("profile 1"));
    EXPECT_THAT(result.out, Not(HasSubstr("Cluster:")));
    EXPECT_THAT(result.out, Not(HasSubstr("rank 0 ")));
  }
}

TEST_F(DbCliTest, StatsShowsTheFormatsMinusOneRankAndDeviceAsNotSet) {
  ASSERT_TRUE(fixture::ExecSql(db_,
                               "UPDATE RANK_DEVICE_MAP SET rankId = -1, deviceId = -1;"
                               "UPDATE MEMORY_RECORD SET deviceId = -1;")
                  .ok());
  CliResult result = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("  rank not set, device not set, host fixture-host"));
  std::vector<std::string> memory = Section(result.out, "Peak memory per device");
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_THAT(memory[2], ::testing::StartsWith("  not set "));
  EXPECT_THAT(result.out, Not(HasSubstr("-1")));
}

TEST_F(DbCliTest, StatsOfOneDbHasNoClusterSummary) {
  CliResult result = Run("stats " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("Cluster:")));
  EXPECT_EQ(result.out.rfind("gpuprof stats: ", 0), 0u);
}

TEST_F(DbCliTest, StatsReportsAnUnreadableRankOnceAndSummarizesTheOthers) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  ASSERT_TRUE(fixture::WriteFixtureRun(dir_ + "/runs", "node1_1_20240101", rank1).ok());
  const std::string bad =
      dir_ + "/runs/node2_1_20240101_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_2.db";
  ASSERT_TRUE(fixture::WriteFileBytes(bad, std::string(4096, 'x')));
  CliResult result = Run("stats " + ShellQuote(dir_ + "/runs"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out,
              HasSubstr("Cluster: 2 ranks (" + dir_ + "/runs; 1 DB(s) could not be read, see the errors)"));
  const std::string error = "gpuprof: error: not an SQLite database: " + bad;
  ASSERT_NE(result.err.find(error), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find(error), result.err.rfind(error)) << "reported more than once:\n" << result.err;
}

TEST_F(DbCliTest, StatsTopLimitsRows) {
  CliResult result = Run("stats --top 1 " + ShellQuote(db_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> total = Section(result.out, "Top ops by total time");
  ASSERT_EQ(total.size(), 3u);  // title, header, one row
  EXPECT_THAT(total[0], HasSubstr("1 of 7 names"));
  EXPECT_THAT(result.out, HasSubstr("... 1 more steps (--top shows more)"));
  EXPECT_EQ(Run("stats --top 0 " + ShellQuote(db_)).exit_code, 2);
}

TEST_F(DbCliTest, StatsOnEveryTableEmptySaysNoDataPerSection) {
  fixture::FixtureOptions empty;
  empty.with_rows = false;
  const std::string db = dir_ + "/empty.db";
  ASSERT_TRUE(fixture::WriteFixtureDb(db, empty).ok());
  CliResult result = Run("stats " + ShellQuote(db));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Top ops: no data (no torch op was recorded)\n"));
  EXPECT_THAT(result.out,
              HasSubstr("Top kernels: no data (no kernel, copy or memset was recorded on a device)\n"));
  EXPECT_THAT(result.out, HasSubstr("Peak memory: no data (no allocator record)\n"));
  EXPECT_THAT(result.out, HasSubstr("Steps: no data (no step was recorded)\n"));
  EXPECT_THAT(result.out, HasSubstr("GC: no data (no garbage-collector pause was recorded)\n"));
  EXPECT_THAT(result.out, HasSubstr("Kernel replay: no data (no launch was selected for replay)\n"));
}

TEST_F(DbCliTest, ExportWritesAChromeTraceWithEveryEventAndMatchedFlows) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  ASSERT_TRUE(fixture::WriteFixtureRun(dir_ + "/runs", "node1_1_20240101", rank1).ok());
  const std::string trace = dir_ + "/trace.json";
  CliResult result =
      Run("export --format perfetto " + ShellQuote(dir_ + "/runs") + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("wrote " + trace));
  EXPECT_THAT(result.out, HasSubstr("2 DB(s)"));

  gpuprof::StatusOr<fixture::JsonValue> root = fixture::ParseJson(fixture::ReadFileBytes(trace));
  ASSERT_TRUE(root.ok()) << root.status().message();
  const fixture::JsonValue* events = root->Find("traceEvents");
  ASSERT_NE(events, nullptr);
  std::map<std::string, int> by_phase_and_cat;
  std::map<std::string, std::pair<int, int>> flows;  // cat/id -> (starts, finishes)
  std::set<double> host_pids;
  for (const fixture::JsonValue& event : events->array) {
    const std::string ph = event.Str("ph");
    ++by_phase_and_cat[ph + ":" + event.Str("cat")];
    if (ph == "s") ++flows[event.Str("cat") + "/" + event.NumText("id")].first;
    if (ph == "f") ++flows[event.Str("cat") + "/" + event.NumText("id")].second;
    if (ph == "X" && event.Str("cat") == "cpu_op") host_pids.insert(event.Num("pid"));
  }
  const int ranks = 2;
  EXPECT_EQ(by_phase_and_cat["X:cpu_op"], ranks * fixture::kFixtureOps);
  EXPECT_EQ(by_phase_and_cat["X:kernel"], ranks * fixture::kFixtureKernels);
  EXPECT_EQ(by_phase_and_cat["X:gpu_memcpy"], ranks * 1);
  EXPECT_EQ(by_phase_and_cat["C:memory"], ranks * fixture::kFixtureMemoryRecords);
  EXPECT_EQ(by_phase_and_cat["X:gc"], ranks * fixture::kFixtureGcPauses);
  EXPECT_EQ(by_phase_and_cat["X:gpuprof_replay"], ranks * fixture::kFixtureReplayPasses);
  EXPECT_EQ(flows.size(),
            static_cast<std::size_t>(ranks * (fixture::kFixtureTaskFlows + fixture::kFixtureOpFlows)));
  for (const auto& [key, counts] : flows) EXPECT_EQ(counts, std::make_pair(1, 1)) << key;
  EXPECT_EQ(host_pids.size(), 2u);  // one process per rank although both ranks had pid 4242

  // A second, independent JSON parser where there is one.
  if (std::system("python3 -c 'import json' >/dev/null 2>&1") == 0) {
    const std::string command =
        "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
        "assert d[\"displayTimeUnit\"] == \"ns\"; assert len(d[\"traceEvents\"]) > 0' " +
        ShellQuote(trace);
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
}

TEST_F(DbCliTest, ExportOfRepeatedLinksAndAHugeNameStaysTheSizeOfTheData) {
  // Every CONNECTION_IDS row 20 times and every op row 20 times: the join gave 20 x 20 x 20 flows
  // per link. One op name of 1 MB: it was written whole into each of its events.
  std::string sql =
      "CREATE TABLE c2 AS SELECT * FROM CONNECTION_IDS; CREATE TABLE p2 AS SELECT * FROM PYTORCH_API;";
  for (int i = 1; i < 20; ++i)
    sql += "INSERT INTO CONNECTION_IDS SELECT * FROM c2; INSERT INTO PYTORCH_API SELECT * FROM p2;";
  sql +=
      "DROP TABLE c2; DROP TABLE p2; INSERT INTO STRING_IDS VALUES (777777, 'huge' || hex(zeroblob(500000)));"
      "UPDATE PYTORCH_API SET name = 777777 WHERE connectionId IS NOT NULL;";
  ASSERT_TRUE(fixture::ExecSql(db_, sql).ok());
  const std::string trace = dir_ + "/trace.json";
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out,
              HasSubstr(std::to_string(fixture::kFixtureTaskFlows + fixture::kFixtureOpFlows) + " flows"));
  EXPECT_THAT(result.err, HasSubstr("1 string(s) longer than 2048 bytes (the longest 1000004) were cut in"));
  EXPECT_LT(fs::file_size(trace), 2u << 20) << "a name of 1 MB repeated in its events";
  gpuprof::StatusOr<fixture::JsonValue> root = fixture::ParseJson(fixture::ReadFileBytes(trace));
  ASSERT_TRUE(root.ok()) << root.status().message();
  int cut = 0;
  for (const fixture::JsonValue& event : root->Find("traceEvents")->array) {
    const std::string name = event.Str("name");
    if (name.rfind("huge", 0) != 0) continue;
    ++cut;
    EXPECT_LT(name.size(), 2100u);
    EXPECT_THAT(name, ::testing::EndsWith("... [cut from 1000004 bytes]"));
  }
  EXPECT_GT(cut, 0);
}

TEST_F(DbCliTest, ExportUnknownFormatIsAUsageErrorListingFormats) {
  const std::string trace = dir_ + "/trace.json";
  CliResult result = Run("export --format chrome " + ShellQuote(db_) + " -o " + ShellQuote(trace));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("unknown export format 'chrome'; formats: perfetto"));
  EXPECT_FALSE(fs::exists(trace));
}

TEST_F(DbCliTest, MissingPathArgumentIsAUsageError) {
  for (const std::string command : {"stats", "check", "export -o x.json"}) {
    CliResult result = Run(command);
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_THAT(result.err, HasSubstr("PATH is required")) << command;
  }
}

TEST_F(DbCliTest, CheckOnTheFixtureIsOk) {
  CliResult result = Run("check " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out, ::testing::MatchesRegex("ok: " + db_ + " \\(34 tables, [0-9]+ rows\\)\n"));
}

TEST_F(DbCliTest, CheckPrintsOneLinePerProblemAndFails) {
  ASSERT_TRUE(fixture::ExecSql(db_,
                               "DROP INDEX TaskIndex; UPDATE PYTORCH_API SET name = 999999 WHERE rowid = 1;"
                               "INSERT INTO RANK_DEVICE_MAP VALUES (1, 1);")
                  .ok());
  CliResult result = Run("check " + ShellQuote(db_));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out,
            db_ + ": TASK: index TaskIndex (startNs, globalTaskId) missing\n" + db_ +
                ": PYTORCH_API: 1 distinct name value(s) not in STRING_IDS (e.g. 999999)\n" + db_ +
                ": RANK_DEVICE_MAP: has 2 rows, expected exactly one (msprof-analyze CROSS JOINs it with "
                "its queries)\n");
  EXPECT_THAT(result.err, HasSubstr("check found 3 problem(s)"));
}

TEST_F(DbCliTest, CheckFlagsWrongTypesNullIdsAndExtremeTimesAndStatsLeavesThoseRowsOut) {
  ASSERT_TRUE(
      fixture::ExecSql(db_,
                       "UPDATE TASK SET deviceId = 'gpu0' WHERE rowid = 1;"
                       "UPDATE PYTORCH_API SET globalTid = NULL WHERE rowid = 2;"
                       "UPDATE STEP_TIME SET startNs = -9000000000000000000, endNs = 9000000000000000000 "
                       "WHERE id = 2;"
                       "UPDATE TASK SET endNs = startNs + 1000000000000000 WHERE rowid = 3;")
          .ok());
  CliResult check = Run("check " + ShellQuote(db_));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_THAT(check.out, HasSubstr(db_ + ": TASK: 1 row(s) whose deviceId is stored as text, not INTEGER"));
  EXPECT_THAT(check.out, HasSubstr(db_ + ": PYTORCH_API: 1 row(s) with NULL globalTid (e.g. rowid 2)"));
  EXPECT_THAT(check.out,
              HasSubstr(db_ + ": STEP_TIME: 1 row(s) whose startNs or endNs is negative or beyond 2^62"));

  CliResult stats = Run("stats " + ShellQuote(db_));
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("note: STEP_TIME: 1 row(s) left out"));
  EXPECT_THAT(stats.out, HasSubstr("note: TASK: 1 row(s) left out"));
  EXPECT_THAT(stats.out, Not(HasSubstr("-9")));  // no negative total or overflowed average
  // Each percentage the report prints is of the session or a total: none above 100.
  std::stringstream lines(stats.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::size_t at = 0;
    while ((at = line.find('%', at)) != std::string::npos) {
      std::size_t begin = at;
      while (begin > 0 &&
             (std::isdigit(static_cast<unsigned char>(line[begin - 1])) != 0 || line[begin - 1] == '.')) {
        --begin;
      }
      if (begin < at) {
        EXPECT_LE(std::stod(line.substr(begin, at - begin)), 100.0) << line;
      }
      ++at;
    }
  }
}

TEST_F(DbCliTest, PartialDbsAreMentionedButNotRead) {
  const std::string partial = run_dir_ + "/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db.partial";
  ASSERT_TRUE(fixture::WriteFileBytes(partial, "killed mid-run"));
  for (const std::string command : {"stats", "check"}) {
    CliResult result = Run(command + " " + ShellQuote(run_dir_));
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
    EXPECT_THAT(result.err,
                HasSubstr("gpuprof: note: found 1 partial DB(s) from runs that did not finish: " + partial));
  }
}

// ---- Outputs that are not plain files, inputs whose names are not plain -------------------------

// True when the JSON text is a Chrome trace with at least one event.
bool IsTrace(const std::string& text) {
  gpuprof::StatusOr<fixture::JsonValue> root = fixture::ParseJson(text);
  if (!root.ok()) return false;
  const fixture::JsonValue* events = root->Find("traceEvents");
  return events != nullptr && !events->array.empty();
}

TEST_F(DbCliTest, ExportToStandardOutputWritesTheTraceThereAndTheSummaryToStderr) {
  // From the test's folder: a file named "-" would appear there.
  const std::string err_path = dir_ + "/stderr.txt";
  CliResult result = RunShell("cd " + ShellQuote(dir_) + " && " + ShellQuote(GPUPROF_CLI_PATH) + " export " +
                                  ShellQuote(db_) + " -o - 2>" + ShellQuote(err_path),
                              err_path);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(IsTrace(result.out)) << result.out.substr(0, 200);
  EXPECT_THAT(result.err, HasSubstr("wrote standard output"));
  EXPECT_FALSE(fs::exists(dir_ + "/-"));
}

TEST_F(DbCliTest, ExportIntoAFifoWritesThroughItAndLeavesItAFifo) {
  const std::string fifo = dir_ + "/trace.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string got = dir_ + "/from_fifo.json";
  // A reader on the FIFO; bounded, so that a regression fails instead of hanging.
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(fifo) + " & timeout 60 cat " +
                         ShellQuote(fifo) + " > " + ShellQuote(got) + "; wait $!");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo))) << "the FIFO was replaced";
  EXPECT_TRUE(IsTrace(fixture::ReadFileBytes(got)));
}

TEST_F(DbCliTest, ExportThroughALinkToACharacterDeviceWritesTheDevice) {
  // /dev/null reached through a link in our own folder: before writing through devices, the link
  // was replaced by a regular file (naming /dev/null directly would have replaced it as root).
  const std::string link = dir_ + "/null_link";
  fs::create_symlink("/dev/null", link);
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(link));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link))) << "the link was replaced";
  EXPECT_TRUE(fs::is_character_file(fs::status("/dev/null")));
}

TEST_F(DbCliTest, ExportThroughASymlinkWritesItsTargetAndKeepsTheLink) {
  const std::string target = dir_ + "/real_trace.json";
  ASSERT_TRUE(fixture::WriteFileBytes(target, "old"));
  const std::string link = dir_ + "/trace_link.json";
  fs::create_symlink(target, link);
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(link));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link))) << "the link was replaced";
  EXPECT_TRUE(IsTrace(fixture::ReadFileBytes(target)));
}

TEST_F(DbCliTest, ExportRefusesADanglingLinkAndADirectory) {
  const std::string dangling = dir_ + "/dangling.json";
  fs::create_symlink(dir_ + "/nowhere/trace.json", dangling);
  CliResult result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(dangling));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(dangling));
  EXPECT_THAT(result.err, HasSubstr("is a symbolic link whose target cannot be reached"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
  EXPECT_FALSE(fs::exists(dir_ + "/nowhere"));

  const std::string folder = dir_ + "/traces";
  fs::create_directories(folder);
  result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(folder));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err,
              HasSubstr(folder + " is a directory; name a file, e.g. -o " + folder + "/trace.json"));
  EXPECT_TRUE(fs::is_directory(folder));
  EXPECT_TRUE(fs::is_empty(folder));
}

TEST_F(DbCliTest, AFileNamedLikeAnSqliteUriIsOpenedAsThatFile) {
  // With SQLite's URI names on (Debian's default), "file:a.db" named a.db: export read a.db and
  // replaced it with the trace, past the "output is the input" guard.
  ASSERT_TRUE(fixture::WriteFileBytes(dir_ + "/file:a.db", fixture::ReadFileBytes(db_)));
  ASSERT_TRUE(fixture::ExecSql(dir_ + "/a.db", "CREATE TABLE songs (title TEXT);").ok());
  const std::string cd = "cd " + ShellQuote(dir_) + " && ";
  CliResult result = RunShell(cd + ShellQuote(GPUPROF_CLI_PATH) + " stats file:a.db 2>&1");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  result = RunShell(cd + ShellQuote(GPUPROF_CLI_PATH) + " export file:a.db -o file:a.db 2>&1");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("is the input"));
  result = RunShell(cd + ShellQuote(GPUPROF_CLI_PATH) + " export file:a.db -o trace.json 2>&1");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_TRUE(IsTrace(fixture::ReadFileBytes(dir_ + "/trace.json")));
  // a.db, which nobody named, is untouched.
  EXPECT_TRUE(fixture::ExecSql(dir_ + "/a.db", "SELECT title FROM songs;").ok());

  // Characters a URI would treat specially stay part of the name.
  const std::string odd = dir_ + "/run ?x=1#frag%41.db";
  ASSERT_TRUE(fixture::WriteFileBytes(odd, fixture::ReadFileBytes(db_)));
  for (const std::string command : {"stats", "check"}) {
    result = Run(command + " " + ShellQuote(odd));
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
  }
}

TEST_F(DbCliTest, ReadingAWalModeDbLeavesNothingBesideIt) {
  ASSERT_TRUE(fixture::ExecSql(db_, "PRAGMA journal_mode=WAL;").ok());
  ASSERT_FALSE(fs::exists(db_ + "-wal"));
  for (const std::string& command :
       std::vector<std::string>{"stats", "check", "export -o " + ShellQuote(dir_ + "/t.json")}) {
    CliResult result = Run(command + " " + ShellQuote(db_));
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
    EXPECT_FALSE(fs::exists(db_ + "-wal")) << command;
    EXPECT_FALSE(fs::exists(db_ + "-shm")) << command;
  }
}

TEST_F(DbCliTest, StatsOfADbWhoseStringIdsHasNoValueColumnShowsIdsInsteadOfFailing) {
  ASSERT_TRUE(fixture::ExecSql(db_, "ALTER TABLE STRING_IDS RENAME COLUMN value TO text;").ok());
  CliResult result = Run("stats " + ShellQuote(db_));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("Top kernels"));
  EXPECT_THAT(result.out, HasSubstr("STRING_IDS has no value column"));
  result = Run("export " + ShellQuote(db_) + " -o " + ShellQuote(dir_ + "/t.json"));
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST_F(DbCliTest, CheckEscapesControlCharactersFromTheDb) {
  ASSERT_TRUE(fixture::ExecSql(db_,
                               "UPDATE META_DATA SET value = 'v' || char(27) || ']0;pwned' || char(7) || "
                               "char(155) WHERE name LIKE 'SCHEMA_VERSION%';")
                  .ok());
  CliResult result = Run("check " + ShellQuote(db_));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.out, HasSubstr("v\\x1b]0;pwned\\x07\\u009b"));
  for (char c : result.out + result.err) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 || c == '\n' || c == '\t') << "raw control byte " << static_cast<int>(byte);
  }
}

// ---- Bad input, for each of the three commands ------------------------------------------------------

class DbCliBadInputTest : public DbCliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  // `gpuprof <command> PATH`; export writes to a file that must not appear.
  CliResult RunOn(const std::string& path) {
    std::string args = GetParam() + " " + ShellQuote(path);
    if (GetParam() == "export") args += " --format perfetto -o " + ShellQuote(Output());
    if (GetParam() == "report") args += " -o " + ShellQuote(Output());
    CliResult result = Run(args);
    if (GetParam() == "export" || GetParam() == "report") {
      EXPECT_FALSE(fs::exists(Output())) << "a failed " << GetParam() << " left " << Output();
    }
    return result;
  }
  std::string Output() const { return dir_ + (GetParam() == "report" ? "/report.html" : "/out/trace.json"); }
  void SetUp() override {
    DbCliTest::SetUp();
    fs::create_directories(dir_ + "/out");
  }
};

TEST_P(DbCliBadInputTest, MissingPath) {
  CliResult result = RunOn(dir_ + "/no_such.db");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("gpuprof: error: no such file or directory: " + dir_ + "/no_such.db"));
  EXPECT_THAT(result.err, HasSubstr("_ascend_pt run directory"));
}

TEST_P(DbCliBadInputTest, NotAnSqliteFile) {
  const std::string path = dir_ + "/notes.db";
  ASSERT_TRUE(fixture::WriteFileBytes(path, std::string(1000, 'z')));
  CliResult result = RunOn(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("gpuprof: error: not an SQLite database: " + path));
}

TEST_P(DbCliBadInputTest, EmptyFile) {
  const std::string path = dir_ + "/empty.db";
  ASSERT_TRUE(fixture::WriteFileBytes(path, ""));
  CliResult result = RunOn(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("not an SQLite database: " + path + " (the file is empty"));
}

TEST_P(DbCliBadInputTest, ForeignSqliteSchema) {
  const std::string path = dir_ + "/music.db";
  ASSERT_TRUE(
      fixture::ExecSql(path, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('a');").ok());
  CliResult result = RunOn(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err,
              HasSubstr("gpuprof: error: " + path +
                        " is not a gpuprof/ascend_pytorch_profiler database (no PYTORCH_API or TASK "
                        "table)"));
}

TEST_P(DbCliBadInputTest, TruncatedCopy) {
  const std::string bytes = fixture::ReadFileBytes(db_);
  ASSERT_GT(bytes.size(), 8192u);
  const std::string path = dir_ + "/half.db";
  ASSERT_TRUE(fixture::WriteFileBytes(path, bytes.substr(0, bytes.size() / 2)));
  CliResult result = RunOn(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("gpuprof: error: " + path + " is damaged or truncated"));
  EXPECT_THAT(result.err, HasSubstr("copy it again from the run's output directory, or re-run the profile"));
}

TEST_P(DbCliBadInputTest, DirectoryWithoutDbs) {
  const std::string path = dir_ + "/nothing_here";
  fs::create_directories(path + "/x_ascend_pt/ASCEND_PROFILER_OUTPUT");
  ASSERT_TRUE(fixture::WriteFileBytes(
      path + "/x_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db.partial", "x"));
  CliResult result = RunOn(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("gpuprof: error: no profile database under " + path));
  EXPECT_THAT(result.err, HasSubstr("found 1 partial DB(s) from runs that did not finish"));
}

TEST_P(DbCliBadInputTest, PartialDbNamedDirectly) {
  const std::string path = dir_ + "/ascend_pytorch_profiler_0.db.partial";
  ASSERT_TRUE(fixture::WriteFileBytes(path, fixture::ReadFileBytes(db_)));
  CliResult result = RunOn(path);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("is a partial DB from a run that did not finish"));
}

// ---- gpuprof report (issue 22) ---------------------------------------------------------------------

TEST_F(DbCliTest, ReportIsOneSelfContainedPageWithTheFiguresOfStats) {
  CliResult result = Run("report " + ShellQuote(run_dir_));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page_path = run_dir_ + "/gpuprof_report.html";
  EXPECT_THAT(result.out, HasSubstr("wrote " + page_path + " ("));
  EXPECT_THAT(result.out, HasSubstr("file://" + page_path));
  const std::string page = fixture::ReadFileBytes(page_path);
  ASSERT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u) << page.substr(0, 200);
  for (const char* section : {"overview", "steps", "timeline", "ops", "memory", "replay"}) {
    EXPECT_THAT(page, HasSubstr(std::string("<section id=\"") + section + "\">")) << section;
  }
  EXPECT_THAT(page, Not(HasSubstr("<section id=\"cluster\">"))) << "one DB: no cluster";
  // Nothing is fetched: no external script, style, image or font; the policy forbids any.
  for (const char* fetch : {" src=", "<link", "@import", "url(", "<iframe", "<img"}) {
    EXPECT_THAT(page, Not(HasSubstr(fetch))) << fetch;
  }
  EXPECT_THAT(page, HasSubstr("Content-Security-Policy\" content=\"default-src 'none'"));
  // The figures of `gpuprof stats` for the same DB (StatsPrintsEveryTableForAFixtureRun).
  EXPECT_THAT(Figures(page, "step-count"), ::testing::ElementsAre("2"));
  EXPECT_THAT(Figures(page, "step-avg-ms"), ::testing::ElementsAre("0.950"));
  EXPECT_THAT(Figures(page, "step-ms"), ::testing::ElementsAre("1.000", "0.900"));
  // The fixture's one copy (MEMCPY_ASYNC, 10 us) in step 1.
  EXPECT_THAT(Figures(page, "step-memcpy-ms"), ::testing::ElementsAre("0.010", "0.000"));
  EXPECT_THAT(Figures(page, "kernel-launches"), ::testing::ElementsAre("4"));
  EXPECT_THAT(Figures(page, "kernel-ms"), ::testing::ElementsAre("0.250"));
  const std::vector<std::string> kernels = Figures(page, "kernel-name");
  const std::vector<std::string> kernel_ms = Figures(page, "kernel-total-ms");
  ASSERT_EQ(kernels.size(), 3u);
  const auto relu = std::find(kernels.begin(), kernels.end(), "relu_kernel") - kernels.begin();
  ASSERT_LT(relu, 3);
  EXPECT_EQ(kernel_ms[static_cast<std::size_t>(relu)], "0.050");
  const std::vector<std::string> ops = Figures(page, "op-name");
  const std::vector<std::string> op_ms = Figures(page, "op-total-ms");
  const auto linear = std::find(ops.begin(), ops.end(), "aten::linear") - ops.begin();
  ASSERT_LT(static_cast<std::size_t>(linear), ops.size());
  EXPECT_EQ(op_ms[static_cast<std::size_t>(linear)], "0.300");
  EXPECT_THAT(Figures(page, "memory-peak-allocated"), ::testing::ElementsAre("3 MiB"))
      << "as stats prints it";
  // The peak (3 MiB at 200 us): the addmm block [200, 500) us and the never-released one
  // no op allocated (OP_MEMORY's invalid name id) are live.
  EXPECT_THAT(Figures(page, "live-at-peak-op"), ::testing::ElementsAre("aten::addmm", "[no op]"));
  EXPECT_THAT(Figures(page, "live-at-peak-op-bytes"), ::testing::ElementsAre("2 MiB", "1 MiB"));
  EXPECT_THAT(Figures(page, "allocating-op"), ::testing::ElementsAre("aten::addmm", "[no op]"));
  // The odd op name is escaped for HTML; no control byte reaches the page.
  EXPECT_THAT(page, HasSubstr("weird &quot;op&quot;"));
  EXPECT_THAT(page, Not(HasSubstr("\x01")));
  // The timeline: the median step (2, 0.900 ms) shown, the slowest (1) to choose; its ops, kernels
  // and memory drawn.
  EXPECT_THAT(page, HasSubstr(">median: step 2 (0.900 ms)</option>"));
  EXPECT_THAT(page, HasSubstr(">slowest: step 1 (1.000 ms)</option>"));
  EXPECT_THAT(page, HasSubstr("aria-label=\"timeline of step 2\""));
  EXPECT_THAT(page, HasSubstr("<title>relu_kernel: "));
  EXPECT_THAT(page, HasSubstr("id=\"tl-0-1\" hidden"));
  // The step split's chart and the memory curve are drawn.
  EXPECT_THAT(page, HasSubstr("aria-label=\"step breakdown\""));
  EXPECT_THAT(page, HasSubstr("aria-label=\"memory of device 0\""));
}

// As export's default trace: a gpuprof_report.html that gpuprof report did not write is the user's.
TEST_F(DbCliTest, ReportsDefaultNeverReplacesAFileGpuprofDidNotWrite) {
  const std::string page = run_dir_ + "/gpuprof_report.html";
  { std::ofstream(page) << "my own notes\n"; }
  CliResult result = Run("report " + ShellQuote(run_dir_));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(page + " exists and is not a page gpuprof report wrote"));
  EXPECT_THAT(result.err, HasSubstr("--force"));
  EXPECT_THAT(result.err, HasSubstr("-o FILE"));
  EXPECT_EQ(fixture::ReadFileBytes(page), "my own notes\n");

  result = Run("report --force " + ShellQuote(run_dir_));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(fixture::ReadFileBytes(page).rfind("<!DOCTYPE html>", 0), 0u);
  // A page an earlier report wrote is replaced without --force.
  result = Run("report " + ShellQuote(run_dir_));
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

TEST_F(DbCliTest, ReportOfTwoRanksHasTheClusterSectionAndReportsReplay) {
  fixture::FixtureOptions rank1;
  rank1.rank = 1;
  gpuprof::StatusOr<std::string> db1 = fixture::WriteFixtureRun(dir_ + "/runs", "node1_1_20240101", rank1);
  ASSERT_TRUE(db1.ok()) << db1.status().message();
  const std::string out = dir_ + "/two.html";
  CliResult result = Run("report " + ShellQuote(dir_ + "/runs") + " -o " + ShellQuote(out));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string page = fixture::ReadFileBytes(out);
  EXPECT_THAT(page, HasSubstr("<section id=\"cluster\">"));
  EXPECT_THAT(page, HasSubstr("aria-label=\"step time per rank\""));
  EXPECT_THAT(Figures(page, "step-count"), ::testing::ElementsAre("2", "2"));
  // The fixture has replayed launches: the replay table shows them as stats does.
  EXPECT_FALSE(Figures(page, "replay-kernel").empty());
  EXPECT_FALSE(fs::exists(dir_ + "/runs/gpuprof_report.html")) << "-o given: nothing else written";
}

TEST_F(DbCliTest, ReportRefusesADirectoryAsItsOutputAndWritesToStandardOutput) {
  CliResult refused = Run("report " + ShellQuote(db_) + " -o " + ShellQuote(dir_));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("is a directory; name a file, e.g. -o " + dir_ + "/report.html"));
  CliResult piped = Run("report " + ShellQuote(db_) + " -o -");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(piped.err, HasSubstr("wrote standard output"));
}

INSTANTIATE_TEST_SUITE_P(Commands, DbCliBadInputTest, ::testing::Values("stats", "export", "report", "check"),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
