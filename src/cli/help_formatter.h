// The `--help` of every gpuprof command: CLI11's layout without its type noise, one usage line per
// command, and no line wider than kHelpColumns.
//
//   auto help = std::make_shared<HelpFormatter>();
//   app.formatter(help);                 // before add_subcommand: subcommands share it
//   help->SetUsage(run, "Usage: gpuprof run [-o DIR] ... [--] APP [ARGS...]");
//
// An option shows its names and its value's placeholder with the default ("--passes N=5"); flags
// show no value ("{false}" of a negatable flag is gone), CLI11's type names become N or VALUE
// ("--top N=15", not "UINT:UINT in [1 - 100000]=15"), and Needs/Excludes lists are left to the
// descriptions. Lines are wrapped at word boundaries, a continuation indented under the text it
// continues (an option's description column, else the line's own indent).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "cli/cli11.h"

namespace gpuprof::cli {

inline constexpr std::size_t kHelpColumns = 100;

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(28); }

  // `usage` ("Usage: gpuprof run ...", possibly several lines) replaces CLI11's line for `app`.
  void SetUsage(const CLI::App* app, std::string usage) { usage_[app] = std::move(usage); }

  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* opt) const override;
  // CLI11's entry, except that a name ending a space or one short of the description column puts
  // its description on the next line (WrapHelpText finds the column after a gap of two spaces).
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;

 private:
  std::map<const CLI::App*, std::string> usage_;
};

// `text` with every line wider than `width` broken at spaces (see the header comment).
std::string WrapHelpText(std::string_view text, std::size_t width = kHelpColumns);

}  // namespace gpuprof::cli
