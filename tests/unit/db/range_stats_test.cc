// Range replay's results read back (db/range_stats.h) from a DB the ProfileWriter wrote: kernels in
// execution order per range, the median and spread over the passes, the counters, the bottleneck
// rule and the roofline inputs.
#include "db/range_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trace/records.h"
#include "unit/db/fixture_db.h"
#include "unit/db/range_fixture.h"
#include "unit/db/writer_test_util.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Rows(const std::string& db, RangeScanOptions options = {},
                              RangeScanSummary* summary = nullptr) {
  std::vector<std::string> rows;
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(db);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return rows;
  StatusOr<RangeScanSummary> scanned = ForEachRangeKernel(**reader, options, [&](const RangeKernel& k) {
    std::string row = std::to_string(k.device) + "/" + std::to_string(k.range_id) + "/" +
                      std::to_string(k.place) + " " + k.kernel;
    if (!k.replayed) row += " declined " + k.decline_reason;
    if (k.median_ns.has_value()) {
      row += " median " + std::to_string(*k.median_ns) + " min " + std::to_string(k.min_ns) + " max " +
             std::to_string(k.max_ns) + " spread " +
             std::to_string(static_cast<int>(k.spread_pct.value_or(-1)));
    }
    row += " " + std::string(BottleneckName(k.bottleneck));
    if (k.flops.has_value()) row += " flops " + std::to_string(static_cast<long long>(*k.flops));
    if (k.dram_bytes.has_value()) row += " bytes " + std::to_string(static_cast<long long>(*k.dram_bytes));
    if (k.duration_ns.has_value()) row += " ns " + std::to_string(static_cast<long long>(*k.duration_ns));
    rows.push_back(std::move(row));
  });
  EXPECT_TRUE(scanned.ok()) << scanned.status().ToString();
  if (scanned.ok() && summary != nullptr) *summary = *scanned;
  return rows;
}

TEST(RangeStatsTest, KernelsInExecutionOrderWithMedianSpreadCountersAndBottleneck) {
  testing::TempDir dir;
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {fixture::RangeRecords()});
  EXPECT_THAT(
      Rows(db),
      ElementsAre(
          "0/1/0 gemm median 100000 min 90000 max 120000 spread 30 compute flops 6000000000 bytes 1000000 ns "
          "100000",
          "0/1/1 copy median 50000 min 50000 max 50000 spread 0 memory flops 2000000 bytes 3000000000 ns "
          "50000",
          "0/1/2 tiny median 2500 min 2000 max 3000 spread 40 launch flops 1000 bytes 4096 ns 2500",
          "0/1/3 wait median 20000 min 20000 max 20000 spread 0 latency flops 10000000 bytes 4000000 ns "
          "20000",
          "0/1/4 untimed median 20000 min 20000 max 20000 spread 0 - ns 20000",
          "0/2/0 range 2 declined "
          "range-too-large -"));
}

TEST(RangeStatsTest, MaxRangesStopsTheScanAndSaysThereIsMore) {
  testing::TempDir dir;
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {fixture::RangeRecords()});
  RangeScanSummary summary;
  EXPECT_EQ(Rows(db, RangeScanOptions{1}, &summary).size(), 5u);
  EXPECT_EQ(summary.ranges, 1u);
  EXPECT_TRUE(summary.more);
}

TEST(RangeStatsTest, DbWrittenBeforeRangeReplayHasNoRangesAndSaysWhy) {
  testing::TempDir dir;
  const std::string db = testing::WriteProfile(testing::TestOptions(dir.path()), {fixture::RangeRecords()});
  ASSERT_TRUE(fixture::ExecSql(db, "ALTER TABLE GPUPROF_REPLAY_KERNEL DROP COLUMN rangeLaunch").ok());
  RangeScanSummary summary;
  EXPECT_THAT(Rows(db, {}, &summary), ElementsAre());
  EXPECT_EQ(summary.absent,
            "GPUPROF_REPLAY_KERNEL has no rangeId/rangeLaunch columns (a DB written before range replay)");
}

TEST(RangeStatsTest, BottleneckRule) {
  EXPECT_EQ(RangeBottleneck(70, 80, 100000), Bottleneck::kMemory);
  EXPECT_EQ(RangeBottleneck(80, 70, 100000), Bottleneck::kCompute);
  EXPECT_EQ(RangeBottleneck(60, 60, 100000), Bottleneck::kMemory);  // a tie goes to memory
  EXPECT_EQ(RangeBottleneck(10, 10, 4999), Bottleneck::kLaunch);
  EXPECT_EQ(RangeBottleneck(10, 10, 5000), Bottleneck::kLatency);
  EXPECT_EQ(RangeBottleneck(std::nullopt, std::nullopt, 1000), Bottleneck::kLaunch);
  EXPECT_EQ(RangeBottleneck(std::nullopt, std::nullopt, 100000), Bottleneck::kUnknown);
}

}  // namespace
}  // namespace gpuprof::db
