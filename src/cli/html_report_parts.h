// What html_report.cc's page is made of: the colors and short formatters, the SVG charts
// (html_charts.cc) and the page's sections (html_sections.cc); html_report.cc assembles the page,
// its style and its script. Private to src/cli.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/html_report.h"
#include "cli/report.h"
#include "db/cluster_stats.h"
#include "db/report_data.h"

namespace gpuprof::cli::html {

inline constexpr const char* kComputeColor = "#4e79a7";
inline constexpr const char* kCommunicationColor = "#f28e2b";
inline constexpr const char* kIdleColor = "#bab0ac";
inline constexpr const char* kReservedColor = "#e15759";

// report.h's formatters, under the short names the tables here use.
inline std::string Fixed(double value, int decimals) { return FormatFixed(value, decimals); }
inline std::string Ms(std::int64_t ns) { return FormatMillis(ns); }
inline std::string Percent(std::int64_t part, std::int64_t whole) { return FormatPercent(part, whole); }
inline std::string Num(double value) { return Fixed(value, 2); }

inline std::string Absent(std::string_view what, std::string_view why) {
  return "<p class=\"absent\">" + HtmlEscape(what) + ": " + HtmlEscape(why.empty() ? "none" : why) + "</p>";
}

// A page's start up to <body>: the head (charset, the Content-Security-Policy that forbids any
// fetch, the style) with the title `title_mark` + `title` (default_output.h's marks), and its end:
// the script (sortable tables, zoomable timelines) and the closing tags. The report and the diff
// page share them.
std::string PageHead(std::string_view title_mark, std::string_view title);
std::string PageEnd();

// "rank N" (or "rank not set"): a DB's heading on the page.
std::string DbLabel(const db::ReportDb& db);

// ---- Axes and legends (SVG pieces every chart shares): html_axes.cc --------------------------------

// About `count` round values (1, 2 or 5 times a power of ten apart) from the first at or above `lo`
// to the last at or below `hi`.
std::vector<double> NiceTicks(double lo, double hi, int count);
// `value` with as many decimals as the spacing of `ticks` needs ("0", "2.5", "400").
std::string TickLabel(double value, const std::vector<double>& ticks);

// A unit of an axis: values are divided by `scale` and shown with `name`.
struct Unit {
  double scale;
  const char* name;
};
Unit TimeUnitFor(double span_ns);    // ns, µs, ms or s: the one in which `span_ns` reads best
Unit ByteUnitFor(double top_bytes);  // B, KiB, MiB or GiB

struct AxisTick {
  double at;  // the pixel along the axis
  std::string label;
};
std::string SvgText(double x, double y, std::string_view text, std::string_view attrs);
// A horizontal axis at `y` from `x0` to `x1` with its ticks (labels below) and `title` (the
// quantity and its unit) under them: 32 px tall. Classes: axis x-axis, tick, axis-title.
std::string XAxis(const std::vector<AxisTick>& ticks, double y, double x0, double x1, std::string_view title);
// A vertical axis at `x` with tick labels to its left, grid lines to `grid_x1`, and `title` turned
// along the left edge. Classes: axis y-axis, tick, axis-title.
std::string YAxis(const std::vector<AxisTick>& ticks, double x, double y_top, double y_bottom, double grid_x1,
                  std::string_view title);

struct LegendItem {
  std::string color;
  std::string name;
  bool line = false;    // a line (a curve's) instead of a swatch
  bool dashed = false;  // a swatch with a dashed outline
};
struct LegendSvg {
  std::string svg;  // class legend, one legend-item each
  double height;
};
// The items in rows from (x, y), wrapped at `width`.
LegendSvg Legend(const std::vector<LegendItem>& items, double x, double y, double width);

// ---- Charts (SVG): html_charts.cc ---------------------------------------------------------------

// The step bars' time axis, one for every DB of a page, so that a step twice as long draws twice as
// wide on every rank: from 0 to a round value at or above the longest step that is no warm-up (a
// longer one is drawn cut at the axis's end, with its time written beside it).
struct StepScale {
  std::int64_t axis_ns;
  Unit unit;
  bool several_dbs;  // the axis says that it is one for every rank
};
StepScale SharedStepScale(const std::vector<db::ReportDb>& dbs);

// Horizontal stacked bars, one per step (compute, communication not overlapped, idle) on `scale`,
// each with its time; `warmup_steps` (ids) are labelled so.
std::string StepBars(const db::RankStats& split, const StepScale& scale,
                     const std::vector<std::int64_t>& warmup_steps);

// Allocated and reserved bytes over time, one curve pair per device.
std::string MemoryChart(const db::MemoryCurve& curve, std::int64_t origin_ns);

// The launch delays of `db` in power-of-two buckets, with a note; Absent when no task is linked to
// an op.
std::string DelayHistogram(const db::ReportDb& db);

// A pass-duration range on one axis from 0 to `axis_ns`: a bar from min to max, a tick at the median.
std::string SpreadBar(std::int64_t min_ns, std::int64_t median_ns, std::int64_t max_ns, std::int64_t axis_ns);

// A percentage as a bar of 100 px.
std::string PercentBar(double percent);

// One step's ops per thread (nested ops a row deeper), tasks per stream, marks and the memory
// curve: a fixed column of lane names beside a bar chart that the page's script zooms (wheel),
// pans (drag) and resets (double-click) by its viewBox, with the bars' names over them where they
// fit, a time axis (its ticks redrawn by the script for the part shown) and a legend of the colours.
std::string TimelineSvg(const db::StepTimeline& step);

// The step time of each rank, a cell per step (the first 100), darker when slower, with its colour
// scale in ms; `warmup_steps` (ids) are drawn outside the scale. `cluster` has steps.
std::string StepHeatMap(const db::ClusterStats& cluster, const std::vector<std::int64_t>& warmup_steps);

// ---- Sections (each a <section id=...>): html_sections.cc ----------------------------------------

std::string Overview(const HtmlReportInput& input);
std::string Steps(const HtmlReportInput& input);
std::string Timeline(const HtmlReportInput& input);
std::string OpsAndKernels(const HtmlReportInput& input);
std::string Memory(const HtmlReportInput& input);
std::string Replay(const HtmlReportInput& input);
std::string Cluster(const HtmlReportInput& input);

// ---- Range replay (html_ranges.cc) -----------------------------------------------------------------

// Every kernel of one replayed range as a dot on the roofline of `device_name` (NPU_INFO's name):
// x FLOP/byte, y FLOP/s, area ∝ time, hover for the kernel; FP32, FP16/BF16 tensor and DRAM roofs
// (db/device_roofs.h). Without FLOP and byte counts, a line naming the metrics to collect.
std::string StepRoofline(const std::vector<db::RangeKernel>& kernels, const std::string& device_name);
// Per DB and replayed range: the step roofline beside the per-kernel table; "" without ranges.
std::string Ranges(const HtmlReportInput& input);

}  // namespace gpuprof::cli::html
