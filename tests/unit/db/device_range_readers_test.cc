// gpuprof's readers of device work over a profile with a device-linked mstx range (db/device_work.h):
// the writer gives the range one task of its own (type MSTX_RANGE) spanning the device work its
// thread launched inside it, for msprof-analyze's mstx_sum. Each reader must give on that profile
// what it gives on its twin, the same file with that one task deleted: the range's task is no
// device work, covers no idle time and is drawn as no kernel.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "db/diff.h"
#include "db/findings.h"
#include "db/perfetto_export.h"
#include "db/profile_reader.h"
#include "db/report_data.h"
#include "db/stats.h"
#include "unit/db/fixture_db.h"
#include "unit/db/mini_json.h"
#include "unit/db/writer_test_util.h"

namespace gpuprof::db {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::Not;

constexpr std::uint32_t kPid = 100;
constexpr std::uint32_t kTid = 201;
constexpr std::string_view kRangeMessage = "forward_range";

std::int64_t At(std::int64_t us) { return testing::kStartNs + us * 1000; }

std::unique_ptr<ProfileReader> Open(const std::string& path) {
  StatusOr<std::unique_ptr<ProfileReader>> reader = ProfileReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  return reader.ok() ? std::move(*reader) : nullptr;
}

ReportDb Report(const std::string& path) {
  StatusOr<ReportDb> report = ReadReportDb(ProfileDbFile{path, 0}, ReportOptions{});
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(*report) : ReportDb{};
}

// Steps 1 [0,1000), 2 [1000,2200) (the slowest: the report's timelines show it), 3 [2200,3200),
// 4 [3200,4200) us, on one thread. In each step two ops launch a kernel each, [150,250) and
// [650,750) us into it: the device idles between them. The device-linked range [1050,1700) holds
// both launches of step 2, so its task spans [1150,1750): over the idle gap [1250,1650).
class DeviceRangeReadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<trace::Record> records;
    std::uint64_t correlation = 1;
    const std::int64_t steps[] = {0, 1000, 2200, 3200, 4200};
    for (int s = 0; s < 4; ++s) {
      records.emplace_back(Op("ProfilerStep#" + std::to_string(s + 1), steps[s], steps[s + 1]));
      for (const auto& [name, kernel, at] :
           {std::tuple<std::string, std::string, std::int64_t>{"aten::mm", "gemm_kernel", 100},
            {"aten::relu", "relu_kernel", 600}}) {
        const std::int64_t op_start = steps[s] + at;
        trace::TorchOp op = Op(name, op_start, op_start + 100);
        op.correlation_ids = {correlation};
        records.emplace_back(op);
        trace::ApiCall call;
        call.name = "cudaLaunchKernel";
        call.pid = kPid;
        call.tid = kTid;
        call.start_ns = At(op_start + 10);
        call.end_ns = At(op_start + 20);
        call.correlation_id = correlation;
        call.launches_device_work = true;
        records.emplace_back(call);
        trace::DeviceTask task;
        task.name = task.short_name = kernel;
        task.pid = kPid;
        task.stream = 7;
        task.context = 1;
        task.correlation_id = correlation++;
        task.start_ns = At(op_start + 50);
        task.end_ns = At(op_start + 150);
        records.emplace_back(task);
      }
    }
    trace::Mark range;
    range.type = trace::Mark::Type::kStartEnd;
    range.start_ns = At(1050);
    range.end_ns = At(1700);
    range.pid = kPid;
    range.tid = range.end_tid = kTid;
    range.range_id = 1;
    range.message = kRangeMessage;
    range.domain = "default";
    range.device = true;
    records.emplace_back(range);
    with_range_ = testing::WriteProfile(testing::TestOptions(dir_.path()), {std::move(records)});
    ASSERT_FALSE(with_range_.empty());
    ASSERT_EQ(testing::QueryOne(with_range_,
                                "SELECT COUNT(*) || ' ' || MIN(t.startNs) || ' ' || MIN(t.endNs) FROM TASK t "
                                "JOIN STRING_IDS s ON s.id = t.taskType WHERE s.value = 'MSTX_RANGE'"),
              "1 " + std::to_string(At(1150)) + " " + std::to_string(At(1750)));
    // The twin: the same file without the range's task.
    const fs::path twin_dir = fs::path(dir_.path()) / "twin";
    fs::create_directories(twin_dir);
    without_range_ = (twin_dir / fs::path(with_range_).filename()).string();
    fs::copy_file(with_range_, without_range_);
    ASSERT_TRUE(fixture::ExecSql(without_range_,
                                 "DELETE FROM TASK WHERE taskType IN "
                                 "(SELECT id FROM STRING_IDS WHERE value = 'MSTX_RANGE')")
                    .ok());
    ASSERT_EQ(testing::QueryOne(without_range_, "SELECT COUNT(*) FROM TASK"), "8");
  }

  static trace::TorchOp Op(const std::string& name, std::int64_t start_us, std::int64_t end_us) {
    trace::TorchOp op;
    op.name = name;
    op.pid = kPid;
    op.tid = kTid;
    op.start_ns = At(start_us);
    op.end_ns = At(end_us);
    return op;
  }

  testing::TempDir dir_;
  std::string with_range_;
  std::string without_range_;
};

std::vector<std::string> TaskTypes(const std::string& path) {
  std::unique_ptr<ProfileReader> reader = Open(path);
  if (reader == nullptr) return {};
  StatusOr<ProfileStats> stats = ComputeStats(*reader, StatsOptions{});
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  std::vector<std::string> types;
  if (!stats.ok()) return types;
  for (const TaskTypeStat& type : stats->task_types) {
    types.push_back(type.type + " " + std::to_string(type.count) + " " + std::to_string(type.total_ns));
  }
  return types;
}

TEST_F(DeviceRangeReadersTest, StatsTaskTypesLeaveTheRangesTaskOut) {
  const std::vector<std::string> types = TaskTypes(with_range_);
  EXPECT_THAT(types, Not(Contains(::testing::StartsWith("MSTX_RANGE"))));
  EXPECT_EQ(types, TaskTypes(without_range_));
  EXPECT_THAT(types, ::testing::ElementsAre("KERNEL 8 800000"));
}

// Each finding as its figures and evidence, one line each.
std::vector<std::string> FindingLines(const FindingsReport& report) {
  std::vector<std::string> lines;
  for (const Finding& f : report.findings) {
    lines.push_back(std::string(f.rule->id) + " " + std::to_string(f.at_stake_ns) + " " +
                    std::to_string(f.occurrences));
    for (const FindingEvidence& e : f.evidence) {
      lines.push_back("  " + e.name + " step " + std::to_string(e.step) + " " + std::to_string(e.start_ns) +
                      " +" + std::to_string(e.duration_ns) + " " + e.context);
    }
    for (const FindingPart& part : f.parts) lines.push_back("  " + part.name + " " + std::to_string(part.ns));
  }
  return lines;
}

std::vector<std::string> SplitLines(const RankStats& split) {
  std::vector<std::string> lines;
  for (const RankStepStats& step : split.steps) {
    lines.push_back(std::to_string(step.id) + " compute " + std::to_string(step.compute_ns) + " idle " +
                    std::to_string(step.idle_ns));
  }
  return lines;
}

TEST_F(DeviceRangeReadersTest, DeviceIdleFindingsAndTheStepSplitAreThoseWithoutTheRangesTask) {
  std::unique_ptr<ProfileReader> with = Open(with_range_);
  std::unique_ptr<ProfileReader> without = Open(without_range_);
  ASSERT_TRUE(with != nullptr && without != nullptr);
  StatusOr<FindingsReport> a = ComputeFindings(*with, ProfileDbFile{with_range_, 0});
  StatusOr<FindingsReport> b = ComputeFindings(*without, ProfileDbFile{without_range_, 0});
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<std::string> lines = FindingLines(*b);
  // The idle gap the range spans is step 2's longest: [1250,1650) us.
  EXPECT_THAT(lines, Contains(::testing::HasSubstr("step 2 " + std::to_string(At(1250)) + " +400000")));
  EXPECT_EQ(FindingLines(*a), lines);

  const ReportDb report = Report(with_range_);
  EXPECT_EQ(SplitLines(report.split), SplitLines(Report(without_range_).split));
  EXPECT_EQ(FindingLines(report.findings), lines);
}

std::vector<std::string> TimelineLines(const ReportDb& report) {
  std::vector<std::string> lines;
  for (const StepTimeline& timeline : report.timelines) {
    lines.push_back("step " + std::to_string(timeline.step_id));
    for (const TimelineItem& item : timeline.items) {
      lines.push_back(item.lane + " " + item.name + " " + std::to_string(item.start_ns) + " " +
                      std::to_string(item.end_ns));
    }
  }
  return lines;
}

TEST_F(DeviceRangeReadersTest, ReportTimelineShowsTheRangeAsAMarkAndNoTask) {
  const ReportDb report = Report(with_range_);
  const std::vector<std::string> lines = TimelineLines(report);
  ASSERT_THAT(lines, Contains("step 2"));
  EXPECT_THAT(lines, Contains("marks " + std::string(kRangeMessage) + " " + std::to_string(At(1050)) + " " +
                              std::to_string(At(1700))));
  EXPECT_THAT(lines, Not(Contains(::testing::HasSubstr("MSTX_RANGE"))));
  const ReportDb twin = Report(without_range_);
  EXPECT_EQ(lines, TimelineLines(twin));
  EXPECT_EQ(report.launch_delays, twin.launch_delays);
  EXPECT_EQ(report.op_launches.size(), twin.op_launches.size());
}

// The trace's events of the device process(es): "ph name" per event.
std::vector<std::string> DeviceEvents(const std::string& db, const std::string& json_path, int* ranges) {
  StatusOr<ExportSummary> summary = ExportPerfettoTrace({ProfileDbFile{db, 0}}, json_path);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  StatusOr<fixture::JsonValue> trace = fixture::ParseJson(fixture::ReadFileBytes(json_path));
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  std::vector<std::string> events;
  if (!trace.ok()) return events;
  const fixture::JsonValue* list = trace->Find("traceEvents");
  if (list == nullptr) list = &*trace;
  for (const fixture::JsonValue& event : list->array) {
    const std::string ph = event.Str("ph");
    if (ph == "b" && event.Str("name") == kRangeMessage) ++*ranges;
    const std::string cat = event.Str("cat");
    if (ph == "X" && (cat == "kernel" || cat == "device_task" || cat.rfind("gpu_", 0) == 0)) {
      events.push_back(cat + " " + event.Str("name") + " " + event.NumText("ts"));
    }
  }
  return events;
}

TEST_F(DeviceRangeReadersTest, PerfettoExportDrawsTheRangeAsARangeAndNoDeviceTask) {
  int ranges = 0;
  const std::vector<std::string> events =
      DeviceEvents(with_range_, (fs::path(dir_.path()) / "with.json").string(), &ranges);
  EXPECT_EQ(ranges, 1);
  EXPECT_EQ(events.size(), 8u);
  EXPECT_THAT(events, Not(Contains(::testing::HasSubstr("MSTX_RANGE"))));
  int twin_ranges = 0;
  EXPECT_EQ(events,
            DeviceEvents(without_range_, (fs::path(dir_.path()) / "without.json").string(), &twin_ranges));
}

TEST_F(DeviceRangeReadersTest, DiffAgainstTheTwinShowsNoChange) {
  StatusOr<ProfileDiff> diff = DiffProfiles(ProfileDbFile{with_range_, 0}, ProfileDbFile{without_range_, 0});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_FALSE(diff->step.changed);
  EXPECT_EQ(diff->step.delta, 0);
  EXPECT_EQ(diff->ops_changed, 0u);
  EXPECT_EQ(diff->kernels_changed, 0u);
  EXPECT_EQ(diff->kernels_compared, 2u);
  for (const ComparedFigure& kernel : diff->kernels) {
    EXPECT_EQ(kernel.a_calls, kernel.b_calls) << kernel.name;
    EXPECT_EQ(kernel.delta, 0) << kernel.name;
  }
}

}  // namespace
}  // namespace gpuprof::db
