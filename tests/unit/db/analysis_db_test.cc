// analysis.db (db/analysis_db.h): written by the ProfileWriter's Finalize beside the profile, its
// StepTraceTime and CommAnalyzer rows known to the microsecond from the records written, the matrix
// shape msprof-analyze's communication_matrix_sum reads, a failure that costs only analysis.db, and
// `gpuprof check`'s CheckAnalysisDb accepting the file and refusing a changed or damaged one.
#include "db/analysis_db.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/logging.h"
#include "db/check.h"
#include "db/output_layout.h"
#include "db/profile_reader.h"
#include "unit/db/fixture_db.h"
#include "unit/db/writer_test_util.h"

namespace gpuprof::db {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Query;
using testing::QueryOne;

constexpr std::int64_t kUs = 1000;
std::int64_t At(std::int64_t micros) { return testing::kStartNs + micros * kUs; }

trace::TorchOp Op(const std::string& name, std::int64_t start_us, std::int64_t end_us,
                  std::string shapes = "", std::string dtypes = "") {
  trace::TorchOp op;
  op.name = name;
  op.pid = 100;
  op.tid = 101;
  op.start_ns = At(start_us);
  op.end_ns = At(end_us);
  op.input_shapes = std::move(shapes);
  op.input_dtypes = std::move(dtypes);
  return op;
}

trace::DeviceTask Kernel(std::int64_t start_us, std::int64_t end_us) {
  static std::uint64_t correlation = 1;
  trace::DeviceTask task;
  task.kind = trace::TaskKind::kKernel;
  task.name = "gemm_kernel";
  task.short_name = "gemm_kernel";
  task.pid = 100;
  task.stream = 7;
  task.correlation_id = correlation++;
  task.start_ns = At(start_us);
  task.end_ns = At(end_us);
  return task;
}

std::string AnalysisOf(const std::string& db) {
  return (fs::path(db).parent_path() / kAnalysisDbName).string();
}

// Rank 1 of 2, device 1. Step 1 [0,1000) us: kernels [100,300) and [500,600), gloo:all_reduce of
// 16 floats [400,700). Step 2 [1000,2000): gloo:all_reduce of 262144 floats (1 MiB) [1100,1150),
// gloo:recv of 8 floats [1200,1400) (the bubble), kernel [1300,1500).
//   step 1: computing 300, communication 300, not overlapped [400,500)+[600,700) = 200,
//           overlapped 100, free 1000-300-200 = 500, bubble 0, stage 1000, preparing 100
//   step 2: computing 200, communication 50+200 = 250, not overlapped 50+100 = 150, overlapped
//           100, free 650, bubble 200, stage 800, not overlapped without the receive 50, preparing 100
class AnalysisDbTest : public ::testing::Test {
 protected:
  std::string WriteTwoSteps() {
    std::vector<trace::Record> records;
    records.emplace_back(Op("ProfilerStep#1", 0, 1000));
    records.emplace_back(Kernel(100, 300));
    records.emplace_back(Op("gloo:all_reduce", 400, 700, "16", "float"));
    records.emplace_back(Kernel(500, 600));
    records.emplace_back(Op("ProfilerStep#2", 1000, 2000));
    records.emplace_back(Op("gloo:all_reduce", 1100, 1150, "262144", "float"));
    records.emplace_back(Op("gloo:recv", 1200, 1400, "8", "float"));
    records.emplace_back(Kernel(1300, 1500));
    WriterOptions options = testing::TestOptions(dir_.path(), /*rank=*/1);
    options.run.device = 1;
    options.run.world_size = 2;
    return testing::WriteProfile(options, {std::move(records)}, At(3000));
  }

  testing::TempDir dir_;
};

TEST_F(AnalysisDbTest, FinalizeWritesTheStepSplitBesideTheProfile) {
  const std::string db = WriteTwoSteps();
  ASSERT_FALSE(db.empty());
  const std::string analysis = AnalysisOf(db);
  ASSERT_TRUE(fs::exists(analysis));
  EXPECT_FALSE(fs::exists(analysis + kPartialSuffix));
  EXPECT_THAT(
      Query(
          analysis,
          "SELECT deviceId, step, computing, communication_not_overlapped, overlapped, communication, free, "
          "stage, bubble, communication_not_overlapped_and_exclude_receive, preparing FROM StepTraceTime "
          "ORDER BY rowid"),
      // NUMERIC columns: whole numbers read back as integers (SQLite's affinity, as in torch_npu's file).
      ElementsAre("1|1|300|200|100|300|500|1000|0|200|100", "1|2|200|150|100|250|650|800|200|50|100"));
}

TEST_F(AnalysisDbTest, EachCollectiveIsATimeAndABandwidthRowInMsprofsUnits) {
  const std::string db = WriteTwoSteps();
  ASSERT_FALSE(db.empty());
  const std::string analysis = AnalysisOf(db);
  // group_name: msprof-analyze's double_hash("default_pg"); start in us, durations in ms.
  const std::string start_us = std::to_string(testing::kStartNs / 1000);
  EXPECT_THAT(
      Query(analysis,
            "SELECT hccl_op_name, group_name, printf('%.0f', start_timestamp), elapse_time, transit_time, "
            "wait_time, synchronization_time, idle_time, step, type FROM CommAnalyzerTime ORDER BY rowid"),
      ElementsAre("hcom_allReduce__921_0_1|4229130597433523921|" +
                      std::to_string(testing::kStartNs / 1000 + 400) + "|0.3|0.3|0|0|0|step1|collective",
                  "hcom_allReduce__921_1_1|4229130597433523921|" +
                      std::to_string(testing::kStartNs / 1000 + 1100) + "|0.05|0.05|0|0|0|step2|collective",
                  "hcom_receive__921_2_1|4229130597433523921|" +
                      std::to_string(testing::kStartNs / 1000 + 1200) + "|0.2|0.2|0|0|0|step2|p2p"));
  // 1 MiB in 0.05 ms: 1 MB, 20 GB/s; 64 bytes in 0.3 ms.
  EXPECT_THAT(
      Query(
          analysis,
          "SELECT hccl_op_name, transport_type, printf('%.9f', transit_size), transit_time, "
          "printf('%.6f', bandwidth), count, total_duration, step FROM CommAnalyzerBandwidth ORDER BY rowid"),
      ElementsAre("hcom_allReduce__921_0_1|GLOO|0.000061035|0.3|0.000203|1|0.3|step1",
                  "hcom_allReduce__921_1_1|GLOO|1.000000000|0.05|20.000000|1|0.05|step2",
                  "hcom_receive__921_2_1|GLOO|0.000030518|0.2|0.000153|1|0.2|step2"));
  EXPECT_THAT(
      Query(analysis,
            "SELECT hccl_op_name, src_rank, dst_rank, step, type, IFNULL(op_name, 'NULL') FROM "
            "CommAnalyzerMatrix ORDER BY rowid"),
      ElementsAre("allreduce-top1|1|1|step1|collective|hcom_allReduce__921_0_1",
                  "allreduce-middle|1|1|step1|collective|hcom_allReduce__921_0_1",
                  "allreduce-bottom1|1|1|step1|collective|hcom_allReduce__921_0_1",
                  "allreduce-total|1|1|step1|collective|NULL",
                  "allreduce-top1|1|1|step2|collective|hcom_allReduce__921_1_1",
                  "allreduce-middle|1|1|step2|collective|hcom_allReduce__921_1_1",
                  "allreduce-bottom1|1|1|step2|collective|hcom_allReduce__921_1_1",
                  "allreduce-total|1|1|step2|collective|NULL",
                  "receive-top1|1|1|step2|p2p|hcom_receive__921_2_1",
                  "receive-middle|1|1|step2|p2p|hcom_receive__921_2_1",
                  "receive-bottom1|1|1|step2|p2p|hcom_receive__921_2_1", "receive-total|1|1|step2|p2p|NULL"));
}

TEST_F(AnalysisDbTest, WithoutStepsOneRowCoversTheRun) {
  std::vector<trace::Record> records;
  records.emplace_back(Kernel(100, 400));
  const std::string db =
      testing::WriteProfile(testing::TestOptions(dir_.path()), {std::move(records)}, At(1000));
  ASSERT_FALSE(db.empty());
  // SESSION_TIME_INFO: [kStartNs, At(1000)).
  EXPECT_THAT(Query(AnalysisOf(db), "SELECT IFNULL(step, 'NULL'), computing, free, stage FROM StepTraceTime"),
              ElementsAre("NULL|300|700|1000"));
  EXPECT_EQ(QueryOne(AnalysisOf(db), "SELECT COUNT(*) FROM CommAnalyzerTime"), "0");
}

TEST(CommunicationMatrixTest, RanksTheOpsOfAKindByBandwidthAndTotalsThem) {
  auto op = [](std::string name, std::int64_t start_ns, std::int64_t end_ns, std::uint64_t bytes) {
    CommunicationRecord r;
    r.op_name = std::move(name);
    r.group_name = "default_pg";
    r.transport = "NCCL";
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    r.bytes = bytes;
    r.step = "step3";
    return r;
  };
  // 1 MiB each in 1, 4, 2, 8 ms: 1, 0.25, 0.5, 0.125 GB/s.
  const std::uint64_t mib = 1 << 20;
  std::vector<CommunicationRecord> ops = {
      op("hcom_allReduce__921_0_1", 0, 1'000'000, mib), op("hcom_allReduce__921_1_1", 0, 4'000'000, mib),
      op("hcom_allReduce__921_2_1", 0, 2'000'000, mib), op("hcom_allReduce__921_3_1", 0, 8'000'000, mib)};
  std::vector<std::string> rows;
  for (const MatrixRow& row : CommunicationMatrix(ops, 0)) {
    rows.push_back(row.hccl_op_name + " " + row.op_name + " " + std::to_string(row.transit_time_ms) + " " +
                   std::to_string(row.bandwidth_gbps.value_or(-1)));
  }
  EXPECT_THAT(rows, ElementsAre("allreduce-top1 hcom_allReduce__921_3_1 8.000000 0.125000",
                                "allreduce-middle hcom_allReduce__921_2_1 2.000000 0.500000",
                                "allreduce-bottom1 hcom_allReduce__921_0_1 1.000000 1.000000",
                                "allreduce-bottom2 hcom_allReduce__921_2_1 2.000000 0.500000",
                                "allreduce-bottom3 hcom_allReduce__921_1_1 4.000000 0.250000",
                                "allreduce-total  15.000000 0.266667"));
  EXPECT_EQ(CommunicationKind("hcom_allReduce__921_0_1"), "allreduce");
  EXPECT_EQ(CommunicationKind("hcom_receive__921_2_1"), "receive");
  EXPECT_EQ(CommunicationType("hcom_receive__921_2_1"), "p2p");
  EXPECT_EQ(CommunicationType("hcom_send__921_2_1"), "p2p");
  EXPECT_EQ(CommunicationType("hcom_broadcast__921_2_1"), "collective");
  EXPECT_EQ(HcclDataTypeBytes(4), 4u);   // FP32
  EXPECT_EQ(HcclDataTypeBytes(11), 2u);  // BFP16
  EXPECT_EQ(HcclDataTypeBytes(65534), std::nullopt) << "N/A";
}

TEST_F(AnalysisDbTest, AFailedAnalysisDbCostsOnlyThatFileWithOneWarning) {
  auto writer = ProfileWriter::Create(testing::TestOptions(dir_.path()));
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  std::vector<trace::Record> records;
  records.emplace_back(Op("ProfilerStep#1", 0, 1000));
  (*writer)->Submit(std::move(records));
  // Something that is not ours where the .partial would go: a directory with a file in it.
  const fs::path blocker =
      fs::path((*writer)->layout().output_dir) / (std::string(kAnalysisDbName) + kPartialSuffix);
  fs::create_directories(blocker);
  std::ofstream(blocker / "keep") << "x";
  base::ScopedLogCapture logs;
  StatusOr<std::string> db = (*writer)->Finalize(At(2000));
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_TRUE(fs::exists(*db));
  EXPECT_FALSE(fs::exists(AnalysisOf(*db)));
  EXPECT_TRUE(fs::exists(blocker / "keep")) << "left as it was";
  EXPECT_EQ(logs.Count("its analysis.db was not written"), 1);
}

TEST_F(AnalysisDbTest, CheckAcceptsTheWrittenFileAndRefusesAChangedOrDamagedOne) {
  const std::string db = WriteTwoSteps();
  ASSERT_FALSE(db.empty());
  const std::string analysis = AnalysisOf(db);
  auto check = [&]() -> StatusOr<CheckReport> {
    GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> profile, ProfileReader::Open(db));
    GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> file,
                             ProfileReader::Open(analysis, DbKind::kAnalysis));
    return CheckAnalysisDb(*file, *profile);
  };
  StatusOr<CheckReport> clean = check();
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();
  EXPECT_TRUE(clean->problems.empty()) << FormatProblem(analysis, clean->problems.front());
  EXPECT_EQ(clean->tables, 4u);

  ASSERT_TRUE(fixture::ExecSql(analysis,
                               "UPDATE StepTraceTime SET free = free + 5 WHERE step = '2'; "
                               "DELETE FROM CommAnalyzerTime WHERE step = 'step1'")
                  .ok());
  StatusOr<CheckReport> changed = check();
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  std::vector<std::string> problems;
  for (const CheckProblem& p : changed->problems) problems.push_back(p.table + ": " + p.problem);
  EXPECT_THAT(
      problems,
      ElementsAre(HasSubstr("StepTraceTime: 1 row(s) whose parts do not add up to the step"),
                  "CommAnalyzerTime: 2 row(s), expected one per COMMUNICATION_OP row of the profile (3)"));

  // Truncated: no longer an SQLite file's full set of pages.
  fs::resize_file(analysis, 4096 + 100);
  StatusOr<CheckReport> damaged = check();
  EXPECT_FALSE(damaged.ok());

  EXPECT_FALSE(ProfileReader::Open(db, DbKind::kAnalysis).ok()) << "a profile is not an analysis.db";
}

}  // namespace
}  // namespace gpuprof::db
