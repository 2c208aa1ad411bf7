// The settings declaration: every setting gpuprof takes, declared once.
//
// Each row names a setting (its JSON key), the environment variable that carries it into a
// profiled process, its type, range or choices, its default and its help text, and the command
// line options that set it. From this one table:
//   - the CLI (src/cli/setting_options.cc) makes the options of `run`, `replay` and `demo`, with
//     the table's range, choices and default, and hands each value to the application as the
//     setting's variable;
//   - session/config.cc parses the variables and the JSON configuration once into a typed
//     SessionConfig, which it hands down to cupti and replay, and records every setting in force
//     in the DB (META_DATA and profiler_info json);
//   - the Python package checks its arguments against the same rows (gpuprof_settings_json_v1 in
//     gpuprof_c.h, python/gpuprof/_settings.py), and hands gpuprof.KernelReplay's options to the
//     session by their keys (gpuprof_configure_replay_settings_v1, session/replay_settings.h),
//     which parses them with these rows too.
// A new setting is a new row here plus the one place in session/config.cc that stores it.
//
// Values are text with one dialect: booleans are 0/1, false/true or off/on (any case), integers
// are decimal, lists are comma separated (a list whose default is empty accepts the empty list).
// ParseSettingText checks a text against its row and returns it in canonical form (booleans "1"/"0", lists
// re-joined), so what the CLI hands the application is exactly what the session accepts.
//
// Thread-safety: the table is immutable (constant-initialized); every function here is pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::base {

enum class SettingType : std::uint8_t {
  kBool,    // "1"/"0" canonical
  kInt,     // decimal in [min, max]
  kString,  // any text (a row's check may narrow it)
  kChoice,  // one of the row's choices
  kList,    // a comma list of the row's choices, each at most once
};

// The commands whose command line sets a setting (a bit set).
enum SettingCommand : std::uint8_t {
  kNoCommand = 0,
  kRunCommand = 1u << 0,     // gpuprof run
  kReplayCommand = 1u << 1,  // gpuprof replay
  kDemoCommand = 1u << 2,    // gpuprof demo
  kDbCommand = 1u << 3,      // gpuprof stats, export, check
};

// Every setting, in table order. Settings() is indexed by these.
enum class SettingId : std::uint8_t {
  kOutputDir,
  kWorkerName,
  kRank,
  kDeviceId,
  kWorldSize,
  kFollowChildren,
  kResultFile,
  kLogLevel,
  kFlushIntervalMs,
  kDevice,
  kCudaTrace,
  kRootPid,
  kStartedBy,
  kRecordShapes,
  kProfileMemory,
  kWithStack,
  kWithModules,
  kGcThresholdMs,
  kReplay,
  kReplayFromScript,
  kReplayPasses,
  kReplayKernel,
  kReplaySkip,
  kReplayCount,
  kReplayCacheControl,
  kReplayRestore,
  kReplayStrict,
  kReplayPrintfKernels,
  kReplayMallocKernels,
  kReplayWithLiveArrays,
  kReplayDeviceReserveMib,
  kReplayStorage,
  kReplayMetrics,
  kReplaySection,
  kReplaySet,
  kReplayClockControl,
  kReplayCounterRange,
  kReplayGraph,
  kReplayMode,
  kReplayRange,
  kReplayNvtxInclude,
  kReplayMaxRangeOperations,
  kReplayMaxRangeHostMib,
  kProgress,
  kExecGuard,
  kCount,  // not a setting
};

struct SettingSpec {
  SettingId id;
  std::string_view json_key;      // empty: not settable through JSON (and not stored by key)
  std::string_view env;           // the variable `gpuprof run`/`replay` hands the application
  std::string_view launcher_env;  // a launcher's variable read when `env` is unset (torchrun's RANK);
                                  // text that is not a valid value there is ignored, not an error
  SettingType type;
  std::int64_t min = 0;                // kInt
  std::int64_t max = 0;                // kInt
  std::string_view choices;            // kChoice / kList: '|'-separated words
  std::string_view default_value;      // canonical text; empty for "none"
  std::string_view cli;                // CLI11 option names ("-k,--kernel-name"; a bool default-on:
                                       // "--record-shapes,!--no-record-shapes"); empty: none
  std::uint8_t commands = kNoCommand;  // SettingCommand bits: where `cli` is offered
  std::string_view cli_value;          // the value's name in --help ("N", "LIST", "DIR")
  std::string_view help;
  // A check beyond type and range: the text (already canonical) and the origin for the message.
  Status (*check)(std::string_view canonical, std::string_view origin) = nullptr;
  // When the command line does not give it, a value of `env` in gpuprof's own environment reaches
  // the application (the variable is a documented way to set it); otherwise the command hands on
  // the row's default, so the command line alone decides.
  bool inherit = false;
};

// The table, indexed by SettingId.
std::span<const SettingSpec> Settings() noexcept;
const SettingSpec& Spec(SettingId id) noexcept;
// By JSON key or by variable; nullptr when none has it.
const SettingSpec* FindSettingByKey(std::string_view json_key) noexcept;
const SettingSpec* FindSettingByEnv(std::string_view env) noexcept;
// The message for a JSON key no setting has: "no setting has the key \"replay_grpah\"; did you
// mean replay_graph?" (the closest key, when one is close enough to be a typo).
std::string UnknownSettingKey(std::string_view json_key);

// The one boolean dialect: 0/1, false/true, off/on, any case. nullopt for anything else.
std::optional<bool> ParseBoolText(std::string_view text) noexcept;

// Checks `text` against the row and returns its canonical form. InvalidArgument naming `origin`
// (e.g. "GPUPROF_REPLAY_PASSES" or "--passes"), the text and what the row accepts.
StatusOr<std::string> ParseSettingText(const SettingSpec& spec, std::string_view text,
                                       std::string_view origin);
// What the row accepts, in words ("an integer from 2 to 1000", "one of all, none", ...).
std::string SettingAccepts(const SettingSpec& spec);
// The choices of a kChoice/kList row.
std::vector<std::string_view> SettingChoices(const SettingSpec& spec);

// The integer of a canonical kInt text, the words of a canonical kList text.
std::int64_t SettingInt(std::string_view canonical) noexcept;
std::vector<std::string_view> SettingListWords(std::string_view canonical);

// Range replay's settings (canonical texts of replay_mode, replay_range, replay_nvtx_include).
// --range nvtx or step, or --nvtx-include, means range replay even without --replay-mode range (as
// KernelReplay(range="step") asks), and --nvtx-include means --range nvtx: RangeReplayWanted says
// whether the three ask for range replay. CheckRangeSettings refuses, naming both settings as flag
// and key and the fix, what cannot mean anything: --replay-mode kernel given (`mode_given`) with
// --range nvtx/step or --nvtx-include; --nvtx-include with --range step; --range nvtx without
// --nvtx-include.
bool RangeReplayWanted(std::string_view mode, std::string_view range, std::string_view nvtx_include) noexcept;
Status CheckRangeSettings(std::string_view mode, std::string_view range, std::string_view nvtx_include,
                          bool mode_given);

// The whole table as a JSON array of objects (json_key, env, launcher_env, type, min, max,
// choices, default, cli, help), for the Python package and `gpuprof settings --json`.
std::string SettingsJson();

}  // namespace gpuprof::base
