// What every chart of the report draws around its data: ticks at round values, units chosen for the
// span shown, axes with a title that names the unit, and a legend (html_report_parts.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"

namespace gpuprof::cli::html {
namespace {

// Legend text is 11 px; this is its width per character, a little wide so items never overlap.
constexpr double kCharWidth = 7.0;

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(count, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return ticks;
}

std::string TickLabel(double value, const std::vector<double>& ticks) {
  const double step = ticks.size() >= 2 ? ticks[1] - ticks[0] : 1;
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
  return Fixed(value, decimals);
}

Unit TimeUnitFor(double span_ns) {
  if (span_ns < 2e3) return {1, "ns"};
  if (span_ns < 2e6) return {1e3, "µs"};
  if (span_ns < 2e9) return {1e6, "ms"};
  return {1e9, "s"};
}

Unit ByteUnitFor(double top_bytes) {
  if (top_bytes < 1024) return {1, "B"};
  if (top_bytes < 1024.0 * 1024) return {1024, "KiB"};
  if (top_bytes < 1024.0 * 1024 * 1024) return {1024.0 * 1024, "MiB"};
  return {1024.0 * 1024 * 1024, "GiB"};
}

std::string SvgText(double x, double y, std::string_view text, std::string_view attrs) {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" " + std::string(attrs) + ">" + HtmlEscape(text) +
         "</text>";
}

std::string XAxis(const std::vector<AxisTick>& ticks, double y, double x0, double x1,
                  std::string_view title) {
  std::string out = "<g class=\"axis x-axis\"><line x1=\"" + Num(x0) + "\" y1=\"" + Num(y) + "\" x2=\"" +
                    Num(x1) + "\" y2=\"" + Num(y) + "\" stroke=\"#888\"/>";
  for (const AxisTick& tick : ticks) {
    out += "<g class=\"tick\"><line x1=\"" + Num(tick.at) + "\" y1=\"" + Num(y) + "\" x2=\"" + Num(tick.at) +
           "\" y2=\"" + Num(y + 4) + "\" stroke=\"#888\"/>" +
           SvgText(tick.at, y + 15, tick.label, "class=\"label\" text-anchor=\"middle\"") + "</g>";
  }
  out += SvgText((x0 + x1) / 2, y + 29, title, "class=\"label axis-title\" text-anchor=\"middle\"");
  return out + "</g>";
}

std::string YAxis(const std::vector<AxisTick>& ticks, double x, double y_top, double y_bottom, double grid_x1,
                  std::string_view title) {
  std::string out = "<g class=\"axis y-axis\"><line x1=\"" + Num(x) + "\" y1=\"" + Num(y_top) + "\" x2=\"" +
                    Num(x) + "\" y2=\"" + Num(y_bottom) + "\" stroke=\"#888\"/>";
  for (const AxisTick& tick : ticks) {
    out += "<g class=\"tick\"><line x1=\"" + Num(x - 4) + "\" y1=\"" + Num(tick.at) + "\" x2=\"" +
           Num(grid_x1) + "\" y2=\"" + Num(tick.at) + "\" stroke=\"#e4e4e4\"/>" +
           SvgText(x - 6, tick.at + 4, tick.label, "class=\"label\" text-anchor=\"end\"") + "</g>";
  }
  const double mid = (y_top + y_bottom) / 2;
  out += "<text x=\"12\" y=\"" + Num(mid) + "\" class=\"label axis-title\" text-anchor=\"middle\" " +
         "transform=\"rotate(-90 12 " + Num(mid) + ")\">" + HtmlEscape(title) + "</text>";
  return out + "</g>";
}

LegendSvg Legend(const std::vector<LegendItem>& items, double x, double y, double width) {
  LegendSvg legend{"<g class=\"legend\">", 0};
  double at = x;
  double row = y;
  for (const LegendItem& item : items) {
    const double w = 16 + kCharWidth * static_cast<double>(item.name.size()) + 14;
    if (at > x && at + w > x + width) {
      at = x;
      row += 16;
    }
    const std::string mark =
        item.line
            ? "<line x1=\"" + Num(at) + "\" y1=\"" + Num(row - 4) + "\" x2=\"" + Num(at + 12) + "\" y2=\"" +
                  Num(row - 4) + "\" stroke=\"" + item.color + "\" stroke-width=\"2\"/>"
            : "<rect x=\"" + Num(at) + "\" y=\"" + Num(row - 9) + "\" width=\"12\" height=\"10\" fill=\"" +
                  item.color + "\"" + (item.dashed ? " stroke=\"#555\" stroke-dasharray=\"2 1\"" : "") + "/>";
    legend.svg +=
        "<g class=\"legend-item\">" + mark + SvgText(at + 16, row, item.name, "class=\"label\"") + "</g>";
    at += w;
  }
  legend.svg += "</g>";
  legend.height = row - y + 16;
  return legend;
}

}  // namespace gpuprof::cli::html
