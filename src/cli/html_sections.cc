// The page's sections: overview, steps, timeline, ops and kernels, memory, replay and cluster, made
// of the sortable table (html_table.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/html_table.h"
#include "cli/page_names.h"
#include "cli/report.h"

namespace gpuprof::cli::html {
namespace {

// The step table lists at most this many steps: the first half by start and the slowest of the
// rest (100k steps made a 38.8 MB table).
constexpr std::size_t kMaxStepRows = 100;

struct Suggestion {
  double share;  // of the time it is part of, for ordering
  std::string text;
};

std::vector<Suggestion> Suggestions(const db::ReportDb& db) {
  std::vector<Suggestion> out;
  // Idle and communication are findings (db/findings.h); these are where the time goes.
  if (!db.stats.top_kernels.empty() && db.stats.kernel_total_ns > 0) {
    const db::KernelStat& k = db.stats.top_kernels.front();
    const double share = static_cast<double>(k.total_ns) / static_cast<double>(db.stats.kernel_total_ns);
    out.push_back({share, "The top kernel, " + ShownName(k.name) + ", takes " +
                              Percent(k.total_ns, db.stats.kernel_total_ns) +
                              "% of the kernel time: replay it for its counters (gpuprof replay -k '" +
                              ShownName(k.name) + "' --section SpeedOfLight)."});
  }
  // The step ops' self time is the step's host time outside every op: not an op to look at.
  auto op_it = std::find_if(db.stats.top_ops_by_self.begin(), db.stats.top_ops_by_self.end(),
                            [](const db::OpStat& op) { return op.name.rfind("ProfilerStep#", 0) != 0; });
  if (op_it != db.stats.top_ops_by_self.end() && db.stats.op_self_sum_ns > 0) {
    const db::OpStat& op = *op_it;
    const double share =
        static_cast<double>(op.totals.self_ns) / static_cast<double>(db.stats.op_self_sum_ns);
    out.push_back({share, "The op with the most self time on the host is " + ShownName(op.name) + " (" +
                              Percent(op.totals.self_ns, db.stats.op_self_sum_ns) +
                              "% of the time covered by ops)."});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  return out;
}

}  // namespace

// The findings as a list: each with its severity, numbers, fix, and its evidence and SQL folded.
std::string FindingList(const std::string& who, const std::vector<db::Finding>& findings) {
  std::string out = "<ol class=\"findings\">";
  for (const db::Finding& finding : findings) {
    const std::string_view severity = db::FindingSeverityName(finding.severity);
    out += "<li class=\"finding " + std::string(severity) + "\" data-finding=\"" +
           std::string(finding.rule->id) + "\" data-at-stake-ms-per-step=\"" +
           FormatFixed(finding.at_stake_ms_per_step, 3) + "\"><b>" + std::string(severity) + "</b> " +
           HtmlEscape(who + finding.summary) +
           "<br><span class=\"fix\">Fix: " + HtmlEscape(std::string(finding.rule->fix)) + "</span>";
    if (finding.evidence.size() > 1) {
      out += "<details><summary>Evidence (" + std::to_string(finding.occurrences) + " in all; the longest " +
             std::to_string(finding.evidence.size()) + ")</summary><ul>";
      for (const db::FindingEvidence& e : finding.evidence)
        out += "<li>" + HtmlEscape(db::EvidenceText(e)) + "</li>";
      out += "</ul><p class=\"note\">SQL: <code>" + HtmlEscape(std::string(finding.rule->evidence_sql)) +
             "</code></p></details>";
    }
    out += "</li>";
  }
  return out + "</ol>";
}

std::string DbLabel(const db::ReportDb& db) {
  if (db.stats.rank.has_value() && *db.stats.rank >= 0) return "rank " + std::to_string(*db.stats.rank);
  if (db.split.rank >= 0) return "rank " + std::to_string(db.split.rank);
  return "rank not set";
}

std::string Overview(const HtmlReportInput& input) {
  std::string out = "<section id=\"overview\"><h2>Overview</h2>";
  HtmlTable runs("runs", {{"profile", false},
                          {"host", false},
                          {"device", false},
                          {"session ms", true},
                          {"steps", true},
                          {"avg step ms", true},
                          {"op calls", true},
                          {"kernel launches", true},
                          {"kernel ms", true},
                          {"peak allocated", false}});
  for (const db::ReportDb& db : input.dbs) {
    const db::ProfileStats& s = db.stats;
    const bool reversed = s.session_start_ns && s.session_end_ns && *s.session_end_ns < *s.session_start_ns;
    const std::int64_t session =
        s.session_start_ns && s.session_end_ns && !reversed ? *s.session_end_ns - *s.session_start_ns : 0;
    const std::int64_t avg = s.step_count > 0 ? s.step_total_ns / static_cast<std::int64_t>(s.step_count) : 0;
    std::int64_t peak = 0;
    for (const db::MemoryPeak& m : s.memory) peak = std::max(peak, m.peak_allocated);
    runs.AddRow(
        {T(DbLabel(db)), T(s.host_name.empty() ? "-" : s.host_name),
         T(s.device.has_value() && *s.device >= 0 ? std::to_string(*s.device) : "not set"),
         N(reversed ? "reversed (ends before it starts)" : Ms(session), static_cast<double>(session)),
         N(std::to_string(s.step_count), static_cast<double>(s.step_count), "step-count"),
         N(s.step_count > 0 ? Ms(avg) : "-", static_cast<double>(avg), "step-avg-ms"),
         N(std::to_string(s.op_calls), static_cast<double>(s.op_calls), "op-calls"),
         N(std::to_string(s.kernel_calls), static_cast<double>(s.kernel_calls), "kernel-launches"),
         N(Ms(s.kernel_total_ns), static_cast<double>(s.kernel_total_ns), "kernel-ms"),
         T(s.memory.empty() ? "-" : FormatBytes(static_cast<std::uint64_t>(peak)), "peak-allocated")});
  }
  out += runs.Html();
  // What the figures leave out (stats' notes: impossible spans and memory figures).
  for (const db::ReportDb& db : input.dbs) {
    for (const std::string& note : db.stats.data_notes) {
      out +=
          "<p class=\"note\">" + HtmlEscape((input.dbs.size() > 1 ? DbLabel(db) + ": " : "") + note) + "</p>";
    }
  }
  // The findings (db/findings.h): why the steps are slow, each with its numbers, evidence and fix.
  out += "<h3>Findings</h3>";
  for (const db::ReportDb& db : input.dbs) {
    const db::FindingsReport& f = db.findings;
    const std::string who = input.dbs.size() > 1 ? DbLabel(db) + ": " : "";
    if (!f.absent.empty()) {
      out += "<p class=\"note\">" + HtmlEscape(who + "no findings (" + f.absent + ")") + "</p>";
      continue;
    }
    if (!f.note.empty()) out += "<p class=\"note\">" + HtmlEscape(who + f.note) + "</p>";
    if (f.findings.empty()) {
      out += "<p>" +
             HtmlEscape(who + "nothing above its threshold over " + std::to_string(f.steps_considered) +
                        (f.whole_run ? " run" : " steps")) +
             "</p>";
      continue;
    }
    out += FindingList(who, f.findings);
  }
  if (input.across != nullptr) {
    const db::ClusterFindings& across = *input.across;
    out += "<h4>Across the ranks</h4>";
    if (!across.note.empty()) out += "<p class=\"note\">" + HtmlEscape(across.note) + "</p>";
    out += across.findings.empty() ? "<p>No rank holds the others back over " +
                                         std::to_string(across.steps_considered) + " steps.</p>"
                                   : FindingList("", across.findings);
  }
  out += "<h3>Where the time goes</h3><ol class=\"suggestions\">";
  std::vector<Suggestion> all;
  for (const db::ReportDb& db : input.dbs) {
    for (Suggestion& s : Suggestions(db)) {
      if (input.dbs.size() > 1) s.text = DbLabel(db) + ": " + s.text;
      all.push_back(std::move(s));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.share > b.share; });
  if (all.size() > 6) all.resize(6);
  for (const Suggestion& s : all) out += "<li>" + HtmlEscape(s.text) + "</li>";
  if (all.empty()) out += "<li>No kernel or op time to speak of.</li>";
  out += "</ol>";
  for (const db::ReportDb& db : input.dbs) {
    if (db.config_json.empty()) continue;
    out += "<details><summary>Profiler settings of " + HtmlEscape(DbLabel(db)) + "</summary><pre>" +
           HtmlEscape(db.config_json) + "</pre></details>";
  }
  out += "<p class=\"note\">Every event, on a timeline: <code>gpuprof export --format perfetto " +
         HtmlEscape(input.path) +
         " -o trace.json</code>, then open trace.json in https://ui.perfetto.dev.</p>";
  return out + "</section>";
}

std::string Steps(const HtmlReportInput& input) {
  std::string out =
      "<section id=\"steps\"><h2>Step breakdown</h2>"
      "<p class=\"note\">Each step split as msprof-analyze's cluster analysis splits it: compute (kernels, "
      "or host ops in a run without kernels), communication not overlapped with compute, and idle. A step "
      "more than half idle is host-bound. memcpy/memset: the time copies and memsets ran on the device "
      "within the step (a part of the others, not added to them).</p>";
  const StepScale scale = SharedStepScale(input.dbs);
  for (const db::ReportDb& db : input.dbs) {
    const db::RankStats& split = db.split;
    out += "<h3>" + HtmlEscape(DbLabel(db)) + " (compute from " +
           HtmlEscape(db::ComputeSourceName(split.compute_source)) + ")</h3>";
    if (split.steps.empty()) {
      out += Absent("Steps", split.steps_absent);
      continue;
    }
    if (split.whole_run)
      out += "<p class=\"note\">" + HtmlEscape(split.steps_absent) + ": the whole run as one.</p>";
    out += StepBars(split, scale, db.findings.warmup_steps);
    HtmlTable table("steps-" + std::to_string(&db - input.dbs.data()),
                    {{"step", true},
                     {"duration ms", true},
                     {"compute ms", true},
                     {"communication not overlapped ms", true},
                     {"idle ms", true},
                     {"idle %", true},
                     {"memcpy/memset ms", true},
                     {"", false}});
    std::vector<std::size_t> listed;
    for (std::size_t i = 0; i < split.steps.size(); ++i) listed.push_back(i);
    if (listed.size() > kMaxStepRows) {
      // The first half by start, then the slowest of the others; shown by start.
      const auto first = static_cast<std::ptrdiff_t>(kMaxStepRows / 2);
      std::stable_sort(listed.begin() + first, listed.end(), [&](std::size_t a, std::size_t b) {
        return split.steps[a].duration_ns > split.steps[b].duration_ns;
      });
      listed.resize(kMaxStepRows);
      std::sort(listed.begin(), listed.end());
    }
    for (std::size_t i : listed) {
      const db::RankStepStats& step = split.steps[i];
      const std::int64_t memcpy_ns = i < db.step_memcpy_ns.size() ? db.step_memcpy_ns[i] : 0;
      const bool host_bound = step.duration_ns > 0 && step.idle_ns * 2 > step.duration_ns;
      table.AddRow(
          {N(std::to_string(step.id), static_cast<double>(step.id)),
           N(Ms(step.duration_ns), static_cast<double>(step.duration_ns), "step-ms"),
           N(Ms(step.compute_ns), static_cast<double>(step.compute_ns)),
           N(Ms(step.communication_not_overlapped_ns),
             static_cast<double>(step.communication_not_overlapped_ns)),
           N(Ms(step.idle_ns), static_cast<double>(step.idle_ns)),
           N(Percent(step.idle_ns, step.duration_ns),
             step.duration_ns > 0 ? static_cast<double>(step.idle_ns) / static_cast<double>(step.duration_ns)
                                  : 0),
           N(Ms(memcpy_ns), static_cast<double>(memcpy_ns), "step-memcpy-ms"),
           T(host_bound ? "host-bound" : "")});
    }
    out += table.Html();
    if (listed.size() < split.steps.size()) {
      out += "<p class=\"note\">" + std::to_string(split.steps.size() - listed.size()) +
             " more steps are not listed: the table holds the first " + std::to_string(kMaxStepRows / 2) +
             " and the " + std::to_string(listed.size() - kMaxStepRows / 2) + " slowest of the " +
             std::to_string(split.steps.size()) + " (every step: gpuprof export).</p>";
    }
  }
  return out + "</section>";
}

std::string Timeline(const HtmlReportInput& input) {
  std::string out =
      "<section id=\"timeline\"><h2>Timeline of one step</h2>"
      "<p class=\"note\">Wheel: zoom, drag: pan, double-click: the whole step. Hover a bar for its "
      "name and duration. Every event of every step: <code>gpuprof export --format perfetto " +
      HtmlEscape(input.path) + " -o trace.json</code>, opened in ui.perfetto.dev.</p>";
  bool any = false;
  for (const db::ReportDb& db : input.dbs) {
    if (db.timelines.empty()) continue;
    any = true;
    const std::string id = std::to_string(&db - input.dbs.data());
    out += "<h3>" + HtmlEscape(DbLabel(db)) +
           "</h3><label>Step: <select class=\"step-choice\" data-for=\"tl-" + id + "\">";
    for (std::size_t i = 0; i < db.timelines.size(); ++i) {
      const db::StepTimeline& t = db.timelines[i];
      out += "<option value=\"" + std::to_string(i) + "\">" + HtmlEscape(t.why) + ": step " +
             std::to_string(t.step_id) + " (" + Ms(t.end_ns - t.start_ns) + " ms)</option>";
    }
    out += "</select></label>";
    for (std::size_t i = 0; i < db.timelines.size(); ++i) {
      const db::StepTimeline& t = db.timelines[i];
      out += "<div class=\"timeline\" id=\"tl-" + id + "-" + std::to_string(i) + "\"" +
             (i == 0 ? "" : " hidden") + " data-figure=\"timeline-step\" data-step=\"" +
             std::to_string(t.step_id) + "\">" + TimelineSvg(t);
      if (t.dropped > 0) {
        out += "<p class=\"note\">" + std::to_string(t.dropped) +
               " shorter bars of this step are left out (the longest " + std::to_string(t.items.size()) +
               " are drawn).</p>";
      }
      out += "</div>";
    }
  }
  if (!any) out += Absent("Timeline", "no step to show (the profile has no steps and no session span)");
  return out + "</section>";
}

std::string OpsAndKernels(const HtmlReportInput& input) {
  std::string out =
      "<section id=\"ops\"><h2>Ops and kernels</h2><p class=\"note\">Click a column to sort.</p>";
  for (const db::ReportDb& db : input.dbs) {
    const db::ProfileStats& s = db.stats;
    const std::string id = std::to_string(&db - input.dbs.data());
    out += "<h3>" + HtmlEscape(DbLabel(db)) + "</h3>";
    if (s.top_ops_by_total.empty()) {
      out += Absent("Ops", s.ops_absent);
    } else {
      out += "<h4>Top ops (" + std::to_string(s.top_ops_by_total.size()) + " of " +
             std::to_string(s.op_names) + " names, " + std::to_string(s.op_calls) + " calls)</h4>";
      HtmlTable ops("ops-" + id, {{"name", false},
                                  {"calls", true},
                                  {"total ms", true},
                                  {"self ms", true},
                                  {"avg µs", true},
                                  {"self %", true}});
      for (const db::OpStat& op : s.top_ops_by_total) {
        const double per_call =
            static_cast<double>(op.totals.total_ns) / static_cast<double>(op.totals.calls);
        ops.AddRow({T(op.name, "op-name"),
                    N(std::to_string(op.totals.calls), static_cast<double>(op.totals.calls)),
                    N(Ms(op.totals.total_ns), static_cast<double>(op.totals.total_ns), "op-total-ms"),
                    N(Ms(op.totals.self_ns), static_cast<double>(op.totals.self_ns)),
                    N(FormatMicros(per_call), per_call),
                    N(Percent(op.totals.self_ns, s.op_self_sum_ns), static_cast<double>(op.totals.self_ns))});
      }
      out += ops.Html();
    }
    if (s.top_kernels.empty()) {
      out += Absent("Kernels", s.kernels_absent);
    } else {
      out += "<h4>Top kernels (" + std::to_string(s.top_kernels.size()) + " of " +
             std::to_string(s.kernel_names) + " names, " + std::to_string(s.kernel_calls) + " launches, " +
             Ms(s.kernel_total_ns) + " ms)</h4>";
      HtmlTable kernels("kernels-" + id, {{"name", false},
                                          {"calls", true},
                                          {"total ms", true},
                                          {"avg µs", true},
                                          {"max µs", true},
                                          {"%", true}});
      for (const db::KernelStat& k : s.top_kernels) {
        const double per_call = static_cast<double>(k.total_ns) / static_cast<double>(k.calls);
        kernels.AddRow({T(k.name, "kernel-name"), N(std::to_string(k.calls), static_cast<double>(k.calls)),
                        N(Ms(k.total_ns), static_cast<double>(k.total_ns), "kernel-total-ms"),
                        N(FormatMicros(per_call), per_call),
                        N(FormatMicros(static_cast<double>(k.max_ns)), static_cast<double>(k.max_ns)),
                        N(Percent(k.total_ns, s.kernel_total_ns), static_cast<double>(k.total_ns))});
      }
      out += kernels.Html();
    }
    if (!db.op_launches.empty()) {
      out += "<h4>Ops that launched the most device time</h4>";
      HtmlTable launches("op-launches-" + id, {{"op", false}, {"tasks", true}, {"task ms", true}});
      for (const db::OpLaunchStat& op : db.op_launches) {
        launches.AddRow({T(op.op), N(std::to_string(op.tasks), static_cast<double>(op.tasks)),
                         N(Ms(op.task_ns), static_cast<double>(op.task_ns))});
      }
      out += launches.Html();
    }
    out += "<h4>Launch delay</h4>" + DelayHistogram(db);
  }
  return out + "</section>";
}

std::string Memory(const HtmlReportInput& input) {
  std::string out = "<section id=\"memory\"><h2>Memory</h2>";
  for (const db::ReportDb& db : input.dbs) {
    const db::ProfileStats& s = db.stats;
    out += "<h3>" + HtmlEscape(DbLabel(db)) + "</h3>";
    if (s.memory.empty()) {
      out += Absent("Memory", s.memory_absent);
      continue;
    }
    HtmlTable peaks("memory-" + std::to_string(&db - input.dbs.data()), {{"device", true},
                                                                         {"component", false},
                                                                         {"peak allocated", true},
                                                                         {"peak reserved", true},
                                                                         {"records", true}});
    for (const db::MemoryPeak& m : s.memory) {
      peaks.AddRow(
          {N(std::to_string(m.device), static_cast<double>(m.device)), T(m.component),
           N(FormatBytes(static_cast<std::uint64_t>(m.peak_allocated)), static_cast<double>(m.peak_allocated),
             "memory-peak-allocated"),
           N(FormatBytes(static_cast<std::uint64_t>(m.peak_reserved)), static_cast<double>(m.peak_reserved)),
           N(std::to_string(m.records), static_cast<double>(m.records))});
    }
    out += peaks.Html();
    const std::int64_t origin = s.session_start_ns.value_or(0);
    for (const db::MemoryCurve& curve : db.memory) {
      out += "<h4>Device " + std::to_string(curve.device) + " over time</h4>" + MemoryChart(curve, origin);
    }
    const std::string id = std::to_string(&db - input.dbs.data());
    auto op_table = [&](const std::string& table_id, const std::vector<db::OpMemoryStat>& rows,
                        const std::string& figure) {
      HtmlTable table(table_id, {{"op", false}, {"allocations", true}, {"bytes", true}});
      for (const db::OpMemoryStat& row : rows) {
        table.AddRow({T(row.op, figure),
                      N(std::to_string(row.allocations), static_cast<double>(row.allocations)),
                      N(FormatBytes(static_cast<std::uint64_t>(row.bytes)), static_cast<double>(row.bytes),
                        figure + "-bytes")});
      }
      return table.Html();
    };
    if (db.peak_time_ns.has_value()) {
      out += "<h4>Ops whose blocks were live at the peak (device " + std::to_string(db.peak_device) + ", " +
             Ms(*db.peak_time_ns - origin) + " ms)</h4>";
      out += db.live_at_peak.empty() ? Absent("Live blocks", "no block allocated by an op was live then")
                                     : op_table("live-at-peak-" + id, db.live_at_peak, "live-at-peak-op");
    }
    if (!db.top_allocating_ops.empty()) {
      out += "<h4>Top allocating ops (bytes allocated over the run)</h4>" +
             op_table("allocating-ops-" + id, db.top_allocating_ops, "allocating-op");
    }
  }
  return out + "</section>";
}

std::string Replay(const HtmlReportInput& input) {
  std::string out = "<section id=\"replay\"><h2>Kernel replay</h2>";
  bool any = false;
  for (const db::ReportDb& db : input.dbs) {
    const db::ProfileStats& s = db.stats;
    if (s.replay.empty() && s.replay_declines.empty()) continue;
    any = true;
    const std::string id = std::to_string(&db - input.dbs.data());
    out += "<h3>" + HtmlEscape(DbLabel(db)) + "</h3>";
    if (!s.replay.empty()) {
      HtmlTable table("replay-" + id, {{"kernel", false},
                                       {"device", true},
                                       {"launches", true},
                                       {"passes", true},
                                       {"min µs", true},
                                       {"median µs", true},
                                       {"max µs", true},
                                       {"spread", false},
                                       {"restored/pass", true},
                                       {"deterministic", false}});
      for (const db::ReplayKernelStat& k : s.replay) {
        const double spread =
            k.min_ns > 0 ? static_cast<double>(k.max_ns - k.min_ns) / static_cast<double>(k.min_ns) : 0;
        table.AddRow(
            {T(k.kernel, "replay-kernel"), N(std::to_string(k.device), static_cast<double>(k.device)),
             N(std::to_string(k.launches), static_cast<double>(k.launches), "replay-launches"),
             N(std::to_string(k.passes), static_cast<double>(k.passes), "replay-passes"),
             N(FormatMicros(static_cast<double>(k.min_ns)), static_cast<double>(k.min_ns)),
             N(FormatMicros(static_cast<double>(k.median_ns)), static_cast<double>(k.median_ns)),
             N(FormatMicros(static_cast<double>(k.max_ns)), static_cast<double>(k.max_ns)),
             HtmlTable::Cell{"+" + Fixed(100.0 * spread, 1) + "% max over min", 0, "",
                             SpreadBar(k.min_ns, k.median_ns, k.max_ns, k.max_ns), ""},
             N(FormatBytes(static_cast<std::uint64_t>(k.restored_bytes_per_pass)), k.restored_bytes_per_pass),
             T(k.nondeterministic_launches == 0
                   ? "yes"
                   : "no (" + std::to_string(k.nondeterministic_launches) +
                         (k.nondeterministic_launches == 1 ? " launch differs)" : " launches differ)"))});
      }
      out += table.Html();
    }
    if (!s.replay_declines.empty()) {
      out += "<h4>Declined launches</h4>";
      HtmlTable declines("declines-" + id,
                         {{"kernel", false}, {"device", true}, {"reason", false}, {"launches", true}});
      for (const db::ReplayDeclineStat& d : s.replay_declines) {
        declines.AddRow({T(d.kernel), N(std::to_string(d.device), static_cast<double>(d.device)), T(d.reason),
                         N(std::to_string(d.launches), static_cast<double>(d.launches))});
      }
      out += declines.Html();
    }
    for (const db::ReplayCounterStat& group : s.replay_counters) {
      if (group.metrics.empty()) continue;
      out += "<h4>Counters of " + HtmlEscape(ShownName(group.kernel)) + " (device " +
             std::to_string(group.device) + ")</h4>";
      HtmlTable metrics(
          "counters-" + id + "-" + std::to_string(&group - s.replay_counters.data()),
          {{"metric", false}, {"unit", false}, {"mean", true}, {"min", true}, {"max", true}, {"", false}});
      for (const db::ReplayMetricStat& m : group.metrics) {
        metrics.AddRow({T(m.name), T(m.unit), N(Num(m.mean), m.mean), N(Num(m.min), m.min),
                        N(Num(m.max), m.max),
                        HtmlTable::Cell{"", 0, "", m.unit == "%" ? PercentBar(m.mean) : "", ""}});
      }
      out += metrics.Html();
    }
  }
  if (!any) out += Absent("Replay", "no replayed launch in this profile (gpuprof replay records them)");
  return out + "</section>";
}

std::string Cluster(const HtmlReportInput& input) {
  if (input.cluster == nullptr) return "";
  const db::ClusterStats& cluster = *input.cluster;
  std::string out = "<section id=\"cluster\"><h2>Cluster</h2>";
  if (cluster.steps.empty()) return out + Absent("Steps across ranks", "no rank has steps") + "</section>";
  // The steps any rank left out as warm-up are drawn outside the heat map's colour scale.
  std::vector<std::int64_t> warmup;
  for (const db::ReportDb& db : input.dbs)
    warmup.insert(warmup.end(), db.findings.warmup_steps.begin(), db.findings.warmup_steps.end());
  out += "<h3>Step time per rank</h3>" + StepHeatMap(cluster, warmup);
  HtmlTable slow("slowest", {{"step", true}, {"slowest rank", false}, {"its ms", true}, {"spread ms", true}});
  for (const db::StepComparison& step : cluster.steps) {
    if (!step.slowest) continue;
    const db::RankStats& rank = cluster.ranks[*step.slowest];
    const std::int64_t ms = step.duration_ns[*step.slowest].value_or(0);
    slow.AddRow({N(std::to_string(step.id), static_cast<double>(step.id)),
                 T("rank " + std::to_string(rank.rank)), N(Ms(ms), static_cast<double>(ms)),
                 N(Ms(step.spread_ns), static_cast<double>(step.spread_ns))});
  }
  out += "<h3>The slowest rank per step</h3>" + slow.Html();
  HtmlTable split("rank-split", {{"rank", true},
                                 {"step total ms", true},
                                 {"compute ms", true},
                                 {"communication not overlapped ms", true},
                                 {"idle ms", true}});
  for (const db::RankStats& rank : cluster.ranks) {
    split.AddRow({N(std::to_string(rank.rank), static_cast<double>(rank.rank)),
                  N(Ms(rank.step_total_ns), static_cast<double>(rank.step_total_ns)),
                  N(Ms(rank.compute_ns), static_cast<double>(rank.compute_ns)),
                  N(Ms(rank.communication_not_overlapped_ns),
                    static_cast<double>(rank.communication_not_overlapped_ns)),
                  N(Ms(rank.idle_ns), static_cast<double>(rank.idle_ns))});
  }
  out += "<h3>Compute and communication per rank</h3>" + split.Html();
  if (input.across != nullptr && !input.across->collectives.empty()) {
    HtmlTable skew("collectives", {{"collective", false},
                                   {"step", true},
                                   {"ranks", true},
                                   {"skew ms", true},
                                   {"first / last rank", false},
                                   {"transfer ms", true},
                                   {"size", true},
                                   {"bus GB/s", true}});
    for (const db::CollectiveStat& c : input.across->collectives) {
      skew.AddRow({T(c.name), N(c.step >= 0 ? std::to_string(c.step) : "-", static_cast<double>(c.step)),
                   N(std::to_string(c.ranks), static_cast<double>(c.ranks)),
                   N(Ms(c.skew_ns), static_cast<double>(c.skew_ns)),
                   T(std::to_string(c.first_rank) + " / " + std::to_string(c.last_rank)),
                   N(Ms(c.transfer_ns), static_cast<double>(c.transfer_ns)),
                   N(c.bytes > 0 ? FormatBytes(static_cast<std::uint64_t>(c.bytes)) : "-",
                     static_cast<double>(c.bytes)),
                   N(FormatFixed(c.bus_gb_per_s, 2), c.bus_gb_per_s)});
    }
    out +=
        "<h3>The most skewed collectives</h3><p class=\"note\">Skew: the last rank's arrival minus the "
        "first's (the first waits that long); transfer: the shortest time over the ranks; bus bandwidth "
        "scaled as nccl-tests does.</p>" +
        skew.Html();
  }
  return out + "</section>";
}

}  // namespace gpuprof::cli::html
