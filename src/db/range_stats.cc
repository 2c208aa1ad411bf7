#include "db/range_stats.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gpuprof::db {
namespace {

// The FP32 and FP16 thread instructions of Nsight Compute's roofline; an fma counts two FLOPs.
struct FlopMetric {
  std::string_view name;
  double flops_per_instruction;
};
constexpr FlopMetric kFlopMetrics[] = {
    {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2},
    {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_hmul_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 2},
};

void AddTo(std::optional<double>& sum, double value) { sum = sum.value_or(0) + value; }

// Reads one launch's metrics into `kernel`.
Status ReadMetrics(Query& metrics, RangeKernel* kernel) {
  metrics.Reset();
  metrics.BindInt(1, kernel->kernel_id);
  std::optional<double> dram_read_write;
  std::optional<double> dram_throughput;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, metrics.Step());
    if (!row) break;
    const std::string_view name = metrics.Text(0);
    const double value = metrics.Double(1);
    if (name == kComputeThroughputMetric) {
      kernel->compute_pct = value;
    } else if (name == kMemoryThroughputMetric) {
      kernel->memory_pct = value;
    } else if (name == kDramThroughputMetric) {
      dram_throughput = value;
    } else if (name == kAchievedOccupancyMetric) {
      kernel->occupancy_pct = value;
    } else if (name == kDramBytesMetric) {
      kernel->dram_bytes = value;
    } else if (name == kDramReadMetric || name == kDramWriteMetric) {
      AddTo(dram_read_write, value);
    } else if (name == kDurationMetric) {
      if (const double ns = NanosecondsPer(metrics.Text(2)); ns > 0) kernel->duration_ns = value * ns;
    } else {
      for (const FlopMetric& flop : kFlopMetrics) {
        if (name == flop.name) AddTo(kernel->flops, value * flop.flops_per_instruction);
      }
    }
  }
  if (!kernel->memory_pct.has_value()) kernel->memory_pct = dram_throughput;
  if (!kernel->dram_bytes.has_value()) kernel->dram_bytes = dram_read_write;
  return OkStatus();
}

// Reads one launch's pass durations (sorted by SQLite) into `kernel`.
Status ReadPasses(Query& passes, RangeKernel* kernel, std::vector<std::int64_t>& durations) {
  passes.Reset();
  passes.BindInt(1, kernel->kernel_id);
  durations.clear();
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, passes.Step());
    if (!row) break;
    durations.push_back(passes.Int(0));
  }
  if (durations.empty()) return OkStatus();
  const std::size_t n = durations.size();
  kernel->passes = n;
  kernel->min_ns = durations.front();
  kernel->max_ns = durations.back();
  const std::int64_t median =
      n % 2 == 1 ? durations[n / 2] : durations[n / 2 - 1] + (durations[n / 2] - durations[n / 2 - 1]) / 2;
  kernel->median_ns = median;
  if (median > 0) {
    kernel->spread_pct =
        100.0 * static_cast<double>(kernel->max_ns - kernel->min_ns) / static_cast<double>(median);
  }
  return OkStatus();
}

}  // namespace

double NanosecondsPer(std::string_view unit) noexcept {
  // ncu's short words and CUPTI's Profiler Host API's long ones (what the H200 run stored).
  if (unit == "nsecond" || unit == "nanosecond") return 1;
  if (unit == "usecond" || unit == "microsecond") return 1e3;
  if (unit == "msecond" || unit == "millisecond") return 1e6;
  if (unit == "second") return 1e9;
  return 0;
}

std::string_view BottleneckName(Bottleneck bottleneck) noexcept {
  switch (bottleneck) {
    case Bottleneck::kUnknown: return "-";
    case Bottleneck::kCompute: return "compute";
    case Bottleneck::kMemory: return "memory";
    case Bottleneck::kLatency: return "latency";
    case Bottleneck::kLaunch: return "launch";
  }
  return "-";
}

Bottleneck RangeBottleneck(std::optional<double> compute_pct, std::optional<double> memory_pct,
                           std::optional<std::int64_t> median_ns) {
  const double compute = compute_pct.value_or(0);
  const double memory = memory_pct.value_or(0);
  if (memory_pct.has_value() && memory >= kBoundThresholdPct && memory >= compute) return Bottleneck::kMemory;
  if (compute_pct.has_value() && compute >= kBoundThresholdPct) return Bottleneck::kCompute;
  if (median_ns.has_value() && *median_ns < kLaunchBoundNs) return Bottleneck::kLaunch;
  if (compute_pct.has_value() || memory_pct.has_value()) return Bottleneck::kLatency;
  return Bottleneck::kUnknown;
}

std::size_t RangeEnd(const std::vector<RangeKernel>& kernels, std::size_t begin) {
  std::size_t end = begin + 1;
  while (end < kernels.size() && kernels[end].device == kernels[begin].device &&
         kernels[end].range_id == kernels[begin].range_id) {
    ++end;
  }
  return end;
}

StatusOr<RangeScanSummary> ForEachRangeKernel(const ProfileReader& reader, const RangeScanOptions& options,
                                              const std::function<void(const RangeKernel&)>& row) {
  RangeScanSummary summary;
  GPUPROF_ASSIGN_OR_RETURN(
      bool ranges, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"id", "deviceId", "name", "replayed",
                                                               "replayMode", "rangeId", "rangeLaunch"}));
  if (!ranges) {
    summary.absent = reader.HasTable("GPUPROF_REPLAY_KERNEL")
                         ? "GPUPROF_REPLAY_KERNEL has no rangeId/rangeLaunch columns (a DB written "
                           "before range replay)"
                         : "no GPUPROF_REPLAY_KERNEL table (no replay in this run)";
    return summary;
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_reason, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"declineReason"}));
  const bool has_strings = reader.HasStringValues();
  const std::string kname =
      has_strings ? "COALESCE(s.value, CAST(k.name AS TEXT), '')" : "CAST(k.name AS TEXT)";
  const std::string join = has_strings ? " LEFT JOIN STRING_IDS s ON s.id = k.name" : "";
  GPUPROF_ASSIGN_OR_RETURN(
      Query launches,
      reader.Prepare("SELECT k.id, k.deviceId, k.rangeId, k.rangeLaunch, " + kname + ", k.replayed, " +
                     (has_reason ? "COALESCE(k.declineReason, '')" : "''") + " FROM GPUPROF_REPLAY_KERNEL k" +
                     join +
                     " WHERE k.replayMode = 'range' AND k.rangeId IS NOT NULL "
                     "ORDER BY k.deviceId, k.rangeId, k.rangeLaunch, k.id"));
  GPUPROF_ASSIGN_OR_RETURN(bool pass_table,
                           reader.HasColumns("GPUPROF_REPLAY_PASS", {"kernelId", "durationNs"}));
  std::optional<Query> passes;
  if (pass_table) {
    // A pass without a duration (0: the CUDA backend does not time a range's pass 1, the
    // application's own execution, yet) is left out of the median and the spread.
    GPUPROF_ASSIGN_OR_RETURN(
        passes,
        reader.Prepare("SELECT durationNs FROM GPUPROF_REPLAY_PASS WHERE kernelId = ?1 AND durationNs "
                       "> 0 ORDER BY durationNs"));
  }
  // Metric names are STRING_IDS ids: without their text the counters cannot be told apart.
  GPUPROF_ASSIGN_OR_RETURN(bool metric_table,
                           reader.HasColumns("GPUPROF_REPLAY_METRIC", {"kernelId", "name", "unit", "value"}));
  std::optional<Query> metrics;
  if (metric_table && has_strings) {
    GPUPROF_ASSIGN_OR_RETURN(
        metrics, reader.Prepare("SELECT n.value, m.value, COALESCE(u.value, '') FROM GPUPROF_REPLAY_METRIC m "
                                "JOIN STRING_IDS n ON n.id = m.name LEFT JOIN STRING_IDS u ON u.id = m.unit "
                                "WHERE m.kernelId = ?1 AND m.value IS NOT NULL ORDER BY m.rowid"));
  }

  std::optional<std::pair<std::int64_t, std::int64_t>> current;  // (device, range)
  std::vector<std::int64_t> durations;
  RangeKernel kernel;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool has_row, launches.Step());
    if (!has_row) break;
    const std::pair<std::int64_t, std::int64_t> range{launches.Int(1), launches.Int(2)};
    if (range != current) {
      if (options.max_ranges > 0 && summary.ranges == options.max_ranges) {
        summary.more = true;
        break;
      }
      current = range;
      ++summary.ranges;
    }
    kernel = RangeKernel{};
    kernel.kernel_id = launches.Int(0);
    kernel.device = range.first;
    kernel.range_id = range.second;
    kernel.place = launches.Int(3);
    kernel.kernel = std::string(launches.Text(4));
    kernel.replayed = launches.Int(5) != 0;
    kernel.decline_reason = std::string(launches.Text(6));
    if (passes.has_value() && kernel.replayed)
      GPUPROF_RETURN_IF_ERROR(ReadPasses(*passes, &kernel, durations));
    if (metrics.has_value() && kernel.replayed) GPUPROF_RETURN_IF_ERROR(ReadMetrics(*metrics, &kernel));
    if (!kernel.duration_ns.has_value() && kernel.median_ns.has_value()) {
      kernel.duration_ns = static_cast<double>(*kernel.median_ns);
    }
    if (kernel.replayed)
      kernel.bottleneck = RangeBottleneck(kernel.compute_pct, kernel.memory_pct, kernel.median_ns);
    row(kernel);
  }
  if (summary.ranges == 0)
    summary.absent = "no range replay rows (replayMode 'range') in GPUPROF_REPLAY_KERNEL";
  return summary;
}

}  // namespace gpuprof::db
