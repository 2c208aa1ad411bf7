// The replay settings a program sets by name (gpuprof_configure_replay_settings_v1,
// gpuprof.KernelReplay): the one translator of a program's replay options. Each is a declared
// setting (base/settings.h) named by its JSON key and parsed by its row through SetSetting, exactly
// as `gpuprof replay` hands it over in a variable, on top of the replay settings the process started
// with; the result goes down the session's one replay path (ReplayOptionsFrom, then
// DeviceCollector::ConfigureReplay), so every replay setting the engine reads per launch is the
// program's to set, graph replay and the counter range included.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string_view>

#include "gpuprof/status.h"
#include "session/config.h"

namespace gpuprof::session {

// One setting as the program names it: the JSON key ("replay_graph") and the value's text in any
// form its row accepts ("graph").
struct NamedSetting {
  std::string_view key;
  std::string_view text;
};

// The replay settings `named` make on top of `process`'s own (what `gpuprof replay --from-script`
// was given, or the declared defaults). "replay_passes" "1" pauses replay (the C API's own value,
// below the setting's range). InvalidArgument with the table's message for an unknown key or a value
// its row refuses; naming the setting for one that is not the program's to set (not a replay
// setting, or fixed when the process starts) or a key given twice.
StatusOr<ReplaySettings> ProgramReplaySettings(const SessionConfig& process,
                                               std::span<const NamedSetting> named);

}  // namespace gpuprof::session
