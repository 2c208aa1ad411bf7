// The finding rules (db/findings.h) over DBs that plant one problem each, and their clean twins
// (the DB: findings_fixture.h).
#include "db/findings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "unit/db/findings_fixture.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db {
namespace {

using findings_testing::FindingsTest;
using findings_testing::kMs;
using findings_testing::kTid;
using findings_testing::StepStart;

TEST_F(FindingsTest, EveryRuleIsDeclaredWithItsTextsThresholdAndEvaluation) {
  ASSERT_GE(FindingRules().size(), 5u);
  for (const FindingRule& rule : FindingRules()) {
    SCOPED_TRACE(std::string(rule.id));
    EXPECT_FALSE(rule.title.empty() || rule.measures.empty() || rule.advice.empty() || rule.fix.empty() ||
                 rule.evidence_sql.empty());
    // 0: every occurrence is reported (empty-cache).
    EXPECT_GE(rule.threshold, 0);
    EXPECT_LT(rule.threshold, 1);
    EXPECT_NE(rule.evaluate == nullptr, rule.evaluate_cluster == nullptr)
        << "one DB's rule or the ranks' rule";
  }
}

TEST_F(FindingsTest, CleanRunHasNoFindingAndLeavesTheWarmUpStepOut) {
  const FindingsReport report = Compute();
  EXPECT_TRUE(report.findings.empty());
  EXPECT_EQ(report.steps_considered, 5u);
  EXPECT_EQ(report.considered_ns, 500 * kMs);
  ASSERT_EQ(report.warmup_steps.size(), 1u);
  EXPECT_EQ(report.warmup_steps[0], 1);
  EXPECT_NE(report.note.find("step 1 is left out as warm-up (1000.0 ms against a median of 100.0 ms"),
            std::string::npos)
      << report.note;
}

TEST_F(FindingsTest, GcPausesInsideStepsFireWithTheirStepsAndTimeAtStake) {
  // 12 ms of GC in each of steps 2..6 (12 % of the step), inside aten::mm.
  Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 4, 0, 0, 0, 0, 0, 1", {2, 3, 4, 5, 6}, 10, 30);
  Plant("GC_RECORD", "", ", " + std::to_string(kTid), {2, 3, 4, 5, 6}, 20, 12);
  const FindingsReport report = Compute();
  const Finding* gc = Find(report, "gc-pause");
  ASSERT_NE(gc, nullptr);
  EXPECT_EQ(gc->occurrences, 5u);
  EXPECT_NEAR(gc->at_stake_ms_per_step, 12.0, 0.01);
  EXPECT_NEAR(gc->at_stake_percent, 12.0, 0.01);
  EXPECT_EQ(gc->severity, FindingSeverity::kMedium);
  ASSERT_EQ(gc->evidence.size(), 5u);
  EXPECT_EQ(gc->evidence[0].step, 2) << "equal pauses: the earliest first";
  EXPECT_EQ(gc->evidence[0].context, "in aten::mm");
  EXPECT_NE(gc->summary.find("12.00 ms per step (12.0 % of step time), 5 occurrences"), std::string::npos)
      << gc->summary;
}

TEST_F(FindingsTest, WarmUpOnlyProblemIsSilentUnlessTheWarmUpIsCounted) {
  Plant("GC_RECORD", "", ", " + std::to_string(kTid), {1}, 100, 300);
  EXPECT_EQ(Find(Compute(), "gc-pause"), nullptr);
  const FindingsReport counted = Compute(/*include_warmup=*/true);
  const Finding* gc = Find(counted, "gc-pause");
  ASSERT_NE(gc, nullptr);
  EXPECT_NEAR(gc->at_stake_percent, 100.0 * 300 / 1500, 0.01);
  EXPECT_TRUE(counted.warmup_steps.empty());
}

TEST_F(FindingsTest, SynchronizingCallsFireWithTheOpThatCalledThem) {
  // aten::item at 50 ms for 10 ms, calling cudaStreamSynchronize for 8 ms; a launch beside it.
  Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 1, 0, 0, 0, 0, 0, 1", {2, 3, 4, 5, 6}, 50, 10);
  std::string sql;
  for (int id = 2; id <= 6; ++id) {
    const std::int64_t start = StepStart(id) + 51 * kMs;
    sql += "INSERT INTO CANN_API VALUES (" + std::to_string(start) + ", " + std::to_string(start + 8 * kMs) +
           ", 5000, " + std::to_string(kTid) + ", " + std::to_string(id) + ", 2);";
    sql += "INSERT INTO CANN_API VALUES (" + std::to_string(start - kMs) + ", " + std::to_string(start) +
           ", 5000, " + std::to_string(kTid) + ", " + std::to_string(100 + id) + ", 5);";
  }
  Exec(sql);
  const FindingsReport report = Compute();
  const Finding* sync = Find(report, "sync-in-step");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->occurrences, 5u);
  EXPECT_NEAR(sync->at_stake_ms_per_step, 8.0, 0.01);
  EXPECT_EQ(sync->evidence[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(sync->evidence[0].context, "in aten::item");
}

TEST_F(FindingsTest, AllocationsInsideStepsFireButTheWarmUpsDoNot) {
  // Warm-up growth (step 1) is expected; steps 3 and 5 free and allocate again: 8 ms in all.
  std::string sql;
  int id = 200;
  for (const auto& [step, at, name, ms] : std::vector<std::tuple<int, int, int, int>>{
           {1, 10, 6, 50}, {1, 70, 6, 50}, {3, 10, 7, 2}, {3, 20, 6, 2}, {5, 10, 7, 2}, {5, 20, 6, 2}}) {
    const std::int64_t start = StepStart(step) + at * kMs;
    sql += "INSERT INTO CANN_API VALUES (" + std::to_string(start) + ", " + std::to_string(start + ms * kMs) +
           ", 5000, " + std::to_string(kTid) + ", " + std::to_string(id++) + ", " + std::to_string(name) +
           ");";
  }
  Exec(sql);
  const FindingsReport report = Compute();  // owns the finding
  const Finding* churn = Find(report, "allocator-churn");
  ASSERT_NE(churn, nullptr);
  EXPECT_EQ(churn->occurrences, 4u);
  EXPECT_EQ(churn->at_stake_ns, 8 * kMs);
  for (const FindingEvidence& e : churn->evidence) EXPECT_TRUE(e.step == 3 || e.step == 5) << e.step;
  Exec("DELETE FROM CANN_API WHERE startNs >= " + std::to_string(StepStart(2)) + ";");
  EXPECT_EQ(Find(Compute(), "allocator-churn"), nullptr) << "the warm-up's allocations alone";
}

TEST_F(FindingsTest, DeviceIdleNamesItsLongestGapsWithWhatTheHostWasDoing) {
  // Kernels at [0, 40) and [70, 100) ms of steps 2..6; in the 30 ms gap the host waits in
  // aten::item's cudaStreamSynchronize.
  std::string sql;
  int task = 1;
  for (int step = 2; step <= 6; ++step) {
    for (const auto& [from, to] : std::vector<std::pair<int, int>>{{0, 40}, {70, 100}}) {
      const std::int64_t start = StepStart(step) + from * kMs;
      sql += "INSERT INTO TASK VALUES (" + std::to_string(start) + ", " +
             std::to_string(StepStart(step) + to * kMs) + ", 0, " + std::to_string(task) + ", " +
             std::to_string(task) + ", 1, 0, 0, 7, " + std::to_string(task) + ", 0);";
      sql += "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId) VALUES (4, " + std::to_string(task) + ");";
      ++task;
    }
    const std::int64_t item = StepStart(step) + 38 * kMs;
    sql += "INSERT INTO PYTORCH_API VALUES (" + std::to_string(item) + ", " +
           std::to_string(item + 34 * kMs) + ", " + std::to_string(kTid) + ", 0, 1, 0, 0, 0, 0, 0, 1);";
    sql += "INSERT INTO CANN_API VALUES (" + std::to_string(item + kMs) + ", " +
           std::to_string(item + 33 * kMs) + ", 5000, " + std::to_string(kTid) + ", " +
           std::to_string(300 + step) + ", 2);";
  }
  Exec(sql);
  const FindingsReport report = Compute();
  const Finding* idle = Find(report, "device-idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_NEAR(idle->at_stake_percent, 30.0, 0.01);
  ASSERT_EQ(idle->evidence.size(), 5u);
  for (const FindingEvidence& gap : idle->evidence) {
    EXPECT_EQ(gap.duration_ns, 30 * kMs);
    EXPECT_EQ(gap.start_ns, StepStart(static_cast<int>(gap.step)) + 40 * kMs);
    EXPECT_EQ(gap.context, "the host in aten::item, cudaStreamSynchronize");
  }
  // The synchronizing call is a finding of its own, made by aten::item.
  const Finding* sync = Find(report, "sync-in-step");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->evidence[0].context, "in aten::item");
}

TEST_F(FindingsTest, AReplayedLaunchLeavesOutOnlyTheStepItWasLaunchedIn) {
  // Kernel mode: a launch in step 2 whose replay took 1.5 s in all (its replayNs counts more than
  // the time it blocked the program): steps 3..6 still count.
  ASSERT_TRUE(fixture::ExecSql(path_,
                               "CREATE TABLE GPUPROF_REPLAY_KERNEL (id INTEGER PRIMARY KEY, timestampNs "
                               "INTEGER, replayed INTEGER, replayNs INTEGER, rangeId INTEGER);")
                  .ok());
  Exec("INSERT INTO GPUPROF_REPLAY_KERNEL VALUES (1, " + std::to_string(StepStart(2) + 10 * kMs) + ", 1, " +
       std::to_string(1500 * kMs) + ", NULL);");
  const FindingsReport report = Compute();
  EXPECT_EQ(report.replay_steps, std::vector<std::int64_t>{2});
  EXPECT_EQ(report.steps_considered, 4u);
}

TEST_F(FindingsTest, StepsWithGpuprofsReplayPassesAreLeftOutAndSaidSo) {
  // Step 4 held a replayed range whose passes took 80 ms: a GC pause there is the profiler's time.
  ASSERT_TRUE(fixture::ExecSql(path_,
                               "CREATE TABLE GPUPROF_REPLAY_KERNEL (id INTEGER PRIMARY KEY, timestampNs "
                               "INTEGER, replayed INTEGER, replayNs INTEGER, rangeId INTEGER);")
                  .ok());
  const std::int64_t at = StepStart(4) + 10 * kMs;
  Exec("INSERT INTO GPUPROF_REPLAY_KERNEL VALUES (1, " + std::to_string(at) + ", 1, " +
       std::to_string(80 * kMs) + ", 1), (2, " + std::to_string(at + kMs) + ", 1, 0, 1);");
  Plant("GC_RECORD", "", ", " + std::to_string(kTid), {4}, 20, 60);
  const FindingsReport report = Compute();
  EXPECT_EQ(Find(report, "gc-pause"), nullptr);
  EXPECT_EQ(report.steps_considered, 4u);
  ASSERT_EQ(report.replay_steps, std::vector<std::int64_t>{4});
  EXPECT_NE(report.note.find("step 4 left out: gpuprof replayed kernels in it"), std::string::npos)
      << report.note;
}

TEST_F(FindingsTest, DataloaderWaitFiresOnAStarvedLoaderOnly) {
  // A starved loader: 30 ms per step; the twin's 1 ms stays under the threshold.
  Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 3, 0, 0, 0, 0, 0, 1", {2, 3, 4, 5, 6}, 0, 30);
  const FindingsReport report = Compute();  // owns the finding
  const Finding* wait = Find(report, "dataloader-wait");
  ASSERT_NE(wait, nullptr);
  EXPECT_NEAR(wait->at_stake_ms_per_step, 30.0, 0.01);
  EXPECT_EQ(wait->severity, FindingSeverity::kHigh);
  Exec("DELETE FROM PYTORCH_API;");
  Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 3, 0, 0, 0, 0, 0, 1", {2, 3, 4, 5, 6}, 0, 1);
  EXPECT_EQ(Find(Compute(), "dataloader-wait"), nullptr);
}

TEST_F(FindingsTest, EmptyCacheCallsInsideStepsFireWithTheirStepsAndTheOpAroundThem) {
  // torch.cuda.empty_cache() for 3 ms in each of steps 2..6, inside aten::mm; the warm-up step's
  // call and one after the last step are not counted.
  Exec("INSERT INTO STRING_IDS VALUES (9, 'torch.cuda.empty_cache');");
  const std::string op = ", " + std::to_string(kTid) + ", 0, ";
  Plant("PYTORCH_API", "", op + "4, 0, 0, 0, 0, 0, 1", {2, 3, 4, 5, 6}, 10, 50);
  Plant("PYTORCH_API", "", op + "9, 0, 0, 0, 0, 0, 1", {1, 2, 3, 4, 5, 6, 7}, 20, 3);
  const FindingsReport report = Compute();  // owns the finding
  const Finding* calls = Find(report, "empty-cache");
  ASSERT_NE(calls, nullptr);
  EXPECT_EQ(calls->occurrences, 5u);
  EXPECT_EQ(calls->at_stake_ns, 5 * 3 * kMs);
  EXPECT_NEAR(calls->at_stake_ms_per_step, 3.0, 0.01);
  EXPECT_EQ(calls->severity, FindingSeverity::kLow);
  ASSERT_EQ(calls->evidence.size(), 5u);
  for (std::size_t i = 0; i < calls->evidence.size(); ++i) {
    const FindingEvidence& e = calls->evidence[i];
    EXPECT_EQ(e.name, "torch.cuda.empty_cache");
    EXPECT_EQ(e.step, static_cast<std::int64_t>(i) + 2);
    EXPECT_EQ(e.context, "in aten::mm") << "the op around the call, not the call itself";
  }
  EXPECT_NE(calls->summary.find("the longest 3.0 ms (torch.cuda.empty_cache in step 2, in aten::mm)"),
            std::string::npos)
      << calls->summary;
}

TEST_F(FindingsTest, EmptyCacheFiresOnAMicrosecondCallPerStepButNotOnCallsOutsideConsideredSteps) {
  // Where torch has no GPU a call costs microseconds: still one per step to remove.
  Exec("INSERT INTO STRING_IDS VALUES (9, 'torch.cuda.empty_cache');");
  std::string sql;
  for (int step = 2; step <= 6; ++step) {
    const std::int64_t start = StepStart(step) + 30 * kMs;
    sql += "INSERT INTO PYTORCH_API VALUES (" + std::to_string(start) + ", " + std::to_string(start + 2'000) +
           ", " + std::to_string(kTid) + ", 0, 9, 0, 0, 0, 0, 0, 1);";
  }
  Exec(sql);
  const FindingsReport report = Compute();  // owns the finding
  const Finding* calls = Find(report, "empty-cache");
  ASSERT_NE(calls, nullptr);
  EXPECT_EQ(calls->occurrences, 5u);
  EXPECT_EQ(calls->at_stake_ns, 5 * 2'000);
  // The twin: calls only in the warm-up step and after the last step.
  Exec("DELETE FROM PYTORCH_API;");
  Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 9, 0, 0, 0, 0, 0, 1", {1, 7}, 20, 3);
  EXPECT_EQ(Find(Compute(), "empty-cache"), nullptr);
}

TEST_F(FindingsTest, RowsAcrossAStepBoundaryCountOnlyTheirPartInsideConsideredSteps) {
  // A 40 ms pause from 80 ms into step 2 to 20 ms into step 3: 20 ms in each.
  Plant("GC_RECORD", "", ", " + std::to_string(kTid), {2}, 80, 40);
  Plant("GC_RECORD", "", ", " + std::to_string(kTid), {3, 4, 5, 6}, 30, 20);
  const FindingsReport report = Compute();  // owns the finding
  const Finding* gc = Find(report, "gc-pause");
  ASSERT_NE(gc, nullptr);
  EXPECT_EQ(gc->occurrences, 6u);
  EXPECT_EQ(gc->at_stake_ns, 20 * kMs * 6);
}

TEST_F(FindingsTest, DeviceIdleIsSplitIntoWaitingOnTheHostOnALaunchAndOnDependencies) {
  // Each step: idle [0, 10) ms before a kernel whose launch call returned at 9 ms (9 ms waiting on
  // the host, then 10 us for the launch, 0.99 ms more), and idle [40, 70) ms before a kernel
  // launched long before, at 20 ms (10 us for the launch, 29.99 ms waiting on something else).
  for (int step = 2; step <= 6; ++step) {
    Kernel(step, 10, 40, 8, 9);
    Kernel(step, 70, 100, 19, 20);
  }
  const FindingsReport report = Compute();
  const Finding* idle = Find(report, "device-idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_NEAR(idle->at_stake_ms_per_step, 40.0, 0.01);
  ASSERT_EQ(idle->parts.size(), 3u);
  EXPECT_EQ(idle->parts[0].name, "waiting on the host");
  EXPECT_EQ(idle->parts[0].ns, 5 * 9 * kMs);
  EXPECT_EQ(idle->parts[1].name, "waiting on a launch");
  EXPECT_EQ(idle->parts[1].ns, 5 * 2 * 10'000);
  EXPECT_EQ(idle->parts[2].name, "waiting on a dependency or sync");
  EXPECT_EQ(idle->parts[2].ns, 5 * (40 * kMs - 9 * kMs - 2 * 10'000));
  EXPECT_NE(idle->summary.find("(waiting on a dependency or sync 77 %, waiting on the host 2"),
            std::string::npos)
      << idle->summary;
  ASSERT_EQ(idle->evidence.size(), 5u) << "the longest gaps: the 30 ms of each step";
  for (const FindingEvidence& gap : idle->evidence) {
    EXPECT_EQ(gap.name, "idle, waiting on a dependency or sync");
    EXPECT_EQ(gap.duration_ns, 30 * kMs);
  }
}

TEST_F(FindingsTest, LaunchBoundStretchesFireOnKernelsShorterThanTheirLaunchCalls) {
  // Each step: 40 kernels of 0.1 ms, each launched by a 0.3 ms call issued back to back inside
  // aten::mm, so the device idles 0.2 ms between kernels: 39 x 0.2 = 7.8 ms per step in the stretch.
  for (int step = 2; step <= 6; ++step) {
    for (int i = 0; i < 40; ++i) {
      const double call = 10 + 0.3 * i;
      Kernel(step, call + 0.3, call + 0.4, call, call + 0.3);
    }
  }
  Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 4, 0, 0, 0, 0, 0, 1", {2, 3, 4, 5, 6}, 9, 14);
  const FindingsReport report = Compute();
  const Finding* bound = Find(report, "launch-bound");
  ASSERT_NE(bound, nullptr);
  EXPECT_EQ(bound->occurrences, 5u);
  EXPECT_NEAR(bound->at_stake_ms_per_step, 7.8, 0.01);
  ASSERT_EQ(bound->evidence.size(), 5u);
  EXPECT_EQ(bound->evidence[0].name,
            "40 kernels shorter than their launch calls (median 100 us on the device, 300 us to launch)");
  EXPECT_EQ(bound->evidence[0].step, 2);
  // What the host was doing is named for the stretches and for the device's idle gaps alike (the
  // longest gaps, after the stretch, are outside the op and the calls).
  EXPECT_EQ(bound->evidence[0].context, "the host in aten::mm, cudaLaunchKernel");
  const Finding* idle = Find(report, "device-idle");
  ASSERT_NE(idle, nullptr);
  ASSERT_FALSE(idle->evidence.empty());
  EXPECT_EQ(idle->evidence[0].context, "the host in no op or CUDA call");
}

TEST_F(FindingsTest, KernelsLongerThanTheirLaunchCallsAreNotLaunchBound) {
  // The twin: the same 40 launches, each kernel 0.5 ms long: the device is never starved.
  for (int step = 2; step <= 6; ++step) {
    for (int i = 0; i < 40; ++i) {
      const double call = 10 + 0.3 * i;
      Kernel(step, 10.3 + 0.5 * i, 10.8 + 0.5 * i, call, call + 0.3);
    }
  }
  EXPECT_EQ(Find(Compute(), "launch-bound"), nullptr);
}

TEST_F(FindingsTest, LaunchDelayFiresOnAKernelStartingLongAfterItsLaunchOnAnIdleDevice) {
  // Each step: a kernel at [50, 60) ms whose launch returned at 20 ms, nothing else running: 30 ms.
  for (int step = 2; step <= 6; ++step) Kernel(step, 50, 60, 19, 20);
  const FindingsReport report = Compute();
  const Finding* late = Find(report, "launch-delay");
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->occurrences, 5u);
  EXPECT_NEAR(late->at_stake_ms_per_step, 30.0, 0.01);
  EXPECT_EQ(late->evidence[0].name, "aten::mm started late");
  EXPECT_EQ(late->evidence[0].start_ns, StepStart(2) + 20 * kMs);
  // The twin: launched just before it starts (10 us): no finding.
  Exec("DELETE FROM TASK; DELETE FROM CANN_API; DELETE FROM COMPUTE_TASK_INFO;");
  for (int step = 2; step <= 6; ++step) Kernel(step, 50, 60, 49, 49.99);
  EXPECT_EQ(Find(Compute(), "launch-delay"), nullptr);
}

TEST_F(FindingsTest, CopiesFromPageableMemoryFireWithTheirCallsAndPinnedOnesDoNot) {
  // Each step: a 6 ms launch call in aten::mm whose copy reads pageable host memory.
  Exec(
      "CREATE TABLE IF NOT EXISTS GPUPROF_COPY_MEMORY (globalTaskId INTEGER, srcKind INTEGER, dstKind "
      "INTEGER);");
  for (int step = 2; step <= 6; ++step) {
    Plant("PYTORCH_API", "", ", " + std::to_string(kTid) + ", 0, 4, 0, 0, 0, 0, 0, 1", {step}, 10, 8);
    Kernel(step, 14, 16, 11, 17);
    Exec("INSERT INTO GPUPROF_COPY_MEMORY VALUES (" + std::to_string(next_task_ - 1) + ", 1, 3);");
  }
  const FindingsReport report = Compute();
  const Finding* pageable = Find(report, "pageable-copies");
  ASSERT_NE(pageable, nullptr);
  EXPECT_EQ(pageable->occurrences, 5u);
  EXPECT_NEAR(pageable->at_stake_ms_per_step, 6.0, 0.01);
  EXPECT_EQ(pageable->evidence[0].name, "cudaLaunchKernel");
  EXPECT_EQ(pageable->evidence[0].context, "in aten::mm");
  // The twin: the same copies from pinned memory.
  Exec("UPDATE GPUPROF_COPY_MEMORY SET srcKind = 2;");
  EXPECT_EQ(Find(Compute(), "pageable-copies"), nullptr);
}

}  // namespace
}  // namespace gpuprof::db
