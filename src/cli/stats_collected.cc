#include "cli/stats_collected.h"

#include <string>

#include "base/utf8.h"
#include "cli/findings_output.h"
#include "cli/report.h"

namespace gpuprof::cli {
namespace {

using Align = TextTable::Align;

constexpr std::size_t kMaxNameChars = 120;

std::string Short(const std::string& raw) { return ShortName(raw, kMaxNameChars); }

std::string StackText(const std::vector<std::string>& frames) {
  std::string text;
  for (const std::string& frame : frames) text += (text.empty() ? "" : " < ") + frame;
  return text;
}

}  // namespace

void PrintLostRecords(std::ostream& out, const db::CollectedStats& collected) {
  if (!collected.lost_problem.empty()) {
    out << "Records lost before the profile: unreadable (" << base::PrintableText(collected.lost_problem)
        << ")\n\n";
  }
  if (collected.lost.empty()) return;
  std::uint64_t total = 0;
  for (const db::LostRecordsStat& lost : collected.lost) total += lost.records;
  out << "Records lost before the profile: " << total
      << " (the figures below miss them; the time they cover may look idle)\n";
  TextTable table({{"records", Align::kRight}, {"lost in", Align::kLeft}});
  for (const db::LostRecordsStat& lost : collected.lost) {
    table.AddRow({std::to_string(lost.records), Short(lost.text)});
  }
  table.Print(out, "  ");
  out << "\n";
}

void PrintOpStacks(std::ostream& out, const db::CollectedStats& collected) {
  if (collected.op_stacks.empty()) {
    out << "Call stacks of the top ops: no data (" << collected.stacks_absent
        << "; record them with --with-stack)\n";
    return;
  }
  out << "Call stacks of the top ops by self time (the costliest stack of each, innermost frame first)\n";
  TextTable table({{"calls", Align::kRight},
                   {"of", Align::kRight},
                   {"ms", Align::kRight},
                   {"op", Align::kLeft},
                   {"called from", Align::kLeft}});
  for (const db::OpStackStat& stack : collected.op_stacks) {
    table.AddRow({std::to_string(stack.calls), std::to_string(stack.op_calls), FormatMillis(stack.total_ns),
                  Short(stack.op), Short(StackText(stack.frames))});
  }
  table.Print(out, "  ");
}

void PrintModules(std::ostream& out, const db::CollectedStats& collected) {
  if (collected.top_modules.empty()) {
    out << "Modules: no data (" << collected.modules_absent << ")\n";
    return;
  }
  out << "Modules by host time (" << collected.top_modules.size() << " of " << collected.module_names
      << " modules; forward passes; a module's time includes the modules inside it"
      << (collected.module_gpu ? "; device ms: the kernels its ops launched" : "; no kernels linked to ops")
      << ")\n";
  TextTable table({{"calls", Align::kRight},
                   {"host ms", Align::kRight},
                   {"device ms", Align::kRight},
                   {"kernels", Align::kRight},
                   {"module", Align::kLeft}});
  for (const db::ModuleStat& module : collected.top_modules) {
    table.AddRow({std::to_string(module.calls), FormatMillis(module.host_ns),
                  collected.module_gpu ? FormatMillis(module.gpu_ns) : "-",
                  collected.module_gpu ? std::to_string(module.tasks) : "-", Short(module.name)});
  }
  table.Print(out, "  ");
}

void AddCollectedJson(nlohmann::ordered_json* profile, const db::CollectedStats& collected) {
  nlohmann::ordered_json lost = nlohmann::ordered_json::array();
  for (const db::LostRecordsStat& l : collected.lost) {
    lost.push_back({{"source", l.source}, {"what", l.text}, {"records", l.records}});
  }
  nlohmann::ordered_json stacks = nlohmann::ordered_json::array();
  for (const db::OpStackStat& s : collected.op_stacks) {
    nlohmann::ordered_json frames = nlohmann::ordered_json::array();
    for (const std::string& frame : s.frames) frames.push_back(base::PrintableText(frame));
    stacks.push_back({{"op", base::PrintableText(s.op)},
                      {"calls", s.calls},
                      {"op_calls", s.op_calls},
                      {"total_ms", JsonMs(s.total_ns)},
                      {"frames", std::move(frames)}});
  }
  nlohmann::ordered_json modules = nlohmann::ordered_json::array();
  for (const db::ModuleStat& m : collected.top_modules) {
    nlohmann::ordered_json row = {
        {"name", base::PrintableText(m.name)}, {"calls", m.calls}, {"host_ms", JsonMs(m.host_ns)}};
    row["device_ms"] =
        collected.module_gpu ? nlohmann::ordered_json(JsonMs(m.gpu_ns)) : nlohmann::ordered_json(nullptr);
    row["kernels"] = collected.module_gpu ? nlohmann::ordered_json(m.tasks) : nlohmann::ordered_json(nullptr);
    modules.push_back(std::move(row));
  }
  (*profile)["lost_records"] =
      collected.lost_counted ? nlohmann::ordered_json(std::move(lost)) : nlohmann::ordered_json(nullptr);
  (*profile)["op_stacks"] = std::move(stacks);
  (*profile)["modules"] = std::move(modules);
}

}  // namespace gpuprof::cli
