#include "cli/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/default_output.h"
#include "cli/page_names.h"
#include "cli/report.h"

namespace gpuprof::cli {
namespace {

constexpr const char* kComputeColor = "#4e79a7";
constexpr const char* kCommunicationColor = "#f28e2b";
constexpr const char* kIdleColor = "#bab0ac";
constexpr const char* kReservedColor = "#e15759";

// report.h's formatters, under the short names the tables here use.
std::string Fixed(double value, int decimals) { return FormatFixed(value, decimals); }
std::string Ms(std::int64_t ns) { return FormatMillis(ns); }
std::string Percent(std::int64_t part, std::int64_t whole) { return FormatPercent(part, whole); }
std::string Num(double value) { return Fixed(value, 2); }

// The step table lists at most this many steps: the first half by start and the slowest of the
// rest (100k steps made a 38.8 MB table).
constexpr std::size_t kMaxStepRows = 100;

// A table whose columns sort on a click (the page's script); numeric cells carry data-v.
class HtmlTable {
 public:
  struct Column {
    std::string title;
    bool numeric;
  };
  HtmlTable(std::string id, std::vector<Column> columns) : id_(std::move(id)), columns_(std::move(columns)) {}
  // Cells: text (escaped here) and, for numeric columns, the value it sorts by.
  struct Cell {
    std::string text;
    double value = 0;
    std::string figure;  // data-figure name, or ""
    std::string html;    // markup drawn after the text (a small chart), already safe; "" for none
    std::string title;   // a tooltip (the longer part of a cut name), or ""
  };
  void AddRow(std::vector<Cell> cells) { rows_.push_back(std::move(cells)); }
  std::string Html() const {
    std::string out = "<table class=\"sortable\" id=\"" + id_ + "\"><thead><tr>";
    for (const Column& column : columns_) {
      out += std::string("<th") + (column.numeric ? " class=\"num\"" : "") + ">" + HtmlEscape(column.title) +
             "</th>";
    }
    out += "</tr></thead><tbody>";
    for (const auto& row : rows_) {
      out += "<tr>";
      for (std::size_t i = 0; i < row.size() && i < columns_.size(); ++i) {
        const Cell& cell = row[i];
        out += "<td";
        if (columns_[i].numeric) out += " class=\"num\" data-v=\"" + Fixed(cell.value, 6) + "\"";
        if (!cell.figure.empty()) out += " data-figure=\"" + HtmlEscape(cell.figure) + "\"";
        if (!cell.title.empty()) out += " title=\"" + HtmlEscape(cell.title) + "\"";
        out += ">" + HtmlEscape(cell.text) + cell.html + "</td>";
      }
      out += "</tr>";
    }
    return out + "</tbody></table>";
  }

 private:
  std::string id_;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

HtmlTable::Cell N(std::string text, double value, std::string figure = "") {
  return {std::move(text), value, std::move(figure), "", ""};
}
// A text cell; a long text (a name from the DB) is cut, with its start as the tooltip.
HtmlTable::Cell T(std::string text, std::string figure = "") {
  return {ShownName(text), 0, std::move(figure), "", NameTitle(text)};
}

std::string Absent(std::string_view what, std::string_view why) {
  return "<p class=\"absent\">" + HtmlEscape(what) + ": " + HtmlEscape(why.empty() ? "none" : why) + "</p>";
}

std::string DbLabel(const db::ReportDb& db) {
  if (db.stats.rank.has_value() && *db.stats.rank >= 0) return "rank " + std::to_string(*db.stats.rank);
  if (db.split.rank >= 0) return "rank " + std::to_string(db.split.rank);
  return "rank not set";
}

// ---- Charts (SVG) ---------------------------------------------------------------------------------

// Horizontal stacked bars, one per step: compute, communication not overlapped, idle.
std::string StepBars(const db::RankStats& split) {
  const std::size_t rows = std::min<std::size_t>(split.steps.size(), 200);
  if (rows == 0) return "";
  std::int64_t longest = 1;
  for (std::size_t i = 0; i < rows; ++i) longest = std::max(longest, split.steps[i].duration_ns);
  const int bar = 14;
  const int label = 90;
  const int width = 720;
  const int height = static_cast<int>(rows) * (bar + 4) + 24;
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(width) + " " +
                    std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
                    std::to_string(height) + "\" role=\"img\" aria-label=\"step breakdown\">";
  const double scale = static_cast<double>(width - label - 10) / static_cast<double>(longest);
  for (std::size_t i = 0; i < rows; ++i) {
    const db::RankStepStats& step = split.steps[i];
    const int y = static_cast<int>(i) * (bar + 4) + 4;
    svg += "<text x=\"0\" y=\"" + std::to_string(y + bar - 3) + "\" class=\"label\">" +
           (split.whole_run ? std::string("whole run") : "step " + std::to_string(step.id)) + "</text>";
    double x = label;
    for (auto [ns, color, name] : {std::tuple{step.compute_ns, kComputeColor, "compute"},
                                   std::tuple{step.communication_not_overlapped_ns, kCommunicationColor,
                                              "communication not overlapped"},
                                   std::tuple{step.idle_ns, kIdleColor, "idle"}}) {
      const double w = static_cast<double>(ns) * scale;
      if (w > 0) {
        svg += "<rect x=\"" + Num(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + Num(w) +
               "\" height=\"" + std::to_string(bar) + "\" fill=\"" + color + "\"><title>" +
               std::string(name) + ": " + Ms(ns) + " ms</title></rect>";
      }
      x += w;
    }
  }
  const int legend_y = height - 6;
  int lx = label;
  for (auto [color, name] :
       {std::pair{kComputeColor, "compute"}, std::pair{kCommunicationColor, "communication not overlapped"},
        std::pair{kIdleColor, "idle (waiting on the host)"}}) {
    svg += "<rect x=\"" + std::to_string(lx) + "\" y=\"" + std::to_string(legend_y - 9) +
           "\" width=\"10\" height=\"10\" fill=\"" + color + "\"/><text x=\"" + std::to_string(lx + 14) +
           "\" y=\"" + std::to_string(legend_y) + "\" class=\"label\">" + name + "</text>";
    lx += 14 + static_cast<int>(std::string_view(name).size()) * 7 + 16;
  }
  return svg + "</svg>";
}

// Allocated and reserved bytes over time, one curve pair per device.
std::string MemoryChart(const db::MemoryCurve& curve, std::int64_t origin_ns) {
  if (curve.points.empty()) return "";
  const int width = 720;
  const int height = 200;
  const int left = 70;
  std::int64_t t0 = curve.points.front().time_ns;
  std::int64_t t1 = curve.points.back().time_ns;
  std::int64_t top = 1;
  for (const db::MemoryPoint& p : curve.points) top = std::max({top, p.allocated, p.reserved});
  const double sx =
      static_cast<double>(width - left - 10) / static_cast<double>(std::max<std::int64_t>(t1 - t0, 1));
  const double sy = static_cast<double>(height - 30) / static_cast<double>(top);
  auto path = [&](bool reserved) {
    std::string d;
    for (const db::MemoryPoint& p : curve.points) {
      const double x = left + static_cast<double>(p.time_ns - t0) * sx;
      const double y = height - 20 - static_cast<double>(reserved ? p.reserved : p.allocated) * sy;
      d += (d.empty() ? "M" : " L") + Num(x) + " " + Num(y);
    }
    return d;
  };
  std::string svg =
      "<svg class=\"chart\" viewBox=\"0 0 720 200\" width=\"720\" height=\"200\" role=\"img\" "
      "aria-label=\"memory of device " +
      std::to_string(curve.device) + "\">";
  svg +=
      "<path d=\"" + path(true) + "\" fill=\"none\" stroke=\"" + kReservedColor + "\" stroke-width=\"1.5\"/>";
  svg +=
      "<path d=\"" + path(false) + "\" fill=\"none\" stroke=\"" + kComputeColor + "\" stroke-width=\"1.5\"/>";
  svg += "<text x=\"0\" y=\"14\" class=\"label\">" +
         HtmlEscape(FormatBytes(static_cast<std::uint64_t>(top))) + "</text><text x=\"0\" y=\"" +
         std::to_string(height - 20) + "\" class=\"label\">0</text>";
  svg += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(height - 4) +
         "\" class=\"label\">" + Ms(t0 - origin_ns) + " ms</text><text x=\"" + std::to_string(width - 90) +
         "\" y=\"" + std::to_string(height - 4) + "\" class=\"label\">" + Ms(t1 - origin_ns) + " ms</text>";
  svg += "<text x=\"" + std::to_string(left + 120) + "\" y=\"14\" class=\"label\" fill=\"" + kComputeColor +
         "\">allocated</text><text x=\"" + std::to_string(left + 200) +
         "\" y=\"14\" class=\"label\" fill=\"" + kReservedColor + "\">reserved</text>";
  return svg + "</svg>";
}

std::string DelayBucketLabel(std::size_t bucket) {
  if (bucket == 0) return "< 1 µs";
  const auto low = std::uint64_t{1} << (bucket - 1);
  if (bucket == db::kDelayBuckets - 1) return ">= " + std::to_string(low) + " µs";
  return std::to_string(low) + "-" + std::to_string(low * 2) + " µs";
}

std::string DelayHistogram(const db::ReportDb& db) {
  if (db.launch_delays == 0) return Absent("Launch delay", "no task is linked to an op (CONNECTION_IDS)");
  std::size_t first = db::kDelayBuckets;
  std::size_t last = 0;
  std::uint64_t top = 1;
  for (std::size_t i = 0; i < db::kDelayBuckets; ++i) {
    if (db.launch_delay_histogram[i] == 0) continue;
    first = std::min(first, i);
    last = std::max(last, i);
    top = std::max(top, db.launch_delay_histogram[i]);
  }
  const int bar = 26;
  const int n = static_cast<int>(last - first + 1);
  const int width = std::max(200, n * (bar + 6) + 10);
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(width) + " 170\" width=\"" +
                    std::to_string(width) + "\" height=\"170\" role=\"img\" aria-label=\"launch delay\">";
  for (std::size_t i = first; i <= last; ++i) {
    const double h = 120.0 * static_cast<double>(db.launch_delay_histogram[i]) / static_cast<double>(top);
    const int x = static_cast<int>(i - first) * (bar + 6) + 5;
    svg += "<rect x=\"" + std::to_string(x) + "\" y=\"" + Num(130 - h) + "\" width=\"" + std::to_string(bar) +
           "\" height=\"" + Num(h) + "\" fill=\"" + kComputeColor + "\"><title>" + DelayBucketLabel(i) +
           ": " + std::to_string(db.launch_delay_histogram[i]) + " tasks</title></rect>";
    svg +=
        "<text x=\"" + std::to_string(x) + "\" y=\"145\" class=\"tiny\">" + DelayBucketLabel(i) + "</text>";
  }
  return svg +
         "</svg><p class=\"note\">Launch delay: from the start of the op that launched a kernel (or copy) "
         "to the task's start on the device, " +
         std::to_string(db.launch_delays) + " tasks.</p>";
}

// A pass-duration range on one axis from 0 to `axis_ns`: a bar from min to max, a tick at the median.
std::string SpreadBar(std::int64_t min_ns, std::int64_t median_ns, std::int64_t max_ns,
                      std::int64_t axis_ns) {
  const double scale = 120.0 / static_cast<double>(std::max<std::int64_t>(axis_ns, 1));
  const double x0 = static_cast<double>(min_ns) * scale;
  const double x1 = std::max(static_cast<double>(max_ns) * scale, x0 + 1);
  const double xm = static_cast<double>(median_ns) * scale;
  return " <svg class=\"spark\" width=\"124\" height=\"12\" role=\"img\" aria-label=\"pass spread\"><line "
         "x1=\"0\" "
         "y1=\"6\" x2=\"122\" y2=\"6\" stroke=\"#ddd\"/><rect x=\"" +
         Num(x0) + "\" y=\"2\" width=\"" + Num(x1 - x0) + "\" height=\"8\" fill=\"" + kComputeColor +
         "\" opacity=\"0.5\"/><rect x=\"" + Num(xm - 0.75) +
         "\" y=\"0\" width=\"1.5\" height=\"12\" fill=\"#222\"/></svg>";
}

// A percentage as a bar of 100 px.
std::string PercentBar(double percent) {
  const double w = std::clamp(percent, 0.0, 100.0);
  return " <svg class=\"spark\" width=\"102\" height=\"10\" role=\"img\" aria-label=\"percent\"><rect "
         "x=\"0\" y=\"0\" "
         "width=\"100\" height=\"10\" fill=\"#eee\"/><rect x=\"0\" y=\"0\" width=\"" +
         Num(w) + "\" height=\"10\" fill=\"" + kComputeColor + "\"/></svg>";
}

// ---- Sections --------------------------------------------------------------------------------------

struct Suggestion {
  double share;  // of the time it is part of, for ordering
  std::string text;
};

std::vector<Suggestion> Suggestions(const db::ReportDb& db) {
  std::vector<Suggestion> out;
  const db::RankStats& split = db.split;
  if (split.step_total_ns > 0) {
    const double idle = static_cast<double>(split.idle_ns) / static_cast<double>(split.step_total_ns);
    const double comm =
        static_cast<double>(split.communication_not_overlapped_ns) / static_cast<double>(split.step_total_ns);
    if (idle > 0.05) {
      out.push_back(
          {idle, Percent(split.idle_ns, split.step_total_ns) +
                     "% of the step time is idle: the device waits on the host (data loading, Python, "
                     "launch overhead). Look at the host ops of the slowest steps."});
    }
    if (comm > 0.05) {
      out.push_back({comm, Percent(split.communication_not_overlapped_ns, split.step_total_ns) +
                               "% of the step time is communication not overlapped with compute: overlap it "
                               "(bucketed all-reduce) or reduce it."});
    }
  }
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
  out += "<h3>What to look at first</h3><ol class=\"suggestions\">";
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
  if (all.empty())
    out += "<li>Nothing stands out: no idle, communication, kernel or op time to speak of.</li>";
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
      "<p class=\"note\">Each step split as analysis.db's StepTraceTime: compute (kernels, or host ops "
      "in a run without kernels), communication not overlapped with compute, and idle. A step "
      "more than half idle is host-bound. memcpy/memset: the time copies and memsets ran on the device "
      "within the step (a part of the others, not added to them).</p>";
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
    out += StepBars(split);
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

// A color per name (a hash into a fixed palette), so one op looks the same everywhere.
std::string NameColor(std::string_view name) {
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                                             "#edc948", "#ff9da7", "#9c755f", "#e15759", "#86bcb6"};
  std::uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return kPalette[hash % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

// One step's ops per thread (nested ops a row deeper), tasks per stream, marks and the memory
// curve: a fixed column of lane names beside a bar chart that the page's script zooms (wheel),
// pans (drag) and resets (double-click) by its viewBox.
std::string TimelineSvg(const db::StepTimeline& step) {
  constexpr int kWidth = 1000;
  constexpr int kRow = 12;
  constexpr int kMaxDepth = 8;
  struct Lane {
    std::string name;
    int rows = 1;
    int y = 0;
  };
  std::vector<Lane> lanes;
  auto lane_of = [&](const std::string& name) -> Lane& {
    for (Lane& lane : lanes) {
      if (lane.name == name) return lane;
    }
    return lanes.emplace_back(Lane{name, 1, 0});
  };
  for (const db::TimelineItem& item : step.items) {
    Lane& lane = lane_of(item.lane);
    lane.rows = std::max(lane.rows, std::min(item.depth, kMaxDepth) + 1);
  }
  int y = 0;
  for (Lane& lane : lanes) {
    lane.y = y;
    y += lane.rows * kRow + 6;
  }
  const int memory_y = y;
  const int height = y + (step.memory.empty() ? 0 : 50) + 4;
  const double span = static_cast<double>(std::max<std::int64_t>(step.end_ns - step.start_ns, 1));
  std::string labels = "<svg class=\"lanes\" width=\"150\" height=\"" + std::to_string(height) + "\">";
  for (const Lane& lane : lanes) {
    labels += "<text x=\"0\" y=\"" + std::to_string(lane.y + 10) + "\" class=\"label\">" +
              HtmlEscape(lane.name) + "</text>";
  }
  if (!step.memory.empty()) {
    labels += "<text x=\"0\" y=\"" + std::to_string(memory_y + 20) + "\" class=\"label\">memory</text>";
  }
  labels += "</svg>";
  std::string bars = "<svg class=\"zoomable\" data-full=\"" + std::to_string(kWidth) + "\" viewBox=\"0 0 " +
                     std::to_string(kWidth) + " " + std::to_string(height) + "\" width=\"" +
                     std::to_string(kWidth) + "\" height=\"" + std::to_string(height) +
                     "\" preserveAspectRatio=\"none\" role=\"img\" "
                     "aria-label=\"timeline of step " +
                     std::to_string(step.step_id) + "\">";
  for (const db::TimelineItem& item : step.items) {
    const Lane& lane = lane_of(item.lane);
    const double x = static_cast<double>(item.start_ns - step.start_ns) / span * kWidth;
    const double w = std::max(static_cast<double>(item.end_ns - item.start_ns) / span * kWidth, 0.3);
    const int row = std::min(item.depth, kMaxDepth);
    const std::string color = item.lane == "marks"                ? "#59a14f"
                              : item.lane.rfind("device", 0) == 0 ? kComputeColor
                                                                  : NameColor(item.name);
    bars += "<rect x=\"" + Fixed(x, 3) + "\" y=\"" + std::to_string(lane.y + row * kRow) + "\" width=\"" +
            Fixed(w, 3) + "\" height=\"" + std::to_string(kRow - 1) + "\" fill=\"" + color + "\"><title>" +
            HtmlEscape(ShownName(item.name, item.name_bytes)) + ": " +
            FormatMicros(static_cast<double>(item.end_ns - item.start_ns)) + " µs</title></rect>";
  }
  if (!step.memory.empty()) {
    std::int64_t top = 1;
    for (const db::MemoryPoint& p : step.memory) top = std::max(top, p.allocated);
    std::string d;
    for (const db::MemoryPoint& p : step.memory) {
      const double x = static_cast<double>(p.time_ns - step.start_ns) / span * kWidth;
      const double my = memory_y + 45 - 40.0 * static_cast<double>(p.allocated) / static_cast<double>(top);
      d += (d.empty() ? "M" : " L") + Fixed(x, 2) + " " + Fixed(my, 2);
    }
    bars += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + std::string(kComputeColor) +
            "\" stroke-width=\"1\" vector-effect=\"non-scaling-stroke\"><title>allocated, up to " +
            FormatBytes(static_cast<std::uint64_t>(top)) + "</title></path>";
  }
  bars += "</svg>";
  return "<div class=\"timeline-row\">" + labels + bars + "</div>";
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
  if (!any)
    out += Absent("Timeline", "no step to show (the profile has no STEP_TIME rows and no session span)");
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
      out += db.live_at_peak.empty() ? Absent("Live blocks", "no OP_MEMORY block was live then")
                                     : op_table("live-at-peak-" + id, db.live_at_peak, "live-at-peak-op");
    }
    if (!db.top_allocating_ops.empty()) {
      out += "<h4>Top allocating ops (OP_MEMORY, bytes over the run)</h4>" +
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

std::string HeatColor(double fraction) {  // 0: fastest (light), 1: slowest (dark red)
  const int r = 255;
  const int g = static_cast<int>(235 - 180 * fraction);
  const int b = static_cast<int>(220 - 190 * fraction);
  char text[16];
  std::snprintf(text, sizeof(text), "#%02x%02x%02x", r, std::clamp(g, 0, 255), std::clamp(b, 0, 255));
  return text;
}

std::string Cluster(const HtmlReportInput& input) {
  if (input.cluster == nullptr) return "";
  const db::ClusterStats& cluster = *input.cluster;
  std::string out = "<section id=\"cluster\"><h2>Cluster</h2>";
  if (cluster.steps.empty()) return out + Absent("Steps across ranks", "no rank has steps") + "</section>";
  std::int64_t fastest = std::numeric_limits<std::int64_t>::max();
  std::int64_t slowest = 0;
  const std::size_t steps = std::min<std::size_t>(cluster.steps.size(), 100);
  for (std::size_t i = 0; i < steps; ++i) {
    for (const auto& d : cluster.steps[i].duration_ns) {
      if (!d) continue;
      fastest = std::min(fastest, *d);
      slowest = std::max(slowest, *d);
    }
  }
  const int cell = 22;
  const int left = 70;
  const int width = left + static_cast<int>(steps) * cell + 10;
  const int height = static_cast<int>(cluster.ranks.size()) * cell + 30;
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(width) + " " +
                    std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
                    std::to_string(height) + "\" role=\"img\" aria-label=\"step time per rank\">";
  for (std::size_t r = 0; r < cluster.ranks.size(); ++r) {
    svg += "<text x=\"0\" y=\"" + std::to_string(static_cast<int>(r) * cell + 15) +
           "\" class=\"label\">rank " + std::to_string(cluster.ranks[r].rank) + "</text>";
    for (std::size_t i = 0; i < steps; ++i) {
      const auto& d = cluster.steps[i].duration_ns[r];
      if (!d) continue;
      const double fraction =
          slowest > fastest ? static_cast<double>(*d - fastest) / static_cast<double>(slowest - fastest) : 0;
      svg += "<rect x=\"" + std::to_string(left + static_cast<int>(i) * cell) + "\" y=\"" +
             std::to_string(static_cast<int>(r) * cell) + "\" width=\"" + std::to_string(cell - 2) +
             "\" height=\"" + std::to_string(cell - 2) + "\" fill=\"" + HeatColor(fraction) +
             "\"><title>rank " + std::to_string(cluster.ranks[r].rank) + ", step " +
             std::to_string(cluster.steps[i].id) + ": " + Ms(*d) + " ms</title></rect>";
    }
  }
  svg += "<text x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(height - 6) +
         "\" class=\"label\">steps " + std::to_string(cluster.steps.front().id) + ".." +
         std::to_string(cluster.steps[steps - 1].id) + " (darker: slower)</text></svg>";
  out += "<h3>Step time per rank</h3>" + svg;
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
  return out + "</section>";
}

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#2b3a4a;color:#fff;padding:12px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#cdd}nav{padding:6px 24px;background:#e8ecf0}nav a{margin-right:14px;color:#2b3a4a}
section{background:#fff;margin:16px 24px;padding:8px 18px 16px;border:1px solid #ddd;border-radius:6px}
h2{font-size:18px;border-bottom:1px solid #eee;padding-bottom:4px}h3{font-size:15px;margin-top:18px}h4{font-size:14px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}
th{background:#f2f4f6;cursor:pointer;user-select:none}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td{max-width:520px;overflow-wrap:anywhere}.absent,.note{color:#666}.chart{display:block;margin:8px 0}
.label{font-size:11px;fill:#333}svg.spark{vertical-align:middle}.tiny{font-size:8px;fill:#333}pre{white-space:pre-wrap;font-size:12px}
code{background:#f2f4f6;padding:1px 4px}.timeline-row{display:flex;overflow:hidden}
svg.zoomable{border:1px solid #eee;cursor:grab}
)";

// Sorts a table by the clicked column (numbers by data-v); zooms and pans the step timelines by
// their viewBox and switches the step shown. No network, no library.
constexpr std::string_view kScript = R"(
document.querySelectorAll('svg.zoomable').forEach(function(svg){
  var full = parseFloat(svg.getAttribute('data-full')), vb = svg.viewBox.baseVal, drag = null;
  svg.addEventListener('wheel', function(e){
    e.preventDefault();
    var r = svg.getBoundingClientRect(), at = vb.x + (e.clientX - r.left) / r.width * vb.width;
    var w = Math.min(full, Math.max(full / 5000, vb.width * (e.deltaY < 0 ? 0.8 : 1.25)));
    vb.x = Math.min(Math.max(0, at - (at - vb.x) * w / vb.width), full - w); vb.width = w;
  }, {passive: false});
  svg.addEventListener('mousedown', function(e){ drag = {x: e.clientX, vx: vb.x}; });
  window.addEventListener('mouseup', function(){ drag = null; });
  svg.addEventListener('mousemove', function(e){
    if (!drag) return;
    var r = svg.getBoundingClientRect();
    vb.x = Math.min(Math.max(0, drag.vx - (e.clientX - drag.x) / r.width * vb.width), full - vb.width);
  });
  svg.addEventListener('dblclick', function(){ vb.x = 0; vb.width = full; });
});
document.querySelectorAll('select.step-choice').forEach(function(select){
  select.addEventListener('change', function(){
    var prefix = select.getAttribute('data-for') + '-';
    document.querySelectorAll('div.timeline').forEach(function(div){
      if (div.id.indexOf(prefix) === 0) div.hidden = div.id !== prefix + select.value;
    });
  });
});
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th, column){
    th.addEventListener('click', function(){
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var down = th.getAttribute('data-dir') !== 'down';
      rows.sort(function(a, b){
        var x = a.cells[column], y = b.cells[column];
        var vx = x.hasAttribute('data-v') ? parseFloat(x.getAttribute('data-v')) : x.textContent;
        var vy = y.hasAttribute('data-v') ? parseFloat(y.getAttribute('data-v')) : y.textContent;
        var c = vx < vy ? -1 : vx > vy ? 1 : 0;
        return down ? -c : c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
      th.setAttribute('data-dir', down ? 'down' : 'up');
    });
  });
});
)";

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
          out += "\xEF\xBF\xBD";  // U+FFFD
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

std::string RenderHtmlReport(const HtmlReportInput& input) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      // Nothing may be fetched: no script, style, image, font or frame from anywhere.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">" +
      std::string(kReportTitleMark) + HtmlEscape(input.path) + "</title><style>" + std::string(kStyle) +
      "</style></head><body>";
  page += "<header><h1>gpuprof report</h1><p>" + HtmlEscape(input.path) + " &middot; " +
          std::to_string(input.dbs.size()) + " profile DB(s)</p></header>";
  page +=
      "<nav><a href=\"#overview\">Overview</a><a href=\"#steps\">Steps</a><a "
      "href=\"#timeline\">Timeline</a><a href=\"#ops\">Ops and "
      "kernels</a>"
      "<a href=\"#memory\">Memory</a><a href=\"#replay\">Replay</a>";
  if (input.cluster != nullptr) page += "<a href=\"#cluster\">Cluster</a>";
  page += "</nav>";
  page += Overview(input);
  page += Steps(input);
  page += Timeline(input);
  page += OpsAndKernels(input);
  page += Memory(input);
  page += Replay(input);
  page += Cluster(input);
  page += "<script>" + std::string(kScript) + "</script></body></html>\n";
  return page;
}

}  // namespace gpuprof::cli
