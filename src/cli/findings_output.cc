#include "cli/findings_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "base/utf8.h"
#include "cli/report.h"
#include "cli/stats_collected.h"

namespace gpuprof::cli {

double JsonMs(std::int64_t ns) { return static_cast<double>(ns / 1000) / 1e3; }

namespace {

// `value` with two decimals, as the closest double to that decimal (94.46, not 94.46000000000001).
double Hundredths(double value) { return std::round(value * 100.0) / 100.0; }

void PrintFinding(std::ostream& out, const db::Finding& f) {
  out << "  [" << db::FindingSeverityName(f.severity) << "] " << base::PrintableText(f.summary) << "\n";
  for (std::size_t i = 1; i < f.evidence.size() && i < 3; ++i) {
    out << "      also " << base::PrintableText(db::EvidenceText(f.evidence[i])) << "\n";
  }
  out << "      fix: " << f.rule->fix << "\n";
}

nlohmann::ordered_json FindingJson(const db::Finding& f, std::uint64_t steps) {
  nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
  for (const db::FindingEvidence& e : f.evidence) {
    nlohmann::ordered_json row = {{"name", base::PrintableText(e.name)},
                                  {"step", e.step},
                                  {"start_ns", e.start_ns},
                                  {"duration_ms", JsonMs(e.duration_ns)}};
    if (!e.context.empty()) row["context"] = base::PrintableText(e.context);
    evidence.push_back(std::move(row));
  }
  nlohmann::ordered_json breakdown = nlohmann::ordered_json::array();
  for (const db::FindingPart& part : f.parts) {
    breakdown.push_back({{"cause", part.name}, {"ms", JsonMs(part.ns)}});
  }
  return nlohmann::ordered_json(
      {{"id", f.rule->id},
       {"title", f.rule->title},
       {"severity", db::FindingSeverityName(f.severity)},
       {"measures", f.rule->measures},
       {"at_stake_ms", JsonMs(f.at_stake_ns)},
       {"at_stake_ms_per_step",
        JsonMs(f.at_stake_ns / static_cast<std::int64_t>(std::max<std::uint64_t>(1, steps)))},
       {"at_stake_percent", Hundredths(f.at_stake_percent)},
       {"threshold_percent", Hundredths(100 * f.rule->threshold)},
       {"occurrences", f.occurrences},
       {"evidence", std::move(evidence)},
       {"breakdown", std::move(breakdown)},
       {"evidence_sql", f.rule->evidence_sql},
       {"advice", f.rule->advice},
       {"fix", f.rule->fix}});
}

}  // namespace

void PrintClusterFindings(std::ostream& out, const db::ClusterFindings& across) {
  out << "\nAcross the ranks (" << across.steps_considered
      << (across.steps_considered == 1 ? " step" : " steps");
  if (across.findings.empty()) out << ": no rank holds the others back";
  out << ")\n";
  if (!across.note.empty()) out << "  note: " << across.note << "\n";
  for (const db::Finding& f : across.findings) PrintFinding(out, f);
  if (across.collectives.empty()) return;
  out << "  Collectives on two ranks or more: " << across.collectives_compared << "; the most skewed:\n";
  out << "    skew ms   transfer ms      size   bus GB/s  first -> last rank  step  name\n";
  for (const db::CollectiveStat& c : across.collectives) {
    char line[160];
    std::snprintf(line, sizeof line, "  %9.3f  %12.3f  %9s  %9.2f  %8lld -> %-8lld %5s  ",
                  static_cast<double>(c.skew_ns) / 1e6, static_cast<double>(c.transfer_ns) / 1e6,
                  c.bytes > 0 ? FormatBytes(static_cast<std::uint64_t>(c.bytes)).c_str() : "-",
                  c.bus_gb_per_s, static_cast<long long>(c.first_rank), static_cast<long long>(c.last_rank),
                  c.step >= 0 ? std::to_string(c.step).c_str() : "-");
    out << line << base::PrintableText(c.name) << "\n";
  }
}

nlohmann::ordered_json ClusterFindingsJson(const db::ClusterFindings& across) {
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const db::Finding& f : across.findings) findings.push_back(FindingJson(f, across.steps_considered));
  nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
  for (const db::CollectiveStat& c : across.collectives) {
    collectives.push_back({{"name", base::PrintableText(c.name)},
                           {"ranks", c.ranks},
                           {"step", c.step},
                           {"skew_ms", JsonMs(c.skew_ns)},
                           {"transfer_ms", JsonMs(c.transfer_ns)},
                           {"bytes", c.bytes},
                           {"bus_gb_per_s", Hundredths(c.bus_gb_per_s)},
                           {"first_rank", c.first_rank},
                           {"last_rank", c.last_rank}});
  }
  nlohmann::ordered_json out = {{"steps_considered", across.steps_considered},
                                {"considered_ms", JsonMs(across.considered_ns)},
                                {"findings", std::move(findings)},
                                {"collectives_compared", across.collectives_compared},
                                {"collectives", std::move(collectives)}};
  if (!across.note.empty()) out["note"] = across.note;
  return out;
}

void PrintFindings(std::ostream& out, const db::FindingsReport& report, std::size_t limit) {
  if (!report.absent.empty()) {
    out << "Findings: none computed (" << report.absent << ")\n";
    return;
  }
  out << "Findings (" << report.steps_considered
      << (report.whole_run               ? " run without steps"
          : report.steps_considered == 1 ? " step"
                                         : " steps")
      << ", " << FormatMillis(report.considered_ns) << " ms)";
  if (report.findings.empty()) out << ": nothing above its threshold";
  out << "\n";
  if (!report.note.empty()) out << "  note: " << report.note << "\n";
  std::size_t shown = 0;
  for (const db::Finding& f : report.findings) {
    if (limit > 0 && shown == limit) {
      out << "  ... " << report.findings.size() - shown << " more: gpuprof stats PATH\n";
      break;
    }
    ++shown;
    PrintFinding(out, f);
  }
}

nlohmann::ordered_json FindingsJson(const db::FindingsReport& report) {
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const db::Finding& f : report.findings) findings.push_back(FindingJson(f, report.steps_considered));
  nlohmann::ordered_json out = {{"steps_considered", report.steps_considered},
                                {"considered_ms", JsonMs(report.considered_ns)},
                                {"whole_run", report.whole_run},
                                {"warmup_steps", report.warmup_steps},
                                {"warmup_ms", JsonMs(report.warmup_ns)},
                                {"replay_steps", report.replay_steps},
                                {"findings", std::move(findings)}};
  if (!report.note.empty()) out["note"] = report.note;
  if (!report.absent.empty()) out["absent"] = report.absent;
  return out;
}

nlohmann::ordered_json OpsJson(const db::ProfileStats& stats) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const db::OpStat& op : stats.top_ops_by_total) {
    ops.push_back({{"name", base::PrintableText(op.name)},
                   {"calls", op.totals.calls},
                   {"total_ms", JsonMs(op.totals.total_ns)},
                   {"self_ms", JsonMs(op.totals.self_ns)}});
  }
  return ops;
}

nlohmann::ordered_json KernelsJson(const db::ProfileStats& stats) {
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const db::KernelStat& k : stats.top_kernels) {
    kernels.push_back(
        {{"name", base::PrintableText(k.name)}, {"calls", k.calls}, {"total_ms", JsonMs(k.total_ns)}});
  }
  return kernels;
}

nlohmann::ordered_json StepsJson(const db::ProfileStats& stats) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const db::StepStat& step : stats.steps) {
    steps.push_back(
        {{"id", step.id}, {"start_ns", step.start_ns}, {"duration_ms", JsonMs(step.end_ns - step.start_ns)}});
  }
  return steps;
}

nlohmann::ordered_json StatsJson(const db::ProfileStats& stats, const db::FindingsReport& findings) {
  nlohmann::ordered_json out = {{"path", stats.path},
                                {"op_calls", stats.op_calls},
                                {"kernel_calls", stats.kernel_calls},
                                {"kernel_ms", JsonMs(stats.kernel_total_ns)},
                                {"step_count", stats.step_count},
                                {"step_total_ms", JsonMs(stats.step_total_ns)},
                                {"gc_count", stats.gc_count},
                                {"gc_total_ms", JsonMs(stats.gc_total_ns)},
                                {"top_ops", OpsJson(stats)},
                                {"top_kernels", KernelsJson(stats)},
                                {"steps", StepsJson(stats)},
                                {"findings", FindingsJson(findings)}};
  out["rank"] =
      stats.rank.has_value() ? nlohmann::ordered_json(*stats.rank) : nlohmann::ordered_json(nullptr);
  AddCollectedJson(&out, stats.collected);
  return out;
}

}  // namespace gpuprof::cli
