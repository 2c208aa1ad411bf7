#include "session/replay_settings.h"

#include <algorithm>
#include <string>

#include "base/json.h"
#include "base/settings.h"

namespace gpuprof::session {
namespace {

using base::SettingId;

constexpr std::string_view kReplayPrefix = "replay_";

// Read once, when the process starts: whether replay runs at all, whether the program chooses, and
// the device memory the snapshots leave free (the replay engine's arenas are sized then).
bool FixedAtStart(SettingId id) {
  return id == SettingId::kReplay || id == SettingId::kReplayFromScript ||
         id == SettingId::kReplayDeviceReserveMib;
}

Status NotTheProgramsToSet(const base::SettingSpec& spec) {
  std::string option(
      spec.cli.substr(spec.cli.rfind(',') == std::string_view::npos ? 0 : spec.cli.rfind(',') + 1));
  return InvalidArgumentError(
      std::string(spec.json_key) +
      (spec.json_key.substr(0, kReplayPrefix.size()) == kReplayPrefix
           ? " is fixed when the process starts" +
                 (option.empty() ? std::string() : ": give `gpuprof replay " + option + "`")
           : " is not a replay setting; a program sets the replay_* settings (gpuprof_settings_json_v1() "
             "lists them)"));
}

}  // namespace

StatusOr<ReplaySettings> ProgramReplaySettings(const SessionConfig& process,
                                               std::span<const NamedSetting> named) {
  SessionConfig config = process;
  for (std::size_t i = 0; i < named.size(); ++i) {
    const NamedSetting& setting = named[i];
    const base::SettingSpec* spec = base::FindSettingByKey(setting.key);
    if (spec == nullptr) return InvalidArgumentError(base::UnknownSettingKey(setting.key));
    if (spec->json_key.substr(0, kReplayPrefix.size()) != kReplayPrefix || FixedAtStart(spec->id))
      return NotTheProgramsToSet(*spec);
    for (std::size_t j = 0; j < i; ++j) {
      if (named[j].key == setting.key)
        return InvalidArgumentError(std::string(setting.key) + " is given twice; give each setting once");
    }
    if (spec->id == SettingId::kReplayPasses && setting.text == "1") {
      config.replay.passes = 1;  // pause: the C API's value, not the setting's
      continue;
    }
    GPUPROF_RETURN_IF_ERROR(SetSetting(config, spec->id, setting.text, spec->json_key));
  }
  const bool mode_given = std::any_of(
      named.begin(), named.end(), [](const NamedSetting& setting) { return setting.key == "replay_mode"; });
  GPUPROF_RETURN_IF_ERROR(CheckRangeSettings(config.replay, mode_given));
  return config.replay;
}

}  // namespace gpuprof::session
