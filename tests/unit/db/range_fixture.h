// The records of two replayed ranges on device 0, for the range-result tests (stats, csv, report):
// range 1 has five launches with three timing passes each and the counters that make each
// bottleneck word; range 2 was declined whole (one row, "range 2").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpuprof/replay.h"
#include "trace/records.h"
#include "unit/db/writer_test_util.h"

namespace gpuprof::db::fixture {

inline trace::Record RangeLaunch(std::string name, std::uint64_t range, std::uint32_t place,
                                 std::vector<std::uint64_t> pass_ns,
                                 std::vector<replay::MetricValue> metrics) {
  trace::ReplayResult launch;
  launch.time_ns = testing::kStartNs + 1000 * static_cast<std::int64_t>(range * 100 + place);
  launch.pid = 100;
  launch.tid = 100;
  launch.record.kernel_name = std::move(name);
  launch.record.replayed = !pass_ns.empty();
  launch.record.replay_mode = replay::ReplayMode::kRange;
  launch.record.range_id = range;
  launch.record.range_launch = place;
  launch.record.deterministic = true;
  int pass = 0;
  for (std::uint64_t ns : pass_ns) {
    replay::PassRecord record;
    record.pass = ++pass;
    record.duration_ns = ns;
    launch.record.passes.push_back(record);
  }
  if (pass_ns.empty()) launch.record.decline_reason = replay::DeclineReason::kRangeTooLarge;
  launch.record.metrics = std::move(metrics);
  return trace::Record(std::move(launch));
}

inline std::vector<trace::Record> RangeRecords() {
  auto pct = [](const char* name, double value) { return replay::MetricValue{name, "percent", value, 1}; };
  auto count = [](const char* name, const char* unit, double value) {
    return replay::MetricValue{name, unit, value, 1};
  };
  std::vector<trace::Record> records;
  records.push_back(
      RangeLaunch("gemm", 1, 0, {120000, 90000, 100000},
                  {pct("sm__throughput.avg.pct_of_peak_sustained_elapsed", 75),
                   pct("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 40),
                   pct("sm__warps_active.avg.pct_of_peak_sustained_active", 50),
                   count("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", 3e9),
                   count("dram__bytes.sum", "byte", 1e6), count("gpu__time_duration.sum", "usecond", 100)}));
  records.push_back(
      RangeLaunch("copy", 1, 1, {50000, 50000, 50000},
                  {pct("sm__throughput.avg.pct_of_peak_sustained_elapsed", 20),
                   pct("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 85),
                   count("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", 1e6),
                   count("dram__bytes_read.sum", "byte", 2e9), count("dram__bytes_write.sum", "byte", 1e9)}));
  records.push_back(RangeLaunch("tiny", 1, 2, {2000, 3000, 2500},
                                {pct("sm__throughput.avg.pct_of_peak_sustained_elapsed", 5),
                                 pct("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 5),
                                 count("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", 1000),
                                 count("dram__bytes.sum", "byte", 4096)}));
  records.push_back(RangeLaunch("wait", 1, 3, {20000, 20000, 20000},
                                {pct("sm__throughput.avg.pct_of_peak_sustained_elapsed", 20),
                                 pct("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 30),
                                 pct("sm__warps_active.avg.pct_of_peak_sustained_active", 10),
                                 count("sm__sass_thread_inst_executed_op_hfma_pred_on.sum", "inst", 5e6),
                                 count("dram__bytes.sum", "byte", 4e6)}));
  records.push_back(RangeLaunch("untimed", 1, 4, {20000, 20000, 20000}, {}));
  records.push_back(RangeLaunch("range 2", 2, 0, {}, {}));
  return records;
}

}  // namespace gpuprof::db::fixture
