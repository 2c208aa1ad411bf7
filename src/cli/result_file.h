// The result file of `gpuprof run` (GPUPROF_RESULT_FILE): each profiled process appends lines
// "<kind> <text>" (db::kResultLine*, the text escaped by db::EscapeResultText); run reads them
// after the application to say which DBs were written, which were left unfinished and why. Its
// private folder also holds the processes' progress files (db::RunProgressPath), which run's live
// line sums while the application runs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::cli {

// A private temporary directory holding the result file, removed with the object. Its name carries
// this process's pid, so that a later run can remove it should this one be killed (SIGKILL): Create
// first removes such directories of gpuprof processes that no longer exist.
class ResultDir {
 public:
  static StatusOr<std::unique_ptr<ResultDir>> Create();
  ~ResultDir();
  ResultDir(const ResultDir&) = delete;
  ResultDir& operator=(const ResultDir&) = delete;

  std::string result_file() const { return dir_ + "/results"; }

 private:
  explicit ResultDir(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// What the live line of `run` shows: the counts of this run's processes (their progress files
// beside the result file, db::RunProgressPath), summed.
std::string RunProgressText(const std::string& result_file, bool replay);

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
