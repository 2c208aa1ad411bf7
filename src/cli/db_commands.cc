#include "cli/db_commands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "base/interrupt_cleanup.h"
#include "base/utf8.h"
#include "cli/cli11.h"
#include "cli/db_command_common.h"
#include "cli/default_output.h"
#include "cli/diff_output.h"
#include "cli/exit_codes.h"
#include "cli/findings_output.h"
#include "cli/help_formatter.h"
#include "cli/html_report.h"
#include "cli/live_line.h"
#include "cli/report.h"
#include "cli/stats_csv.h"
#include "cli/stats_tables.h"
#include "db/check.h"
#include "db/cluster_findings.h"
#include "db/cluster_stats.h"
#include "db/diff.h"
#include "db/findings.h"
#include "db/output_file.h"
#include "db/output_layout.h"
#include "db/perfetto_export.h"
#include "db/profile_reader.h"
#include "db/report_data.h"
#include "db/stats.h"

namespace gpuprof::cli {
namespace {

constexpr std::size_t kMaxTop = 100000;

int RunStats(const std::string& path, std::size_t top, bool json, bool include_warmup,
             std::string_view progress, std::ostream& out, std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  int exit_code = kExitOk;
  // DBs that do not open are reported once, here, and left out of the cluster summary and of the
  // per-DB sections.
  std::vector<db::ProfileDbFile> readable;
  for (const db::ProfileDbFile& file : resolved->dbs) {
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    readable.push_back(file);
  }
  bool first = true;
  nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
  // The cluster summary's step split of each DB, for its findings (not computed twice). Its DBs
  // without steps have none (WithoutSteps::kNoRows): their findings compute the whole run's.
  std::map<std::string, db::RankStats> splits;
  nlohmann::ordered_json across_ranks;
  if (resolved->dbs.size() >= 2 && readable.size() >= 2) {
    StatusOr<db::ClusterStats> cluster = [&] {
      WorkProgress line(progress, "gpuprof stats", "cluster summary");
      return db::ComputeClusterStats(readable, line.progress());
    }();
    if (cluster.ok()) {
      db::FindingsOptions options;
      options.include_warmup = include_warmup;
      StatusOr<db::ClusterFindings> findings = db::ComputeClusterFindings(*cluster, options);
      if (!findings.ok()) {
        PrintError(err, findings.status());
        exit_code = kExitFailure;
      } else if (json) {
        across_ranks = ClusterFindingsJson(*findings);
      }
      if (!json) {
        PrintCluster(out, path, *cluster, resolved->dbs.size() - readable.size(), top);
        if (findings.ok()) PrintClusterFindings(out, *findings);
        first = false;
      }
      for (db::RankStats& rank : cluster->ranks) splits.emplace(rank.path, std::move(rank));
    } else {
      PrintError(err, cluster.status());
      exit_code = kExitFailure;
    }
  }
  for (std::size_t i = 0; i < readable.size(); ++i) {
    const db::ProfileDbFile& file = readable[i];
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    StatusOr<db::ProfileStats> stats = [&] {
      WorkProgress line(progress, "gpuprof stats", DbOfN(i, readable.size()));
      return db::ComputeStats(**reader, db::StatsOptions{top, line.progress()});
    }();
    if (!stats.ok()) {
      PrintError(err, stats.status());
      exit_code = kExitFailure;
      continue;
    }
    db::FindingsOptions finding_options;
    finding_options.include_warmup = include_warmup;
    auto split = splits.find(file.path);
    StatusOr<db::FindingsReport> findings =
        split != splits.end() && !split->second.steps.empty()
            ? db::ComputeFindings(**reader, split->second, finding_options)
            : db::ComputeFindings(**reader, file, finding_options);
    if (!findings.ok()) {
      PrintError(err, findings.status());
      exit_code = kExitFailure;
      continue;
    }
    if (json) {
      profiles.push_back(StatsJson(*stats, *findings));
      continue;
    }
    if (!first) out << "\n" << std::string(100, '=') << "\n\n";
    first = false;
    PrintStats(out, *stats, &*findings);
  }
  if (json) {
    nlohmann::ordered_json document = {
        {"schema", "gpuprof.stats"}, {"version", kStatsJsonVersion}, {"path", path}, {"profiles", profiles}};
    if (!across_ranks.is_null()) document["across_ranks"] = std::move(across_ranks);
    out << document.dump(2) << "\n";
  }
  return exit_code;
}

int RunExport(const std::string& path, const std::string& format, const std::string& requested_output,
              bool force, std::string_view progress, std::ostream& out, std::ostream& err) {
  std::vector<std::string_view> formats = db::ExportFormats();
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    std::string known;
    for (std::string_view name : formats) known += (known.empty() ? "" : ", ") + std::string(name);
    err << "gpuprof: error: unknown export format '" << format << "'; formats: " << known << "\n"
        << "run 'gpuprof export --help' for the accepted flags and values\n";
    return kExitUsage;
  }
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  // Without -o: beside the profile, as report's page; a file there that an earlier export did not
  // write is the user's, and stays.
  const std::string output =
      requested_output.empty() ? DefaultOutputPath(path, kDefaultTraceName) : requested_output;
  if (requested_output.empty() && !force) {
    if (Status replaceable = CheckDefaultOutputReplaceable(output, DefaultOutput::kTrace);
        !replaceable.ok()) {
      PrintError(err, replaceable);
      return kExitFailure;
    }
  }
  base::InstallInterruptCleanup();  // Ctrl-C or kill leaves no full-size temporary file
  StatusOr<db::ExportSummary> summary = [&] {
    WorkProgress line(progress, "gpuprof export");
    return db::ExportPerfettoTrace(resolved->dbs, output, line.progress());
  }();
  if (!summary.ok()) {
    PrintError(err, summary.status());
    return kExitFailure;
  }
  for (const std::string& note : summary->notes) err << "gpuprof: note: " << note << "\n";
  // With -o - (or /dev/stdout) the trace is standard output: the summary goes to stderr, so the
  // JSON stays valid.
  const bool to_stdout = db::OutputFile::IsStandardOutput(output);
  std::ostream& report = to_stdout ? err : out;
  std::error_code ec;
  const std::string shown = output == "-" ? std::string("standard output")
                            : to_stdout   ? output
                                          : std::filesystem::absolute(output, ec).lexically_normal().string();
  report << "wrote " << shown << " (" << FormatBytes(summary->bytes) << "): " << summary->dbs << " DB(s), "
         << summary->slices << " slices, " << summary->flows << " flows, " << summary->counters
         << " counter samples, " << summary->instants << " instants, " << summary->async_ranges
         << " async ranges\n"
         << "open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing\n";
  return kExitOk;
}

// Where report and `diff --format html` write their page: -o, else `default_name` beside
// `profile`, which must be free or a page the same command wrote (unless --force); what -o names is
// checked before any DB is read (a directory, a dangling link). nullopt after printing why not.
std::optional<std::string> PageOutput(const std::string& profile, const std::string& requested_output,
                                      bool force, std::string_view default_name, DefaultOutput kind,
                                      std::string_view example, std::ostream& err) {
  const std::string output =
      requested_output.empty() ? DefaultOutputPath(profile, default_name) : requested_output;
  if (requested_output.empty() && !force) {
    if (Status replaceable = CheckDefaultOutputReplaceable(output, kind); !replaceable.ok()) {
      PrintError(err, replaceable);
      return std::nullopt;
    }
  }
  if (Status usable = db::OutputFile::ClassifyOutput(output, example).status(); !usable.ok()) {
    PrintError(err, usable);
    return std::nullopt;
  }
  return output;
}

// Writes `page` to `output` (db/output_file.h's rules; `example`: a file name its errors suggest)
// and says where, with `what` it holds; false after printing the error.
bool WritePage(const std::string& output, std::string_view example, const std::string& page,
               const std::string& what, std::ostream& out, std::ostream& err) {
  base::InstallInterruptCleanup();
  StatusOr<std::unique_ptr<db::OutputFile>> file = db::OutputFile::Create(output, example);
  StatusOr<std::uint64_t> bytes = file.ok() ? [&]() -> StatusOr<std::uint64_t> {
    (*file)->buffer()->append(page);
    return (*file)->Commit();
  }()
      : StatusOr<std::uint64_t>(file.status());
  if (!bytes.ok()) {
    PrintError(err, bytes.status());
    return false;
  }
  std::ostream& report = db::OutputFile::IsStandardOutput(output) ? err : out;
  std::error_code ec;
  const std::string shown = output == "-" ? std::string("standard output")
                                          : std::filesystem::absolute(output, ec).lexically_normal().string();
  report << "wrote " << shown << " (" << FormatBytes(*bytes) << "): " << what
         << "; it opens offline in any browser" << (output == "-" ? "" : ": file://" + shown) << "\n";
  return true;
}

int RunReport(const std::string& path, const std::string& requested_output, bool force, std::size_t top,
              std::string_view progress, std::ostream& out, std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  const std::optional<std::string> page_output = PageOutput(path, requested_output, force, kDefaultReportName,
                                                            DefaultOutput::kReport, "report.html", err);
  if (!page_output.has_value()) return kExitFailure;
  const std::string& output = *page_output;
  int exit_code = kExitOk;
  HtmlReportInput input;
  input.path = path;
  std::vector<db::ProfileDbFile> readable;
  for (std::size_t i = 0; i < resolved->dbs.size(); ++i) {
    StatusOr<db::ReportDb> db = [&] {
      WorkProgress line(progress, "gpuprof report", DbOfN(i, resolved->dbs.size()));
      db::ReportOptions options;
      options.top = top;
      options.progress = line.progress();
      return db::ReadReportDb(resolved->dbs[i], options);
    }();
    if (!db.ok()) {
      PrintError(err, db.status());
      exit_code = kExitFailure;
      continue;
    }
    input.dbs.push_back(std::move(db).value());
    readable.push_back(resolved->dbs[i]);
  }
  if (input.dbs.empty()) return kExitFailure;
  std::optional<db::ClusterStats> cluster;
  std::optional<db::ClusterFindings> across;
  if (readable.size() >= 2) {
    StatusOr<db::ClusterStats> computed = [&] {
      WorkProgress line(progress, "gpuprof report", "cluster summary");
      return db::ComputeClusterStats(readable, line.progress());
    }();
    if (computed.ok()) {
      cluster = std::move(computed).value();
      input.cluster = &*cluster;
      StatusOr<db::ClusterFindings> findings = db::ComputeClusterFindings(*cluster);
      if (findings.ok()) {
        across = std::move(findings).value();
        input.across = &*across;
      } else {
        PrintError(err, findings.status());
        exit_code = kExitFailure;
      }
    } else {
      PrintError(err, computed.status());
      exit_code = kExitFailure;
    }
  }
  const std::string what = std::to_string(input.dbs.size()) + " profile DB(s)";
  if (!WritePage(output, "report.html", RenderHtmlReport(input), what, out, err)) return kExitFailure;
  return exit_code;
}

// The analysis.db beside a profile DB, if there is one (a profile copied without it, or written by
// another tool, has none: a note, not a problem). False when it is damaged or has problems.
bool CheckAnalysisBeside(const std::string& db_path, const db::ProfileReader& profile, std::ostream& out,
                         std::ostream& err, std::size_t* problems) {
  const std::string path = (std::filesystem::path(db_path).parent_path() / db::kAnalysisDbName).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    const bool partial = std::filesystem::exists(path + db::kPartialSuffix, ec);
    err << "gpuprof: note: no " << db::kAnalysisDbName << " beside " << db_path
        << (partial ? " (only its .partial: writing it failed; the run's log says why)" : "") << "\n";
    return !partial;
  }
  StatusOr<std::unique_ptr<db::ProfileReader>> analysis =
      db::ProfileReader::Open(path, db::DbKind::kAnalysis);
  StatusOr<db::CheckReport> report =
      analysis.ok() ? db::CheckAnalysisDb(**analysis, profile) : StatusOr<db::CheckReport>(analysis.status());
  if (!report.ok()) {
    PrintError(err, report.status());
    return false;
  }
  for (const db::CheckProblem& problem : report->problems) out << db::FormatProblem(path, problem) << "\n";
  if (!report->problems.empty()) {
    *problems += report->problems.size();
    return false;
  }
  out << "ok: " << path << " (" << report->tables << " tables, " << report->rows << " rows)\n";
  return true;
}

// `gpuprof diff A B`: the DBs of A and B paired in rank order (one pair for two single runs).
// `format`: text, json or html (the page goes to -o, else beside B).
int RunDiff(const std::string& a, const std::string& b, std::size_t top, const std::string& format,
            bool include_warmup, const std::string& requested_output, bool force, std::ostream& out,
            std::ostream& err) {
  if (format != "html" && (!requested_output.empty() || force)) {
    err << "gpuprof: error: -o and --force write the page of --format html; text and JSON go to standard "
           "output (redirect it to keep them)\n"
        << "run 'gpuprof diff --help' for the accepted flags and values\n";
    return kExitUsage;
  }
  std::optional<db::ResolvedProfiles> ra = Resolve(a, err);
  std::optional<db::ResolvedProfiles> rb = Resolve(b, err);
  if (!ra.has_value() || !rb.has_value()) return kExitFailure;
  if (ra->dbs.size() != rb->dbs.size()) {
    err << "gpuprof: error: " << a << " holds " << ra->dbs.size() << " profile DB(s) and " << b << " holds "
        << rb->dbs.size() << "; name one DB or one rank directory on each side to compare them\n";
    return kExitUsage;
  }
  std::optional<std::string> page_output;
  if (format == "html") {
    page_output =
        PageOutput(b, requested_output, force, kDefaultDiffName, DefaultOutput::kDiff, "diff.html", err);
    if (!page_output.has_value()) return kExitFailure;
  }
  db::DiffOptions options;
  options.top = top;
  options.include_warmup = include_warmup;
  std::vector<db::ProfileDiff> diffs;
  int exit_code = kExitOk;
  for (std::size_t i = 0; i < ra->dbs.size(); ++i) {
    StatusOr<db::ProfileDiff> diff = db::DiffProfiles(ra->dbs[i], rb->dbs[i], options);
    if (!diff.ok()) {
      PrintError(err, diff.status());
      exit_code = kExitFailure;
      continue;
    }
    diffs.push_back(std::move(diff).value());
  }
  if (format == "json") {
    nlohmann::ordered_json pairs = nlohmann::ordered_json::array();
    for (const db::ProfileDiff& diff : diffs) pairs.push_back(DiffJson(diff));
    const nlohmann::ordered_json document = {
        {"schema", "gpuprof.diff"}, {"version", kDiffJsonVersion}, {"a", a}, {"b", b}, {"pairs", pairs}};
    out << document.dump(2) << "\n";
  } else if (format == "html") {
    if (diffs.empty()) return kExitFailure;
    const std::string what = std::to_string(diffs.size()) + " pair(s) of profile DBs compared";
    if (!WritePage(*page_output, "diff.html", RenderDiffHtml(a, b, diffs), what, out, err))
      return kExitFailure;
  } else {
    for (std::size_t i = 0; i < diffs.size(); ++i) {
      if (i > 0) out << "\n" << std::string(100, '=') << "\n\n";
      PrintDiff(out, diffs[i]);
    }
  }
  return exit_code;
}

int RunCheck(const std::string& path, bool json, std::string_view progress, std::ostream& out,
             std::ostream& err) {
  std::optional<db::ResolvedProfiles> resolved = Resolve(path, err);
  if (!resolved.has_value()) return kExitFailure;
  int exit_code = kExitOk;
  std::size_t problems = 0;
  nlohmann::ordered_json checked = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < resolved->dbs.size(); ++i) {
    const db::ProfileDbFile& file = resolved->dbs[i];
    StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(file.path);
    if (!reader.ok()) {
      PrintError(err, reader.status());
      exit_code = kExitFailure;
      continue;
    }
    StatusOr<db::CheckReport> report = [&] {
      WorkProgress line(progress, "gpuprof check", DbOfN(i, resolved->dbs.size()));
      return db::CheckProfileDb(**reader, line.progress());
    }();
    if (!report.ok()) {
      PrintError(err, report.status());
      exit_code = kExitFailure;
      continue;
    }
    if (!report->problems.empty()) {
      problems += report->problems.size();
      exit_code = kExitFailure;
    }
    if (json) {
      // The analysis.db's lines as they would print, one string each.
      std::ostringstream analysis_lines;
      if (!CheckAnalysisBeside(file.path, **reader, analysis_lines, err, &problems)) exit_code = kExitFailure;
      nlohmann::ordered_json found = nlohmann::ordered_json::array();
      for (const db::CheckProblem& problem : report->problems)
        found.push_back({{"table", problem.table}, {"problem", base::PrintableText(problem.problem)}});
      nlohmann::ordered_json analysis = nlohmann::ordered_json::array();
      std::istringstream lines(analysis_lines.str());
      for (std::string line; std::getline(lines, line);) analysis.push_back(base::PrintableText(line));
      checked.push_back({{"path", file.path},
                         {"ok", report->problems.empty()},
                         {"tables", report->tables},
                         {"rows", report->rows},
                         {"problems", std::move(found)},
                         {"analysis_db", std::move(analysis)}});
      continue;
    }
    for (const db::CheckProblem& problem : report->problems)
      out << db::FormatProblem(file.path, problem) << "\n";
    if (report->problems.empty())
      out << "ok: " << file.path << " (" << report->tables << " tables, " << report->rows << " rows)\n";
    if (!CheckAnalysisBeside(file.path, **reader, out, err, &problems)) exit_code = kExitFailure;
  }
  if (json) {
    const nlohmann::ordered_json document = {{"schema", "gpuprof.check"},
                                             {"version", 1},
                                             {"path", path},
                                             {"problems", problems},
                                             {"dbs", std::move(checked)}};
    out << document.dump(2) << "\n";
  }
  if (problems > 0) err << "gpuprof: check found " << problems << " problem(s)\n";
  return exit_code;
}

}  // namespace

DbCommands::DbCommands(CLI::App& app) {
  const std::string path_help =
      "A profile: an ascend_pytorch_profiler*.db, an *_ascend_pt run directory, or a directory holding run "
      "directories (one DB per rank)";
  stats_ = app.add_subcommand(
      "stats",
      "Summarize a profile: top ops (total and self time), top kernels, peak memory, steps, GC, replay "
      "(with a Speed-of-Light block per kernel when hardware counters were collected). "
      "For a directory of rank DBs, first a cluster summary: per rank the step times and the split of "
      "step time into compute, communication not overlapped with compute, and idle; per step the "
      "slowest rank and the spread");
  stats_->add_option("PATH", stats_path_, path_help)->required();
  stats_settings_ = std::make_unique<SettingOptions>(*stats_, base::kDbCommand);  // --progress
  CLI::Option* top = stats_->add_option("--top", top_, "Rows per table")
                         ->check(CLI::Range(std::size_t{1}, kMaxTop))
                         ->capture_default_str();
  stats_
      ->add_flag(
          "--csv{metrics}", csv_,
          "Instead of the summary, print CSV; every row, so not with --top. --csv (or --csv=metrics): the "
          "hardware-counter values of the replayed launches, one row per launch and metric: "
          "rank,kernelId,kernel,launchIndex,metric,unit,value,passes (passes 0: taken from the launch, no "
          "counter pass). --csv=ranges: every launch of every replayed range in execution order, with its "
          "range, median/min/max time over the passes, spread, throughputs, occupancy, bottleneck word and "
          "roofline inputs (the columns: docs/db_gpuprof_tables.md, \"Range results\"). --csv=ops, kernels, "
          "steps or findings: the rows of --format json with its fields as columns after rank "
          "(docs/json_output.md): ops rank,name,calls,total_ms,self_ms; kernels rank,name,calls,total_ms; "
          "steps rank,id,start_ns,duration_ms; findings: rank, id, severity, title, the time at stake (ms, "
          "ms "
          "per step, %), threshold %, occurrences and fix")
      ->type_name("TABLE")
      ->check(CLI::IsMember(StatsCsvTables()))
      ->excludes(top);
  stats_
      ->add_option("--format", stats_format_,
                   "text (the default) or json: one document with each profile's figures and findings, for "
                   "scripts and CI checks (its shape: docs/json_output.md)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  stats_->add_flag("--include-warmup", include_warmup_,
                   "Count the first step in the findings (left out by default: it pays one-time work such as "
                   "allocator growth, module loading and autotuning)");

  export_ = app.add_subcommand(
      "export",
      "Convert a profile to a trace file: --format perfetto writes Chrome trace-event JSON for "
      "ui.perfetto.dev (one process per rank)");
  export_->add_option("PATH", export_path_, path_help)->required();
  export_settings_ = std::make_unique<SettingOptions>(*export_, base::kDbCommand);
  export_->add_option("--format", format_, "Output format: perfetto")
      ->type_name("FORMAT")
      ->capture_default_str();
  export_
      ->add_option(
          "-o,--output", output_,
          "Output file (default: gpuprof_trace.json in the profile's run directory, or in the directory "
          "given; a file of that name that gpuprof export did not write is kept unless --force): a new or "
          "regular file is written complete or not at all (renamed into place), a device or FIFO is written "
          "into, '-' is standard output, a symbolic link is followed")
      ->type_name("FILE");
  export_->add_flag(
      "--force", force_,
      "Without -o: replace the default gpuprof_trace.json even when gpuprof export did not write it");

  if (auto help = std::dynamic_pointer_cast<HelpFormatter>(app.get_formatter())) {
    help->SetUsage(export_, "Usage: gpuprof export [--format perfetto] PATH [-o FILE] [--force]");
  }

  report_ = app.add_subcommand(
      "report",
      "Write one self-contained HTML page of a profile (it opens offline in any browser): overview and what "
      "to look at first, the step breakdown, ops and kernels, memory, kernel replay and, for rank DBs, the "
      "cluster");
  report_->add_option("PATH", report_path_, path_help)->required();
  report_
      ->add_option("-o,--output", report_output_,
                   "Output file (default: gpuprof_report.html in the profile's run directory, or in the "
                   "directory given; a file of that name that gpuprof report did not write is kept unless "
                   "--force); written as export writes, '-' is standard output")
      ->type_name("FILE");
  report_->add_flag(
      "--force", report_force_,
      "Without -o: replace the default gpuprof_report.html even when gpuprof report did not write it");
  report_->add_option("--top", report_top_, "Rows of the op and kernel tables")
      ->check(CLI::Range(std::size_t{1}, kMaxTop))
      ->capture_default_str();
  report_settings_ = std::make_unique<SettingOptions>(*report_, base::kDbCommand);

  check_ = app.add_subcommand(
      "check", "Check a profile's schema and joins against the format (one line per problem; exit 1 if any)");
  check_->add_option("PATH", check_path_, path_help)->required();
  check_->add_option("--format", check_format_, "text (the default) or json (its shape: docs/json_output.md)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  check_settings_ = std::make_unique<SettingOptions>(*check_, base::kDbCommand);

  diff_ = app.add_subcommand(
      "diff",
      "Compare two profiles step by step (B against A): the step time, each op by name and input shapes, "
      "each kernel by name and launch shape, the peak memory, each collective and the communication not "
      "overlapped with compute, each with its spread over the steps, so that a change inside the noise is "
      "not reported as one; and each kernel replayed in both, by its pass durations");
  diff_->add_option("A", diff_a_, "The baseline: a DB, a run directory, or a directory of rank DBs")
      ->required();
  diff_->add_option("B", diff_b_, "The profile compared with it (the same kind of path)")->required();
  diff_->add_option("--top", diff_top_, "Rows per table")
      ->check(CLI::Range(std::size_t{1}, kMaxTop))
      ->capture_default_str();
  diff_
      ->add_option(
          "--format", diff_format_,
          "text (the default), json (its shape: docs/json_output.md) or html: one self-contained page "
          "of the same tables, the changed rows marked")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "json", "html"}))
      ->capture_default_str();
  diff_
      ->add_option(
          "-o,--output", diff_output_,
          "With --format html: the page's file (default: gpuprof_diff.html in B's run directory, or in "
          "the directory given; a file of that name that gpuprof diff did not write is kept unless "
          "--force); written as report writes, '-' is standard output")
      ->type_name("FILE");
  diff_->add_flag(
      "--force", diff_force_,
      "With --format html and without -o: replace the default gpuprof_diff.html even when gpuprof "
      "diff did not write it");
  diff_->add_flag("--include-warmup", diff_include_warmup_, "Compare the first step of each run too");
}

DbCommands::~DbCommands() = default;

bool DbCommands::parsed() const {
  return stats_->parsed() || export_->parsed() || report_->parsed() || check_->parsed() || diff_->parsed();
}

std::string DbCommands::HelpCommand() const {
  if (stats_->parsed()) return "gpuprof stats --help";
  if (export_->parsed()) return "gpuprof export --help";
  if (report_->parsed()) return "gpuprof report --help";
  if (check_->parsed()) return "gpuprof check --help";
  if (diff_->parsed()) return "gpuprof diff --help";
  return "";
}

int DbCommands::Run(std::ostream& out, std::ostream& err) const {
  const base::SettingId progress = base::SettingId::kProgress;
  if (stats_->parsed()) {
    if (!csv_.empty()) return RunStatsTableCsv(stats_path_, csv_, include_warmup_, out, err);
    return RunStats(stats_path_, top_, stats_format_ == "json", include_warmup_,
                    stats_settings_->value(progress), out, err);
  }
  if (export_->parsed())
    return RunExport(export_path_, format_, output_, force_, export_settings_->value(progress), out, err);
  if (report_->parsed()) {
    return RunReport(report_path_, report_output_, report_force_, report_top_,
                     report_settings_->value(progress), out, err);
  }
  if (check_->parsed())
    return RunCheck(check_path_, check_format_ == "json", check_settings_->value(progress), out, err);
  if (diff_->parsed())
    return RunDiff(diff_a_, diff_b_, diff_top_, diff_format_, diff_include_warmup_, diff_output_, diff_force_,
                   out, err);
  return kExitUsage;
}

}  // namespace gpuprof::cli