// The report's range-replay section: per replayed range the step roofline (every kernel a dot on
// its device's roofline, area ∝ time) beside the per-kernel table of `gpuprof stats`
// (db/range_stats.h is the one source of both).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/html_report.h"
#include "cli/html_report_parts.h"
#include "cli/html_table.h"
#include "cli/page_names.h"
#include "cli/report.h"
#include "db/device_roofs.h"
#include "db/range_stats.h"

namespace gpuprof::cli::html {
namespace {

// What a dot needs and how to collect it (docs/metrics.md; Nsight Compute's roofline inputs).
constexpr const char* kRooflineMetrics =
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum,sm__sass_thread_inst_executed_op_fmul_pred_on.sum,"
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum,dram__bytes.sum,gpu__time_duration.sum";

constexpr double kWidth = 720;
constexpr double kHeight = 400;
constexpr double kLeft = 70;
constexpr double kRight = 20;
constexpr double kTop = 12;
constexpr double kBottom = 40;
constexpr double kMaxRadius = 18;

struct Dot {
  const db::RangeKernel* kernel;
  double intensity;  // FLOP/byte
  double flops_per_s;
};

double DecadeBelow(double v) { return std::pow(10.0, std::floor(std::log10(v))); }
double DecadeAbove(double v) { return std::pow(10.0, std::ceil(std::log10(v))); }

// Log-log axes over [x_lo, x_hi] × [y_lo, y_hi].
struct Axes {
  double x_lo, x_hi, y_lo, y_hi;
  double X(double x) const {
    return kLeft + (std::log10(x) - std::log10(x_lo)) / (std::log10(x_hi) - std::log10(x_lo)) *
                       (kWidth - kLeft - kRight);
  }
  double Y(double y) const {
    return kHeight - kBottom -
           (std::log10(y) - std::log10(y_lo)) / (std::log10(y_hi) - std::log10(y_lo)) *
               (kHeight - kTop - kBottom);
  }
};

std::string Si(double value) {
  static constexpr const char* kPrefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (value >= 1000 && i < 5) {
    value /= 1000;
    ++i;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%g%s", value, kPrefixes[i]);
  return text;
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) +
         "\" " + attrs + "/>";
}

std::string Label(double x, double y, const std::string& text, const std::string& anchor = "start") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" class=\"label\" text-anchor=\"" + anchor + "\">" +
         HtmlEscape(text) + "</text>";
}

// A horizontal compute roof from its ridge with `bandwidth` to the right edge, and its label.
std::string ComputeRoof(const Axes& axes, double peak, double bandwidth, const std::string& name,
                        const char* color) {
  const double ridge = std::max(axes.x_lo, peak / bandwidth);
  return Line(axes.X(ridge), axes.Y(peak), axes.X(axes.x_hi), axes.Y(peak),
              "stroke=\"" + std::string(color) + "\" stroke-width=\"1.5\" class=\"roof\"") +
         Label(kWidth - kRight - 2, axes.Y(peak) - 4, name + " " + Si(peak) + "FLOP/s", "end");
}

// A bandwidth roof from the left edge (or the bottom) up to the highest compute roof.
std::string MemoryRoof(const Axes& axes, double bandwidth, double top, const std::string& name) {
  const double x_start = std::max(axes.x_lo, axes.y_lo / bandwidth);
  const double x_end = std::min(axes.x_hi, top / bandwidth);
  if (x_end <= x_start) return "";
  return Line(axes.X(x_start), axes.Y(x_start * bandwidth), axes.X(x_end), axes.Y(x_end * bandwidth),
              "stroke=\"#59a14f\" stroke-width=\"1.5\" class=\"roof\"") +
         Label(axes.X(x_start) + 4, axes.Y(x_start * bandwidth) - 6, name + " " + Si(bandwidth) + "B/s");
}

}  // namespace

std::string StepRoofline(const std::vector<db::RangeKernel>& kernels, const std::string& device_name) {
  std::vector<Dot> dots;
  double longest = 0;
  for (const db::RangeKernel& k : kernels) {
    if (!k.flops || !k.dram_bytes || !k.duration_ns || *k.flops <= 0 || *k.dram_bytes <= 0 ||
        *k.duration_ns <= 0) {
      continue;
    }
    dots.push_back({&k, *k.flops / *k.dram_bytes, *k.flops / (*k.duration_ns * 1e-9)});
    longest = std::max(longest, *k.duration_ns);
  }
  if (dots.empty()) {
    return Absent("Step roofline",
                  "no kernel of this range has FLOP and DRAM byte counts; replay with --metrics " +
                      std::string(kRooflineMetrics) + " (add the op_h{add,mul,fma} ones for FP16)");
  }
  const std::optional<db::DeviceRoofs> roofs = db::FindDeviceRoofs(device_name);
  double x_min = dots.front().intensity;
  double x_max = x_min;
  double y_min = dots.front().flops_per_s;
  double y_max = y_min;
  for (const Dot& d : dots) {
    x_min = std::min(x_min, d.intensity);
    x_max = std::max(x_max, d.intensity);
    y_min = std::min(y_min, d.flops_per_s);
    y_max = std::max(y_max, d.flops_per_s);
  }
  if (roofs) {
    y_max = std::max(y_max, roofs->tensor_fp16_flops);
    x_max = std::max(x_max, 10 * roofs->tensor_fp16_flops / roofs->dram_bytes_per_s);
  }
  Axes axes{DecadeBelow(x_min / 2), DecadeAbove(x_max * 2), DecadeBelow(y_min / 2), DecadeAbove(y_max * 2)};
  std::string svg = "<svg class=\"chart roofline\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(kHeight) +
                    "\" width=\"" + Num(kWidth) + "\" height=\"" + Num(kHeight) +
                    "\" role=\"img\" aria-label=\"step roofline\">";
  // Decade grid and tick labels.
  for (double x = axes.x_lo; x <= axes.x_hi * 1.001; x *= 10) {
    svg += Line(axes.X(x), kTop, axes.X(x), kHeight - kBottom, "stroke=\"#eee\"") +
           Label(axes.X(x), kHeight - kBottom + 14, Si(x), "middle");
  }
  for (double y = axes.y_lo; y <= axes.y_hi * 1.001; y *= 10) {
    svg += Line(kLeft, axes.Y(y), kWidth - kRight, axes.Y(y), "stroke=\"#eee\"") +
           Label(kLeft - 4, axes.Y(y) + 4, Si(y), "end");
  }
  svg +=
      Label((kLeft + kWidth - kRight) / 2, kHeight - 6, "arithmetic intensity (FLOP/byte, DRAM)", "middle") +
      "<text x=\"12\" y=\"" + Num((kTop + kHeight - kBottom) / 2) +
      "\" class=\"label\" text-anchor=\"middle\" transform=\"rotate(-90 12 " +
      Num((kTop + kHeight - kBottom) / 2) + ")\">achieved FLOP/s</text>";
  if (roofs) {
    svg += MemoryRoof(axes, roofs->dram_bytes_per_s, roofs->tensor_fp16_flops, "DRAM");
    if (roofs->l2_bytes_per_s)
      svg += MemoryRoof(axes, *roofs->l2_bytes_per_s, roofs->tensor_fp16_flops, "L2");
    svg += ComputeRoof(axes, roofs->fp32_flops, roofs->dram_bytes_per_s, "FP32", "#4e79a7");
    svg +=
        ComputeRoof(axes, roofs->tensor_fp16_flops, roofs->dram_bytes_per_s, "FP16/BF16 tensor", "#b07aa1");
  }
  // Longest first, so short kernels' small dots stay on top and hoverable.
  std::vector<const Dot*> order;
  for (const Dot& d : dots) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(), [](const Dot* a, const Dot* b) {
    return *a->kernel->duration_ns > *b->kernel->duration_ns;
  });
  for (const Dot* d : order) {
    const db::RangeKernel& k = *d->kernel;
    const double radius = std::max(2.0, kMaxRadius * std::sqrt(*k.duration_ns / longest));  // area ∝ time
    svg += "<circle class=\"roofline-dot\" cx=\"" + Num(axes.X(d->intensity)) + "\" cy=\"" +
           Num(axes.Y(d->flops_per_s)) + "\" r=\"" + Num(radius) +
           "\" fill=\"#f28e2b\" fill-opacity=\"0.6\" stroke=\"#9c755f\"><title>#" + std::to_string(k.place) +
           " " + HtmlEscape(ShownName(k.kernel)) + ": " + FormatMicros(*k.duration_ns) + " µs, " +
           Fixed(d->intensity, 3) + " FLOP/byte, " + Si(d->flops_per_s) + "FLOP/s, " +
           std::string(db::BottleneckName(k.bottleneck)) + "</title></circle>";
  }
  svg += "</svg>";
  std::string note = "<p class=\"note\">" + std::to_string(dots.size()) + " of " +
                     std::to_string(kernels.size()) +
                     " kernels drawn (dot area ∝ time; FLOPs: FP32 and FP16 thread instructions, fma counted "
                     "twice, as Nsight Compute's roofline counts them)";
  if (dots.size() < kernels.size()) note += "; the others lack FLOP or DRAM byte counts";
  note += roofs ? ". Roofs: " + HtmlEscape(roofs->model) + " datasheet peaks (dense)"
                : ". No roofs: the device '" + HtmlEscape(device_name) +
                      "' is not in gpuprof's table of datasheet peaks (src/db/device_roofs.cc)";
  if (roofs && !roofs->l2_bytes_per_s) note += "; no L2 roof (its bandwidth is not published)";
  return svg + note + ".</p>";
}

std::string Ranges(const HtmlReportInput& input) {
  std::string out;
  for (const db::ReportDb& db : input.dbs) {
    const db::ProfileStats& s = db.stats;
    const std::vector<db::RangeKernel>& kernels = s.range_kernels;
    if (kernels.empty()) continue;
    const std::string id = std::to_string(&db - input.dbs.data());
    out += "<h3>" + HtmlEscape(DbLabel(db)) + ": range replay (" + std::to_string(s.range_count) +
           (s.more_ranges ? " first" : "") + " range(s))</h3>";
    for (std::size_t begin = 0; begin < kernels.size();) {
      const std::size_t end = db::RangeEnd(kernels, begin);
      const db::RangeKernel& first = kernels[begin];
      std::string device_name;
      for (const auto& [device, name] : s.device_names) {
        if (device == first.device) device_name = name;
      }
      const std::string range_id =
          id + "-" + std::to_string(first.device) + "-" + std::to_string(first.range_id);
      out += "<h4>Range " + std::to_string(first.range_id) + " (device " + std::to_string(first.device) +
             (device_name.empty() ? "" : ", " + HtmlEscape(device_name)) + ")</h4>";
      if (!first.replayed) {
        out += Absent("Range", "not replayed: " + first.decline_reason);
        begin = end;
        continue;
      }
      const std::vector<db::RangeKernel> range(kernels.begin() + static_cast<std::ptrdiff_t>(begin),
                                               kernels.begin() + static_cast<std::ptrdiff_t>(end));
      HtmlTable table("range-" + range_id, {{"#", true},
                                            {"kernel", false},
                                            {"median µs", true},
                                            {"min–max µs", false},
                                            {"spread %", true},
                                            {"compute %", true},
                                            {"memory %", true},
                                            {"occupancy %", true},
                                            {"bound", false}});
      auto pct = [](const std::optional<double>& v) { return v ? N(Fixed(*v, 1), *v) : N("-", -1); };
      for (const db::RangeKernel& k : range) {
        const bool timed = k.median_ns.has_value();
        const double median = timed ? static_cast<double>(*k.median_ns) : -1;
        table.AddRow({N(std::to_string(k.place), static_cast<double>(k.place)), T(k.kernel, "range-kernel"),
                      N(timed ? FormatMicros(median) : "-", median),
                      T(timed ? FormatMicros(static_cast<double>(k.min_ns)) + "–" +
                                    FormatMicros(static_cast<double>(k.max_ns))
                              : "-"),
                      pct(k.spread_pct), pct(k.compute_pct), pct(k.memory_pct), pct(k.occupancy_pct),
                      T(std::string(db::BottleneckName(k.bottleneck)))});
      }
      out += "<div class=\"range-row\">" + StepRoofline(range, device_name) + table.Html() + "</div>";
      begin = end;
    }
  }
  if (out.empty()) return "";
  return "<section id=\"ranges\"><h2>Range replay: step roofline</h2>" + out + "</section>";
}

}  // namespace gpuprof::cli::html
