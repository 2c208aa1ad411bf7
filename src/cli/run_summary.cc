#include "cli/run_summary.h"

#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "cli/db_commands.h"
#include "cli/findings_output.h"
#include "cli/report.h"
#include "cli/result_file.h"
#include "cli/run_application.h"
#include "cli/stats_csv.h"
#include "db/findings.h"
#include "db/output_layout.h"
#include "db/profile_reader.h"
#include "db/stats.h"
#include "gpuprof/status.h"

namespace gpuprof::cli {
namespace {

// Rows per table in the summary: enough to see where time goes; `gpuprof stats` shows more.
constexpr std::size_t kSummaryRows = 5;
constexpr std::size_t kSummaryFindings = 3;
constexpr std::size_t kMaxNameChars = 100;

std::string Ms(std::int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(ns) / 1e6);
  return text;
}

std::string Percent(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// `path` as one shell word to paste: '...' when it is printable, else bash's $'...' with the
// control characters as escapes (a newline in -o or in the worker name must not break the line).
std::string ShellWord(std::string_view path) {
  std::string quoted;
  for (char c : path) {
    if (c == '\\' || c == '\'') quoted.push_back('\\');
    quoted.push_back(c);
  }
  const std::string printable = base::PrintableText(quoted);
  if (printable == quoted) {
    std::string word = "'";
    for (char c : path) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return word + "'";
  }
  return "$'" + printable + "'";
}

std::string ShortName(std::string_view raw) { return cli::ShortName(raw, kMaxNameChars); }

// No kernels (a CPU run): the host ops with the most self time instead, where its time went.
void PrintHostOps(std::ostream& report, const db::ProfileStats& stats) {
  using Align = TextTable::Align;
  report << "  Kernels: none ran on a GPU";
  if (stats.top_ops_by_self.empty()) {
    report << ", and no PyTorch op was recorded\n";
    return;
  }
  report << "; top PyTorch ops by self time on the host (" << stats.op_calls << " calls):\n";
  TextTable table(
      {{"calls", Align::kRight}, {"self ms", Align::kRight}, {"%", Align::kRight}, {"name", Align::kLeft}});
  std::size_t rows = 0;
  for (const db::OpStat& op : stats.top_ops_by_self) {
    if (op.name.rfind("ProfilerStep#", 0) == 0) continue;  // the step itself, not an op to look at
    if (rows++ == kSummaryRows) break;
    table.AddRow({std::to_string(op.totals.calls), Ms(op.totals.self_ns),
                  Percent(op.totals.self_ns, stats.op_self_sum_ns), ShortName(op.name)});
  }
  table.Print(report, "    ");
}

void PrintKernels(std::ostream& report, const db::ProfileStats& stats) {
  using Align = TextTable::Align;
  if (stats.top_kernels.empty()) {
    PrintHostOps(report, stats);
  } else {
    report << "  Top kernels by total time (" << stats.kernel_calls << " launches of " << stats.kernel_names
           << " kernels, " << Ms(stats.kernel_total_ns) << " ms on the device)\n";
    TextTable table({{"calls", Align::kRight},
                     {"total ms", Align::kRight},
                     {"avg µs", Align::kRight},
                     {"%", Align::kRight},
                     {"name", Align::kLeft}});
    for (const db::KernelStat& kernel : stats.top_kernels) {
      table.AddRow({std::to_string(kernel.calls), Ms(kernel.total_ns),
                    FormatMicros(static_cast<double>(kernel.total_ns) / static_cast<double>(kernel.calls)),
                    Percent(kernel.total_ns, stats.kernel_total_ns), ShortName(kernel.name)});
    }
    table.Print(report, "    ");
  }
  if (!stats.task_types.empty()) {
    report << "  Device tasks:";
    bool first = true;
    for (const db::TaskTypeStat& type : stats.task_types) {
      report << (first ? " " : ", ") << type.count << " " << ShortName(type.type) << " (" << Ms(type.total_ns)
             << " ms)";
      first = false;
    }
    report << "\n";
  }
}

void PrintApi(std::ostream& report, const db::ApiSummary& api) {
  using Align = TextTable::Align;
  if (api.top.empty()) {
    report << "  CUDA API: none (" << api.absent << ")\n";
    return;
  }
  report << "  CUDA API: " << api.calls << " calls of " << api.names << " functions, " << Ms(api.total_ns)
         << " ms in total; top by time:\n";
  TextTable table({{"calls", Align::kRight},
                   {"total ms", Align::kRight},
                   {"avg µs", Align::kRight},
                   {"%", Align::kRight},
                   {"name", Align::kLeft}});
  for (const db::ApiStat& stat : api.top) {
    table.AddRow({std::to_string(stat.calls), Ms(stat.total_ns),
                  FormatMicros(static_cast<double>(stat.total_ns) / static_cast<double>(stat.calls)),
                  Percent(stat.total_ns, api.total_ns), ShortName(stat.name)});
  }
  table.Print(report, "    ");
}

// One DB: its path, then its top kernels, device tasks and API time. A DB that cannot be read is
// reported and skipped; it does not change the exit status, which is the application's.
void PrintDbSummary(std::ostream& report, const std::string& path) {
  report << "gpuprof: profile DB: " << base::PrintableText(path) << "\n";
  StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(path);
  if (!reader.ok()) {
    report << "gpuprof: warning: cannot summarize it: " << reader.status().message() << "\n";
    return;
  }
  StatusOr<db::ProfileStats> stats = db::ComputeStats(**reader, db::StatsOptions{kSummaryRows});
  if (!stats.ok()) {
    report << "gpuprof: warning: cannot summarize it: " << stats.status().message() << "\n";
    return;
  }
  StatusOr<db::FindingsReport> findings =
      db::ComputeFindings(**reader, db::ProfileDbFile{path, std::nullopt});
  if (stats->step_count > 0 && findings.ok() && findings->steps_considered > 0 && !findings->whole_run) {
    report << "  Steps: " << stats->step_count << ", "
           << Ms(findings->considered_ns / static_cast<std::int64_t>(findings->steps_considered))
           << " ms each on average";
    if (!findings->warmup_steps.empty()) {
      report << " (step " << findings->warmup_steps.front() << ", " << Ms(findings->warmup_ns)
             << " ms, left out as warm-up)";
    }
    report << "\n";
  }
  PrintKernels(report, *stats);
  StatusOr<db::ApiSummary> api = db::ComputeApiSummary(**reader, kSummaryRows);
  if (!api.ok()) {
    report << "gpuprof: warning: cannot read its CUDA API calls: " << api.status().message() << "\n";
  } else if (!api->top.empty() || !stats->top_kernels.empty()) {
    PrintApi(report, *api);
  }
  if (!findings.ok()) {
    report << "gpuprof: warning: cannot compute its findings: " << findings.status().message() << "\n";
  } else if (!findings->findings.empty()) {
    std::ostringstream block;
    PrintFindings(block, *findings, kSummaryFindings);
    std::istringstream lines(block.str());
    for (std::string line; std::getline(lines, line);) report << "  " << line << "\n";
  }
  report << "  Report: gpuprof report " << ShellWord(path) << "   (an HTML page that opens offline)\n";
  report << "  More: gpuprof stats " << ShellWord(path) << " (or export, check)\n";
}

void PrintReplaySummary(std::ostream& report, const std::string& path) {
  StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(path);
  if (!reader.ok()) return;
  db::StatsOptions options;
  options.top = 50;
  StatusOr<db::ProfileStats> stats = db::ComputeStats(**reader, options);
  if (!stats.ok()) {
    report << "gpuprof: warning: cannot read the replay results: " << stats.status().message() << "\n";
    return;
  }
  PrintReplayStats(report, *stats);
}

}  // namespace

void PrintRunSummary(std::ostream& report, int wait_status, const std::string& result_file,
                     const std::string& out_dir_text, bool replay, bool csv) {
  const int exit_code = ShellExitCode(wait_status);

  if (WIFSIGNALED(wait_status)) {
    report << "gpuprof: the application was killed by " << SignalName(WTERMSIG(wait_status)) << "\n";
  } else if (exit_code != 0) {
    report << "gpuprof: the application exited with status " << exit_code << "\n";
  }

  std::vector<std::string> dbs = ReadResultLines(result_file, db::kResultLineDb);
  for (const std::string& db_path : dbs) {
    PrintDbSummary(report, db_path);
    if (replay) PrintReplaySummary(report, db_path);
  }
  if (csv && !dbs.empty()) {
    // The replayed launches' metric values, as `gpuprof stats --csv OUT` prints them.
    RunStatsCsv(out_dir_text, report, report);
  }
  if (dbs.size() > 1) {
    report << "gpuprof: " << dbs.size() << " profile DBs written under " << base::PrintableText(out_dir_text)
           << "\n"
           << "  All of them (for the ranks of one job, first the step times per rank, the slowest rank and "
              "compute / communication / idle): gpuprof stats "
           << ShellWord(out_dir_text) << "\n";
  }

  std::vector<std::string> partial = UnfinishedDbs(result_file);
  std::vector<std::string> failed_starts = ReadResultLines(result_file, db::kResultLineFailed);
  std::vector<std::string> unfinalized = ReadResultLines(result_file, db::kResultLineUnfinalized);
  if (dbs.empty() && !unfinalized.empty()) {
    report << "gpuprof: no profile DB was finalized: "
           << base::PrintableText(WhyNotFinalized(unfinalized.front(), result_file))
           << (unfinalized.size() > 1 ? " (and " + std::to_string(unfinalized.size() - 1) + " more)" : "")
           << "\n";
  } else if (dbs.empty()) {
    if (!partial.empty()) {
      report
          << "gpuprof: no profile DB was finalized: " << base::PrintableText(partial.front())
          << (partial.size() > 1 ? " (and " + std::to_string(partial.size() - 1) + " more)" : "")
          << " was left unfinished, because a profiled process ended before gpuprof could finish writing it"
          << (WIFSIGNALED(wait_status) ? " (" + SignalName(WTERMSIG(wait_status)) + ")" : "") << "\n";
    } else if (WIFSIGNALED(wait_status)) {
      report << "gpuprof: no profile DB was written: the application was killed by "
             << SignalName(WTERMSIG(wait_status)) << " before any DB was finalized\n";
    } else if (!failed_starts.empty()) {
      // Each process said why (its warning is above); the last line repeats the first reason.
      report << "gpuprof: no profile was recorded: profiling could not start in "
             << base::PrintableText(failed_starts.front())
             << (failed_starts.size() > 1 ? " (and " + std::to_string(failed_starts.size() - 1) + " more)"
                                          : "")
             << "; the application ran unprofiled\n";
    } else if (exit_code != 0) {
      report << "gpuprof: no profile was recorded: the application exited with status " << exit_code
             << " before any profile started (it initialized no CUDA and started no gpuprof.profile)\n";
    } else {
      report
          << "gpuprof: no CUDA activity was collected: the application did not initialize CUDA (a CPU-only "
             "run?)\n";
    }
  } else if (!partial.empty()) {
    report << "gpuprof: note: " << partial.size()
           << " unfinished DB(s) from processes that ended early: " << base::PrintableText(partial.front())
           << (partial.size() > 1 ? ", ..." : "") << "\n";
  }
}

}  // namespace gpuprof::cli
