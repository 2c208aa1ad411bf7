// Where a profile goes (ARCHITECTURE.md, "Output layout"):
//   <out>/<worker>_<YYYYmmddHHMMSSfff>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler[_<rank>].db
//   <out>/<worker>_<...>_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db (torch_npu's derived tables)
//   <out>/<worker>_<...>_ascend_pt/profiler_info[_<rank>].json
// where <worker> is "<hostname>_<pid>" unless a worker name is given. While being written the DB
// is named "<final>.partial": a run that dies leaves only that name, never the final one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuprof::db {

struct OutputLayout {
  std::string run_dir;           // .../<worker>_<ts>_ascend_pt
  std::string output_dir;        // run_dir/ASCEND_PROFILER_OUTPUT
  std::string db_path;           // final name
  std::string partial_path;      // name while writing
  std::string analysis_db_path;  // output_dir/analysis.db
  std::string info_json_path;
  std::string metadata_json_path;  // profiler_metadata.json, torch_npu's file beside the run
};

// `worker_name` empty: "<hostname>_<pid>". `rank` < 0: no rank suffix. `start_ns`: epoch ns,
// formatted in local time as YYYYmmddHHMMSSfff.
OutputLayout MakeOutputLayout(const std::string& out_dir, const std::string& worker_name,
                              const std::string& hostname, std::uint32_t pid, std::int64_t start_ns,
                              std::int32_t rank);

// The derived tables' file beside each profile DB (torch_npu's name, which msprof-analyze looks for).
inline constexpr const char* kAnalysisDbName = "analysis.db";

// Suffix that marks a DB still being written (or abandoned by a run that died).
inline constexpr const char* kPartialSuffix = ".partial";

// The result file (GPUPROF_RESULT_FILE) that `gpuprof run` reads after the application: one line
// per event, "<kind> <text>", appended by each profiled process (session::AppendResultLine).
inline constexpr std::string_view kResultLinePartial = "partial";  // a session began writing this file
inline constexpr std::string_view kResultLineDb = "db";            // ... and finalized this DB
inline constexpr std::string_view kResultLineFailed = "failed";    // a start failed: "pid N: why"
// ... or began the file and could not finish it (disk full, I/O error): "pid N: why", why naming it.
inline constexpr std::string_view kResultLineUnfinalized = "unfinalized";
// The text of a result line: one line whatever it holds (a path may contain a newline), as
// backslash escapes \\, \n and \r; Unescape gives the text back.
std::string EscapeResultText(std::string_view text);
std::string UnescapeResultText(std::string_view text);

// What one profiled process under `gpuprof run` has recorded so far, for run's live line: written
// (replaced whole, by rename) beside the result file as RunProgressPath(result_file, pid) by the
// session's flusher, at most twice a second; one line "launches=N kernels=N ops=N replayed=N declined=N
// finalizing=0|1".
struct RunProgress {
  std::uint64_t launches = 0;    // kernel launches and async copies seen on the host (CUPTI callbacks)
  std::uint64_t kernels = 0;     // kernels completed on the device (CUPTI activity records)
  std::uint64_t ops = 0;         // framework ops (PYTORCH_API rows to be)
  std::uint64_t replayed = 0;    // kernel launches replayed
  std::uint64_t declined = 0;    // ... and declined by replay
  std::uint64_t finalizing = 0;  // processes writing their DB's last rows and derived tables now
  RunProgress& operator+=(const RunProgress& other);
  bool operator==(const RunProgress&) const = default;
};

inline constexpr std::string_view kRunProgressInfix = ".progress.";
// "<result_file>.progress.<pid>".
std::string RunProgressPath(const std::string& result_file, std::uint32_t pid);
std::string FormatRunProgress(const RunProgress& progress);
// Fields it does not know are skipped; false for text that is not such a line (a file read mid-write).
bool ParseRunProgress(std::string_view text, RunProgress* progress);

}  // namespace gpuprof::db
