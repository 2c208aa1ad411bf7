#include "cli/did_you_mean.h"

#include <algorithm>
#include <cstddef>

namespace gpuprof::cli {
namespace {

// "gpuprof stats": the command line that reaches `app`.
std::string CommandName(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* parent = app.get_parent(); parent != nullptr; parent = parent->get_parent())
    name = parent->get_name() + " " + name;
  return name;
}

const CLI::App* ParsedSubcommand(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->parsed()) return ParsedSubcommand(*sub);
  }
  return &app;
}

}  // namespace

std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_positional()) continue;
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

std::string DescribeUnknownOption(const CLI::App& app, std::string_view word) {
  const std::string name(word.substr(0, word.find('=')));  // "--top=3": the option is "--top"
  std::string message = "unknown option '" + name + "' of '" + CommandName(app) + "'";
  const std::string closest = ClosestWord(name, OptionNames(app));
  if (!closest.empty()) message += "; did you mean '" + closest + "'?";
  return message;
}

std::string DescribeExtras(const CLI::App& app, const std::vector<std::string>& extras) {
  const CLI::App* command = ParsedSubcommand(app);
  for (const std::string& extra : extras) {
    if (extra.size() > 1 && extra[0] == '-') return DescribeUnknownOption(*command, extra);
  }
  if (command == &app && !extras.empty()) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      commands.push_back(sub->get_name());
    std::string message = "unknown command '" + extras.front() + "'";
    const std::string closest = ClosestWord(extras.front(), commands);
    if (!closest.empty()) message += "; did you mean '" + closest + "'?";
    return message;
  }
  std::string list;
  for (const std::string& extra : extras) list += (list.empty() ? "'" : " '") + extra + "'";
  return "'" + CommandName(*command) + "' takes no more arguments; unexpected: " + list;
}

}  // namespace gpuprof::cli
