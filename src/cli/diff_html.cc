// `gpuprof diff A B --format html`: db::DiffProfiles' results as one self-contained page (the
// report's head, style and script, html_report_parts.h; its sortable table, html_table.h). Each
// table a section; a row that changed beyond the noise carries class "changed" and says so.
// Formatting only.
#include <string>
#include <vector>

#include "cli/default_output.h"
#include "cli/diff_output.h"
#include "cli/html_report_parts.h"
#include "cli/html_table.h"

namespace gpuprof::cli {
namespace {

using html::HtmlTable;
using html::N;
using html::T;

// ms per step, or µs per pass for replayed kernels.
struct Unit {
  const char* unit;
  double scale;
  const char* counted;
};
constexpr Unit kMs{"ms", 1.0, "calls"};
constexpr Unit kUs{"µs", 1e3, "passes"};

std::string Signed(double value, int decimals) {
  return (value > 0 ? "+" : "") + html::Fixed(value, decimals);
}

std::string FigureTable(const std::string& id, const std::vector<db::ComparedFigure>& rows, const Unit& unit,
                        bool launch_shape) {
  const std::string u(unit.unit);
  std::vector<HtmlTable::Column> columns = {{"", false},
                                            {"A " + u, true},
                                            {"B " + u, true},
                                            {"delta " + u, true},
                                            {"delta %", true},
                                            {"noise " + u, true},
                                            {std::string(unit.counted) + " A", true},
                                            {std::string(unit.counted) + " B", true}};
  if (launch_shape) {
    columns.push_back({"grid", false});
    columns.push_back({"block", false});
  }
  columns.push_back({"name", false});
  HtmlTable table(id, std::move(columns));
  for (const db::ComparedFigure& f : rows) {
    const double a = f.a_mean * unit.scale;
    const double b = f.b_mean * unit.scale;
    const double delta = f.delta * unit.scale;
    const double noise = f.noise * unit.scale;
    std::vector<HtmlTable::Cell> cells = {T(f.changed ? "changed" : ""),
                                          N(html::Fixed(a, 3), a),
                                          N(html::Fixed(b, 3), b),
                                          N(Signed(delta, 3), delta, "delta"),
                                          N(Signed(f.delta_percent, 1), f.delta_percent),
                                          N(html::Fixed(noise, 3), noise),
                                          N(std::to_string(f.a_calls), static_cast<double>(f.a_calls)),
                                          N(std::to_string(f.b_calls), static_cast<double>(f.b_calls))};
    if (launch_shape) {
      cells.push_back(T(f.grid));
      cells.push_back(T(f.block));
    }
    cells.push_back(T(f.name, "name"));
    table.AddRow(std::move(cells), f.changed ? "changed" : "");
  }
  return table.Html();
}

std::string MemoryTable(const std::string& id, const std::vector<db::ComparedFigure>& rows) {
  HtmlTable table(id, {{"", false}, {"A", true}, {"B", true}, {"delta %", true}, {"name", false}});
  for (const db::ComparedFigure& m : rows) {
    table.AddRow(
        {T(m.changed ? "changed" : ""), N(FormatBytes(static_cast<std::uint64_t>(m.a_mean)), m.a_mean),
         N(FormatBytes(static_cast<std::uint64_t>(m.b_mean)), m.b_mean),
         N(Signed(m.delta_percent, 1), m.delta_percent, "delta"), T(m.name, "name")},
        m.changed ? "changed" : "");
  }
  return table.Html();
}

// "<h3>" naming the pair when the page holds several, "" otherwise.
std::string PairHeading(const std::vector<db::ProfileDiff>& pairs, std::size_t i) {
  if (pairs.size() < 2) return "";
  return "<h3>" + HtmlEscape(pairs[i].a_path) + " &rarr; " + HtmlEscape(pairs[i].b_path) + "</h3>";
}

std::string Counts(std::uint64_t compared, std::uint64_t changed, const char* per) {
  return "<p class=\"note\">" + std::to_string(compared) + " compared, " + std::to_string(changed) +
         " changed beyond the noise; " + per + "</p>";
}

}  // namespace

std::string RenderDiffHtml(const std::string& a, const std::string& b,
                           const std::vector<db::ProfileDiff>& pairs) {
  std::string page = html::PageHead(kDiffTitleMark, a + " vs " + b);
  page += "<header><h1>gpuprof diff</h1><p>A: " + HtmlEscape(a) + " &middot; B: " + HtmlEscape(b) +
          " &middot; " + std::to_string(pairs.size()) + " pair(s) of profile DBs</p></header>";
  page +=
      "<nav><a href=\"#step\">Step</a><a href=\"#ops\">Ops</a><a href=\"#kernels\">Kernels</a><a "
      "href=\"#memory\">Memory</a><a href=\"#communication\">Communication</a><a "
      "href=\"#replay\">Replay</a></nav>";
  std::string step = "<section id=\"step\"><h2>Step time</h2>";
  std::string ops = "<section id=\"ops\"><h2>Ops by name and input shapes</h2>";
  std::string kernels = "<section id=\"kernels\"><h2>Kernels by name and launch shape</h2>";
  std::string memory = "<section id=\"memory\"><h2>Peak allocated memory</h2>";
  std::string communication = "<section id=\"communication\"><h2>Communication</h2>";
  std::string replay = "<section id=\"replay\"><h2>Kernel replay</h2>";
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const db::ProfileDiff& d = pairs[i];
    const std::string heading = PairHeading(pairs, i);
    const std::string n = std::to_string(i);
    std::vector<db::ComparedFigure> step_rows = {d.step};
    if (d.has_communication) step_rows.push_back(d.communication_not_overlapped);
    step += heading + "<p class=\"note\">steps compared: A " + std::to_string(d.a_steps) + ", B " +
            std::to_string(d.b_steps) + (d.note.empty() ? "" : "; " + HtmlEscape(d.note)) + "</p>" +
            FigureTable("diff-step-" + n, step_rows, kMs, false);
    ops += heading + Counts(d.ops_compared, d.ops_changed, "ms per step") +
           FigureTable("diff-ops-" + n, d.ops, kMs, false);
    kernels += heading + Counts(d.kernels_compared, d.kernels_changed, "ms per step") +
               FigureTable("diff-kernels-" + n, d.kernels, kMs, true);
    memory += heading + (d.memory.empty() ? html::Absent("Memory", "no peak in both profiles")
                                          : MemoryTable("diff-memory-" + n, d.memory));
    communication += heading;
    if (d.has_communication) {
      communication +=
          Counts(d.communication_compared, d.communication_changed, "ms per step, by collective type") +
          FigureTable("diff-communication-" + n, d.communication, kMs, false);
    } else {
      communication += html::Absent("Communication", "no collective in either profile");
    }
    replay += heading + (d.replay_absent.empty() ? Counts(d.replay_compared, d.replay_changed,
                                                          "µs per pass, kernels replayed in both") +
                                                       FigureTable("diff-replay-" + n, d.replay, kUs, false)
                                                 : html::Absent("Kernel replay", d.replay_absent));
  }
  for (std::string* section : {&step, &ops, &kernels, &memory, &communication, &replay})
    page += *section + "</section>";
  return page + html::PageEnd();
}

}  // namespace gpuprof::cli
