// The report's SVG charts: step bars, memory curves, the launch-delay histogram, sparklines, the
// clusters' heat map (html_report_parts.h lists them).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/report.h"

namespace gpuprof::cli::html {
namespace {

std::string DelayBucketLabel(std::size_t bucket) {
  if (bucket == 0) return "< 1 µs";
  const auto low = std::uint64_t{1} << (bucket - 1);
  if (bucket == db::kDelayBuckets - 1) return ">= " + std::to_string(low) + " µs";
  return std::to_string(low) + "-" + std::to_string(low * 2) + " µs";
}

std::string HeatColor(double fraction) {  // 0: fastest (light), 1: slowest (dark red)
  const int r = 255;
  const int g = static_cast<int>(235 - 180 * fraction);
  const int b = static_cast<int>(220 - 190 * fraction);
  char text[16];
  std::snprintf(text, sizeof(text), "#%02x%02x%02x", r, std::clamp(g, 0, 255), std::clamp(b, 0, 255));
  return text;
}

}  // namespace

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

std::string StepHeatMap(const db::ClusterStats& cluster) {
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
  return svg;
}

}  // namespace gpuprof::cli::html
