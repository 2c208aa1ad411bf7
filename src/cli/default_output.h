// Where `export` and `report` write when -o is not given: a file gpuprof names, in the profile's
// own folder (the run directory of a DB, or the directory given), so the output sits beside the
// profile it came from, whatever the current directory.
//
//   gpuprof export prof/host_1_20240101_ascend_pt   -> prof/host_1_20240101_ascend_pt/gpuprof_trace.json
//   gpuprof report prof                             -> prof/gpuprof_report.html
#pragma once

#include <string>
#include <string_view>

#include "gpuprof/status.h"

namespace gpuprof::cli {

inline constexpr std::string_view kDefaultTraceName = "gpuprof_trace.json";
inline constexpr std::string_view kDefaultReportName = "gpuprof_report.html";
inline constexpr std::string_view kDefaultDiffName = "gpuprof_diff.html";

// `file_name` in the folder of the profile `profile_path` (a .db, a run directory or a directory of them).
std::string DefaultOutputPath(const std::string& profile_path, std::string_view file_name);

// How the files gpuprof writes under those names begin, within their first bytes: the trace's
// otherData producer (db/perfetto_export.cc), the report page's title (cli/html_report.cc) and the
// diff page's (cli/diff_html.cc).
inline constexpr std::string_view kTraceProducerMark = R"("producer":"gpuprof export")";
inline constexpr std::string_view kReportTitleMark = "<title>gpuprof report: ";
inline constexpr std::string_view kDiffTitleMark = "<title>gpuprof diff: ";

enum class DefaultOutput { kTrace, kReport, kDiff };

// OK when `export`, `report` or `diff --format html` may write its default file at `path`: nothing
// is there, or a file an earlier `gpuprof export` / `report` / `diff` wrote. Otherwise AlreadyExists naming
// the file,
// --force and -o: a name gpuprof chose must never replace a file of the user's.
Status CheckDefaultOutputReplaceable(const std::string& path, DefaultOutput kind);

}  // namespace gpuprof::cli
