#include "cli/html_collected.h"

#include <string>

#include "cli/html_report_parts.h"
#include "cli/html_table.h"

namespace gpuprof::cli::html {
namespace {

std::string StackText(const std::vector<std::string>& frames) {
  std::string text;
  for (const std::string& frame : frames) text += (text.empty() ? "" : " < ") + frame;
  return text;
}

}  // namespace

std::string LostRecords(const HtmlReportInput& input) {
  std::string rows;
  for (const db::ReportDb& db : input.dbs) {
    for (const db::LostRecordsStat& lost : db.stats.collected.lost) {
      rows += "<tr><td>" + HtmlEscape(DbLabel(db)) + "</td><td class=\"num\" data-figure=\"lost-records\">" +
              std::to_string(lost.records) + "</td><td>" + HtmlEscape(lost.text) + "</td></tr>";
    }
  }
  if (rows.empty()) return "";
  return "<section id=\"lost\" class=\"lost\"><h2>Records lost before the profile</h2><p>The figures below "
         "miss these records; the time they cover may look idle.</p><table><thead><tr><th>profile</th><th "
         "class=\"num\">records</th><th>lost in</th></tr></thead><tbody>" +
         rows + "</tbody></table></section>";
}

std::string StacksAndModules(const HtmlReportInput& input) {
  std::string out = "<section id=\"collected\"><h2>Call stacks and modules</h2>";
  for (const db::ReportDb& db : input.dbs) {
    const db::CollectedStats& c = db.stats.collected;
    const std::string id = std::to_string(&db - input.dbs.data());
    out += "<h3>" + HtmlEscape(DbLabel(db)) + "</h3>";
    if (c.op_stacks.empty()) {
      out += Absent("Call stacks of the top ops", c.stacks_absent + "; record them with --with-stack");
    } else {
      out +=
          "<h4>Call stacks of the top ops by self time (the costliest stack of each, innermost frame "
          "first)</h4>";
      HtmlTable stacks(
          "stacks-" + id,
          {{"op", false}, {"called from", false}, {"calls", true}, {"of calls", true}, {"ms", true}});
      for (const db::OpStackStat& s : c.op_stacks) {
        stacks.AddRow({T(s.op, "stack-op"), T(StackText(s.frames), "stack-frames"),
                       N(std::to_string(s.calls), static_cast<double>(s.calls)),
                       N(std::to_string(s.op_calls), static_cast<double>(s.op_calls)),
                       N(Ms(s.total_ns), static_cast<double>(s.total_ns))});
      }
      out += stacks.Html();
    }
    if (c.top_modules.empty()) {
      out += Absent("Modules", c.modules_absent);
      continue;
    }
    out += "<h4>Modules by host time (" + std::to_string(c.top_modules.size()) + " of " +
           std::to_string(c.module_names) +
           "; forward passes; a module's time includes the modules inside it" +
           (c.module_gpu ? "; device ms: the kernels its ops launched" : "; no kernels linked to ops") +
           ")</h4>";
    HtmlTable modules(
        "modules-" + id,
        {{"module", false}, {"calls", true}, {"host ms", true}, {"device ms", true}, {"kernels", true}});
    for (const db::ModuleStat& m : c.top_modules) {
      modules.AddRow(
          {T(m.name, "module-name"), N(std::to_string(m.calls), static_cast<double>(m.calls)),
           N(Ms(m.host_ns), static_cast<double>(m.host_ns), "module-host-ms"),
           c.module_gpu ? N(Ms(m.gpu_ns), static_cast<double>(m.gpu_ns), "module-device-ms") : N("-", 0),
           c.module_gpu ? N(std::to_string(m.tasks), static_cast<double>(m.tasks)) : N("-", 0)});
    }
    out += modules.Html();
  }
  return out + "</section>";
}

}  // namespace gpuprof::cli::html
