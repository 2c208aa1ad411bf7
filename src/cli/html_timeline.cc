// The report's one-step timeline (html_report_parts.h): ops per thread, tasks per stream, marks and
// the memory curve of one step, zoomed and panned by the page's script.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/page_names.h"
#include "cli/report.h"

namespace gpuprof::cli::html {
namespace {

// A color per name (a hash into a fixed palette), so one op looks the same everywhere.
std::string NameColor(std::string_view name) {
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
                                             "#edc948", "#ff9da7", "#9c755f", "#e15759", "#86bcb6"};
  std::uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return kPalette[hash % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

}  // namespace

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

}  // namespace gpuprof::cli::html
