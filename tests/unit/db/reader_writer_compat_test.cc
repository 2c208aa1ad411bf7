// The writer's output read back by the read side: `check` (its expectations read from
// src/db/schema.sql, its joins its own) finds no problem in a DB the ProfileWriter wrote, stats
// sees its ops and kernels, and the Perfetto export links them. The writer's rows and the
// readers' joins are written independently and have to agree here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "db/check.h"
#include "db/perfetto_export.h"
#include "db/profile_writer.h"
#include "db/stats.h"
#include "trace/records.h"
#include "unit/db/fixture_db.h"
#include "unit/db/mini_json.h"

namespace gpuprof::db {
namespace {

using ::testing::ElementsAre;

constexpr std::int64_t kStart = 1'704'164'645'678'000'000;
std::int64_t Us(std::int64_t micros) { return kStart + micros * 1000; }

std::vector<trace::Record> SmallRun() {
  std::vector<trace::Record> records;
  trace::TorchOp step;
  step.start_ns = Us(0);
  step.end_ns = Us(1000);
  step.pid = 100;
  step.tid = 100;
  step.name = "ProfilerStep#3";
  records.emplace_back(step);
  trace::TorchOp linear = step;
  linear.start_ns = Us(100);
  linear.end_ns = Us(400);
  linear.name = "aten::linear";
  linear.sequence_number = 5;
  linear.input_shapes = "8,16;16,32";
  linear.input_dtypes = "float;float";
  linear.call_stack = {"model.py(10): forward", "train.py(3): main"};
  records.emplace_back(linear);
  trace::TorchOp mm = step;
  mm.start_ns = Us(150);
  mm.end_ns = Us(350);
  mm.name = "aten::mm";
  mm.correlation_ids = {7};
  records.emplace_back(mm);
  trace::TorchOp backward = step;
  backward.start_ns = Us(600);
  backward.end_ns = Us(800);
  backward.tid = 101;
  backward.name = "MmBackward0";
  backward.sequence_number = 5;
  backward.fwd_thread_id = 100;
  records.emplace_back(backward);
  trace::ApiCall launch;
  launch.start_ns = Us(160);
  launch.end_ns = Us(170);
  launch.pid = 100;
  launch.tid = 100;
  launch.name = "cudaLaunchKernel";
  launch.correlation_id = 7;
  launch.launches_device_work = true;
  records.emplace_back(launch);
  trace::DeviceTask kernel;
  kernel.start_ns = Us(180);
  kernel.end_ns = Us(280);
  kernel.stream = 7;
  kernel.correlation_id = 7;
  kernel.pid = 100;
  kernel.name = "gemm<float>";
  kernel.short_name = "gemm";
  records.emplace_back(kernel);
  trace::AllocatorEvent alloc;
  alloc.time_ns = Us(200);
  alloc.pid = 100;
  alloc.tid = 100;
  alloc.ptr = 0x1000;
  alloc.bytes = 1 << 20;
  alloc.total_allocated = 1 << 20;
  alloc.total_reserved = 2 << 20;
  alloc.total_active = 1 << 20;
  records.emplace_back(alloc);
  trace::GcEvent gc;
  gc.start_ns = Us(900);
  gc.end_ns = Us(950);
  gc.pid = 100;
  records.emplace_back(gc);
  trace::ReplayResult replayed;
  replayed.time_ns = Us(175);
  replayed.pid = 100;
  replayed.tid = 100;
  replayed.correlation_id = 7;
  replayed.record.kernel_name = "gemm<float>";
  replayed.record.replayed = true;
  for (int pass = 1; pass <= 3; ++pass) {
    replay::PassRecord record;
    record.pass = pass;
    record.start_ns = Us(2000 + pass * 200);
    record.duration_ns = 100'000;
    record.bytes_restored = pass > 1 ? 4096 : 0;
    record.output_hash = 0xabc;
    replayed.record.passes.push_back(record);
  }
  records.emplace_back(replayed);
  return records;
}

class WriterCompatibilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fixture::MakeTempDir("gpuprof_compat");
    ASSERT_FALSE(dir_.empty());
    WriterOptions options;
    options.out_dir = dir_;
    options.run.hostname = "compat-host";
    options.run.pid = 100;
    options.run.rank = 0;
    options.run.device = 0;
    options.run.start_ns = kStart;
    options.run.devices = {{0, "NVIDIA H200"}};
    options.run.config_json = "{}";
    StatusOr<std::unique_ptr<ProfileWriter>> writer = ProfileWriter::Create(options);
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    (*writer)->Submit(SmallRun());
    StatusOr<std::string> path = (*writer)->Finalize(Us(5000));
    ASSERT_TRUE(path.ok()) << path.status().message();
    db_ = *path;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
  std::string db_;
};

TEST_F(WriterCompatibilityTest, WriterOutputPassesCheck) {
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(db_);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  StatusOr<CheckReport> report = CheckProfileDb(**reader);
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::vector<std::string> problems;
  for (const CheckProblem& problem : report->problems) problems.push_back(FormatProblem(db_, problem));
  EXPECT_THAT(problems, ElementsAre());
}

TEST_F(WriterCompatibilityTest, StatsAndExportReadTheWriterOutput) {
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(db_);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  StatusOr<ProfileStats> stats = ComputeStats(**reader, StatsOptions{});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->op_calls, 4u);
  EXPECT_EQ(stats->kernel_calls, 1u);
  EXPECT_EQ(stats->step_count, 1u);
  EXPECT_EQ(stats->gc_count, 1u);
  ASSERT_EQ(stats->replay.size(), 1u);
  EXPECT_EQ(stats->replay[0].kernel, "gemm<float>");
  EXPECT_EQ(stats->replay[0].passes, 3u);
  EXPECT_EQ(stats->replay[0].median_ns, 100'000);

  const std::string trace = dir_ + "/trace.json";
  StatusOr<ExportSummary> summary = ExportPerfettoTrace({{db_, 0}}, trace);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_TRUE(summary->notes.empty());
  StatusOr<fixture::JsonValue> root = fixture::ParseJson(fixture::ReadFileBytes(trace));
  ASSERT_TRUE(root.ok()) << root.status().message();
  int op_to_kernel = 0, fwd_bwd = 0;
  for (const fixture::JsonValue& event : root->Find("traceEvents")->array) {
    if (event.Str("ph") == "s") {
      op_to_kernel += event.Str("cat") == "ac2g";
      fwd_bwd += event.Str("cat") == "fwdbwd";
    }
  }
  EXPECT_EQ(op_to_kernel, 1);  // aten::mm -> gemm<float>
  EXPECT_EQ(fwd_bwd, 1);       // aten::linear -> MmBackward0 (sequence number 5)
}

}  // namespace
}  // namespace gpuprof::db
