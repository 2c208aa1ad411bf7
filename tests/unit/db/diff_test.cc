// `gpuprof diff`'s comparison (db/diff.h) over the two profiles of diff_fixture.h: a kernel launched
// with another grid is its own row, a slower collective and the communication not overlapped are
// reported with their deltas, and a kernel's replay passes are compared; what did not change stays
// unchanged.
#include "db/diff.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "unit/db/diff_fixture.h"

namespace gpuprof::db {
namespace {

class DiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_diff");
    a_ = dir_ + "/a.db";
    b_ = dir_ + "/b.db";
    ASSERT_TRUE(fixture::WriteDiffProfile(a_, false).ok());
    ASSERT_TRUE(fixture::WriteDiffProfile(b_, true).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ProfileDiff Diff(const std::string& a, const std::string& b) {
    StatusOr<ProfileDiff> diff = DiffProfiles(ProfileDbFile{a, 0}, ProfileDbFile{b, 0});
    EXPECT_TRUE(diff.ok()) << diff.status().ToString();
    return diff.ok() ? *diff : ProfileDiff{};
  }

  static const ComparedFigure* Find(const std::vector<ComparedFigure>& rows, const std::string& name,
                                    const std::string& grid = "") {
    for (const ComparedFigure& f : rows) {
      if (f.name == name && f.grid == grid) return &f;
    }
    return nullptr;
  }

  std::string dir_;
  std::string a_;
  std::string b_;
};

TEST_F(DiffTest, AKernelWithAnotherGridIsItsOwnRow) {
  const ProfileDiff diff = Diff(a_, b_);
  EXPECT_EQ(diff.kernels_compared, 2u);
  const ComparedFigure* same = Find(diff.kernels, "gemm", "128,1,1");
  const ComparedFigure* other = Find(diff.kernels, "gemm", "64,1,1");
  ASSERT_NE(same, nullptr);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(same->block, "256,1,1");
  EXPECT_FALSE(same->changed);
  EXPECT_NEAR(same->delta, 0, 1e-9);
  EXPECT_EQ((same->a_calls), 5u);
  EXPECT_TRUE(other->changed);
  EXPECT_NEAR(other->delta, fixture::kSecondGridMs, 1e-6);
  EXPECT_EQ(other->a_calls, 0u);
  EXPECT_EQ(other->b_calls, 5u);
  EXPECT_EQ(diff.kernels_changed, 1u);
}

TEST_F(DiffTest, ASlowerCollectiveIsReportedWithItsDeltaAndTheCommunicationNotOverlapped) {
  const ProfileDiff diff = Diff(a_, b_);
  ASSERT_TRUE(diff.has_communication);
  EXPECT_EQ(diff.communication_compared, 2u);
  EXPECT_EQ(diff.communication_changed, 1u);
  ASSERT_FALSE(diff.communication.empty());
  const ComparedFigure& first = diff.communication[0];
  EXPECT_EQ(first.name, "allReduce");
  EXPECT_EQ(first.kind, "communication");
  EXPECT_TRUE(first.changed);
  EXPECT_NEAR(first.a_mean, fixture::kAllReduceMs, 1e-6);
  EXPECT_NEAR(first.delta, fixture::kSlowAllReduceMs - fixture::kAllReduceMs, 1e-6);
  const ComparedFigure* broadcast = Find(diff.communication, "broadcast");
  ASSERT_NE(broadcast, nullptr);
  EXPECT_FALSE(broadcast->changed);
  const ComparedFigure& exposed = diff.communication_not_overlapped;
  EXPECT_NEAR(exposed.a_mean, fixture::kAllReduceMs + fixture::kBroadcastMs, 1e-6);
  EXPECT_NEAR(exposed.delta, fixture::kSlowAllReduceMs - fixture::kAllReduceMs, 1e-6);
  EXPECT_TRUE(exposed.changed);
  EXPECT_FALSE(diff.step.changed) << "the steps last 100 ms in both";
}

TEST_F(DiffTest, ReplayedKernelsAreComparedByTheirPasses) {
  const ProfileDiff diff = Diff(a_, b_);
  EXPECT_EQ(diff.replay_absent, "");
  EXPECT_EQ(diff.replay_compared, 2u);
  EXPECT_EQ(diff.replay_changed, 1u);
  const ComparedFigure* gemm = Find(diff.replay, "gemm");
  const ComparedFigure* relu = Find(diff.replay, "relu");
  ASSERT_NE(gemm, nullptr);
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(gemm->a_calls, 5u) << "passes";
  EXPECT_NEAR(gemm->a_mean, fixture::kGemmReplayUs / 1e3, 1e-9);
  EXPECT_NEAR(gemm->delta, (fixture::kSlowGemmReplayUs - fixture::kGemmReplayUs) / 1e3, 1e-9);
  EXPECT_NEAR(gemm->a_stddev, 0.000790569, 1e-8) << "passes 1 µs apart: stddev sqrt(2.5) * 0.5 µs";
  EXPECT_TRUE(gemm->changed);
  EXPECT_FALSE(relu->changed);
}

TEST_F(DiffTest, OneProfileWithoutReplayOrCollectivesSaysSo) {
  ASSERT_TRUE(
      fixture::ExecSql(b_, "DELETE FROM GPUPROF_REPLAY_PASS; DELETE FROM GPUPROF_REPLAY_KERNEL;").ok());
  EXPECT_EQ(Diff(a_, b_).replay_absent, "B holds no kernel replay results");
  ASSERT_TRUE(fixture::ExecSql(a_, "DROP TABLE GPUPROF_REPLAY_PASS; DELETE FROM COMMUNICATION_OP;").ok());
  ASSERT_TRUE(fixture::ExecSql(b_, "DELETE FROM COMMUNICATION_OP;").ok());
  const ProfileDiff diff = Diff(a_, b_);
  EXPECT_EQ(diff.replay_absent, "neither profile holds kernel replay results");
  EXPECT_TRUE(diff.replay.empty());
  EXPECT_FALSE(diff.has_communication);
  EXPECT_TRUE(diff.communication.empty());
}

}  // namespace
}  // namespace gpuprof::db
