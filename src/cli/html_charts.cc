// The report's SVG charts: step bars, memory curves, the launch-delay histogram, sparklines and the
// clusters' heat map (html_report_parts.h lists them). Each has its axes with ticks and units and a
// legend or colour scale (html_axes.cc), so it reads without the text around it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/report.h"

namespace gpuprof::cli::html {
namespace {

std::string HeatColor(double fraction) {  // 0: fastest (light), 1: slowest (dark red)
  const int r = 255 - static_cast<int>(70 * fraction);
  const int g = static_cast<int>(235 - 200 * fraction);
  const int b = static_cast<int>(220 - 200 * fraction);
  char text[16];
  std::snprintf(text, sizeof(text), "#%02x%02x%02x", std::clamp(r, 0, 255), std::clamp(g, 0, 255),
                std::clamp(b, 0, 255));
  return text;
}

// Ticks from 0 to at least `top` (in `unit`), the last one at or above it: the end of an axis.
std::vector<double> TicksFromZero(double top, int count) {
  std::vector<double> ticks = NiceTicks(0, top, count);
  if (ticks.size() < 2) ticks = {0, top > 0 ? top : 1};
  if (ticks.back() < top) ticks.push_back(ticks.back() + (ticks[1] - ticks[0]));
  return ticks;
}

bool Contains(const std::vector<std::int64_t>& ids, std::int64_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

StepScale SharedStepScale(const std::vector<db::ReportDb>& dbs) {
  std::int64_t longest = 0;      // of the steps that are no warm-up
  std::int64_t longest_all = 0;  // of every step
  for (const db::ReportDb& db : dbs) {
    for (const db::RankStepStats& step : db.split.steps) {
      longest_all = std::max(longest_all, step.duration_ns);
      if (!Contains(db.findings.warmup_steps, step.id)) longest = std::max(longest, step.duration_ns);
    }
  }
  if (longest == 0) longest = std::max<std::int64_t>(longest_all, 1);
  const Unit unit = TimeUnitFor(static_cast<double>(longest));
  const std::vector<double> ticks = TicksFromZero(static_cast<double>(longest) / unit.scale, 6);
  return {static_cast<std::int64_t>(ticks.back() * unit.scale), unit, dbs.size() > 1};
}

std::string StepBars(const db::RankStats& split, const StepScale& scale,
                     const std::vector<std::int64_t>& warmup_steps) {
  const std::size_t rows = std::min<std::size_t>(split.steps.size(), 200);
  if (rows == 0) return "";
  constexpr double kBar = 14;
  constexpr double kLeft = 100;
  constexpr double kPlot = 560;  // the axis's length
  constexpr double kWidth = 780;
  const double axis_y = static_cast<double>(rows) * (kBar + 4) + 6;
  const double px_per_ns = kPlot / static_cast<double>(std::max<std::int64_t>(scale.axis_ns, 1));
  std::string body;
  for (std::size_t i = 0; i < rows; ++i) {
    const db::RankStepStats& step = split.steps[i];
    const double y = static_cast<double>(i) * (kBar + 4) + 4;
    const bool warmup = Contains(warmup_steps, step.id);
    const bool cut = step.duration_ns > scale.axis_ns;
    body += SvgText(2, y + kBar - 3,
                    split.whole_run ? std::string("whole run")
                                    : "step " + std::to_string(step.id) + (warmup ? " (warm-up)" : ""),
                    "class=\"label\"");
    body += "<g class=\"step-bar\" data-step=\"" + std::to_string(step.id) + "\" data-ms=\"" +
            Fixed(static_cast<double>(step.duration_ns) / 1e6, 6) + "\"" + (cut ? " data-cut=\"1\"" : "") +
            ">";
    double x = kLeft;
    for (auto [ns, color, name] : {std::tuple{step.compute_ns, kComputeColor, "compute"},
                                   std::tuple{step.communication_not_overlapped_ns, kCommunicationColor,
                                              "communication not overlapped"},
                                   std::tuple{step.idle_ns, kIdleColor, "idle"}}) {
      double w = static_cast<double>(ns) * px_per_ns;
      if (cut) w = std::min(w, kLeft + kPlot + 10 - x);
      if (w > 0) {
        body += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w) + "\" height=\"" +
                Num(kBar) + "\" fill=\"" + color + "\"><title>step " + std::to_string(step.id) + ", " + name +
                ": " + Ms(ns) + " ms</title></rect>";
      }
      x += w;
    }
    if (cut) {  // a break across the bar where it leaves the axis
      body += "<path d=\"M" + Num(kLeft + kPlot + 2) + " " + Num(y - 1) + " l4 " + Num(kBar / 2 + 1) +
              " l-4 " + Num(kBar / 2 + 1) + "\" stroke=\"#fff\" stroke-width=\"2\" fill=\"none\"/>";
    }
    body += "</g>" + SvgText(x + 4, y + kBar - 3, Ms(step.duration_ns) + " ms" + (cut ? ", cut" : ""),
                             "class=\"label bar-value\"");
  }
  std::vector<AxisTick> ticks;
  const std::vector<double> values = TicksFromZero(static_cast<double>(scale.axis_ns) / scale.unit.scale, 6);
  for (double v : values) ticks.push_back({kLeft + v * scale.unit.scale * px_per_ns, TickLabel(v, values)});
  std::string axis = XAxis(ticks, axis_y, kLeft, kLeft + kPlot,
                           std::string("step time (") + scale.unit.name + ")" +
                               (scale.several_dbs ? ", one scale for every rank" : ""));
  LegendSvg legend = Legend({{kComputeColor, "compute"},
                             {kCommunicationColor, "communication not overlapped"},
                             {kIdleColor, "idle (waiting on the host)"}},
                            kLeft, axis_y + 48, kWidth - kLeft);
  const double height = axis_y + 48 + legend.height;
  return "<svg class=\"chart step-bars\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(height) + "\" width=\"" +
         Num(kWidth) + "\" height=\"" + Num(height) + "\" role=\"img\" aria-label=\"step breakdown\">" +
         body + axis + legend.svg + "</svg>";
}

std::string MemoryChart(const db::MemoryCurve& curve, std::int64_t origin_ns) {
  if (curve.points.empty()) return "";
  constexpr double kWidth = 780;
  constexpr double kLeft = 80;
  constexpr double kRight = 20;
  constexpr double kTop = 10;
  constexpr double kPlotHeight = 160;
  const double bottom = kTop + kPlotHeight;
  const double t0 = static_cast<double>(curve.points.front().time_ns - origin_ns);
  double t1 = static_cast<double>(curve.points.back().time_ns - origin_ns);
  if (t1 <= t0) t1 = t0 + 1;
  std::int64_t top = 1;
  for (const db::MemoryPoint& p : curve.points) top = std::max({top, p.allocated, p.reserved});
  const Unit bytes = ByteUnitFor(static_cast<double>(top));
  const std::vector<double> y_values = TicksFromZero(static_cast<double>(top) / bytes.scale, 4);
  const double y_top = y_values.back() * bytes.scale;
  const Unit time = TimeUnitFor(t1);
  const std::vector<double> x_values = NiceTicks(t0 / time.scale, t1 / time.scale, 8);
  auto px = [&](double t) { return kLeft + (t - t0) / (t1 - t0) * (kWidth - kLeft - kRight); };
  auto py = [&](double b) { return bottom - b / y_top * kPlotHeight; };
  std::vector<AxisTick> x_ticks;
  for (double v : x_values) x_ticks.push_back({px(v * time.scale), TickLabel(v, x_values)});
  std::vector<AxisTick> y_ticks;
  for (double v : y_values) y_ticks.push_back({py(v * bytes.scale), TickLabel(v, y_values)});
  auto path = [&](bool reserved) {
    std::string d;
    for (const db::MemoryPoint& p : curve.points) {
      d += (d.empty() ? "M" : " L") + Num(px(static_cast<double>(p.time_ns - origin_ns))) + " " +
           Num(py(static_cast<double>(reserved ? p.reserved : p.allocated)));
    }
    return d;
  };
  std::string svg =
      YAxis(y_ticks, kLeft, kTop, bottom, kWidth - kRight, std::string("memory (") + bytes.name + ")");
  svg += XAxis(x_ticks, bottom, kLeft, kWidth - kRight,
               std::string("time since the profile started (") + time.name + ")");
  svg +=
      "<path d=\"" + path(true) + "\" fill=\"none\" stroke=\"" + kReservedColor + "\" stroke-width=\"1.5\"/>";
  svg +=
      "<path d=\"" + path(false) + "\" fill=\"none\" stroke=\"" + kComputeColor + "\" stroke-width=\"1.5\"/>";
  LegendSvg legend = Legend({{kComputeColor, "allocated (held by tensors)", true},
                             {kReservedColor, "reserved (held by the caching allocator)", true}},
                            kLeft, bottom + 50, kWidth - kLeft);
  const double height = bottom + 50 + legend.height;
  return "<svg class=\"chart memory\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(height) + "\" width=\"" +
         Num(kWidth) + "\" height=\"" + Num(height) + "\" role=\"img\" aria-label=\"memory of device " +
         std::to_string(curve.device) + "\">" + svg + legend.svg + "</svg>";
}

std::string DelayHistogram(const db::ReportDb& db) {
  if (db.launch_delays == 0) {
    return Absent("Launch delay", "no kernel or copy is linked to the op that launched it");
  }
  std::size_t first = db::kDelayBuckets;
  std::size_t last = 0;
  std::uint64_t top = 1;
  for (std::size_t i = 0; i < db::kDelayBuckets; ++i) {
    if (db.launch_delay_histogram[i] == 0) continue;
    first = std::min(first, i);
    last = std::max(last, i);
    top = std::max(top, db.launch_delay_histogram[i]);
  }
  constexpr double kBar = 36;
  constexpr double kLeft = 70;
  constexpr double kTop = 10;
  constexpr double kPlotHeight = 130;
  const double bottom = kTop + kPlotHeight;
  const std::size_t n = last - first + 1;
  const double width = std::max(420.0, kLeft + static_cast<double>(n) * kBar + 20);
  const std::vector<double> y_values = TicksFromZero(static_cast<double>(top), 4);
  auto py = [&](double count) { return bottom - count / y_values.back() * kPlotHeight; };
  std::vector<AxisTick> y_ticks;
  for (double v : y_values) y_ticks.push_back({py(v), TickLabel(v, y_values)});
  std::string svg =
      YAxis(y_ticks, kLeft, kTop, bottom, kLeft + static_cast<double>(n) * kBar, "tasks (count)");
  // A tick at each bucket's edge: bucket i holds [2^(i-1), 2^i) µs, bucket 0 below 1 µs.
  std::vector<AxisTick> x_ticks;
  for (std::size_t i = first; i <= last + 1; ++i) {
    if (i == db::kDelayBuckets) break;
    const double at = kLeft + static_cast<double>(i - first) * kBar;
    x_ticks.push_back({at, i == 0 ? "0" : std::to_string(std::uint64_t{1} << (i - 1))});
  }
  for (std::size_t i = first; i <= last; ++i) {
    const double count = static_cast<double>(db.launch_delay_histogram[i]);
    const double x = kLeft + static_cast<double>(i - first) * kBar;
    const std::uint64_t low = i == 0 ? 0 : std::uint64_t{1} << (i - 1);
    const std::string range = i == 0 ? "below 1 µs"
                              : i == db::kDelayBuckets - 1
                                  ? std::to_string(low) + " µs or more"
                                  : std::to_string(low) + " to " + std::to_string(low * 2) + " µs";
    svg += "<rect x=\"" + Num(x + 1) + "\" y=\"" + Num(py(count)) + "\" width=\"" + Num(kBar - 2) +
           "\" height=\"" + Num(bottom - py(count)) + "\" fill=\"" + kComputeColor + "\"><title>" + range +
           ": " + std::to_string(db.launch_delay_histogram[i]) + " tasks</title></rect>";
    svg += SvgText(x + kBar / 2, py(count) - 3, std::to_string(db.launch_delay_histogram[i]),
                   "class=\"tiny\" text-anchor=\"middle\"");
  }
  svg += XAxis(x_ticks, bottom, kLeft, kLeft + static_cast<double>(n) * kBar,
               "launch delay (µs; each bar a range twice as wide as the one before)");
  LegendSvg legend = Legend({{kComputeColor, "kernels and copies whose delay falls in the bar's range"}},
                            kLeft, bottom + 50, width - kLeft);
  const double height = bottom + 50 + legend.height;
  return "<svg class=\"chart delays\" viewBox=\"0 0 " + Num(width) + " " + Num(height) + "\" width=\"" +
         Num(width) + "\" height=\"" + Num(height) + "\" role=\"img\" aria-label=\"launch delay\">" + svg +
         legend.svg +
         "</svg><p class=\"note\">Launch delay: from the start of the op that launched a kernel (or copy) "
         "to the task's start on the device, " +
         std::to_string(db.launch_delays) + " tasks.</p>";
}

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

std::string PercentBar(double percent) {
  const double w = std::clamp(percent, 0.0, 100.0);
  return " <svg class=\"spark\" width=\"102\" height=\"10\" role=\"img\" aria-label=\"percent\"><rect "
         "x=\"0\" y=\"0\" "
         "width=\"100\" height=\"10\" fill=\"#eee\"/><rect x=\"0\" y=\"0\" width=\"" +
         Num(w) + "\" height=\"10\" fill=\"" + kComputeColor + "\"/></svg>";
}

std::string StepHeatMap(const db::ClusterStats& cluster, const std::vector<std::int64_t>& warmup_steps) {
  const std::size_t steps = std::min<std::size_t>(cluster.steps.size(), 100);
  // The colour scale spans the steps that are no warm-up: one first step of a second would leave
  // every other cell the same pale shade.
  std::int64_t fastest = std::numeric_limits<std::int64_t>::max();
  std::int64_t slowest = 0;
  for (bool with_warmup : {false, true}) {
    for (std::size_t i = 0; i < steps; ++i) {
      if (!with_warmup && Contains(warmup_steps, cluster.steps[i].id)) continue;
      for (const auto& d : cluster.steps[i].duration_ns) {
        if (!d) continue;
        fastest = std::min(fastest, *d);
        slowest = std::max(slowest, *d);
      }
    }
    if (slowest > 0) break;
  }
  if (fastest > slowest) fastest = slowest;
  const bool wide = steps <= 14;  // room for each cell's value
  const double cell_w = wide ? 58 : 22;
  constexpr double kCellH = 22;
  constexpr double kLeft = 60;
  const double grid_bottom = static_cast<double>(cluster.ranks.size()) * kCellH;
  const double width = std::max(560.0, kLeft + static_cast<double>(steps) * cell_w + 10);
  const Unit unit = TimeUnitFor(static_cast<double>(slowest));
  bool any_warmup = false;
  std::string svg;
  for (std::size_t r = 0; r < cluster.ranks.size(); ++r) {
    const double y = static_cast<double>(r) * kCellH;
    svg += SvgText(0, y + 15, "rank " + std::to_string(cluster.ranks[r].rank), "class=\"label\"");
    for (std::size_t i = 0; i < steps; ++i) {
      const auto& d = cluster.steps[i].duration_ns[r];
      if (!d) continue;
      const bool warmup = Contains(warmup_steps, cluster.steps[i].id);
      any_warmup = any_warmup || warmup;
      const double fraction =
          slowest > fastest
              ? std::clamp(static_cast<double>(*d - fastest) / static_cast<double>(slowest - fastest), 0.0,
                           1.0)
              : 0;
      const double x = kLeft + static_cast<double>(i) * cell_w;
      svg += "<rect class=\"heat-cell\" x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" +
             Num(cell_w - 2) + "\" height=\"" + Num(kCellH - 2) + "\" fill=\"" +
             (warmup ? "#f4f4f4" : HeatColor(fraction)) + "\"" +
             (warmup ? " stroke=\"#555\" stroke-dasharray=\"2 1\"" : "") + "><title>rank " +
             std::to_string(cluster.ranks[r].rank) + ", step " + std::to_string(cluster.steps[i].id) + ": " +
             Ms(*d) + " ms" + (warmup ? " (warm-up, outside the colour scale)" : "") + "</title></rect>";
      if (wide) {
        svg += SvgText(x + (cell_w - 2) / 2, y + 15, Fixed(static_cast<double>(*d) / unit.scale, 1),
                       std::string("class=\"tiny cell-value\" text-anchor=\"middle\" fill=\"") +
                           (!warmup && fraction > 0.6 ? "#fff" : "#222") + "\"");
      }
    }
  }
  // The steps axis: every column's id when they are wide, else one id every 30 px or so.
  std::vector<AxisTick> step_ticks;
  const std::size_t every = wide ? 1 : 2;
  for (std::size_t i = 0; i < steps; i += every) {
    step_ticks.push_back(
        {kLeft + (static_cast<double>(i) + 0.5) * cell_w - 1, std::to_string(cluster.steps[i].id)});
  }
  svg += XAxis(step_ticks, grid_bottom + 2, kLeft, kLeft + static_cast<double>(steps) * cell_w,
               wide ? std::string("step (cells: step time in ") + unit.name + ")" : "step");
  // The colour scale: a gradient from the fastest to the slowest step with ticks in `unit`.
  constexpr double kScaleW = 300;
  const double scale_y = grid_bottom + 46;
  svg += "<g class=\"colour-scale\"><defs><linearGradient id=\"heat-scale\">";
  for (int s = 0; s <= 4; ++s) {
    svg += "<stop offset=\"" + std::to_string(s * 25) + "%\" stop-color=\"" + HeatColor(s / 4.0) + "\"/>";
  }
  svg += "</linearGradient></defs><rect x=\"" + Num(kLeft) + "\" y=\"" + Num(scale_y) + "\" width=\"" +
         Num(kScaleW) + "\" height=\"12\" fill=\"url(#heat-scale)\" stroke=\"#ccc\"/>";
  const double lo = static_cast<double>(fastest) / unit.scale;
  const double hi = static_cast<double>(slowest) / unit.scale;
  std::vector<double> values = NiceTicks(lo, hi, 4);
  if (values.size() < 2) values = {lo, hi};
  std::vector<AxisTick> scale_ticks;
  for (double v : values) {
    scale_ticks.push_back({kLeft + (hi > lo ? (v - lo) / (hi - lo) : 0) * kScaleW, TickLabel(v, values)});
  }
  svg += XAxis(scale_ticks, scale_y + 12, kLeft, kLeft + kScaleW,
               std::string("step time (") + unit.name + "), darker: slower") +
         "</g>";
  double height = scale_y + 12 + 36;
  if (any_warmup) {
    LegendSvg legend = Legend({{"#f4f4f4", "warm-up step, outside the colour scale", false, true}}, kLeft,
                              height + 10, width - kLeft);
    svg += legend.svg;
    height += 10 + legend.height;
  }
  return "<svg class=\"chart heat-map\" viewBox=\"0 0 " + Num(width) + " " + Num(height) + "\" width=\"" +
         Num(width) + "\" height=\"" + Num(height) + "\" role=\"img\" aria-label=\"step time per rank\">" +
         svg + "</svg>";
}

}  // namespace gpuprof::cli::html
