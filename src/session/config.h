// SessionConfig: what a Session needs to know, from the environment that `gpuprof run` sets and
// from a JSON object (GPUPROF_CONFIG, or the argument of gpuprof_start).
//
// Layers, later ones win:  defaults < GPUPROF_CONFIG (JSON) < GPUPROF_* variables < the JSON given
// to gpuprof_start. A specific variable beats the generic JSON the CLI exports beside it; a program
// that passes its own configuration to gpuprof_start beats the ambient environment.
//
//   variable                  JSON key            meaning (default)
//   GPUPROF_OUTPUT_DIR        "output_dir"        parent of the *_ascend_pt run directory (./gpuprof_output)
//   GPUPROF_WORKER_NAME       "worker_name"       run directory prefix ("<hostname>_<pid>")
//   GPUPROF_RANK (else RANK)  "rank"              integer >= -1; -1: unknown, no _<rank> suffix (-1)
//   GPUPROF_DEVICE_ID (else LOCAL_RANK) "device_id" the rank's device in RANK_DEVICE_MAP, >= -1 (-1)
//   GPUPROF_WORLD_SIZE (else WORLD_SIZE) "world_size" ranks in the job, COMMUNICATION_OP.rankSize (-1)
//   GPUPROF_FOLLOW_CHILDREN   "follow_children"   0/1: a fork child profiles itself into its own DB (0)
//   GPUPROF_RESULT_FILE       "result_file"       file that gets one "db <path>" line per finalized DB
//   GPUPROF_LOG_LEVEL         "log_level"         debug, info, warning, error, off (warning)
//   GPUPROF_FLUSH_INTERVAL_MS "flush_interval_ms" how often buffered records reach the writer (200)
//   GPUPROF_DEVICE            "device"            0/1: collect device activity when available (1)
//   GPUPROF_CUDA_TRACE        "cuda_trace"        which host-side CUDA activity is recorded beside the
//                                                 kernels, copies and memsets: a comma list of runtime,
//                                                 driver, launches, nvtx, or none ("launches,nvtx")
//   GPUPROF_ROOT_PID          -                   the pid `gpuprof run` started (see root_pid)
//
// Every other key of the JSON object is kept as given and stored with the run (META_DATA and
// profiler_info json), so callers may record their own settings there.
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

#include "base/logging.h"
#include "gpuprof/status.h"

namespace gpuprof::session {

struct SessionConfig {
  std::string output_dir = "./gpuprof_output";
  std::string worker_name;  // empty: "<hostname>_<pid>"
  std::int32_t rank = -1;
  std::int32_t device_id = -1;  // RANK_DEVICE_MAP.deviceId; -1: unknown
  std::int32_t world_size = -1;  // COMMUNICATION_OP.rankSize; -1: unknown
  bool follow_children = false;
  std::string result_file;                  // empty: none
  std::optional<base::LogLevel> log_level;  // unset: leave logging as GPUPROF_LOG_LEVEL set it
  std::chrono::milliseconds flush_interval{200};
  bool device = true;  // start the device collector when the build and the process have one
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
    bool nvtx = true;
    bool launches = true;
    bool operator==(const CudaTrace&) const = default;
  };
  CudaTrace cuda_trace;
  // Who started the session ("api", "injection", "fork"); stored with the run.
  std::string started_by = "api";
  // GPUPROF_ROOT_PID (not a JSON key): the pid of the process `gpuprof run` started; 0 when unset.
  // A process started from the injection library that is not that process (an exec'd
  // descendant) is profiled only with follow_children.
  std::uint32_t root_pid = 0;
  // The JSON object's members in their order: key and the value's JSON text as given. Recognized
  // keys are rewritten with their resolved values by ToJson.
  std::vector<std::pair<std::string, std::string>> json_members;

  // The configuration as one JSON object: the given members (recognized ones with their resolved
  // values) followed by the resolved settings that were not given. Stored in the DB.
  std::string ToJson() const;
};

// "runtime,driver,launches,nvtx" (in that order, those on; "none" when all are off).
std::string CudaTraceText(const SessionConfig::CudaTrace& trace);
// Parses a cuda_trace value: a comma list of runtime, driver, launches, nvtx (each at most once;
// launches not with runtime or driver), or "none".
// InvalidArgument naming `origin`, the text and the accepted words.
StatusOr<SessionConfig::CudaTrace> ParseCudaTrace(std::string_view text, std::string_view origin);

// Looks a variable up; nullptr when unset. The default reads the process environment.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup ProcessEnvironment();

// Defaults, then GPUPROF_CONFIG, then the GPUPROF_* variables (see the table above).
StatusOr<SessionConfig> ConfigFromEnvironment(const EnvLookup& env);

// Applies a JSON object's recognized keys on top of `config` and records all its members.
// InvalidArgument for text that is not a JSON object, a duplicate key, or a recognized key whose
// value has the wrong type or range (the message gives the key, the value and the offset).
Status ApplyJsonConfig(std::string_view json, std::string_view origin, SessionConfig& config);

// Checks the combination (e.g. a non-empty output directory, a positive flush interval).
Status ValidateConfig(const SessionConfig& config);

// Escapes `text` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view text);

}  // namespace gpuprof::session
