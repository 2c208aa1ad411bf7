// Self time (the stack sweep, against a brute-force definition) and ComputeStats on fixture DBs
// whose every number is known.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "db/stats.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kUs = 1000;

OpTotals Totals(const SelfTimeSweep& sweep, std::int64_t key) {
  auto it = sweep.totals().find(key);
  return it == sweep.totals().end() ? OpTotals{} : it->second;
}

TEST(SelfTimeSweepTest, ChildTimeIsSubtractedFromTheDirectParentOnly) {
  SelfTimeSweep sweep;
  // root [0,100] > mid [10,60] > leaf [20,30]; sibling [70,90] under root.
  sweep.Add(1, 0, 100, /*key=*/0);
  sweep.Add(1, 10, 60, 1);
  sweep.Add(1, 20, 30, 2);
  sweep.Add(1, 70, 90, 3);
  sweep.Finish();
  EXPECT_EQ(Totals(sweep, 0).self_ns, 100 - 50 - 20);
  EXPECT_EQ(Totals(sweep, 0).total_ns, 100);
  EXPECT_EQ(Totals(sweep, 1).self_ns, 50 - 10);
  EXPECT_EQ(Totals(sweep, 2).self_ns, 10);
  EXPECT_EQ(Totals(sweep, 3).self_ns, 20);
}

TEST(SelfTimeSweepTest, ThreadsDoNotNestIntoEachOther) {
  SelfTimeSweep sweep;
  sweep.Add(1, 0, 100, 0);
  sweep.Add(2, 10, 20, 1);  // overlaps thread 1's op in time, but on another thread
  sweep.Finish();
  EXPECT_EQ(Totals(sweep, 0).self_ns, 100);
  EXPECT_EQ(Totals(sweep, 1).self_ns, 10);
}

TEST(SelfTimeSweepTest, SameStartParentFirstAndAdjacentOpsAreSiblings) {
  SelfTimeSweep sweep;
  sweep.Add(1, 0, 100, 0);    // parent
  sweep.Add(1, 0, 40, 1);     // child starting with it
  sweep.Add(1, 40, 40, 2);    // zero-length op right at the child's end: a sibling of the child
  sweep.Add(1, 100, 150, 3);  // starts at the parent's end: not its child
  sweep.Finish();
  EXPECT_EQ(Totals(sweep, 0).self_ns, 60);
  EXPECT_EQ(Totals(sweep, 1).self_ns, 40);
  EXPECT_EQ(Totals(sweep, 2).calls, 1u);
  EXPECT_EQ(Totals(sweep, 2).self_ns, 0);
  EXPECT_EQ(Totals(sweep, 3).self_ns, 50);
}

TEST(SelfTimeSweepTest, ChildRunningPastItsParentCountsOnlyInsideIt) {
  SelfTimeSweep sweep;
  sweep.Add(1, 0, 100, 0);
  sweep.Add(1, 80, 130, 1);  // bad data: ends after its parent
  sweep.Add(1, 40, 30, 2);   // never happens in order, but end < start must not go negative
  sweep.Finish();
  EXPECT_EQ(Totals(sweep, 0).self_ns, 80);
  EXPECT_EQ(Totals(sweep, 1).self_ns, 50);
  EXPECT_EQ(Totals(sweep, 2).total_ns, 0);
}

TEST(SelfTimeSweepTest, AggregatesCallsPerKey) {
  SelfTimeSweep sweep;
  sweep.Add(1, 0, 10, 5);
  sweep.Add(1, 20, 30, 5);
  sweep.Add(2, 0, 10, 5);
  sweep.Finish();
  EXPECT_EQ(Totals(sweep, 5).calls, 3u);
  EXPECT_EQ(Totals(sweep, 5).total_ns, 30);
  EXPECT_EQ(Totals(sweep, 5).self_ns, 30);
}

// Random properly nested op trees on a few threads: the sweep equals the definition (self = own
// duration minus the durations of the ops directly inside it), computed by brute force.
TEST(SelfTimeSweepTest, MatchesBruteForceOnRandomNestedTrees) {
  struct Op {
    std::int64_t thread, start, end, key;
  };
  std::mt19937_64 random(1234);
  for (int round = 0; round < 50; ++round) {
    std::vector<Op> ops;
    for (std::int64_t thread = 0; thread < 3; ++thread) {
      std::function<void(std::int64_t, std::int64_t, int)> fill = [&](std::int64_t lo, std::int64_t hi,
                                                                      int depth) {
        std::int64_t cursor = lo;
        while (cursor < hi && depth < 5) {
          // Non-empty ops with gaps between siblings: where a zero-length op or two touching
          // siblings nest is a convention (the sweep's: by start, then longer first), not a fact.
          std::int64_t start = cursor + static_cast<std::int64_t>(random() % 5);
          if (start >= hi) break;
          std::int64_t end = std::min(hi, start + 1 + static_cast<std::int64_t>(random() % 40));
          ops.push_back({thread, start, end, static_cast<std::int64_t>(random() % 4)});
          if (random() % 2 == 0) fill(start, end, depth + 1);
          cursor = end + 1 + static_cast<std::int64_t>(random() % 3);
        }
      };
      fill(0, 500, 0);
    }
    std::map<std::int64_t, OpTotals> expected;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      // Direct children: ops inside i with no other op strictly between (by containment).
      auto contains = [&](std::size_t outer, std::size_t inner) {
        const Op& a = ops[outer];
        const Op& b = ops[inner];
        return outer < inner && a.thread == b.thread && a.start <= b.start && b.end <= a.end;
      };
      std::int64_t children = 0;
      for (std::size_t j = 0; j < ops.size(); ++j) {
        if (!contains(i, j)) continue;
        bool direct = true;
        for (std::size_t k = 0; k < ops.size() && direct; ++k) direct = !(contains(i, k) && contains(k, j));
        if (direct) children += ops[j].end - ops[j].start;
      }
      OpTotals& totals = expected[ops[i].key];
      ++totals.calls;
      totals.total_ns += ops[i].end - ops[i].start;
      totals.self_ns += ops[i].end - ops[i].start - children;
    }
    // Generation order is parent-before-child, which is the order the sweep requires; sorting by
    // (thread, start, end desc) as the SQL does keeps that for ties only if stable.
    std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
      return std::tie(a.thread, a.start) < std::tie(b.thread, b.start) ||
             (a.thread == b.thread && a.start == b.start && a.end > b.end);
    });
    SelfTimeSweep sweep;
    for (const Op& op : ops) sweep.Add(op.thread, op.start, op.end, op.key);
    sweep.Finish();
    for (const auto& [key, totals] : expected) {
      SCOPED_TRACE("round " + std::to_string(round) + " key " + std::to_string(key));
      EXPECT_EQ(Totals(sweep, key).calls, totals.calls);
      EXPECT_EQ(Totals(sweep, key).total_ns, totals.total_ns);
      EXPECT_EQ(Totals(sweep, key).self_ns, totals.self_ns);
    }
  }
}

TEST(OpDisplayNameTest, FoldsProfilerStepsIntoOneRow) {
  EXPECT_EQ(OpDisplayName("ProfilerStep#12"), "ProfilerStep#*");
  EXPECT_EQ(OpDisplayName("ProfilerStep#"), "ProfilerStep#");
  EXPECT_EQ(OpDisplayName("aten::mm"), "aten::mm");
}

TEST(PrintableTextTest, EscapesTheFixturesWeirdOpName) {
  EXPECT_EQ(base::PrintableText(fixture::kFixtureWeirdOpName), "weird \"op\"\\\\t\\x01\xEF\xBF\xBD");
}

class StatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_stats");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // A fixture DB written with `options`, then damaged with `damage_sql`, opened for reading; null
  // (with a test failure) when that fails.
  std::unique_ptr<ProfileReader> OpenFixture(const fixture::FixtureOptions& options,
                                             const std::string& damage_sql) {
    const std::string path = dir_ + "/profile.db";
    Status written = fixture::WriteFixtureDb(path, options);
    EXPECT_TRUE(written.ok()) << written.message();
    if (!damage_sql.empty()) {
      EXPECT_TRUE(fixture::ExecSql(path, damage_sql).ok());
    }
    StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    return reader.ok() ? std::move(reader).value() : nullptr;
  }
  ProfileStats Compute(const fixture::FixtureOptions& options, std::size_t top = 15,
                       const std::string& damage_sql = "") {
    std::unique_ptr<ProfileReader> reader = OpenFixture(options, damage_sql);
    if (reader == nullptr) return {};
    StatusOr<ProfileStats> stats = ComputeStats(*reader, StatsOptions{top});
    EXPECT_TRUE(stats.ok()) << stats.status().message();
    return stats.ok() ? *stats : ProfileStats{};
  }
  std::string dir_;
};

std::map<std::string, OpTotals> ByName(const std::vector<OpStat>& ops) {
  std::map<std::string, OpTotals> out;
  for (const OpStat& op : ops) out[op.name] = op.totals;
  return out;
}

TEST_F(StatsTest, FixtureOpsHaveKnownTotalAndSelfTimes) {
  ProfileStats stats = Compute({});
  EXPECT_EQ(stats.rank, 0);
  EXPECT_EQ(stats.device, 0);
  EXPECT_EQ(stats.host_name, "fixture-host");
  EXPECT_EQ(stats.op_calls, static_cast<std::uint64_t>(fixture::kFixtureOps));
  EXPECT_EQ(stats.op_names, 7u);
  EXPECT_EQ(stats.op_self_sum_ns, 2100 * kUs);

  ASSERT_EQ(stats.top_ops_by_total.size(), 7u);
  EXPECT_EQ(stats.top_ops_by_total[0].name, "ProfilerStep#*");
  EXPECT_EQ(stats.top_ops_by_total[1].name, "aten::linear");
  EXPECT_EQ(stats.top_ops_by_self[0].name, "ProfilerStep#*");
  EXPECT_EQ(stats.top_ops_by_self[1].name, "aten::addmm");
  EXPECT_EQ(stats.top_ops_by_self.back().name, "AddmmBackward0");

  std::map<std::string, OpTotals> ops = ByName(stats.top_ops_by_total);
  EXPECT_EQ(ops["ProfilerStep#*"].calls, 2u);
  EXPECT_EQ(ops["ProfilerStep#*"].total_ns, 1900 * kUs);
  EXPECT_EQ(ops["ProfilerStep#*"].self_ns, 1400 * kUs);
  EXPECT_EQ(ops["aten::linear"].self_ns, 100 * kUs);
  EXPECT_EQ(ops["aten::addmm"].self_ns, 200 * kUs);
  EXPECT_EQ(ops["aten::relu"].calls, 2u);
  EXPECT_EQ(ops["aten::relu"].total_ns, 150 * kUs);
  EXPECT_EQ(ops["AddmmBackward0"].total_ns, 200 * kUs);
  EXPECT_EQ(ops["AddmmBackward0"].self_ns, 40 * kUs);
  EXPECT_EQ(ops["aten::mm"].self_ns, 160 * kUs);
  EXPECT_EQ(ops[fixture::kFixtureWeirdOpName].self_ns, 50 * kUs);
}

TEST_F(StatsTest, TopLimitsRowsButNotTotals) {
  ProfileStats stats = Compute({}, /*top=*/2);
  EXPECT_EQ(stats.top_ops_by_total.size(), 2u);
  EXPECT_EQ(stats.op_names, 7u);
  EXPECT_EQ(stats.top_kernels.size(), 2u);
  EXPECT_EQ(stats.kernel_calls, static_cast<std::uint64_t>(fixture::kFixtureKernels));
  EXPECT_EQ(stats.steps.size(), 2u);
}

TEST_F(StatsTest, FixtureKernelsMemoryStepsGcAndReplay) {
  ProfileStats stats = Compute({});
  EXPECT_EQ(stats.kernel_calls, 4u);
  EXPECT_EQ(stats.kernel_names, 3u);
  EXPECT_EQ(stats.kernel_total_ns, 250 * kUs);
  ASSERT_EQ(stats.top_kernels.size(), 3u);
  // gemm and gemm_bwd tie at 100 µs: STRING_IDS id order (deterministic, no lookup per group).
  EXPECT_EQ(stats.top_kernels[0].name, "gemm_kernel<float>");
  EXPECT_EQ(stats.top_kernels[1].name, "gemm_bwd_kernel");
  EXPECT_EQ(stats.top_kernels[2].name, "relu_kernel");
  EXPECT_EQ(stats.top_kernels[2].calls, 2u);
  EXPECT_EQ(stats.top_kernels[2].total_ns, 50 * kUs);
  EXPECT_EQ(stats.top_kernels[2].max_ns, 30 * kUs);
  ASSERT_EQ(stats.task_types.size(), 2u);
  EXPECT_EQ(stats.task_types[0].type, "KERNEL");
  EXPECT_EQ(stats.task_types[1].type, "MEMCPY_ASYNC");

  ASSERT_EQ(stats.memory.size(), 1u);
  EXPECT_EQ(stats.memory[0].component, "PTA");
  EXPECT_EQ(stats.memory[0].peak_allocated, 3 << 20);
  EXPECT_EQ(stats.memory[0].peak_reserved, 4 << 20);
  EXPECT_EQ(stats.memory[0].peak_active, 3 << 20);
  EXPECT_EQ(stats.memory[0].records, 3u);

  EXPECT_EQ(stats.step_count, 2u);
  EXPECT_EQ(stats.step_min_ns, 900 * kUs);
  EXPECT_EQ(stats.step_max_ns, 1000 * kUs);
  ASSERT_EQ(stats.steps.size(), 2u);
  EXPECT_EQ(stats.steps[0].id, 1);

  EXPECT_EQ(stats.gc_count, 2u);
  EXPECT_EQ(stats.gc_total_ns, 30 * kUs);
  EXPECT_EQ(stats.gc_max_ns, 20 * kUs);

  EXPECT_TRUE(stats.replay_absent.empty()) << stats.replay_absent;
  ASSERT_EQ(stats.replay.size(), 2u);
  const ReplayKernelStat& gemm =
      stats.replay[0].kernel == "gemm_kernel<float>" ? stats.replay[0] : stats.replay[1];
  const ReplayKernelStat& bwd =
      stats.replay[0].kernel == "gemm_kernel<float>" ? stats.replay[1] : stats.replay[0];
  EXPECT_EQ(gemm.launches, 1u);
  EXPECT_EQ(gemm.passes, 3u);
  EXPECT_EQ(gemm.min_ns, 98 * kUs);
  EXPECT_EQ(gemm.median_ns, 100 * kUs);
  EXPECT_EQ(gemm.max_ns, 102 * kUs);
  EXPECT_DOUBLE_EQ(gemm.restored_bytes_per_pass, 4096.0);
  EXPECT_EQ(gemm.nondeterministic_launches, 0u);
  EXPECT_EQ(bwd.passes, 2u);
  EXPECT_EQ(bwd.median_ns, 105 * kUs);  // even count: the mean of the middle two
  EXPECT_EQ(bwd.nondeterministic_launches, 1u);
  ASSERT_EQ(stats.replay_declines.size(), 1u);
  EXPECT_EQ(stats.replay_declines[0].kernel, "relu_kernel");
  EXPECT_EQ(stats.replay_declines[0].reason, "graph-launch");
}

TEST_F(StatsTest, ReplayCountersPerGroupWithStatusAndPolicies) {
  ProfileStats stats = Compute({});
  EXPECT_EQ(stats.replay_counters_absent, "");
  EXPECT_EQ(stats.replay_counter_groups, 2u);
  ASSERT_EQ(stats.replay_counters.size(), 2u);
  const ReplayCounterStat& gemm = stats.replay_counters[0].kernel == "gemm_kernel<float>"
                                      ? stats.replay_counters[0]
                                      : stats.replay_counters[1];
  const ReplayCounterStat& bwd = stats.replay_counters[0].kernel == "gemm_kernel<float>"
                                     ? stats.replay_counters[1]
                                     : stats.replay_counters[0];
  EXPECT_EQ(gemm.launches, 1u);
  EXPECT_EQ(gemm.launches_with_metrics, 1u);
  EXPECT_EQ(gemm.launches_without_counters, 0u);
  EXPECT_EQ(gemm.metrics.size(), static_cast<std::size_t>(fixture::kFixtureReplayMetrics));
  const ReplayMetricStat* dram = gemm.Find("dram__bytes_read.sum");
  ASSERT_NE(dram, nullptr);
  EXPECT_EQ(dram->unit, "byte");
  EXPECT_EQ(dram->launches, 1u);
  EXPECT_DOUBLE_EQ(dram->mean, 1048576.0);
  const ReplayMetricStat* grid = gemm.Find("launch__grid_size");
  ASSERT_NE(grid, nullptr);
  EXPECT_EQ(grid->unit, "");  // NULL unit
  EXPECT_EQ(gemm.Find("sm__maximum_warps_per_active_cycle_pct"), nullptr);
  EXPECT_THAT(gemm.clock_controls, ElementsAre("base"));
  EXPECT_THAT(gemm.cache_controls, ElementsAre("all"));
  EXPECT_EQ(gemm.pass_count, 3u);
  EXPECT_DOUBLE_EQ(gemm.pass_mean_ns, 100000.0);

  EXPECT_EQ(bwd.launches, 1u);
  EXPECT_EQ(bwd.launches_with_metrics, 0u);
  EXPECT_EQ(bwd.launches_without_counters, 1u);
  EXPECT_EQ(bwd.counter_status, fixture::kFixtureCounterStatus);
  EXPECT_TRUE(bwd.metrics.empty());
  EXPECT_EQ(bwd.pass_count, 2u);
  EXPECT_DOUBLE_EQ(bwd.pass_mean_ns, 105000.0);
  EXPECT_EQ(bwd.pass_min_ns, 100 * kUs);
  EXPECT_EQ(bwd.pass_max_ns, 110 * kUs);
  EXPECT_THAT(bwd.clock_controls, ElementsAre("none"));
}

TEST_F(StatsTest, ReplayCountersAreMeansOverTheGroupsLaunches) {
  // A second gemm launch (id 4) with two of the metrics and another clock policy.
  ProfileStats stats = Compute(
      {}, 15,
      "INSERT INTO GPUPROF_REPLAY_KERNEL (id, deviceId, name, replayed, launchIndex, passes, clockControl, "
      "cacheControl) VALUES (4, 0, 5, 1, 3, 0, 'none', 'all');"
      "INSERT INTO GPUPROF_REPLAY_METRIC VALUES (4, 14, 21, 70.0, 1), (4, 16, 22, 3145728.0, 1);");
  const ReplayCounterStat* gemm = nullptr;
  for (const ReplayCounterStat& group : stats.replay_counters) {
    if (group.kernel == "gemm_kernel<float>") gemm = &group;
  }
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->launches, 2u);
  EXPECT_EQ(gemm->launches_with_metrics, 2u);
  const ReplayMetricStat* sm = gemm->Find("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->launches, 2u);
  EXPECT_DOUBLE_EQ(sm->mean, 65.625);
  EXPECT_DOUBLE_EQ(sm->min, 61.25);
  EXPECT_DOUBLE_EQ(sm->max, 70.0);
  EXPECT_EQ(gemm->Find("gpu__time_duration.sum")->launches, 1u);  // only the first launch has it
  EXPECT_THAT(gemm->clock_controls, ElementsAre("base", "none"));
}

TEST_F(StatsTest, DbWithoutCountersReadsAsBefore) {
  ProfileStats before = Compute({}, 15, fixture::kFixtureBeforeCountersSql);
  EXPECT_TRUE(before.replay_counters.empty());
  EXPECT_EQ(before.replay_counter_groups, 0u);
  EXPECT_THAT(before.replay_counters_absent, HasSubstr("no GPUPROF_REPLAY_METRIC table"));
  ProfileStats now = Compute({});
  EXPECT_EQ(before.replay_absent, now.replay_absent);
  ASSERT_EQ(before.replay.size(), now.replay.size());
  for (std::size_t i = 0; i < now.replay.size(); ++i) {
    EXPECT_EQ(before.replay[i].kernel, now.replay[i].kernel);
    EXPECT_EQ(before.replay[i].passes, now.replay[i].passes);
    EXPECT_EQ(before.replay[i].median_ns, now.replay[i].median_ns);
  }
  EXPECT_EQ(before.replay_declines.size(), now.replay_declines.size());
  // Counters asked of no launch: the table is there and empty.
  ProfileStats none = Compute(
      {}, 15, "DELETE FROM GPUPROF_REPLAY_METRIC; UPDATE GPUPROF_REPLAY_KERNEL SET counterStatus = NULL;");
  EXPECT_TRUE(none.replay_counters.empty());
  EXPECT_THAT(none.replay_counters_absent, HasSubstr("no replayed launch has hardware counters"));
}

TEST_F(StatsTest, ForEachReplayMetricStreamsTheRawRows) {
  std::unique_ptr<ProfileReader> reader = OpenFixture({}, "");
  ASSERT_NE(reader, nullptr);
  std::vector<std::string> rows;
  std::string absent = "not cleared";
  Status status = ForEachReplayMetric(
      *reader,
      [&](const ReplayMetricRow& row) {
        rows.push_back(std::to_string(row.rank.value_or(-9)) + "|" + std::to_string(row.kernel_id) + "|" +
                       row.kernel + "|" + std::to_string(row.launch_index) + "|" + row.metric + "|" +
                       row.unit + "|" + (row.value.has_value() ? std::to_string(*row.value) : "NULL") + "|" +
                       std::to_string(row.passes));
      },
      &absent);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(absent, "");
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(fixture::kFixtureReplayMetrics));
  EXPECT_EQ(rows.front(), "0|1|gemm_kernel<float>|0|gpu__time_duration.sum|nanosecond|99500.000000|1");
  EXPECT_EQ(rows.back(), "0|1|gemm_kernel<float>|0|launch__grid_size||128.000000|0");

  reader.reset();
  std::unique_ptr<ProfileReader> old = OpenFixture({}, fixture::kFixtureBeforeCountersSql);
  ASSERT_NE(old, nullptr);
  rows.clear();
  ASSERT_TRUE(ForEachReplayMetric(
                  *old, [&](const ReplayMetricRow& row) { rows.push_back(row.metric); }, &absent)
                  .ok());
  EXPECT_TRUE(rows.empty());
  EXPECT_THAT(absent, HasSubstr("no GPUPROF_REPLAY_METRIC table"));
}

TEST_F(StatsTest, EveryTableEmptyGivesReasonsNotErrors) {
  fixture::FixtureOptions empty;
  empty.with_rows = false;
  ProfileStats stats = Compute(empty);
  EXPECT_TRUE(stats.top_ops_by_total.empty());
  EXPECT_EQ(stats.ops_absent, "no torch op was recorded");
  EXPECT_EQ(stats.kernels_absent, "no kernel, copy or memset was recorded on a device");
  EXPECT_EQ(stats.memory_absent, "no allocator record");
  EXPECT_EQ(stats.steps_absent, "no step was recorded");
  EXPECT_EQ(stats.gc_absent, "no garbage-collector pause was recorded");
  EXPECT_THAT(stats.replay_absent, HasSubstr("no launch was selected for replay"));
  EXPECT_FALSE(stats.rank.has_value());
}

TEST_F(StatsTest, MissingOptionalTablesAreReportedNotFatal) {
  fixture::FixtureOptions no_replay;
  no_replay.with_replay_tables = false;
  ProfileStats stats =
      Compute(no_replay, 15,
              "DROP TABLE GC_RECORD; DROP TABLE MEMORY_RECORD; ALTER TABLE STEP_TIME DROP COLUMN endNs;");
  EXPECT_EQ(stats.replay_absent, "no kernel replay in this run");
  EXPECT_EQ(stats.gc_absent, "no GC_RECORD table in this DB");
  EXPECT_EQ(stats.memory_absent, "no MEMORY_RECORD table in this DB");
  EXPECT_THAT(stats.steps_absent, HasSubstr("STEP_TIME lacks some of the columns"));
  EXPECT_EQ(stats.op_calls, static_cast<std::uint64_t>(fixture::kFixtureOps));  // the rest still works
}

TEST_F(StatsTest, TextTimestampsAsTorchNpuDeclaresThemWork) {
  // torch_npu declares PYTORCH_API.startNs/endNs TEXT; the values then are strings.
  ProfileStats stats = Compute({}, 15,
                               "ALTER TABLE PYTORCH_API RENAME TO OLD_API;"
                               "CREATE TABLE PYTORCH_API (startNs TEXT, endNs TEXT, globalTid INTEGER, "
                               "connectionId INTEGER, name INTEGER, "
                               "sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, "
                               "inputShapes INTEGER, callchainId INTEGER, "
                               "type INTEGER);"
                               "INSERT INTO PYTORCH_API SELECT * FROM OLD_API; DROP TABLE OLD_API;");
  std::map<std::string, OpTotals> ops = ByName(stats.top_ops_by_total);
  EXPECT_EQ(ops["aten::linear"].self_ns, 100 * kUs);
  EXPECT_EQ(stats.op_self_sum_ns, 2100 * kUs);
}

TEST_F(StatsTest, AKernelRowTwiceCountsItsTaskOnce) {
  // A foreign file whose COMPUTE_TASK_INFO.globalTaskId is not its key, one kernel row repeated:
  // the kernels table counts each joined row (as SQL's join does), the task types each task once.
  ProfileStats stats = Compute({}, 15,
                               "ALTER TABLE COMPUTE_TASK_INFO RENAME TO OLD_INFO;"
                               "CREATE TABLE COMPUTE_TASK_INFO AS SELECT * FROM OLD_INFO;"
                               "INSERT INTO COMPUTE_TASK_INFO SELECT * FROM OLD_INFO WHERE globalTaskId = "
                               "(SELECT MIN(globalTaskId) FROM OLD_INFO); DROP TABLE OLD_INFO;");
  EXPECT_EQ(stats.kernel_calls, 5u);
  ASSERT_EQ(stats.task_types.size(), 2u);
  EXPECT_EQ(stats.task_types[0].type, "KERNEL");
  EXPECT_EQ(stats.task_types[0].count, 4u);
  EXPECT_EQ(stats.task_types[1].count, 1u);
}

// ---- ComputeApiSummary (gpuprof run's CUDA API lines) -----------------------------------------

class ApiSummaryTest : public StatsTest {
 protected:
  ApiSummary Summarize(const fixture::FixtureOptions& options, std::size_t top = 5,
                       const std::string& damage_sql = "") {
    std::unique_ptr<ProfileReader> reader = OpenFixture(options, damage_sql);
    if (reader == nullptr) return {};
    StatusOr<ApiSummary> summary = ComputeApiSummary(*reader, top);
    EXPECT_TRUE(summary.ok()) << summary.status().message();
    return summary.ok() ? *summary : ApiSummary{};
  }
};

// The fixture's runtime rows: 4 cudaLaunchKernel (10 + 5 + 5 + 10 µs) and 1 cudaMemcpyAsync
// (10 µs); its node/launch rows of the same calls are not API time.
TEST_F(ApiSummaryTest, RuntimeRowsPerFunctionByTotalTime) {
  ApiSummary summary = Summarize({});
  EXPECT_EQ(summary.absent, "");
  EXPECT_EQ(summary.calls, static_cast<std::uint64_t>(fixture::kFixtureRuntimeCalls));
  EXPECT_EQ(summary.names, 2u);
  EXPECT_EQ(summary.total_ns, 40 * kUs);
  ASSERT_EQ(summary.top.size(), 2u);
  EXPECT_EQ(summary.top[0].name, "cudaLaunchKernel");
  EXPECT_EQ(summary.top[0].calls, 4u);
  EXPECT_EQ(summary.top[0].total_ns, 30 * kUs);
  EXPECT_EQ(summary.top[1].name, "cudaMemcpyAsync");
  EXPECT_EQ(summary.top[1].calls, 1u);
  EXPECT_EQ(summary.top[1].total_ns, 10 * kUs);
}

TEST_F(ApiSummaryTest, TopLimitsRowsButNotTotals) {
  ApiSummary summary = Summarize({}, /*top=*/1);
  ASSERT_EQ(summary.top.size(), 1u);
  EXPECT_EQ(summary.top[0].name, "cudaLaunchKernel");
  EXPECT_EQ(summary.calls, static_cast<std::uint64_t>(fixture::kFixtureRuntimeCalls));
  EXPECT_EQ(summary.names, 2u);
  EXPECT_EQ(summary.total_ns, 40 * kUs);
}

TEST_F(ApiSummaryTest, NoRowsOrNoTableGiveTheReasonNotAnError) {
  fixture::FixtureOptions empty;
  empty.with_rows = false;
  ApiSummary none = Summarize(empty);
  EXPECT_TRUE(none.top.empty());
  EXPECT_EQ(none.absent, "no CUDA runtime API calls were recorded");
  ApiSummary dropped = Summarize({}, 5, "DROP TABLE CANN_API;");
  EXPECT_TRUE(dropped.top.empty());
  EXPECT_EQ(dropped.absent, "the DB has no CANN_API table");
}

// ---- What was collected beside the ops (db/collected.h) -------------------------------------------

TEST_F(StatsTest, ModulesByPathHaveTheirHostTimeAndTheDeviceTimeOfTheirOpsKernels) {
  fixture::FixtureOptions options;
  ProfileStats stats = Compute(options, 15, fixture::FixtureCollectedSql(options, ""));
  const CollectedStats& c = stats.collected;
  EXPECT_EQ(c.modules_absent, "");
  EXPECT_TRUE(c.module_gpu);
  EXPECT_EQ(c.module_names, 3u);
  ASSERT_EQ(c.top_modules.size(), 3u);
  // By host time; a module counts the kernels launched by ops inside the modules inside it.
  EXPECT_EQ(c.top_modules[0].name, "Net");
  EXPECT_EQ(c.top_modules[0].calls, 1u);
  EXPECT_EQ(c.top_modules[0].host_ns, 430 * kUs);
  EXPECT_EQ(c.top_modules[0].gpu_ns, 120 * kUs);
  EXPECT_EQ(c.top_modules[0].tasks, 2u);
  EXPECT_EQ(c.top_modules[1].name, "net.0 (Linear)");
  EXPECT_EQ(c.top_modules[1].host_ns, 315 * kUs);
  EXPECT_EQ(c.top_modules[1].gpu_ns, 100 * kUs);
  EXPECT_EQ(c.top_modules[1].tasks, 1u);
  EXPECT_EQ(c.top_modules[2].name, "net.1 (ReLU)");
  EXPECT_EQ(c.top_modules[2].calls, 2u);
  EXPECT_EQ(c.top_modules[2].host_ns, 190 * kUs);
  EXPECT_EQ(c.top_modules[2].gpu_ns, 50 * kUs);
  EXPECT_EQ(c.top_modules[2].tasks, 2u);
}

TEST_F(StatsTest, WithoutModuleRangesTheModulesSayWhy) {
  ProfileStats stats = Compute({});
  EXPECT_TRUE(stats.collected.top_modules.empty());
  EXPECT_THAT(stats.collected.modules_absent, ::testing::HasSubstr("--with-modules"));
}

TEST_F(StatsTest, TopOpsHaveTheirCostliestCallStack) {
  // The fixture's aten::linear has the one-frame stack "train.py(10): forward".
  ProfileStats stats = Compute({});
  const CollectedStats& c = stats.collected;
  ASSERT_EQ(c.op_stacks.size(), 1u) << c.stacks_absent;
  EXPECT_EQ(c.op_stacks[0].op, "aten::linear");
  EXPECT_EQ(c.op_stacks[0].calls, 1u);
  EXPECT_EQ(c.op_stacks[0].op_calls, 1u);
  EXPECT_EQ(c.op_stacks[0].total_ns, 300 * kUs);
  EXPECT_THAT(c.op_stacks[0].frames, ::testing::ElementsAre("train.py:10 forward"));
}

TEST(CallStackFrameTest, LibraryFramesAreToldFromTheProgramsAndShortened) {
  EXPECT_EQ(ShortFrame("/home/u/proj/train.py(42): step"), "train.py:42 step");
  EXPECT_EQ(ShortFrame("no frame shape"), "no frame shape");
  EXPECT_FALSE(LibraryFrame("/home/u/proj/train.py(42): step"));
  EXPECT_TRUE(LibraryFrame("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py(125): forward"));
  EXPECT_TRUE(
      LibraryFrame("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py(1501): _call_impl"));
  EXPECT_TRUE(LibraryFrame("/usr/lib/python3.11/runpy.py(88): _run_code"));
  EXPECT_TRUE(LibraryFrame("<frozen runpy>(198): _run_module_as_main"));
}

TEST_F(StatsTest, LostRecordsAreTheSourcesThatLostAny) {
  fixture::FixtureOptions options;
  ProfileStats stats =
      Compute(options, 15,
              fixture::FixtureCollectedSql(
                  options, R"({"cupti_activity_buffers": 7, "session_buffer": 0, "writer_queue": 3})"));
  const CollectedStats& c = stats.collected;
  EXPECT_TRUE(c.lost_counted);
  ASSERT_EQ(c.lost.size(), 2u);
  EXPECT_EQ(c.lost[0].source, "cupti_activity_buffers");
  EXPECT_EQ(c.lost[0].records, 7u);
  EXPECT_THAT(c.lost[0].text, ::testing::HasSubstr("CUPTI"));
  EXPECT_EQ(c.lost[1].source, "writer_queue");
  EXPECT_EQ(c.lost[1].records, 3u);
}

TEST_F(StatsTest, NoLossesCountedOrNoneLostShowNoRows) {
  fixture::FixtureOptions options;
  ProfileStats counted =
      Compute(options, 15, fixture::FixtureCollectedSql(options, R"({"writer_queue": 0})"));
  EXPECT_TRUE(counted.collected.lost_counted);
  EXPECT_TRUE(counted.collected.lost.empty());
  ProfileStats older = Compute(options);
  EXPECT_FALSE(older.collected.lost_counted);
  EXPECT_TRUE(older.collected.lost.empty());
  ProfileStats damaged = Compute(options, 15, fixture::FixtureCollectedSql(options, "{\"writer_queue\": x}"));
  EXPECT_THAT(damaged.collected.lost_problem, ::testing::HasSubstr("expected a count"));
}

}  // namespace
}  // namespace gpuprof::db
