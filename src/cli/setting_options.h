// The command-line options that set a declared setting (base/settings.h), made from the table.
//
// SettingOptions registers, on one subcommand, an option for every setting whose row offers it to
// that command: the row's option names, help, value name, default, and a check that runs the row's
// own parser (so the CLI accepts exactly what the session will, and says so in the same words).
// After parsing, Environment() is what the command hands the application: each setting's variable
// with the given value, or the row's default when the option was not given. A row marked
// `inherit` (cuda_trace) instead keeps a value of its variable in gpuprof's own environment, and
// is left unset (the session's default) when there is none.
//
// The object must outlive parsing (CLI11 writes into it). Not thread-safe.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/settings.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gpuprof::cli {

class SettingOptions {
 public:
  // Registers the options of `command` (a SettingCommand bit) on `app`.
  SettingOptions(CLI::App& app, base::SettingCommand command);
  SettingOptions(const SettingOptions&) = delete;
  SettingOptions& operator=(const SettingOptions&) = delete;

  // The option registered for `id`, or nullptr when this command offers none.
  CLI::Option* option(base::SettingId id) const;
  // Whether `id`'s option was given on the command line.
  bool given(base::SettingId id) const;
  // The canonical value of `id`: as given, else the row's default. Only for settings of this command.
  std::string value(base::SettingId id) const;
  // NAME=VALUE pairs for the application (see above); an inherited row that was not given is left
  // out, so gpuprof's own environment passes through. `skip`: settings not to hand on (replay's
  // selection under --from-script).
  std::vector<std::pair<std::string, std::string>> Environment(
      const std::vector<base::SettingId>& skip = {}) const;

 private:
  struct Entry {
    const base::SettingSpec* spec = nullptr;
    CLI::Option* option = nullptr;
    std::string text;   // non-bool rows: what CLI11 stored (canonicalized by the check)
    bool flag = false;  // bool rows
  };
  const Entry* Find(base::SettingId id) const;

  std::deque<Entry> entries_;  // stable addresses: CLI11 keeps pointers into them
};

}  // namespace gpuprof::cli
