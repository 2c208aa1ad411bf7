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

// ---- Charts (SVG): html_charts.cc ---------------------------------------------------------------

// Horizontal stacked bars, one per step: compute, communication not overlapped, idle.
std::string StepBars(const db::RankStats& split);

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
// pans (drag) and resets (double-click) by its viewBox.
std::string TimelineSvg(const db::StepTimeline& step);

// The step time of each rank, a cell per step (the first 100), darker when slower. `cluster`
// has steps.
std::string StepHeatMap(const db::ClusterStats& cluster);

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
