// The kernel rules (tiny-grids, low-occupancy, memory-bound-kernels; db/findings_counters.cc) over
// the 6-step DB of findings_fixture.h on an H100 SXM (132 SMs, 3350 GB/s): kernels planted in steps
// 2..6, the hardware counters of their replayed launches in step 1 (warm-up, left out), and twins
// that stay silent. Times at stake are worked out by hand in each test.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "db/findings.h"
#include "db/schema_sql.h"
#include "unit/db/findings_fixture.h"

namespace gpuprof::db {
namespace {

using findings_testing::FindingsTest;
using findings_testing::kMs;
using findings_testing::StepStart;

// STRING_IDS of the metrics and units the replay writes.
constexpr int kDram = 40;         // gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
constexpr int kSm = 41;           // sm__throughput.avg.pct_of_peak_sustained_elapsed
constexpr int kMemory = 42;       // gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
constexpr int kAchieved = 43;     // sm__warps_active.avg.pct_of_peak_sustained_active
constexpr int kTheoretical = 44;  // sm__maximum_warps_per_active_cycle_pct
constexpr int kGrid = 45;         // launch__grid_size
constexpr int kDramRead = 46;     // dram__bytes_read.sum
constexpr int kDramWrite = 47;    // dram__bytes_write.sum
constexpr int kDuration = 48;     // gpu__time_duration.sum
constexpr int kPercent = 49;
constexpr int kByte = 50;
constexpr int kNsecond = 51;

class FindingsCountersTest : public FindingsTest {
 protected:
  void SetUp() override {
    FindingsTest::SetUp();
    Exec(std::string(SchemaSql(SchemaPart::kGpuprofTables)));
    Exec(
        "INSERT INTO NPU_INFO VALUES (0, 'NVIDIA H100 80GB HBM3');"
        "INSERT INTO STRING_IDS VALUES (40, 'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed'), "
        "(41, 'sm__throughput.avg.pct_of_peak_sustained_elapsed'), "
        "(42, 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed'), "
        "(43, 'sm__warps_active.avg.pct_of_peak_sustained_active'), "
        "(44, 'sm__maximum_warps_per_active_cycle_pct'), (45, 'launch__grid_size'), "
        "(46, 'dram__bytes_read.sum'), (47, 'dram__bytes_write.sum'), (48, 'gpu__time_duration.sum'), "
        "(49, '%'), (50, 'byte'), (51, 'nsecond');");
  }

  // `name` (a new STRING_IDS row) launched `per_step` times in each of `steps` with a grid of
  // `blocks`, each launch `ms` long, back to back from 10 ms into the step.
  void Launches(const std::string& name, std::int64_t blocks, int per_step, double ms,
                std::initializer_list<int> steps = {2, 3, 4, 5, 6}) {
    const int name_id = NameId(name);
    std::string sql = "BEGIN;";
    for (int step : steps) {
      for (int i = 0; i < per_step; ++i) {
        const std::int64_t start = StepStart(step) + 10 * kMs + static_cast<std::int64_t>(i * ms * 1e6);
        const std::int64_t end = start + static_cast<std::int64_t>(ms * 1e6);
        const std::string id = std::to_string(next_task_++);
        sql += "INSERT INTO TASK VALUES (" + std::to_string(start) + ", " + std::to_string(end) + ", 0, " +
               id + ", " + id + ", 1, 0, 0, 7, " + id + ", 0);";
        sql += "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, blockNum) VALUES (" +
               std::to_string(name_id) + ", " + id + ", " + std::to_string(blocks) + ");";
      }
    }
    Exec(sql + "COMMIT;");
  }

  // A replayed launch of `name` in step 1 (the warm-up) with these counter values. With a
  // `replay_name`, as the writer stores it: the launch's task in step 1 under `name` (the whole
  // demangled name), its replay row under `replay_name` (the function name alone), one connection.
  void Replayed(const std::string& name, const std::vector<std::pair<int, double>>& metrics,
                const std::string& replay_name = "") {
    const int id = next_replay_++;
    const std::int64_t start = StepStart(1) + (500 + id) * kMs;
    std::string sql;
    std::string connection = "NULL";
    if (!replay_name.empty()) {
      connection = std::to_string(next_task_++);
      sql += "INSERT INTO TASK VALUES (" + std::to_string(start) + ", " + std::to_string(start + kMs) +
             ", 0, " + connection + ", " + connection + ", 1, 0, 0, 7, " + connection + ", 0);";
      sql += "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, blockNum) VALUES (" +
             std::to_string(NameId(name)) + ", " + connection + ", 1024);";
    }
    sql +=
        "INSERT INTO GPUPROF_REPLAY_KERNEL (id, timestampNs, deviceId, name, connectionId, replayed, "
        "replayNs, replayMode) VALUES (" +
        std::to_string(id) + ", " + std::to_string(start) + ", 0, " +
        std::to_string(NameId(replay_name.empty() ? name : replay_name)) + ", " + connection + ", 1, " +
        std::to_string(kMs / 2) + ", 'kernel');";
    for (const auto& [metric, value] : metrics) {
      const int unit = metric == kDramRead || metric == kDramWrite ? kByte
                       : metric == kDuration                       ? kNsecond
                       : metric == kGrid                           ? 0
                                                                   : kPercent;
      sql += "INSERT INTO GPUPROF_REPLAY_METRIC VALUES (" + std::to_string(id) + ", " +
             std::to_string(metric) + ", " + (unit == 0 ? std::string("NULL") : std::to_string(unit)) + ", " +
             std::to_string(value) + ", 1);";
    }
    Exec(sql);
  }

  int NameId(const std::string& name) {
    for (const auto& [known, id] : names_) {
      if (known == name) return id;
    }
    const int id = 100 + static_cast<int>(names_.size());
    names_.emplace_back(name, id);
    Exec("INSERT INTO STRING_IDS VALUES (" + std::to_string(id) + ", '" + name + "');");
    return id;
  }

  std::vector<std::pair<std::string, int>> names_;
  int next_replay_ = 1;
};

TEST_F(FindingsCountersTest, TinyGridsFireOnAGridSmallerThanTheSmsWithoutCounters) {
  // 10 launches of 0.5 ms per step with 4 blocks on 132 SMs: 5 ms per step, 128/132 of it at stake
  // (4.848 ms per step, 4.85 % of 100 ms); the twin with two blocks per SM stays silent.
  Launches("small_grid_kernel", 4, 10, 0.5);
  Launches("full_grid_kernel", 264, 10, 0.5);
  const FindingsReport report = Compute();
  const Finding* tiny = Find(report, "tiny-grids");
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(tiny->occurrences, 1u);
  EXPECT_NEAR(tiny->at_stake_ms_per_step, 5.0 * 128 / 132, 0.001);
  EXPECT_NEAR(tiny->at_stake_percent, 5.0 * 128 / 132, 0.001);
  ASSERT_EQ(tiny->evidence.size(), 1u);
  EXPECT_EQ(tiny->evidence[0].name, "small_grid_kernel");
  EXPECT_EQ(tiny->evidence[0].step, -1);
  EXPECT_EQ(tiny->evidence[0].start_ns, StepStart(2) + 10 * kMs);
  EXPECT_EQ(tiny->evidence[0].context,
            "at stake over 5 steps; grid of 4 blocks on 132 SMs: 97 % of the SMs idle; 5.0 ms per step on "
            "the device in 10 launches");
  // No counters: the counter rules are silent and the note says why.
  EXPECT_EQ(Find(report, "memory-bound-kernels"), nullptr);
  EXPECT_EQ(Find(report, "low-occupancy"), nullptr);
  EXPECT_NE(report.note.find("no hardware counters, so no DRAM or occupancy findings per kernel"),
            std::string::npos)
      << report.note;
}

TEST_F(FindingsCountersTest, TinyGridsNeedADeviceWhoseSmsAreKnownAndLeaveTheWarmUpOut) {
  // 80 ms of a 4-block grid in the 1 s warm-up step alone: 77.6 ms at stake, 5.2 % of the 1.5 s
  // counted with it.
  Launches("small_grid_kernel", 4, 10, 8.0, {1});
  EXPECT_EQ(Find(Compute(), "tiny-grids"), nullptr) << "the warm-up step's launches alone";
  const FindingsReport counted = Compute(/*include_warmup=*/true);
  const Finding* tiny = Find(counted, "tiny-grids");
  ASSERT_NE(tiny, nullptr);
  EXPECT_NEAR(tiny->at_stake_percent, 100 * 80.0 * 128 / 132 / 1500, 0.001);
  Launches("small_grid_kernel", 4, 10, 0.5);
  Exec("UPDATE NPU_INFO SET name = 'Some Future GPU';");
  EXPECT_EQ(Find(Compute(), "tiny-grids"), nullptr) << "an unknown device: its SM count is not known";
}

TEST_F(FindingsCountersTest, KernelsAcrossAStepBoundaryCountOnlyTheirPartInsideConsideredSteps) {
  // Three launches of a 4-block grid: 30 ms from the warm-up step 1 into step 2 (10 ms inside),
  // 10 ms across the boundary of steps 3 and 4 (both considered, all of it), and 40 ms from step 6
  // past the last step's end (10 ms inside). 30 ms in 5 steps: 6 ms per step, 128/132 of it at stake.
  const int name_id = NameId("small_grid_kernel");
  std::string sql;
  for (const auto& [start, end] : {std::pair{StepStart(2) - 20 * kMs, StepStart(2) + 10 * kMs},
                                   std::pair{StepStart(4) - 5 * kMs, StepStart(4) + 5 * kMs},
                                   std::pair{StepStart(7) - 10 * kMs, StepStart(7) + 30 * kMs}}) {
    const std::string id = std::to_string(next_task_++);
    sql += "INSERT INTO TASK VALUES (" + std::to_string(start) + ", " + std::to_string(end) + ", 0, " + id +
           ", " + id + ", 1, 0, 0, 7, " + id + ", 0);";
    sql += "INSERT INTO COMPUTE_TASK_INFO (name, globalTaskId, blockNum) VALUES (" + std::to_string(name_id) +
           ", " + id + ", 4);";
  }
  Exec(sql);
  const FindingsReport report = Compute();
  const Finding* tiny = Find(report, "tiny-grids");
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(tiny->occurrences, 1u);
  EXPECT_NEAR(tiny->at_stake_ms_per_step, 6.0 * 128 / 132, 0.001);
  ASSERT_EQ(tiny->evidence.size(), 1u);
  EXPECT_EQ(tiny->evidence[0].context,
            "at stake over 5 steps; grid of 4 blocks on 132 SMs: 97 % of the SMs idle; 6.0 ms per step on "
            "the device in 0.6 launches");
}

TEST_F(FindingsCountersTest, MemoryBoundKernelsFireOnDramAsTheLimitWellBelowPeak) {
  // gather_kernel: 5 launches of 2 ms per step (10 ms), DRAM 25 % of peak, above the SMs (10 %) and
  // near the busiest memory unit (28 %): 75 % of its time at stake, 7.5 ms per step. Its replayed
  // launch moved 1.675 GB in 2 ms: 838 GB/s of the H100 SXM's 3350.
  Launches("gather_kernel", 1024, 5, 2.0);
  Replayed("gather_kernel", {{kDram, 25},
                             {kSm, 10},
                             {kMemory, 28},
                             {kAchieved, 90},
                             {kTheoretical, 100},
                             {kGrid, 1024},
                             {kDramRead, 1.2e9},
                             {kDramWrite, 0.475e9},
                             {kDuration, 2e6}});
  // Twins: a kernel at 90 % of DRAM peak, and one that leans on the SMs (50 %) more than on DRAM.
  Launches("stream_kernel", 1024, 5, 2.0);
  Replayed("stream_kernel", {{kDram, 90}, {kSm, 15}, {kMemory, 90}, {kAchieved, 90}, {kTheoretical, 100}});
  Launches("compute_kernel", 1024, 5, 2.0);
  Replayed("compute_kernel", {{kDram, 25}, {kSm, 50}, {kMemory, 30}, {kAchieved, 90}, {kTheoretical, 100}});
  const FindingsReport report = Compute();
  EXPECT_EQ(report.steps_considered, 5u) << "the replayed launches sit in the warm-up step";
  const Finding* memory = Find(report, "memory-bound-kernels");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->occurrences, 1u);
  EXPECT_NEAR(memory->at_stake_ms_per_step, 7.5, 0.001);
  EXPECT_EQ(memory->severity, FindingSeverity::kMedium);
  ASSERT_EQ(memory->evidence.size(), 1u);
  EXPECT_EQ(memory->evidence[0].name, "gather_kernel");
  EXPECT_EQ(memory->evidence[0].duration_ns, 5 * 15 * kMs / 2);
  EXPECT_EQ(memory->evidence[0].context,
            "at stake over 5 steps; DRAM at 25.0 % of peak (838 GB/s of 3350 GB/s), SMs at 10.0 % (counters "
            "of 1 replayed launch); "
            "10.0 ms per step on the device in 5 launches");
  EXPECT_EQ(Find(report, "low-occupancy"), nullptr);
  EXPECT_EQ(report.note.find("no hardware counters"), std::string::npos) << report.note;
}

TEST_F(FindingsCountersTest, ALaunchsCountersStandForTheKernelOfItsTaskNotOfItsReplayName) {
  // The replay stores a launch under its function name, the device's record under the whole
  // demangled name: the counters reach the kernel through the launch's task (7.5 ms per step, as
  // gather_kernel above), and the stream twin's too (silent: near DRAM peak).
  const std::string gather = "void gather_kernel<float>(float const*, long const*, float*, int)";
  Launches(gather, 1024, 5, 2.0);
  Replayed(gather,
           {{kDram, 25}, {kSm, 10}, {kMemory, 28}, {kAchieved, 90}, {kTheoretical, 100}, {kGrid, 1024}},
           "gather_kernel<float>");
  const std::string stream = "void stream_kernel<float>(float const*, float*, int)";
  Launches(stream, 1024, 5, 2.0);
  Replayed(stream, {{kDram, 90}, {kSm, 15}, {kMemory, 90}, {kAchieved, 90}, {kTheoretical, 100}},
           "stream_kernel<float>");
  const FindingsReport report = Compute();
  const Finding* memory = Find(report, "memory-bound-kernels");
  ASSERT_NE(memory, nullptr);
  EXPECT_NEAR(memory->at_stake_ms_per_step, 7.5, 0.001);
  ASSERT_EQ(memory->evidence.size(), 1u);
  EXPECT_EQ(memory->evidence[0].name, gather);
  EXPECT_EQ(memory->evidence[0].context,
            "at stake over 5 steps; DRAM at 25.0 % of peak, SMs at 10.0 % (counters of 1 replayed launch); "
            "10.0 ms per step on the "
            "device in 5 launches");
}

TEST_F(FindingsCountersTest, CountersOfAnotherGridDoNotStandForTheKernel) {
  Launches("gather_kernel", 1024, 5, 2.0);
  Replayed("gather_kernel", {{kDram, 25}, {kSm, 10}, {kGrid, 4096}});
  EXPECT_EQ(Find(Compute(), "memory-bound-kernels"), nullptr);
  Replayed("gather_kernel", {{kDram, 25}, {kSm, 10}, {kGrid, 1024}});
  EXPECT_NE(Find(Compute(), "memory-bound-kernels"), nullptr);
}

TEST_F(FindingsCountersTest, LowOccupancyFiresOnAchievedFarBelowTheoretical) {
  // imbalanced_kernel: 5 launches of 2 ms per step, 20 % of warps achieved against 80 % theoretical:
  // 1 - 20/80 of its 10 ms per step at stake, 7.5 ms. Its DRAM (30 %) is then not judged apart:
  // too few warps explain it. The twin achieves 75 % of 80 %.
  Launches("imbalanced_kernel", 1024, 5, 2.0);
  Replayed("imbalanced_kernel", {{kDram, 30}, {kSm, 20}, {kMemory, 30}, {kAchieved, 20}, {kTheoretical, 80}});
  Launches("balanced_kernel", 2048, 5, 2.0);
  Replayed("balanced_kernel", {{kDram, 40}, {kSm, 70}, {kMemory, 40}, {kAchieved, 75}, {kTheoretical, 80}});
  const FindingsReport report = Compute();
  const Finding* occupancy = Find(report, "low-occupancy");
  ASSERT_NE(occupancy, nullptr);
  EXPECT_EQ(occupancy->occurrences, 1u);
  EXPECT_NEAR(occupancy->at_stake_ms_per_step, 7.5, 0.001);
  ASSERT_EQ(occupancy->evidence.size(), 1u);
  EXPECT_EQ(occupancy->evidence[0].name, "imbalanced_kernel");
  EXPECT_EQ(occupancy->evidence[0].context,
            "at stake over 5 steps; achieved occupancy 20.0 % against 80.0 % theoretical (counters of 1 "
            "replayed launch); 10.0 ms per "
            "step on the device in 5 launches");
  EXPECT_EQ(Find(report, "memory-bound-kernels"), nullptr) << "one cause per kernel";
}

TEST_F(FindingsCountersTest, CounterRulesLeaveTinyGridsAndLaunchDominatedKernelsToTheirOwnRules) {
  // A grid of 8 blocks at 5 % achieved occupancy is a tiny grid, not an occupancy problem; 2,000
  // launches of 3 us per step are launch-dominated whatever their counters say.
  Launches("small_grid_kernel", 8, 10, 2.0);
  Replayed("small_grid_kernel", {{kDram, 5}, {kSm, 2}, {kAchieved, 5}, {kTheoretical, 100}, {kGrid, 8}});
  Launches("short_kernel", 1024, 2000, 0.003);
  Replayed("short_kernel", {{kDram, 10}, {kSm, 2}, {kAchieved, 10}, {kTheoretical, 100}, {kGrid, 1024}});
  const FindingsReport report = Compute();
  ASSERT_NE(Find(report, "tiny-grids"), nullptr);
  EXPECT_EQ(Find(report, "low-occupancy"), nullptr);
  EXPECT_EQ(Find(report, "memory-bound-kernels"), nullptr);
}

}  // namespace
}  // namespace gpuprof::db
