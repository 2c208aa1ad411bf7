// The report's one-step timeline (html_report_parts.h): ops per thread, tasks per stream, marks and
// the memory curve of one step, zoomed and panned by the page's script.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/page_names.h"
#include "cli/report.h"

namespace gpuprof::cli::html {
namespace {

constexpr double kWidth = 1000;
constexpr int kRow = 14;
constexpr int kMaxDepth = 8;
constexpr std::size_t kMaxLabels = 800;  // bar names drawn over the bars (the longest bars')

// Colours of the ops with the most time in the step, one each (blue and green are the device's and
// the marks'); every other op is grey.
constexpr const char* kOpPalette[] = {"#f28e2b", "#b07aa1", "#76b7b2", "#edc948",
                                      "#ff9da7", "#9c755f", "#e15759", "#bcbd22"};
constexpr const char* kOtherOpColor = "#cfcfcf";
constexpr const char* kMarkColor = "#59a14f";
constexpr const char* kMemoryColor = "#444";

bool IsOpLane(const std::string& lane) { return lane.rfind("thread ", 0) == 0; }

// The lane's name as the page shows it.
std::string LaneTitle(const std::string& lane) {
  if (IsOpLane(lane)) return "host " + lane;
  if (lane == "marks") return "marks (named ranges)";
  return lane;
}

}  // namespace

std::string TimelineSvg(const db::StepTimeline& step) {
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
  std::map<std::string, std::int64_t> op_time;
  bool device = false;
  bool marks = false;
  for (const db::TimelineItem& item : step.items) {
    Lane& lane = lane_of(item.lane);
    lane.rows = std::max(lane.rows, std::min(item.depth, kMaxDepth) + 1);
    if (IsOpLane(item.lane)) {
      op_time[item.name] += item.end_ns - item.start_ns;
    } else if (item.lane == "marks") {
      marks = true;
    } else {
      device = true;
    }
  }
  std::vector<std::pair<std::string, std::int64_t>> ranked(op_time.begin(), op_time.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::map<std::string, std::string> op_color;
  std::vector<LegendItem> legend_items;
  for (std::size_t i = 0; i < ranked.size() && i < std::size(kOpPalette); ++i) {
    op_color[ranked[i].first] = kOpPalette[i];
    legend_items.push_back({kOpPalette[i], std::string(base::Utf8Prefix(ranked[i].first, 48))});
  }
  if (ranked.size() > std::size(kOpPalette)) legend_items.push_back({kOtherOpColor, "other ops"});
  if (device) legend_items.push_back({kComputeColor, "kernels and copies on the device"});
  if (marks) legend_items.push_back({kMarkColor, "marks (named ranges)"});
  if (!step.memory.empty()) legend_items.push_back({kMemoryColor, "memory allocated", true});
  int y = 0;
  for (Lane& lane : lanes) {
    lane.y = y;
    y += lane.rows * kRow + 6;
  }
  const int memory_y = y;
  const int height = y + (step.memory.empty() ? 0 : 50) + 4;
  const double span_ns = static_cast<double>(std::max<std::int64_t>(step.end_ns - step.start_ns, 1));
  auto px = [&](std::int64_t t) { return static_cast<double>(t - step.start_ns) / span_ns * kWidth; };

  std::string lane_names = "<svg class=\"lanes\" width=\"160\" height=\"" + std::to_string(height) + "\">";
  for (const Lane& lane : lanes) {
    lane_names += SvgText(0, lane.y + 11, LaneTitle(lane.name), "class=\"label lane-name\"");
  }
  std::int64_t memory_top = 0;  // the label says 0 B for a step without allocations
  for (const db::MemoryPoint& p : step.memory) memory_top = std::max(memory_top, p.allocated);
  if (!step.memory.empty()) {
    lane_names += SvgText(0, memory_y + 20, "memory allocated", "class=\"label lane-name\"") +
                  SvgText(0, memory_y + 34, "0 to " + FormatBytes(static_cast<std::uint64_t>(memory_top)),
                          "class=\"label\"");
  }
  lane_names += "</svg>";

  std::string bars = "<svg class=\"zoomable\" data-full=\"" + Num(kWidth) + "\" viewBox=\"0 0 " +
                     Num(kWidth) + " " + std::to_string(height) + "\" width=\"" + Num(kWidth) +
                     "\" height=\"" + std::to_string(height) +
                     "\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"timeline of step " +
                     std::to_string(step.step_id) + "\">";
  // Which bars get their name written over them: the longest, which are the ones wide enough.
  std::vector<std::size_t> by_length(step.items.size());
  for (std::size_t i = 0; i < by_length.size(); ++i) by_length[i] = i;
  std::stable_sort(by_length.begin(), by_length.end(), [&](std::size_t a, std::size_t b) {
    return step.items[a].end_ns - step.items[a].start_ns > step.items[b].end_ns - step.items[b].start_ns;
  });
  if (by_length.size() > kMaxLabels) by_length.resize(kMaxLabels);
  std::sort(by_length.begin(), by_length.end());
  std::string labels = "<svg class=\"timeline-labels\" width=\"" + Num(kWidth) + "\" height=\"" +
                       std::to_string(height) + "\">";
  std::size_t next_label = 0;
  for (std::size_t i = 0; i < step.items.size(); ++i) {
    const db::TimelineItem& item = step.items[i];
    const Lane& lane = lane_of(item.lane);
    const double x = px(item.start_ns);
    const double w = std::max(px(item.end_ns) - x, 0.3);
    const int row_y = lane.y + std::min(item.depth, kMaxDepth) * kRow;
    std::string color = kOtherOpColor;
    if (item.lane == "marks") {
      color = kMarkColor;
    } else if (!IsOpLane(item.lane)) {
      color = kComputeColor;
    } else if (auto it = op_color.find(item.name); it != op_color.end()) {
      color = it->second;
    }
    const std::string name = ShownName(item.name, item.name_bytes);
    bars += "<rect x=\"" + Fixed(x, 3) + "\" y=\"" + std::to_string(row_y) + "\" width=\"" + Fixed(w, 3) +
            "\" height=\"" + std::to_string(kRow - 1) + "\" fill=\"" + color + "\"><title>" +
            HtmlEscape(name) + ": " + FormatMicros(static_cast<double>(item.end_ns - item.start_ns)) +
            " µs</title></rect>";
    if (next_label < by_length.size() && by_length[next_label] == i) {
      ++next_label;
      // Shown where it fits (the page's script measures and moves it on zoom); this guess of
      // 5.5 px a character is for a page read without its script.
      const bool fits = w >= 5.5 * static_cast<double>(name.size()) + 4;
      labels += "<text class=\"bar-name\" data-a=\"" + Fixed(x, 3) + "\" data-b=\"" + Fixed(x + w, 3) +
                "\" x=\"" + Fixed(x + 2, 2) + "\" y=\"" + std::to_string(row_y + 10) + "\"" +
                (fits ? "" : " display=\"none\"") + ">" + HtmlEscape(name) + "</text>";
    }
  }
  if (!step.memory.empty()) {
    std::string d;
    for (const db::MemoryPoint& p : step.memory) {
      const double my = memory_y + 45 -
                        40.0 * static_cast<double>(p.allocated) /
                            static_cast<double>(std::max<std::int64_t>(memory_top, 1));
      d += (d.empty() ? "M" : " L") + Fixed(px(p.time_ns), 2) + " " + Fixed(my, 2);
    }
    bars += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + kMemoryColor +
            "\" stroke-width=\"1\" vector-effect=\"non-scaling-stroke\"><title>allocated, up to " +
            FormatBytes(static_cast<std::uint64_t>(memory_top)) + "</title></path>";
  }
  bars += "</svg>";
  labels += "</svg>";

  // The time axis below the bars; the page's script redraws its ticks for the part zoomed into.
  const Unit unit = TimeUnitFor(span_ns);
  const std::vector<double> values = NiceTicks(0, span_ns / unit.scale, 8);
  std::vector<AxisTick> ticks;
  for (double v : values) ticks.push_back({v * unit.scale / span_ns * kWidth, TickLabel(v, values)});
  LegendSvg legend = Legend(legend_items, 0, 58, kWidth);
  const double axis_height = 58 + legend.height;
  const std::string axis =
      // 20 px on either side of the bars' width, for the first and last tick's labels.
      "<svg class=\"timeline-axis\" data-span-ns=\"" + Fixed(span_ns, 0) + "\" viewBox=\"-20 0 " +
      Num(kWidth + 40) + " " + Num(axis_height) + "\" width=\"" + Num(kWidth + 40) + "\" height=\"" +
      Num(axis_height) + "\">" +
      XAxis(ticks, 4, 0, kWidth, std::string("time since the step started (") + unit.name + ")") +
      legend.svg + "</svg>";
  return "<div class=\"timeline-row\">" + lane_names + "<div class=\"timeline-plot\">" + bars + labels +
         axis + "</div></div>";
}

}  // namespace gpuprof::cli::html
