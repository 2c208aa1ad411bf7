// The profile-database subcommands of `gpuprof`: `stats`, `export`, `report`, `check` and `diff` (the read
// side, src/db/profile_reader.h). Each takes a PATH that is a .db, an *_ascend_pt directory, or a directory
// of them (one DB per rank).
//
// Exit codes, as for every gpuprof command: 0 success, 1 bad input or a failed check (a message
// names the file, the problem and the fix), 2 usage (unknown --format, an unknown flag).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>

#include "cli/setting_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace gpuprof::db {
struct ProfileStats;
}  // namespace gpuprof::db

namespace gpuprof::cli {

// The "Kernel replay" part of `gpuprof stats` (also printed by `gpuprof replay`).
void PrintReplayStats(std::ostream& out, const db::ProfileStats& stats);

class DbCommands {
 public:
  // Registers the five subcommands (stats, export, report, check, diff) on `app`; the object holds their
  // flags, so it must outlive parsing and Run().
  explicit DbCommands(CLI::App& app);
  ~DbCommands();
  DbCommands(const DbCommands&) = delete;
  DbCommands& operator=(const DbCommands&) = delete;

  // True when one of the five subcommands was parsed.
  bool parsed() const;
  // "gpuprof <parsed subcommand> --help", or "" when none of them was parsed.
  std::string HelpCommand() const;
  // Runs the parsed subcommand: reports to `out`, errors and notes to `err`; the exit code.
  int Run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* stats_ = nullptr;
  CLI::App* export_ = nullptr;
  CLI::App* report_ = nullptr;
  CLI::App* check_ = nullptr;
  CLI::App* diff_ = nullptr;
  std::string stats_path_;
  std::size_t top_ = 15;
  std::string csv_;  // --csv's table: "" (none), "metrics" or "ranges"
  std::string stats_format_ = "text";
  bool include_warmup_ = false;
  std::string export_path_;
  std::string format_ = "perfetto";
  std::string output_;
  bool force_ = false;
  std::string report_path_;
  std::string report_output_;
  bool report_force_ = false;
  std::size_t report_top_ = 25;
  bool report_include_warmup_ = false;
  std::string check_path_;
  std::string check_format_ = "text";
  std::string diff_a_;
  std::string diff_b_;
  std::size_t diff_top_ = 15;
  std::string diff_format_ = "text";
  bool diff_include_warmup_ = false;
  std::string diff_output_;
  bool diff_force_ = false;
  std::unique_ptr<SettingOptions> stats_settings_;  // --progress of each
  std::unique_ptr<SettingOptions> export_settings_;
  std::unique_ptr<SettingOptions> report_settings_;
  std::unique_ptr<SettingOptions> check_settings_;
};

}  // namespace gpuprof::cli
