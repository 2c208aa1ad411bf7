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

void PrintTable(std::ostream& out, const char* title, const std::vector<db::ComparedFigure>& rows,
                std::uint64_t compared, std::uint64_t changed) {
  out << title << " (" << compared << " compared, " << changed << " changed beyond the noise; per step)\n";
  if (rows.empty()) {
    out << "  none in either profile\n";
    return;
  }
  using Align = TextTable::Align;
  TextTable table({{"", Align::kLeft},
                   {"A ms", Align::kRight},
                   {"B ms", Align::kRight},
                   {"delta ms", Align::kRight},
                   {"delta %", Align::kRight},
                   {"noise ms", Align::kRight},
                   {"calls A/B", Align::kRight},
                   {"name", Align::kLeft}});
  for (const db::ComparedFigure& f : rows) {
    table.AddRow({f.changed ? "changed" : "", Number(f.a_mean), Number(f.b_mean), Signed(f.delta),
                  Signed(f.delta_percent, 1), Number(f.noise),
                  std::to_string(f.a_calls) + "/" + std::to_string(f.b_calls), ShortName(f.name)});
  }
  table.Print(out, "  ");
}

nlohmann::ordered_json FigureJson(const db::ComparedFigure& f) {
  return {{"kind", f.kind},         {"name", base::PrintableText(f.name)},
          {"a_mean", f.a_mean},     {"b_mean", f.b_mean},
          {"a_stddev", f.a_stddev}, {"b_stddev", f.b_stddev},
          {"a_calls", f.a_calls},   {"b_calls", f.b_calls},
          {"delta", f.delta},       {"delta_percent", f.delta_percent},
          {"noise", f.noise},       {"changed", f.changed}};
}

}  // namespace

void PrintDiff(std::ostream& out, const db::ProfileDiff& diff) {
  out << "gpuprof diff\n  A: " << base::PrintableText(diff.a_path)
      << "\n  B: " << base::PrintableText(diff.b_path) << "\n  steps compared: A " << diff.a_steps << ", B "
      << diff.b_steps << "\n";
  if (!diff.note.empty()) out << "  note: " << diff.note << "\n";
  const db::ComparedFigure& s = diff.step;
  out << "\nStep time: A " << Number(s.a_mean) << " ± " << Number(s.a_stddev) << " ms, B " << Number(s.b_mean)
      << " ± " << Number(s.b_stddev) << " ms: " << Signed(s.delta) << " ms (" << Signed(s.delta_percent, 1)
      << " %), " << (s.changed ? "changed" : "within the noise (" + Number(s.noise) + " ms)") << "\n\n";
  PrintTable(out, "Ops by name and input shapes", diff.ops, diff.ops_compared, diff.ops_changed);
  out << "\n";
  PrintTable(out, "Kernels", diff.kernels, diff.kernels_compared, diff.kernels_changed);
  for (const db::ComparedFigure& m : diff.memory) {
    out << "\nMemory: " << m.name << ": A " << FormatBytes(static_cast<std::uint64_t>(m.a_mean)) << ", B "
        << FormatBytes(static_cast<std::uint64_t>(m.b_mean)) << " (" << Signed(m.delta_percent, 1) << " %)"
        << (m.changed ? ", changed" : "") << "\n";
  }
}

nlohmann::ordered_json DiffJson(const db::ProfileDiff& diff) {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const db::ComparedFigure& f : diff.ops) ops.push_back(FigureJson(f));
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const db::ComparedFigure& f : diff.kernels) kernels.push_back(FigureJson(f));
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (const db::ComparedFigure& f : diff.memory) memory.push_back(FigureJson(f));
  nlohmann::ordered_json out = {{"a", diff.a_path},
                                {"b", diff.b_path},
                                {"a_steps", diff.a_steps},
                                {"b_steps", diff.b_steps},
                                {"step", FigureJson(diff.step)},
                                {"ops_compared", diff.ops_compared},
                                {"ops_changed", diff.ops_changed},
                                {"ops", std::move(ops)},
                                {"kernels_compared", diff.kernels_compared},
                                {"kernels_changed", diff.kernels_changed},
                                {"kernels", std::move(kernels)},
                                {"memory", std::move(memory)}};
  if (!diff.note.empty()) out["note"] = diff.note;
  return out;
}

}  // namespace gpuprof::cli
