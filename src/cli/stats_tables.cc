#include "cli/stats_tables.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "cli/db_commands.h"
#include "cli/findings_output.h"
#include "cli/report.h"
#include "cli/stats_collected.h"
#include "db/cluster_stats.h"
#include "db/stats.h"

namespace gpuprof::cli {
namespace {

// Kernel names can be pages of template arguments; the table shows this many characters.
constexpr std::size_t kMaxNameChars = 120;
// The per-step table of the cluster summary has one duration column per rank up to this many.
constexpr std::size_t kMaxRankColumns = 8;

using Align = TextTable::Align;

// report.h's formatters, under the short names the tables here use.
std::string Fixed(double value, int decimals) { return FormatFixed(value, decimals); }
std::string Ms(std::int64_t ns) { return FormatMillis(ns); }
std::string Us(double ns) { return FormatMicros(ns); }
std::string Percent(std::int64_t part, std::int64_t whole) { return FormatPercent(part, whole); }
std::string Bytes(std::int64_t bytes) {
  return FormatBytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, bytes)));
}

// A rank or device id as the report shows it: the format's -1 (none: not distributed, the CPU)
// is "not set".
std::string IdOrNotSet(std::int64_t id) { return id < 0 ? "not set" : std::to_string(id); }

// A name from the DB made safe for the terminal, cut at a code-point boundary.
std::string ShortName(const std::string& raw) { return cli::ShortName(raw, kMaxNameChars); }

void NoData(std::ostream& out, std::string_view title, const std::string& reason) {
  out << title << ": no data";
  if (!reason.empty()) out << " (" << reason << ")";
  out << "\n";
}

void PrintOps(std::ostream& out, const db::ProfileStats& stats) {
  if (stats.top_ops_by_total.empty()) {
    NoData(out, "Top ops", stats.ops_absent);
    return;
  }
  out << "Top ops by total time (" << stats.top_ops_by_total.size() << " of " << stats.op_names << " names, "
      << stats.op_calls << " calls; % of " << Ms(stats.op_self_sum_ns) << " ms covered by ops)\n";
  TextTable total({{"calls", Align::kRight},
                   {"total ms", Align::kRight},
                   {"avg µs", Align::kRight},
                   {"%", Align::kRight},
                   {"name", Align::kLeft}});
  for (const db::OpStat& op : stats.top_ops_by_total) {
    total.AddRow({std::to_string(op.totals.calls), Ms(op.totals.total_ns),
                  Us(static_cast<double>(op.totals.total_ns) / static_cast<double>(op.totals.calls)),
                  Percent(op.totals.total_ns, stats.op_self_sum_ns), ShortName(op.name)});
  }
  total.Print(out, "  ");
  out << "\nTop ops by self time (total minus ops nested in them on the same thread)\n";
  TextTable self({{"calls", Align::kRight},
                  {"self ms", Align::kRight},
                  {"avg self µs", Align::kRight},
                  {"total ms", Align::kRight},
                  {"%", Align::kRight},
                  {"name", Align::kLeft}});
  for (const db::OpStat& op : stats.top_ops_by_self) {
    self.AddRow({std::to_string(op.totals.calls), Ms(op.totals.self_ns),
                 Us(static_cast<double>(op.totals.self_ns) / static_cast<double>(op.totals.calls)),
                 Ms(op.totals.total_ns), Percent(op.totals.self_ns, stats.op_self_sum_ns),
                 ShortName(op.name)});
  }
  self.Print(out, "  ");
}

void PrintKernels(std::ostream& out, const db::ProfileStats& stats) {
  if (stats.top_kernels.empty()) {
    NoData(out, "Top kernels", stats.kernels_absent);
  } else {
    out << "Top kernels by total time (" << stats.top_kernels.size() << " of " << stats.kernel_names
        << " names, " << stats.kernel_calls << " launches, " << Ms(stats.kernel_total_ns) << " ms)\n";
    TextTable table({{"calls", Align::kRight},
                     {"total ms", Align::kRight},
                     {"avg µs", Align::kRight},
                     {"max µs", Align::kRight},
                     {"%", Align::kRight},
                     {"name", Align::kLeft}});
    for (const db::KernelStat& kernel : stats.top_kernels) {
      table.AddRow({std::to_string(kernel.calls), Ms(kernel.total_ns),
                    Us(static_cast<double>(kernel.total_ns) / static_cast<double>(kernel.calls)),
                    Us(static_cast<double>(kernel.max_ns)), Percent(kernel.total_ns, stats.kernel_total_ns),
                    ShortName(kernel.name)});
    }
    table.Print(out, "  ");
  }
  if (!stats.task_types.empty()) {
    out << "\nDevice tasks by type\n";
    TextTable table({{"tasks", Align::kRight}, {"total ms", Align::kRight}, {"type", Align::kLeft}});
    for (const db::TaskTypeStat& type : stats.task_types) {
      table.AddRow({std::to_string(type.count), Ms(type.total_ns), ShortName(type.type)});
    }
    table.Print(out, "  ");
  }
}

void PrintMemory(std::ostream& out, const db::ProfileStats& stats) {
  if (stats.memory.empty()) {
    NoData(out, "Peak memory", stats.memory_absent);
    return;
  }
  out << "Peak memory per device (MEMORY_RECORD)\n";
  TextTable table({{"device", Align::kRight},
                   {"component", Align::kLeft},
                   {"peak allocated", Align::kRight},
                   {"peak reserved", Align::kRight},
                   {"peak active", Align::kRight},
                   {"records", Align::kRight}});
  for (const db::MemoryPeak& peak : stats.memory) {
    table.AddRow({IdOrNotSet(peak.device), ShortName(peak.component), Bytes(peak.peak_allocated),
                  Bytes(peak.peak_reserved), peak.peak_active.has_value() ? Bytes(*peak.peak_active) : "-",
                  std::to_string(peak.records)});
  }
  table.Print(out, "  ");
}

void PrintSteps(std::ostream& out, const db::ProfileStats& stats) {
  if (stats.step_count == 0) {
    NoData(out, "Steps", stats.steps_absent);
    return;
  }
  out << "Steps (" << stats.step_count << ": avg "
      << Ms(stats.step_total_ns / static_cast<std::int64_t>(stats.step_count)) << " ms, min "
      << Ms(stats.step_min_ns) << " ms, max " << Ms(stats.step_max_ns) << " ms)\n"
      << "  step = N of ProfilerStep#N: the profile's step() calls counted from 0 (a script that counts its "
         "steps from 1 calls this one N+1)\n";
  const std::int64_t origin = stats.session_start_ns.value_or(stats.steps.front().start_ns);
  TextTable table({{"step", Align::kRight}, {"start ms", Align::kRight}, {"duration ms", Align::kRight}});
  for (const db::StepStat& step : stats.steps) {
    table.AddRow({std::to_string(step.id), Ms(step.start_ns - origin), Ms(step.end_ns - step.start_ns)});
  }
  table.Print(out, "  ");
  if (stats.step_count > stats.steps.size()) {
    out << "  ... " << (stats.step_count - stats.steps.size()) << " more steps (--top shows more)\n";
  }
}

void PrintGc(std::ostream& out, const db::ProfileStats& stats) {
  if (stats.gc_count == 0) {
    NoData(out, "GC", stats.gc_absent);
    return;
  }
  out << "GC: " << stats.gc_count << " pause(s), total " << Ms(stats.gc_total_ns) << " ms, longest "
      << Ms(stats.gc_max_ns) << " ms\n";
}

// ---- Speed of light: the hardware counters of the replayed launches ----------------------------

// The Speed-of-Light lines: Nsight Compute's names of the metrics they show.
struct SolLine {
  std::string_view label;
  std::string_view metric;
  bool only_when_present;  // omitted, not "-", when the group lacks it
};
constexpr SolLine kSolLines[] = {
    {"compute (SM) throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed", false},
    {"memory throughput", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", false},
    {"DRAM read", "dram__bytes_read.sum", false},
    {"DRAM write", "dram__bytes_write.sum", false},
    {"achieved occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", false},
    {"theoretical occupancy", "sm__maximum_warps_per_active_cycle_pct", true},
};
constexpr std::size_t kSolLabelWidth = 25;

// One value in its unit: times in µs, bytes in KiB/MiB/..., percentages with one decimal.
std::string MetricText(double value, const std::string& unit) {
  if (const double ns = db::NanosecondsPer(unit); ns > 0) return Us(value * ns) + " µs";
  if (unit == "byte") return Bytes(static_cast<std::int64_t>(value + 0.5));
  if (unit == "%" || unit == "percent") return Fixed(value, 1) + " %";
  char text[64];
  std::snprintf(text, sizeof(text), "%.4g", value);
  return unit.empty() ? std::string(text) : std::string(text) + " " + ShortName(unit);
}

// The mean, and the range when the launches differ.
std::string MetricSummary(const db::ReplayMetricStat& metric) {
  std::string text = MetricText(metric.mean, metric.unit);
  if (metric.launches > 1 && metric.min != metric.max) {
    text += "  (min–max " + MetricText(metric.min, metric.unit) + " – " +
            MetricText(metric.max, metric.unit) + ", " + std::to_string(metric.launches) + " launches)";
  }
  return text;
}

void SolRow(std::ostream& out, std::string_view label, const std::string& value) {
  out << "    " << label << std::string(kSolLabelWidth - std::min(kSolLabelWidth, label.size()), ' ') << value
      << "\n";
}

std::string Joined(const std::vector<std::string>& values) {
  std::string text;
  for (const std::string& value : values) text += (text.empty() ? "" : "/") + ShortName(value);
  return text;
}

void PrintSpeedOfLight(std::ostream& out, const db::ProfileStats& stats) {
  out << "Speed of light (hardware counters of replayed launches: mean over the launches; "
      << stats.replay_counters.size() << " of " << stats.replay_counter_groups << " kernel/device groups)\n";
  for (const db::ReplayCounterStat& group : stats.replay_counters) {
    out << "  " << ShortName(group.kernel) << "  (device " << group.device << ", "
        << group.launches_with_metrics << " of " << group.launches << " replayed launch"
        << (group.launches == 1 ? "" : "es") << " with counters";
    if (!group.clock_controls.empty()) out << "; clock control " << Joined(group.clock_controls);
    if (!group.cache_controls.empty()) out << "; cache control " << Joined(group.cache_controls);
    out << ")\n";
    if (const db::ReplayMetricStat* duration = group.Find(db::kDurationMetric); duration != nullptr) {
      SolRow(out, "duration", MetricSummary(*duration));
    } else if (group.pass_count > 0) {
      std::string text = Us(group.pass_mean_ns) + " µs (replay passes";
      if (group.pass_min_ns != group.pass_max_ns) {
        text += ", min–max " + Us(static_cast<double>(group.pass_min_ns)) + " – " +
                Us(static_cast<double>(group.pass_max_ns)) + " µs";
      }
      SolRow(out, "duration", text + ")");
    } else {
      SolRow(out, "duration", "-");
    }
    if (group.launches_with_metrics > 0) {
      for (const SolLine& line : kSolLines) {
        const db::ReplayMetricStat* metric = group.Find(line.metric);
        if (metric == nullptr && line.only_when_present) continue;
        SolRow(out, line.label, metric == nullptr ? "-" : MetricSummary(*metric));
      }
    }
    if (group.launches_without_counters > 0) {
      out << "    no counters: " << ShortName(group.counter_status);
      if (group.launches_without_counters < group.launches) {
        out << " (" << group.launches_without_counters << " of " << group.launches << " launches)";
      }
      out << "\n";
    }
  }
  out << "  (every value: gpuprof stats --csv)\n";
}

// ---- Range replay: the kernels of each replayed range in execution order ------------------------

std::string OptionalPct(const std::optional<double>& value) { return value ? Fixed(*value, 1) : "-"; }

void PrintRangeTable(std::ostream& out, const std::vector<db::RangeKernel>& kernels, std::size_t begin,
                     std::size_t end) {
  const db::RangeKernel& first = kernels[begin];
  if (!first.replayed) {
    out << "  range " << first.range_id << " (device " << first.device << "): not replayed ("
        << (first.decline_reason.empty() ? "-" : ShortName(first.decline_reason)) << ")\n";
    return;
  }
  std::int64_t total_ns = 0;
  for (std::size_t i = begin; i < end; ++i) total_ns += kernels[i].median_ns.value_or(0);
  out << "  range " << first.range_id << " (device " << first.device << ", " << (end - begin) << " launch"
      << (end - begin == 1 ? "" : "es") << ", " << Us(static_cast<double>(total_ns)) << " µs of medians)\n";
  TextTable table({{"#", Align::kRight},
                   {"median µs", Align::kRight},
                   {"min–max µs", Align::kRight},
                   {"spread", Align::kRight},
                   {"compute %", Align::kRight},
                   {"memory %", Align::kRight},
                   {"occupancy %", Align::kRight},
                   {"bound", Align::kLeft},
                   {"kernel", Align::kLeft}});
  for (std::size_t i = begin; i < end; ++i) {
    const db::RangeKernel& k = kernels[i];
    const bool timed = k.median_ns.has_value();
    table.AddRow({std::to_string(k.place), timed ? Us(static_cast<double>(*k.median_ns)) : "-",
                  timed ? Us(static_cast<double>(k.min_ns)) + "–" + Us(static_cast<double>(k.max_ns)) : "-",
                  k.spread_pct ? Fixed(*k.spread_pct, 1) + " %" : "-", OptionalPct(k.compute_pct),
                  OptionalPct(k.memory_pct), OptionalPct(k.occupancy_pct),
                  std::string(db::BottleneckName(k.bottleneck)), ShortName(k.kernel)});
  }
  table.Print(out, "    ");
}

void PrintRanges(std::ostream& out, const db::ProfileStats& stats) {
  out << "Range replay (" << stats.range_count << (stats.more_ranges ? " first" : "")
      << " range(s): kernels in execution order, time over the passes; bound: memory/compute when its "
         "throughput is >= 60 % of peak, launch under 5 µs, else latency)\n";
  const std::vector<db::RangeKernel>& kernels = stats.range_kernels;
  for (std::size_t begin = 0; begin < kernels.size();) {
    const std::size_t end = db::RangeEnd(kernels, begin);
    PrintRangeTable(out, kernels, begin, end);
    begin = end;
  }
  out << "  (every range" << (stats.more_ranges ? ", and the ranges after these" : "")
      << ": gpuprof stats --csv=ranges)\n";
}

}  // namespace

void PrintReplayStats(std::ostream& out, const db::ProfileStats& stats) {
  if (stats.replay.empty() && stats.replay_declines.empty()) {
    NoData(out, "Kernel replay", stats.replay_absent);
    return;
  }
  if (!stats.replay.empty()) {
    out << "Kernel replay (" << stats.replay.size() << " of " << stats.replay_kernel_groups
        << " kernel/device groups)\n";
    TextTable table({{"dev", Align::kRight},
                     {"launches", Align::kRight},
                     {"passes", Align::kRight},
                     {"min µs", Align::kRight},
                     {"median µs", Align::kRight},
                     {"max µs", Align::kRight},
                     {"restored/pass", Align::kRight},
                     {"deterministic", Align::kLeft},
                     {"kernel", Align::kLeft}});
    for (const db::ReplayKernelStat& kernel : stats.replay) {
      const bool timed = kernel.passes > 0;
      std::string deterministic = kernel.nondeterministic_launches == 0
                                      ? "yes"
                                      : "no (" + std::to_string(kernel.nondeterministic_launches) + " of " +
                                            std::to_string(kernel.launches) + ")";
      table.AddRow({std::to_string(kernel.device), std::to_string(kernel.launches),
                    std::to_string(kernel.passes), timed ? Us(static_cast<double>(kernel.min_ns)) : "-",
                    timed ? Us(static_cast<double>(kernel.median_ns)) : "-",
                    timed ? Us(static_cast<double>(kernel.max_ns)) : "-",
                    timed ? FormatBytes(static_cast<std::uint64_t>(kernel.restored_bytes_per_pass)) : "-",
                    std::move(deterministic), ShortName(kernel.kernel)});
    }
    table.Print(out, "  ");
    if (!stats.replay_absent.empty()) out << "  (" << stats.replay_absent << ")\n";
  }
  if (!stats.replay_declines.empty()) {
    if (!stats.replay.empty()) out << "\n";
    out << "Launches not replayed (" << stats.replay_declines.size() << " of " << stats.replay_decline_groups
        << " kernel/device/reason groups)\n";
    TextTable table({{"dev", Align::kRight},
                     {"launches", Align::kRight},
                     {"reason", Align::kLeft},
                     {"kernel", Align::kLeft}});
    for (const db::ReplayDeclineStat& decline : stats.replay_declines) {
      table.AddRow({std::to_string(decline.device), std::to_string(decline.launches),
                    decline.reason.empty() ? "-" : ShortName(decline.reason), ShortName(decline.kernel)});
    }
    table.Print(out, "  ");
  }
  // Only when there are counters: a DB without them (older, or none asked) prints as before.
  if (!stats.replay_counters.empty()) {
    out << "\n";
    PrintSpeedOfLight(out, stats);
  }
  // Only when there are ranges: a DB without them (older, or kernel mode) prints as before.
  if (!stats.range_kernels.empty()) {
    out << "\n";
    PrintRanges(out, stats);
  }
}

void PrintStats(std::ostream& out, const db::ProfileStats& stats, const db::FindingsReport* findings) {
  out << "gpuprof stats: " << stats.path << "\n";
  std::vector<std::string> facts;
  if (stats.rank.has_value()) facts.push_back("rank " + IdOrNotSet(*stats.rank));
  if (stats.device.has_value()) facts.push_back("device " + IdOrNotSet(*stats.device));
  if (!stats.host_name.empty()) facts.push_back("host " + ShortName(stats.host_name));
  if (stats.session_start_ns.has_value() && stats.session_end_ns.has_value()) {
    const std::int64_t start = *stats.session_start_ns;
    const std::int64_t end = *stats.session_end_ns;
    std::int64_t span = 0;
    if (__builtin_sub_overflow(end, start, &span)) {
      facts.push_back("session impossible (SESSION_TIME_INFO; `gpuprof check` names it)");
    } else if (span < 0) {
      // Shown as "session 0.000 ms" before: say what is wrong instead.
      facts.push_back("session reversed (it ends " + Ms(-span) +
                      " ms before its start; `gpuprof check` names it)");
    } else {
      facts.push_back("session " + Ms(span) + " ms");
    }
  }
  if (!facts.empty()) {
    out << " ";
    for (std::size_t i = 0; i < facts.size(); ++i) out << (i == 0 ? " " : ", ") << facts[i];
    out << "\n";
  }
  for (const std::string& note : stats.data_notes) out << "  note: " << note << "\n";
  out << "\n";
  PrintLostRecords(out, stats.collected);
  if (findings != nullptr) {
    PrintFindings(out, *findings);
    out << "\n";
  }
  PrintOps(out, stats);
  out << "\n";
  PrintOpStacks(out, stats.collected);
  out << "\n";
  PrintModules(out, stats.collected);
  out << "\n";
  PrintKernels(out, stats);
  out << "\n";
  PrintMemory(out, stats);
  out << "\n";
  PrintSteps(out, stats);
  out << "\n";
  PrintGc(out, stats);
  out << "\n";
  PrintReplayStats(out, stats);
}

namespace {

// True when every DB has its own rank: then they are the ranks of one job. Otherwise (DBs without a
// rank, or two of one rank) they are separate profiles, told apart by their position.
bool AreRanksOfOneJob(const db::ClusterStats& cluster) {
  std::set<std::int64_t> seen;
  for (const db::RankStats& rank : cluster.ranks) {
    if (rank.rank < 0 || !seen.insert(rank.rank).second) return false;
  }
  return true;
}

// "rank 3", or "profile 2" (the position in the table) when the DBs are not ranks of one job.
std::string RankLabel(const db::ClusterStats& cluster, std::size_t index) {
  return AreRanksOfOneJob(cluster) ? "rank " + std::to_string(cluster.ranks[index].rank)
                                   : "profile " + std::to_string(index + 1);
}

// The label without its word, for the first column of the per-rank table.
std::string RankNumber(const db::ClusterStats& cluster, std::size_t index) {
  return AreRanksOfOneJob(cluster) ? std::to_string(cluster.ranks[index].rank) : std::to_string(index + 1);
}

}  // namespace

void PrintCluster(std::ostream& out, const std::string& path, const db::ClusterStats& cluster,
                  std::size_t unreadable, std::size_t top) {
  const bool one_job = AreRanksOfOneJob(cluster);
  const std::string unit = one_job ? "rank" : "profile";
  if (one_job) {
    out << "Cluster: " << cluster.ranks.size() << " ranks (" << path;
  } else {
    out << "Comparison: " << cluster.ranks.size() << " profiles (" << path
        << "; not the ranks of one job: some DBs have no rank or share one";
  }
  if (unreadable > 0) out << "; " << unreadable << " DB(s) could not be read, see the errors";
  out << ")\n";
  // The one line on warm-up: left out of the means, the slowest and the spread, or counted.
  if (!cluster.left_out.empty()) {
    out << "  note: " << cluster.warmup_note << "\n";
  } else if (!cluster.warmup_note.empty()) {
    out << "  note: the warm-up steps are counted (--include-warmup)\n";
  }
  out << "\n";

  out << "Per " << unit
      << ": step time split into compute, communication not overlapped with compute, and idle\n";
  TextTable ranks({{unit, Align::kRight},
                   {"device", Align::kRight},
                   {"steps", Align::kRight},
                   {"mean step ms", Align::kRight},
                   {"max step ms", Align::kRight},
                   {"compute %", Align::kRight},
                   {"comm not overlapped %", Align::kRight},
                   {"idle %", Align::kRight},
                   {"compute from", Align::kLeft}});
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < cluster.ranks.size(); ++i) {
    const db::RankStats& rank = cluster.ranks[i];
    const std::string label = RankLabel(cluster, i);
    const std::string device = rank.device.has_value() ? std::to_string(*rank.device) : "-";
    if (rank.steps.empty()) {
      ranks.AddRow({RankNumber(cluster, i), device, "0", "-", "-", "-", "-", "-", "-"});
      notes.push_back(label + ": " + rank.steps_absent + " in " + rank.path);
      continue;
    }
    const auto count = static_cast<std::int64_t>(rank.steps_counted);
    ranks.AddRow({RankNumber(cluster, i), device, std::to_string(count),
                  count > 0 ? Ms(rank.step_total_ns / count) : "-", count > 0 ? Ms(rank.step_max_ns) : "-",
                  Percent(rank.compute_ns, rank.step_total_ns),
                  Percent(rank.communication_not_overlapped_ns, rank.step_total_ns),
                  Percent(rank.idle_ns, rank.step_total_ns),
                  std::string(db::ComputeSourceName(rank.compute_source))});
    if (!rank.communication_absent.empty()) {
      notes.push_back(label + ": communication counted as 0 (" + rank.communication_absent + ")");
    }
  }
  ranks.Print(out, "  ");
  for (const std::string& note : notes) out << "  " << note << "\n";

  out << "\n";
  if (cluster.steps.empty()) {
    NoData(out, "Per step", "no " + unit + " has steps");
    return;
  }
  const std::size_t columns = std::min(cluster.ranks.size(), kMaxRankColumns);
  out << "Per step: duration in ms per " << unit << "; slowest " << unit
      << ", and spread = slowest - fastest";
  if (columns < cluster.ranks.size()) {
    out << " (columns for the first " << columns << " of " << cluster.ranks.size() << " " << unit
        << "s; slowest and spread cover all)";
  }
  out << "\n";
  std::vector<TextTable::Column> headers = {{"step", Align::kRight}};
  for (std::size_t i = 0; i < columns; ++i) {
    headers.push_back({RankLabel(cluster, i), Align::kRight});
  }
  headers.push_back({"slowest", Align::kRight});
  headers.push_back({"spread ms", Align::kRight});
  headers.push_back({"", Align::kLeft});
  TextTable steps(std::move(headers));
  const std::size_t shown = std::min(top, cluster.steps.size());
  for (std::size_t s = 0; s < shown; ++s) {
    const db::StepComparison& step = cluster.steps[s];
    std::vector<std::string> cells = {std::to_string(step.id)};
    for (std::size_t i = 0; i < columns; ++i) {
      cells.push_back(step.duration_ns[i].has_value() ? Ms(*step.duration_ns[i]) : "-");
    }
    cells.push_back(step.slowest.has_value() ? RankNumber(cluster, *step.slowest) : "-");
    cells.push_back(step.slowest.has_value() ? Ms(step.spread_ns) : "-");
    const bool left_out =
        std::find(cluster.left_out.begin(), cluster.left_out.end(), step.id) != cluster.left_out.end();
    cells.push_back(!step.warmup ? "" : left_out ? "warm-up, left out" : "warm-up, counted");
    steps.AddRow(std::move(cells));
  }
  steps.Print(out, "  ");
  if (cluster.steps.size() > shown) {
    out << "  ... " << (cluster.steps.size() - shown) << " more steps (--top shows more)\n";
  }
  if (cluster.slowest_rank.has_value()) {
    out << "  Over the " << cluster.steps_compared << " step(s) compared"
        << (cluster.left_out.empty() ? "" : " (warm-up left out)") << ": slowest most often "
        << RankLabel(cluster, *cluster.slowest_rank) << " (" << cluster.slowest_rank_steps << " of "
        << cluster.steps_compared << "), spread mean " << Ms(cluster.mean_spread_ns) << " ms, largest "
        << Ms(cluster.max_spread_ns) << " ms (step " << cluster.max_spread_step << ")\n";
  }
}

}  // namespace gpuprof::cli
