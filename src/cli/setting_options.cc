#include "cli/setting_options.h"

#include <algorithm>

#include "cli/cli11.h"

namespace gpuprof::cli {
namespace {

// CLI11 prefixes the option's name ("--passes: "); the row's parser says the rest.
CLI::Validator RowCheck(const base::SettingSpec& spec) {
  return CLI::Validator(
      [&spec](std::string& text) -> std::string {
        StatusOr<std::string> canonical = base::ParseSettingText(spec, text, "");
        if (!canonical.ok()) {
          std::string message = canonical.status().message();
          if (!message.empty() && message.front() == '=') message.erase(0, 1);  // "=TEXT: why" -> "TEXT: why"
          return message;
        }
        text = *canonical;
        return std::string();
      },
      std::string());  // --help shows the value's name and the range in the help text, not twice
}

}  // namespace

SettingOptions::SettingOptions(CLI::App& app, base::SettingCommand command) {
  for (const base::SettingSpec& spec : base::Settings()) {
    if (spec.cli.empty() || (spec.commands & command) == 0) continue;
    Entry& entry = entries_.emplace_back();
    entry.spec = &spec;
    const std::string names(spec.cli);
    std::string help(spec.help);
    // A bounded integer says its range (counts up to "no limit" say nothing).
    if (spec.type == base::SettingType::kInt && spec.max <= 1'000'000'000'000) {
      help += " (" + std::to_string(spec.min) + ".." + std::to_string(spec.max) + ")";
    }
    if (spec.type == base::SettingType::kBool) {
      entry.flag = spec.default_value == "1";
      entry.option = app.add_flag(names, entry.flag, help);
      continue;
    }
    entry.text = std::string(spec.default_value);
    entry.option = app.add_option(names, entry.text, help)
                       ->check(RowCheck(spec))
                       ->type_name(std::string(spec.cli_value));
    if (!spec.default_value.empty()) entry.option->default_str(std::string(spec.default_value));
    if (!spec.default_value.empty() && !spec.inherit) entry.option->capture_default_str();
  }
}

const SettingOptions::Entry* SettingOptions::Find(base::SettingId id) const {
  for (const Entry& entry : entries_) {
    if (entry.spec->id == id) return &entry;
  }
  return nullptr;
}

CLI::Option* SettingOptions::option(base::SettingId id) const {
  const Entry* entry = Find(id);
  return entry != nullptr ? entry->option : nullptr;
}

bool SettingOptions::given(base::SettingId id) const {
  const Entry* entry = Find(id);
  return entry != nullptr && entry->option->count() > 0;
}

std::string SettingOptions::value(base::SettingId id) const {
  const Entry* entry = Find(id);
  if (entry == nullptr) return std::string(base::Spec(id).default_value);
  if (entry->spec->type == base::SettingType::kBool) return entry->flag ? "1" : "0";
  return entry->text;
}

std::vector<std::pair<std::string, std::string>> SettingOptions::Environment(
    const std::vector<base::SettingId>& skip) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Entry& entry : entries_) {
    const base::SettingSpec& spec = *entry.spec;
    if (spec.env.empty() || std::find(skip.begin(), skip.end(), spec.id) != skip.end()) continue;
    if (!given(spec.id) && spec.inherit)
      continue;  // gpuprof's own environment passes through, or the session's default
    out.emplace_back(std::string(spec.env), value(spec.id));
  }
  return out;
}

}  // namespace gpuprof::cli
