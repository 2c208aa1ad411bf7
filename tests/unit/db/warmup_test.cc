// The warm-up decision (db/warmup.h) and that findings and diff leave out the same steps. Each DB:
// six steps back to back (step 1 1 s, the others 100 ms unless a test says otherwise), with CUDA
// calls planted with SQL on top of the schema's empty tables.
#include "db/warmup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "db/cluster_stats.h"
#include "db/diff.h"
#include "db/findings.h"
#include "unit/db/fixture_db.h"

namespace gpuprof::db {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kBase = 1'700'000'000'000'000'000;

class WarmupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_warmup");
    path_ = dir_ + "/ascend_pytorch_profiler_0.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Steps of `durations_ms` back to back; STRING_IDS holds the calls the tests plant.
  void WriteSteps(const std::vector<std::int64_t>& durations_ms) {
    fixture::FixtureOptions options;
    options.with_rows = false;
    options.with_replay_tables = false;
    ASSERT_TRUE(fixture::WriteFixtureDb(path_, options).ok());
    std::string sql;
    std::int64_t at = kBase;
    for (std::size_t i = 0; i < durations_ms.size(); ++i) {
      starts_.push_back(at);
      sql += "INSERT INTO STEP_TIME VALUES (" + std::to_string(i + 1) + ", " + std::to_string(at) + ", " +
             std::to_string(at + durations_ms[i] * kMs) + ");";
      at += durations_ms[i] * kMs;
    }
    sql +=
        "INSERT INTO SESSION_TIME_INFO VALUES (" + std::to_string(kBase) + ", " + std::to_string(at) + ");";
    sql +=
        "INSERT INTO STRING_IDS VALUES (1, 'cudaMalloc'), (2, 'cuModuleLoadData'), (3, 'cudaLaunchKernel');";
    Exec(sql);
  }

  // A CUDA call (STRING_IDS id `name`) 10 ms into step `step` (1-based), lasting 1 ms.
  void Call(int step, int name) {
    const std::int64_t start = starts_[static_cast<std::size_t>(step - 1)] + 10 * kMs;
    Exec("INSERT INTO CANN_API VALUES (" + std::to_string(start) + ", " + std::to_string(start + kMs) +
         ", 5000, 1, " + std::to_string(next_id_++) + ", " + std::to_string(name) + ");");
  }

  void Exec(const std::string& sql) { ASSERT_TRUE(fixture::ExecSql(path_, sql).ok()) << sql; }

  RankStats Split() {
    StatusOr<RankStats> split = ComputeRankStats({path_, 0}, WithoutSteps::kWholeRunWithoutSteps);
    EXPECT_TRUE(split.ok()) << split.status().ToString();
    return split.ok() ? *split : RankStats{};
  }

  static std::vector<std::int64_t> Ids(const std::vector<WarmupStep>& warmup) {
    std::vector<std::int64_t> ids;
    for (const WarmupStep& step : warmup) ids.push_back(step.id);
    return ids;
  }

  std::string dir_;
  std::string path_;
  std::vector<std::int64_t> starts_;
  int next_id_ = 1;
};

TEST_F(WarmupTest, TheFirstOfTwoOrMoreStepsIsWarmUpAndASingleStepIsNot) {
  WriteSteps({100});
  EXPECT_TRUE(Split().warmup.empty());
  std::filesystem::remove(path_);
  starts_.clear();
  WriteSteps({1000, 100});
  const RankStats split = Split();
  ASSERT_EQ(split.warmup.size(), 1u);
  EXPECT_EQ(split.warmup[0].id, 1);
  EXPECT_EQ(split.warmup[0].duration_ns, 1000 * kMs);
  EXPECT_EQ(split.warmup[0].median_ns, 100 * kMs);
  EXPECT_TRUE(split.warmup[0].calls.empty());
  EXPECT_EQ(WarmupNote(split.warmup),
            "step 1 is left out as warm-up (1000.0 ms against a median of 100.0 ms for the others); "
            "--include-warmup counts it");
}

TEST_F(WarmupTest, ALaterOutlierWithFirstCallWorkIsWarmUp) {
  WriteSteps({1000, 100, 100, 500, 100, 100});
  Call(4, 2);  // module loading in step 4 (5x the median)
  Call(4, 1);
  Call(4, 3);  // a launch: not first-call work
  const RankStats split = Split();
  EXPECT_EQ(Ids(split.warmup), (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(split.warmup[1].median_ns, 100 * kMs);
  EXPECT_EQ(split.warmup[1].calls, (std::vector<std::string>{"cuModuleLoadData", "cudaMalloc"}));
  EXPECT_EQ(
      WarmupNote(split.warmup),
      "steps 1 and 4 are left out as warm-up (step 1, 1000.0 ms against a median of 100.0 ms for the "
      "others; step 4, 500.0 ms with first-call work (cuModuleLoadData, cudaMalloc) against a median of "
      "100.0 ms for the others); --include-warmup counts them");
}

TEST_F(WarmupTest, AnOutlierWithoutFirstCallWorkOrBelowTheFactorStaysCounted) {
  WriteSteps({1000, 100, 250, 500, 100, 100});
  Call(3, 1);  // first-call work, but 2.5x the median: the program's own time
  Call(4, 3);  // 5x the median, but only a launch in it
  Call(5, 1);  // first-call work in an ordinary step
  EXPECT_EQ(Ids(Split().warmup), (std::vector<std::int64_t>{1}));
}

// One decision for everyone: the findings and the diff leave out the split's warm-up steps, and
// count them when asked.
TEST_F(WarmupTest, FindingsAndDiffLeaveOutTheSameSteps) {
  WriteSteps({1000, 100, 100, 500, 100, 100});
  Call(4, 1);
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path_);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  StatusOr<FindingsReport> findings = ComputeFindings(**reader, ProfileDbFile{path_, 0});
  ASSERT_TRUE(findings.ok()) << findings.status().ToString();
  EXPECT_EQ(findings->warmup_steps, (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(findings->warmup_ns, 1500 * kMs);
  EXPECT_EQ(findings->steps_considered, 4u);
  EXPECT_EQ(findings->considered_ns, 400 * kMs);
  EXPECT_EQ(findings->note, WarmupNote(Split().warmup));
  StatusOr<FindingsReport> counted =
      ComputeFindings(**reader, ProfileDbFile{path_, 0}, {.include_warmup = true});
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->steps_considered, 6u);

  StatusOr<ProfileDiff> diff = DiffProfiles({path_, 0}, {path_, 0});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_EQ(diff->a_steps, 4u);
  EXPECT_NE(diff->note.find("the warm-up steps of each run are left out (A: steps 1, 4; B: steps 1, 4)"),
            std::string::npos)
      << diff->note;
  StatusOr<ProfileDiff> all = DiffProfiles({path_, 0}, {path_, 0}, {.include_warmup = true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->a_steps, 6u);
}

}  // namespace
}  // namespace gpuprof::db
