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

// `file_name` in the folder of the profile `profile_path` (a .db, a run directory or a directory of them).
std::string DefaultOutputPath(const std::string& profile_path, std::string_view file_name);

// OK when `export` may write its default file at `path`: nothing is there, or a trace an earlier
// `gpuprof export` wrote. Otherwise AlreadyExists naming the file, --force and -o: a name gpuprof
// chose must never replace a file of the user's.
Status CheckDefaultTraceReplaceable(const std::string& path);

}  // namespace gpuprof::cli
