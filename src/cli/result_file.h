// The result file of `gpuprof run` (GPUPROF_RESULT_FILE): each profiled process appends lines
// "<kind> <text>" (db::kResultLine*, the text escaped by db::EscapeResultText); run reads them
// after the application to say which DBs were written, which were left unfinished and why.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuprof::cli {

// The texts of the lines of `kind`, unescaped, in order, without duplicates. Lines of other kinds
// are ignored, so sessions may add kinds later.
std::vector<std::string> ReadResultLines(const std::string& result_file, std::string_view kind);

// The ".partial" DBs this run's processes began and never finalized: those they reported, still
// there. Another run's files in the same output directory are not this run's to report.
std::vector<std::string> UnfinishedDbs(const std::string& result_file);

// A session's "unfinalized" line (pid N: why) for run's last line: a full disk (or the file size
// limit) said in those words with the fix, and whether each unfinished file was kept or removed.
std::string WhyNotFinalized(const std::string& line, const std::string& result_file);

}  // namespace gpuprof::cli
