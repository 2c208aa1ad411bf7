#include "cli/db_commands.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "base/interrupt_cleanup.h"
#include "base/utf8.h"
#include "cli/cli11.h"
#include "cli/default_output.h"
#include "cli/exit_codes.h"
#include "cli/help_formatter.h"
#include "cli/html_report.h"
#include "cli/live_line.h"
#include "cli/report.h"
#include "db/check.h"
#include "db/cluster_stats.h"
#include "db/output_file.h"
#include "db/output_layout.h"
#include "db/perfetto_export.h"
#include "db/profile_reader.h"
#include "db/report_data.h"
#include "db/stats.h"

namespace gpuprof::cli {
namespace {

constexpr std::size_t kMaxTop = 100000;
// Kernel names can be pages of template arguments; the table shows this many characters.
constexpr std::size_t kMaxNameChars = 120;
// The per-step table of the cluster summary has one duration column per rank up to this many.
constexpr std::size_t kMaxRankColumns = 8;

using Align = TextTable::Align;

void PrintError(std::ostream& err, const Status& status) {
  err << "gpuprof: error: " << status.message() << "\n";
}

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
std::string ShortName(const std::string& raw) {
  std::string name = base::PrintableText(raw);
  if (name.size() <= kMaxNameChars) return name;
  std::size_t cut = kMaxNameChars;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0u) == 0x80u) --cut;
  return name.substr(0, cut) + "...";
}

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
constexpr std::string_view kDurationMetric = "gpu__time_duration.sum";
constexpr std::size_t kSolLabelWidth = 25;

// Nanoseconds per `unit` for the time units metrics use; 0 for any other unit.
double NanosecondsPer(std::string_view unit) {
  // ncu's short words and CUPTI's Profiler Host API's long ones (what the H200 run stored).
  if (unit == "nsecond" || unit == "nanosecond") return 1;
  if (unit == "usecond" || unit == "microsecond") return 1e3;
  if (unit == "msecond" || unit == "millisecond") return 1e6;
  if (unit == "second") return 1e9;
  return 0;
}

// One value in its unit: times in µs, bytes in KiB/MiB/..., percentages with one decimal.
std::string MetricText(double value, const std::string& unit) {
  if (const double ns = NanosecondsPer(unit); ns > 0) return Us(value * ns) + " µs";
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
    if (const db::ReplayMetricStat* duration = group.Find(kDurationMetric); duration != nullptr) {
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
}

namespace {

void PrintStats(std::ostream& out, const db::ProfileStats& stats) {
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
  PrintOps(out, stats);
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

// The cluster summary `stats` prints first for two or more DBs (db/cluster_stats.h).
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
  out << ")\n\n";

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
    const auto count = static_cast<std::int64_t>(rank.steps.size());
    ranks.AddRow({RankNumber(cluster, i), device, std::to_string(count), Ms(rank.step_total_ns / count),
                  Ms(rank.step_max_ns), Percent(rank.compute_ns, rank.step_total_ns),
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
    steps.AddRow(std::move(cells));
  }
  steps.Print(out, "  ");
  if (cluster.steps.size() > shown) {
    out << "  ... " << (cluster.steps.size() - shown) << " more steps (--top shows more)\n";
  }
}

// Resolves PATH, printing the error or the partial-DB note; nullopt on error.
// The live line's context for the i-th of n DBs: "" for a single DB.
std::string DbOfN(std::size_t i, std::size_t n) {
  return n > 1 ? "DB " + std::to_string(i + 1) + " of " + std::to_string(n) : std::string();
}

std::optional<db::ResolvedProfiles> Resolve(const std::string& path, std::ostream& err) {
  StatusOr<db::ResolvedProfiles> resolved = db::ResolveProfilePath(path);
  if (!resolved.ok()) {
    PrintError(err, resolved.status());
    return std::nullopt;
  }
  std::string note = db::PartialDbNote(*resolved);
  if (!note.empty()) err << "gpuprof: note: " << note << "\n";
  std::string duplicates = db::DuplicateRankNote(*resolved);
  if (!duplicates.empty()) err << "gpuprof: warning: " << duplicates << "\n";
  return std::move(resolved).value();
}

int RunStats(const std::string& path, std::size_t top, std::string_view progress, std::ostream& out,
             std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  int exit_code = kExitOk;
  // DBs that do not open are reported once, here, and left out of the cluster summary and of the
  // per-DB sections.
  std::vector<db::ProfileDbFile> readable;
  for (const db::ProfileDbFile& file : resolved->dbs) {
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    readable.push_back(file);
  }
  bool first = true;
  if (resolved->dbs.size() >= 2 && readable.size() >= 2) {
    StatusOr<db::ClusterStats> cluster = [&] {
      WorkProgress line(progress, "gpuprof stats", "cluster summary");
      return db::ComputeClusterStats(readable, line.progress());
    }();
    if (cluster.ok()) {
      PrintCluster(out, path, *cluster, resolved->dbs.size() - readable.size(), top);
      first = false;
    } else {
      PrintError(err, cluster.status());
      exit_code = kExitFailure;
    }
  }
  for (std::size_t i = 0; i < readable.size(); ++i) {
    const db::ProfileDbFile& file = readable[i];
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    StatusOr<db::ProfileStats> stats = [&] {
      WorkProgress line(progress, "gpuprof stats", DbOfN(i, readable.size()));
      return db::ComputeStats(**reader, db::StatsOptions{top, line.progress()});
    }();
    if (!stats.ok()) {
      PrintError(err, stats.status());
      exit_code = kExitFailure;
      continue;
    }
    if (!first) out << "\n" << std::string(100, '=') << "\n\n";
    first = false;
    PrintStats(out, *stats);
  }
  return exit_code;
}

// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
void AppendCsvField(std::string* line, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    line->append(field);
    return;
  }
  line->push_back('"');
  for (char c : field) {
    if (c == '"') line->push_back('"');
    line->push_back(c);
  }
  line->push_back('"');
}

// The shortest text that reads back as the same double.
std::string ExactNumber(double value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

constexpr std::string_view kMetricCsvHeader = "rank,kernelId,kernel,launchIndex,metric,unit,value,passes";

}  // namespace

// `stats --csv`: every GPUPROF_REPLAY_METRIC row of every DB under PATH, one header.
int RunStatsCsv(const std::string& path, std::ostream& out, std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  int exit_code = kExitOk;
  out << kMetricCsvHeader << "\n";
  for (const db::ProfileDbFile& file : resolved->dbs) {
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    std::string line;
    std::string absent;
    Status status = db::ForEachReplayMetric(
        **reader,
        [&](const db::ReplayMetricRow& row) {
          std::optional<std::int64_t> rank = row.rank;
          if (!rank.has_value() || *rank < 0) rank = file.rank;
          line.clear();
          if (rank.has_value()) line += std::to_string(*rank);
          line += "," + std::to_string(row.kernel_id) + ",";
          AppendCsvField(&line, row.kernel);
          line += "," + std::to_string(row.launch_index) + ",";
          AppendCsvField(&line, row.metric);
          line += ",";
          AppendCsvField(&line, row.unit);
          line += ",";
          if (row.value.has_value()) line += ExactNumber(*row.value);
          line += "," + std::to_string(row.passes) + "\n";
          out << line;
        },
        &absent);
    if (!status.ok()) {
      PrintError(err, status);
      exit_code = kExitFailure;
      continue;
    }
    if (!absent.empty()) err << "gpuprof: note: " << file.path << ": " << absent << "; no counter values\n";
  }
  return exit_code;
}

namespace {

int RunExport(const std::string& path, const std::string& format, const std::string& requested_output,
              bool force, std::string_view progress, std::ostream& out, std::ostream& err) {
  std::vector<std::string_view> formats = db::ExportFormats();
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    std::string known;
    for (std::string_view name : formats) known += (known.empty() ? "" : ", ") + std::string(name);
    err << "gpuprof: error: unknown export format '" << format << "'; formats: " << known << "\n"
        << "run 'gpuprof export --help' for the accepted flags and values\n";
    return kExitUsage;
  }
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  // Without -o: beside the profile, as report's page; a file there that an earlier export did not
  // write is the user's, and stays.
  const std::string output =
      requested_output.empty() ? DefaultOutputPath(path, kDefaultTraceName) : requested_output;
  if (requested_output.empty() && !force) {
    if (Status replaceable = CheckDefaultOutputReplaceable(output, DefaultOutput::kTrace);
        !replaceable.ok()) {
      PrintError(err, replaceable);
      return kExitFailure;
    }
  }
  base::InstallInterruptCleanup();  // Ctrl-C or kill leaves no full-size temporary file
  StatusOr<db::ExportSummary> summary = [&] {
    WorkProgress line(progress, "gpuprof export");
    return db::ExportPerfettoTrace(resolved->dbs, output, line.progress());
  }();
  if (!summary.ok()) {
    PrintError(err, summary.status());
    return kExitFailure;
  }
  for (const std::string& note : summary->notes) err << "gpuprof: note: " << note << "\n";
  // With -o - (or /dev/stdout) the trace is standard output: the summary goes to stderr, so the
  // JSON stays valid.
  const bool to_stdout = db::OutputFile::IsStandardOutput(output);
  std::ostream& report = to_stdout ? err : out;
  std::error_code ec;
  const std::string shown = output == "-" ? std::string("standard output")
                            : to_stdout   ? output
                                          : std::filesystem::absolute(output, ec).lexically_normal().string();
  report << "wrote " << shown << " (" << FormatBytes(summary->bytes) << "): " << summary->dbs << " DB(s), "
         << summary->slices << " slices, " << summary->flows << " flows, " << summary->counters
         << " counter samples, " << summary->instants << " instants, " << summary->async_ranges
         << " async ranges\n"
         << "open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing\n";
  return kExitOk;
}

int RunReport(const std::string& path, const std::string& requested_output, bool force, std::size_t top,
              std::string_view progress, std::ostream& out, std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  const std::string output =
      requested_output.empty() ? DefaultOutputPath(path, kDefaultReportName) : requested_output;
  if (requested_output.empty() && !force) {
    if (Status replaceable = CheckDefaultOutputReplaceable(output, DefaultOutput::kReport);
        !replaceable.ok()) {
      PrintError(err, replaceable);
      return kExitFailure;
    }
  }
  // What -o names is checked before any DB is read (a directory, a dangling link).
  if (Status usable = db::OutputFile::ClassifyOutput(output, "report.html").status(); !usable.ok()) {
    PrintError(err, usable);
    return kExitFailure;
  }
  int exit_code = kExitOk;
  HtmlReportInput input;
  input.path = path;
  std::vector<db::ProfileDbFile> readable;
  for (std::size_t i = 0; i < resolved->dbs.size(); ++i) {
    StatusOr<db::ReportDb> db = [&] {
      WorkProgress line(progress, "gpuprof report", DbOfN(i, resolved->dbs.size()));
      db::ReportOptions options;
      options.top = top;
      options.progress = line.progress();
      return db::ReadReportDb(resolved->dbs[i], options);
    }();
    if (!db.ok()) {
      PrintError(err, db.status());
      exit_code = kExitFailure;
      continue;
    }
    input.dbs.push_back(std::move(db).value());
    readable.push_back(resolved->dbs[i]);
  }
  if (input.dbs.empty()) return kExitFailure;
  std::optional<db::ClusterStats> cluster;
  if (readable.size() >= 2) {
    StatusOr<db::ClusterStats> computed = [&] {
      WorkProgress line(progress, "gpuprof report", "cluster summary");
      return db::ComputeClusterStats(readable, line.progress());
    }();
    if (computed.ok()) {
      cluster = std::move(computed).value();
      input.cluster = &*cluster;
    } else {
      PrintError(err, computed.status());
      exit_code = kExitFailure;
    }
  }
  const std::string page = RenderHtmlReport(input);
  base::InstallInterruptCleanup();
  StatusOr<std::unique_ptr<db::OutputFile>> file = db::OutputFile::Create(output, "report.html");
  StatusOr<std::uint64_t> bytes = file.ok() ? [&]() -> StatusOr<std::uint64_t> {
    (*file)->buffer()->append(page);
    return (*file)->Commit();
  }()
      : StatusOr<std::uint64_t>(file.status());
  if (!bytes.ok()) {
    PrintError(err, bytes.status());
    return kExitFailure;
  }
  std::ostream& report = db::OutputFile::IsStandardOutput(output) ? err : out;
  std::error_code ec;
  const std::string shown = output == "-" ? std::string("standard output")
                                          : std::filesystem::absolute(output, ec).lexically_normal().string();
  report << "wrote " << shown << " (" << FormatBytes(*bytes) << "): " << input.dbs.size()
         << " profile DB(s); it opens offline in any browser" << (output == "-" ? "" : ": file://" + shown)
         << "\n";
  return exit_code;
}

// The analysis.db beside a profile DB, if there is one (a profile copied without it, or written by
// another tool, has none: a note, not a problem). False when it is damaged or has problems.
bool CheckAnalysisBeside(const std::string& db_path, const db::ProfileReader& profile, std::ostream& out,
                         std::ostream& err, std::size_t* problems) {
  const std::string path = (std::filesystem::path(db_path).parent_path() / db::kAnalysisDbName).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    const bool partial = std::filesystem::exists(path + db::kPartialSuffix, ec);
    err << "gpuprof: note: no " << db::kAnalysisDbName << " beside " << db_path
        << (partial ? " (only its .partial: writing it failed; the run's log says why)" : "") << "\n";
    return !partial;
  }
  StatusOr<std::unique_ptr<db::ProfileReader>> analysis =
      db::ProfileReader::Open(path, db::DbKind::kAnalysis);
  StatusOr<db::CheckReport> report =
      analysis.ok() ? db::CheckAnalysisDb(**analysis, profile) : StatusOr<db::CheckReport>(analysis.status());
  if (!report.ok()) {
    PrintError(err, report.status());
    return false;
  }
  for (const db::CheckProblem& problem : report->problems) out << db::FormatProblem(path, problem) << "\n";
  if (!report->problems.empty()) {
    *problems += report->problems.size();
    return false;
  }
  out << "ok: " << path << " (" << report->tables << " tables, " << report->rows << " rows)\n";
  return true;
}

int RunCheck(const std::string& path, std::string_view progress, std::ostream& out, std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  int exit_code = kExitOk;
  std::size_t problems = 0;
  for (std::size_t i = 0; i < resolved->dbs.size(); ++i) {
    const db::ProfileDbFile& file = resolved->dbs[i];
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    StatusOr<db::CheckReport> report = [&] {
      WorkProgress line(progress, "gpuprof check", DbOfN(i, resolved->dbs.size()));
      return db::CheckProfileDb(**reader, line.progress());
    }();
    if (!report.ok()) {
      PrintError(err, report.status());
      exit_code = kExitFailure;
      continue;
    }
    for (const db::CheckProblem& problem : report->problems)
      out << db::FormatProblem(file.path, problem) << "\n";
    if (report->problems.empty()) {
      out << "ok: " << file.path << " (" << report->tables << " tables, " << report->rows << " rows)\n";
    } else {
      problems += report->problems.size();
      exit_code = kExitFailure;
    }
    if (!CheckAnalysisBeside(file.path, **reader, out, err, &problems)) exit_code = kExitFailure;
  }
  if (problems > 0) err << "gpuprof: check found " << problems << " problem(s)\n";
  return exit_code;
}

}  // namespace

DbCommands::DbCommands(CLI::App& app) {
  const std::string path_help =
      "A profile: an ascend_pytorch_profiler*.db, an *_ascend_pt run directory, or a directory holding run "
      "directories (one DB per rank)";
  stats_ = app.add_subcommand(
      "stats",
      "Summarize a profile: top ops (total and self time), top kernels, peak memory, steps, GC, replay "
      "(with a Speed-of-Light block per kernel when hardware counters were collected). "
      "For a directory of rank DBs, first a cluster summary: per rank the step times and the split of "
      "step time into compute, communication not overlapped with compute, and idle; per step the "
      "slowest rank and the spread");
  stats_->add_option("PATH", stats_path_, path_help)->required();
  stats_settings_ = std::make_unique<SettingOptions>(*stats_, base::kDbCommand);  // --progress
  CLI::Option* top = stats_->add_option("--top", top_, "Rows per table")
                         ->check(CLI::Range(std::size_t{1}, kMaxTop))
                         ->capture_default_str();
  stats_
      ->add_flag("--csv", csv_,
                 "Instead of the summary, print the hardware-counter values of the replayed launches as CSV, "
                 "one row per launch and metric: rank,kernelId,kernel,launchIndex,metric,unit,value,passes "
                 "(passes 0: taken from the launch, no counter pass); every row, so not with --top")
      ->excludes(top);

  export_ = app.add_subcommand(
      "export",
      "Convert a profile to a trace file: --format perfetto writes Chrome trace-event JSON for "
      "ui.perfetto.dev (one process per rank)");
  export_->add_option("PATH", export_path_, path_help)->required();
  export_settings_ = std::make_unique<SettingOptions>(*export_, base::kDbCommand);
  export_->add_option("--format", format_, "Output format: perfetto")
      ->type_name("FORMAT")
      ->capture_default_str();
  export_
      ->add_option(
          "-o,--output", output_,
          "Output file (default: gpuprof_trace.json in the profile's run directory, or in the directory "
          "given; a file of that name that gpuprof export did not write is kept unless --force): a new or "
          "regular file is written complete or not at all (renamed into place), a device or FIFO is written "
          "into, '-' is standard output, a symbolic link is followed")
      ->type_name("FILE");
  export_->add_flag(
      "--force", force_,
      "Without -o: replace the default gpuprof_trace.json even when gpuprof export did not write it");

  if (auto help = std::dynamic_pointer_cast<HelpFormatter>(app.get_formatter())) {
    help->SetUsage(export_, "Usage: gpuprof export [--format perfetto] PATH [-o FILE] [--force]");
  }

  report_ = app.add_subcommand(
      "report",
      "Write one self-contained HTML page of a profile (it opens offline in any browser): overview and what "
      "to look at first, the step breakdown, ops and kernels, memory, kernel replay and, for rank DBs, the "
      "cluster");
  report_->add_option("PATH", report_path_, path_help)->required();
  report_
      ->add_option("-o,--output", report_output_,
                   "Output file (default: gpuprof_report.html in the profile's run directory, or in the "
                   "directory given; a file of that name that gpuprof report did not write is kept unless "
                   "--force); written as export writes, '-' is standard output")
      ->type_name("FILE");
  report_->add_flag(
      "--force", report_force_,
      "Without -o: replace the default gpuprof_report.html even when gpuprof report did not write it");
  report_->add_option("--top", report_top_, "Rows of the op and kernel tables")
      ->check(CLI::Range(std::size_t{1}, kMaxTop))
      ->capture_default_str();
  report_settings_ = std::make_unique<SettingOptions>(*report_, base::kDbCommand);

  check_ = app.add_subcommand(
      "check", "Check a profile's schema and joins against the format (one line per problem; exit 1 if any)");
  check_->add_option("PATH", check_path_, path_help)->required();
  check_settings_ = std::make_unique<SettingOptions>(*check_, base::kDbCommand);
}

DbCommands::~DbCommands() = default;

bool DbCommands::parsed() const {
  return stats_->parsed() || export_->parsed() || report_->parsed() || check_->parsed();
}

std::string DbCommands::HelpCommand() const {
  if (stats_->parsed()) return "gpuprof stats --help";
  if (export_->parsed()) return "gpuprof export --help";
  if (report_->parsed()) return "gpuprof report --help";
  if (check_->parsed()) return "gpuprof check --help";
  return "";
}

int DbCommands::Run(std::ostream& out, std::ostream& err) const {
  const base::SettingId progress = base::SettingId::kProgress;
  if (stats_->parsed()) {
    return csv_ ? RunStatsCsv(stats_path_, out, err)
                : RunStats(stats_path_, top_, stats_settings_->value(progress), out, err);
  }
  if (export_->parsed())
    return RunExport(export_path_, format_, output_, force_, export_settings_->value(progress), out, err);
  if (report_->parsed()) {
    return RunReport(report_path_, report_output_, report_force_, report_top_,
                     report_settings_->value(progress), out, err);
  }
  if (check_->parsed()) return RunCheck(check_path_, check_settings_->value(progress), out, err);
  return kExitUsage;
}

}  // namespace gpuprof::cli
