#include "cli/diff_output.h"

#include <cstdio>
#include <string>

#include "base/utf8.h"
#include "cli/report.h"

namespace gpuprof::cli {
namespace {

constexpr std::size_t kMaxNameChars = 100;

std::string Number(double value, int decimals = 3) { return FormatFixed(value, decimals); }

std::string Signed(double value, int decimals = 3) {
  return (value > 0 ? "+" : "") + FormatFixed(value, decimals);
}

std::string ShortName(const std::string& raw) { return cli::ShortName(raw, kMaxNameChars); }

// How a table's figures read: ms per step, or µs per pass for replayed kernels.
struct TableUnit {
  const char* per;      // "per step"
  const char* unit;     // "ms"
  double scale;         // ms -> unit
  const char* counted;  // "calls"
};
constexpr TableUnit kPerStep{"per step", "ms", 1.0, "calls"};
constexpr TableUnit kPerPass{"per pass", "µs", 1e3, "passes"};

void PrintTable(std::ostream& out, const std::string& title, const std::vector<db::ComparedFigure>& rows,
                std::uint64_t compared, std::uint64_t changed, const TableUnit& unit = kPerStep,
                bool launch_shape = false) {
  out << title << " (" << compared << " compared, " << changed << " changed beyond the noise; " << unit.per
      << ")\n";
  if (rows.empty()) {
    out << "  none in either profile\n";
    return;
  }
  using Align = TextTable::Align;
  const std::string u(unit.unit);
  std::vector<TextTable::Column> columns = {{"", Align::kLeft},
                                            {"A " + u, Align::kRight},
                                            {"B " + u, Align::kRight},
                                            {"delta " + u, Align::kRight},
                                            {"delta %", Align::kRight},
                                            {"noise " + u, Align::kRight},
                                            {std::string(unit.counted) + " A/B", Align::kRight}};
  if (launch_shape) columns.push_back({"grid / block", Align::kLeft});
  columns.push_back({"name", Align::kLeft});
  TextTable table(std::move(columns));
  for (const db::ComparedFigure& f : rows) {
    std::vector<std::string> cells = {f.changed ? "changed" : "",
                                      Number(f.a_mean * unit.scale),
                                      Number(f.b_mean * unit.scale),
                                      Signed(f.delta * unit.scale),
                                      Signed(f.delta_percent, 1),
                                      Number(f.noise * unit.scale),
                                      std::to_string(f.a_calls) + "/" + std::to_string(f.b_calls)};
    if (launch_shape) cells.push_back(f.grid.empty() && f.block.empty() ? "-" : f.grid + " / " + f.block);
    cells.push_back(ShortName(f.name));
    table.AddRow(std::move(cells));
  }
  table.Print(out, "  ");
}

// "Step time: A 12.000 ± 0.100 ms, B ...: +1.000 ms (+8.3 %), changed"
void PrintFigureLine(std::ostream& out, const std::string& title, const db::ComparedFigure& s) {
  out << title << ": A " << Number(s.a_mean) << " ± " << Number(s.a_stddev) << " ms, B " << Number(s.b_mean)
      << " ± " << Number(s.b_stddev) << " ms: " << Signed(s.delta) << " ms (" << Signed(s.delta_percent, 1)
      << " %), " << (s.changed ? "changed" : "within the noise (" + Number(s.noise) + " ms)") << "\n";
}

nlohmann::ordered_json FigureJson(const db::ComparedFigure& f) {
  nlohmann::ordered_json row = {{"kind", f.kind}, {"name", base::PrintableText(f.name)}};
  if (f.kind == "kernel") {
    row["grid"] = f.grid;
    row["block"] = f.block;
  }
  row["a_mean"] = f.a_mean;
  row["b_mean"] = f.b_mean;
  row["a_stddev"] = f.a_stddev;
  row["b_stddev"] = f.b_stddev;
  row["a_calls"] = f.a_calls;
  row["b_calls"] = f.b_calls;
  row["delta"] = f.delta;
  row["delta_percent"] = f.delta_percent;
  row["noise"] = f.noise;
  row["changed"] = f.changed;
  return row;
}

nlohmann::ordered_json RowsJson(const std::vector<db::ComparedFigure>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const db::ComparedFigure& f : rows) out.push_back(FigureJson(f));
  return out;
}

}  // namespace

void PrintDiff(std::ostream& out, const db::ProfileDiff& diff) {
  out << "gpuprof diff\n  A: " << base::PrintableText(diff.a_path)
      << "\n  B: " << base::PrintableText(diff.b_path) << "\n  steps compared: A " << diff.a_steps << ", B "
      << diff.b_steps << "\n";
  if (!diff.note.empty()) out << "  note: " << diff.note << "\n";
  out << "\n";
  PrintFigureLine(out, "Step time", diff.step);
  out << "\n";
  PrintTable(out, "Ops by name and input shapes", diff.ops, diff.ops_compared, diff.ops_changed);
  out << "\n";
  PrintTable(out, "Kernels by name and launch shape", diff.kernels, diff.kernels_compared,
             diff.kernels_changed, kPerStep, /*launch_shape=*/true);
  out << "\n";
  if (diff.has_communication) {
    PrintFigureLine(out, "Communication not overlapped with compute", diff.communication_not_overlapped);
    PrintTable(out, "Collectives by type", diff.communication, diff.communication_compared,
               diff.communication_changed);
  } else {
    out << "Communication: no collective in either profile\n";
  }
  out << "\n";
  if (diff.replay_absent.empty()) {
    PrintTable(out, "Kernel replay, each kernel replayed in both profiles", diff.replay, diff.replay_compared,
               diff.replay_changed, kPerPass);
  } else {
    out << "Kernel replay: " << diff.replay_absent << "\n";
  }
  for (const db::ComparedFigure& m : diff.memory) {
    out << "\nMemory: " << m.name << ": A " << FormatBytes(static_cast<std::uint64_t>(m.a_mean)) << ", B "
        << FormatBytes(static_cast<std::uint64_t>(m.b_mean)) << " (" << Signed(m.delta_percent, 1) << " %)"
        << (m.changed ? ", changed" : "") << "\n";
  }
}

nlohmann::ordered_json DiffJson(const db::ProfileDiff& diff) {
  nlohmann::ordered_json out = {{"a", diff.a_path},
                                {"b", diff.b_path},
                                {"a_steps", diff.a_steps},
                                {"b_steps", diff.b_steps},
                                {"step", FigureJson(diff.step)},
                                {"ops_compared", diff.ops_compared},
                                {"ops_changed", diff.ops_changed},
                                {"ops", RowsJson(diff.ops)},
                                {"kernels_compared", diff.kernels_compared},
                                {"kernels_changed", diff.kernels_changed},
                                {"kernels", RowsJson(diff.kernels)},
                                {"memory", RowsJson(diff.memory)},
                                {"communication_compared", diff.communication_compared},
                                {"communication_changed", diff.communication_changed},
                                {"communication", RowsJson(diff.communication)}};
  out["communication_not_overlapped"] = diff.has_communication ? FigureJson(diff.communication_not_overlapped)
                                                               : nlohmann::ordered_json(nullptr);
  out["replay_compared"] = diff.replay_compared;
  out["replay_changed"] = diff.replay_changed;
  out["replay"] = RowsJson(diff.replay);
  if (!diff.replay_absent.empty()) out["replay_absent"] = diff.replay_absent;
  if (!diff.note.empty()) out["note"] = diff.note;
  return out;
}

}  // namespace gpuprof::cli
