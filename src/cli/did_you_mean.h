// "did you mean": the usage-error message for a word gpuprof does not know (a mistyped subcommand
// or option), naming the word and the closest valid one, in the order the user typed.
//
//   catch (const CLI::ExtrasError&) { message = DescribeExtras(app, app.remaining(true)); }
//   // "unknown command 'stat'; did you mean 'stats'?"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/closest_word.h"
#include "cli/cli11.h"

namespace gpuprof::cli {

// The candidate closest to `word` when it is close enough to be a typo of it (base/closest_word.h).
using base::ClosestWord;

// Every name the options of `app` answer to: "--top", "-o", "--no-record-shapes", "--help".
std::vector<std::string> OptionNames(const CLI::App& app);

// The message for arguments CLI11 did not expect (`extras`, in command-line order): the first
// unknown option or command with the closest valid name, else the unexpected arguments.
std::string DescribeExtras(const CLI::App& app, const std::vector<std::string>& extras);

// "unknown option '--tpo' of 'gpuprof stats'; did you mean '--top'?" for `word` given to `app`.
std::string DescribeUnknownOption(const CLI::App& app, std::string_view word);

}  // namespace gpuprof::cli
