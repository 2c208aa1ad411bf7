// SessionConfig: what a Session needs to know, typed, from the environment that `gpuprof run` and
// `gpuprof replay` set and from a JSON object (GPUPROF_CONFIG, or the argument of gpuprof_start).
// Every setting is declared once, in base/settings.h (variable, JSON key, type, range, default,
// help); this file is the one place that parses them, and hands them down typed: the CUPTI device
// collector reads `replay`, the Python package's profile reads `torch` through the JSON it passes.
//
// Layers, later ones win:  the table's defaults < GPUPROF_CONFIG (JSON) < the settings' variables <
// the JSON given to gpuprof_start. A specific variable beats the generic JSON the CLI exports beside
// it; a program that passes its own configuration to gpuprof_start beats the ambient environment.
// A setting with a launcher variable (rank: RANK, device_id: LOCAL_RANK, world_size: WORLD_SIZE)
// falls back to it when its own variable is unset; text there that is not a valid id is ignored.
//
// Every other key of the JSON object is kept as given and stored with the run (META_DATA and
// profiler_info json), so callers may record their own settings there; ToJson adds every declared
// setting's value in force.
//
// Errors: InvalidArgument naming the variable or JSON key, the offending text and what is
// accepted. Nothing here throws except std::bad_alloc.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/json.h"
#include "base/logging.h"
#include "base/settings.h"
#include "gpuprof/replay.h"
#include "gpuprof/status.h"

namespace gpuprof::session {

using base::JsonQuote;

// The PyTorch hooks' settings (`gpuprof run`'s --record-shapes ... --with-modules; the Python
// package's profile passes its own as JSON keys of the same names).
struct TorchSettings {
  bool record_shapes;
  bool profile_memory;
  bool with_stack;
  bool with_modules;
  int gc_threshold_ms;  // GC pauses recorded from this length on; -1: none
  bool operator==(const TorchSettings&) const = default;
};

// Kernel replay's settings (`gpuprof replay`), for the CUPTI device collector.
struct ReplaySettings {
  bool enabled;      // track device memory from the start and replay (GPUPROF_REPLAY)
  bool from_script;  // replay nothing until the program configures it (gpuprof.KernelReplay)
  int passes;
  std::string kernel;  // "" every kernel, "regex:PATTERN" or a name (C4)
  std::uint64_t skip;
  std::uint64_t count;
  bool flush_l2;  // --cache-control all (B7)
  replay::RestoreMode restore;
  bool strict;
  bool printf_kernels;                 // C2: replay kernels that call device printf
  bool malloc_kernels;                 // C2: ... device malloc/free
  bool with_live_arrays;               // C2: replay while CUDA arrays exist
  std::uint64_t device_reserve_bytes;  // B2: device memory snapshots leave free
  replay::SnapshotStorage storage;     // B2: the fastest tier snapshots may use
  // Hardware counters (issue 19), as given: a comma list of metric names, a comma list of section
  // names, and the set ("none", "basic", "full"). ReplayOptionsFrom expands them.
  std::string metrics;
  std::string sections;
  std::string set;
  replay::ClockControl clock_control;  // C3
  std::string counter_range;           // "auto" (the kernel alone) or "user" (the whole pass)
  replay::GraphReplay graph_replay;    // issue 24: graph launches off / as a whole / node by node
  // Range replay (W1-W6): replay_mode "range", the delimiter and its NVTX name, and the caps.
  bool range_mode;
  replay::RangeDelimiter range;
  std::string nvtx_include;  // empty: none given
  std::uint64_t max_range_operations;
  std::uint64_t max_range_host_bytes;
  bool operator==(const ReplaySettings&) const = default;
};

struct SessionConfig {
  // The declared defaults (base/settings.h) of every setting.
  SessionConfig();

  std::string output_dir;
  std::string worker_name;  // empty: "<hostname>_<pid>"
  std::int32_t rank;        // -1: unknown, no _<rank> suffix
  std::int32_t device_id;   // RANK_DEVICE_MAP.deviceId; -1: unknown
  std::int32_t world_size;  // COMMUNICATION_OP.rankSize; -1: unknown
  bool follow_children;
  std::string result_file;                  // empty: none
  std::optional<base::LogLevel> log_level;  // unset: leave logging as GPUPROF_LOG_LEVEL set it
  std::chrono::milliseconds flush_interval;
  bool device;  // start the device collector when the build and the process have one
  // cuda_trace: the CUDA runtime API, the driver API and NVTX ranges, each recorded or not. Kernels,
  // copies and memsets are always recorded when `device` is on. `launches` records only the runtime
  // and driver calls that launch, copy, set, allocate, free or wait (cupti::LaunchApiTracer), through
  // gpuprof's own callbacks: cheaper than runtime+driver, and exclusive with them.
  // The default is launches and NVTX: the calls a timeline needs (every kernel, copy and memset keeps
  // its CANN_API rows and its op link) at about a third of the cost of an activity record per call
  // (bench/README.md); runtime,driver,nvtx records every call.
  struct CudaTrace {
    bool runtime = false;
    bool driver = false;
    bool nvtx = false;
    bool launches = false;
    bool operator==(const CudaTrace&) const = default;
  };
  CudaTrace cuda_trace;
  // Who started the session ("api", "injection", "fork"); stored with the run.
  std::string started_by;
  // GPUPROF_ROOT_PID (not a JSON key): the pid of the process `gpuprof run` started; 0 when unset.
  // A process started from the injection library that is not that process (an exec'd
  // descendant) is profiled only with follow_children.
  std::uint32_t root_pid;
  // progress: under `gpuprof run` (root_pid set), each process writes its counts beside the result
  // file for run's live line (db::RunProgressPath) unless this is off (run says off when it shows none).
  bool progress;
  // exec_guard: whether `gpuprof run` preloaded libgpuprof_exec_guard.so (it hands on what it did:
  // 0 when asked to go without or when it left the guard out of a sanitizer-built program). Only
  // recorded: without the guard an exec leaves the DB unfinished.
  bool exec_guard;
  TorchSettings torch;
  ReplaySettings replay;
  // The JSON object's members in their order: key and the value's JSON text as given. Recognized
  // keys are rewritten with their resolved values by ToJson.
  std::vector<std::pair<std::string, std::string>> json_members;

  // The configuration as one JSON object: the given members (recognized ones with their resolved
  // values) followed by every declared setting with a JSON key that was not given, in table order:
  // the settings in force. Stored in the DB.
  std::string ToJson() const;
};

// A setting's value in `config`, as canonical text (base::ParseSettingText's form).
std::string SettingText(const SessionConfig& config, base::SettingId id);
// Stores a setting's value, given as text in any accepted form. InvalidArgument naming `origin`.
Status SetSetting(SessionConfig& config, base::SettingId id, std::string_view text, std::string_view origin);

// "runtime,driver,launches,nvtx" (in that order, those on; "none" when all are off).
std::string CudaTraceText(const SessionConfig::CudaTrace& trace);
// Parses a cuda_trace value: a comma list of runtime, driver, launches, nvtx (each at most once;
// launches not with runtime or driver), or "none".
// InvalidArgument naming `origin`, the text and the accepted words.
StatusOr<SessionConfig::CudaTrace> ParseCudaTrace(std::string_view text, std::string_view origin);

// Looks a variable up; nullptr when unset. The default reads the process environment.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup ProcessEnvironment();

// Defaults, then GPUPROF_CONFIG, then every declared setting's variable.
StatusOr<SessionConfig> ConfigFromEnvironment(const EnvLookup& env);

// Applies a JSON object's recognized keys on top of `config` and records all its members.
// InvalidArgument for text that is not a JSON object, a duplicate key, or a recognized key whose
// value has the wrong type or range (the message gives the key, the value and the offset).
Status ApplyJsonConfig(std::string_view json, std::string_view origin, SessionConfig& config);

// Checks the combination (e.g. a non-empty output directory, a positive flush interval).
Status ValidateConfig(const SessionConfig& config);

// The replay engine's options for `settings` (selector, passes, restore, strict, C2, the expanded
// metric list of replay/metric_catalog.h, the clock control and range replay: range mode where
// base::RangeReplayWanted says so, the delimiter NVTX where replay_nvtx_include names one).
replay::ReplayOptions ReplayOptionsFrom(const ReplaySettings& settings);

// base::CheckRangeSettings over `settings` (replay_mode, replay_range, replay_nvtx_include);
// `mode_given`: replay_mode was named beside them. Checked where a program names replay settings
// (replay_settings.h) and by the CUPTI device collector when the process starts; `gpuprof replay`
// checks its options before it starts anything.
Status CheckRangeSettings(const ReplaySettings& settings, bool mode_given = false);

}  // namespace gpuprof::session
