#include "base/settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <regex>

#include "base/closest_word.h"
#include "base/json.h"
#include "base/metric_name.h"

namespace gpuprof::base {
namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::string_view kRegexPrefix = "regex:";

// An integer literal is shown as it is, any other text quoted (so an empty or odd value is visible).
bool IsIntegerLiteral(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status Invalid(std::string_view origin, std::string_view text, std::string_view why) {
  return InvalidArgumentError(std::string(origin) + "=" +
                              (IsIntegerLiteral(text) ? std::string(text) : JsonQuote(text)) + ": " +
                              std::string(why));
}

// How messages name a setting: "the device id" for device_id, "the flush interval" for
// flush_interval_ms (the unit is in the range), "the root pid" for GPUPROF_ROOT_PID.
std::string Noun(const SettingSpec& spec) {
  std::string_view key = spec.json_key;
  if (key.empty()) key = spec.env.substr(spec.env.rfind("GPUPROF_", 0) == 0 ? 8 : 0);
  for (std::string_view unit : {std::string_view("_ms"), std::string_view("_mib")}) {
    if (key.size() > unit.size() && key.substr(key.size() - unit.size()) == unit)
      key.remove_suffix(unit.size());
  }
  std::string noun = "the ";
  for (char c : key)
    noun.push_back(c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return noun;
}

// A worker name becomes one component of the run directory's name.
Status CheckWorkerName(std::string_view name, std::string_view origin) {
  if (name.find('/') != std::string_view::npos || name == "." || name == "..") {
    return Invalid(origin, name, "a worker name is one directory-name component (no '/', not . or ..)");
  }
  return OkStatus();
}

// cuda_trace: none alone; launches records the launching calls of both APIs, runtime or driver every
// call of one, so launches goes with neither.
Status CheckCudaTrace(std::string_view canonical, std::string_view origin) {
  const std::vector<std::string_view> words = SettingListWords(canonical);
  const auto has = [&](std::string_view word) {
    return std::find(words.begin(), words.end(), word) != words.end();
  };
  constexpr std::string_view kExpected =
      "; expected a comma list of runtime, driver, launches, nvtx (e.g. \"runtime,nvtx\" or "
      "\"launches,nvtx\"), "
      "or none for kernels, copies and memsets alone";
  if (has("none") && words.size() > 1)
    return Invalid(origin, canonical,
                   std::string("none cannot be combined with other entries").append(kExpected));
  if (has("launches") && (has("runtime") || has("driver"))) {
    const bool runtime = has("runtime");
    return Invalid(
        origin, canonical,
        std::string("\"launches\" records the launching calls of the runtime and driver APIs, \"") +
            (runtime ? "runtime" : "driver") + "\" every call of " +
            (runtime ? "the runtime" : "the driver") + "; give one of them" + std::string(kExpected));
  }
  return OkStatus();
}

// -k: an exact kernel name, or regex:PATTERN in ECMAScript syntax (C4).
Status CheckKernelSelector(std::string_view canonical, std::string_view origin) {
  if (canonical.substr(0, kRegexPrefix.size()) != kRegexPrefix) return OkStatus();
  try {
    std::regex probe(std::string(canonical.substr(kRegexPrefix.size())), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Invalid(origin, canonical,
                   std::string("not a valid regular expression (") + e.what() +
                       "); use regex:PATTERN with ECMAScript syntax or NAME for an exact name");
  }
  return OkStatus();
}

Status CheckDirectory(std::string_view canonical, std::string_view origin) {
  if (canonical.empty())
    return Invalid(origin, canonical, "the output directory must be a non-empty directory path");
  return OkStatus();
}

// --metrics: a comma list of Nsight Compute metric names (base/metric_name.h, the grammar the
// catalog's ExpandMetricRequest uses too); whether the GPU has the metric is the counter backend's to
// say.
Status CheckMetricList(std::string_view canonical, std::string_view origin) {
  const std::string problem = MetricListProblem(canonical);
  return problem.empty() ? OkStatus() : Invalid(origin, canonical, problem);
}

using T = SettingType;

// The table. Rows are in SettingId order (checked at compile time below).
constexpr std::array<SettingSpec, static_cast<std::size_t>(SettingId::kCount)> kSettings = {{
    {SettingId::kOutputDir, "output_dir", "GPUPROF_OUTPUT_DIR", "", T::kString, 0, 0, "", "./gpuprof_output",
     "-o,--output", kRunCommand | kReplayCommand, "DIR",
     "Directory for the profile DBs (created if missing); each process writes "
     "DIR/<host>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler[_<rank>].db",
     &CheckDirectory},
    {SettingId::kWorkerName, "worker_name", "GPUPROF_WORKER_NAME", "", T::kString, 0, 0, "", "", "",
     kNoCommand, "", "The run directory's prefix in place of <host>_<pid>", &CheckWorkerName},
    {SettingId::kRank, "rank", "GPUPROF_RANK", "RANK", T::kInt, -1, kInt32Max, "", "-1", "", kNoCommand, "",
     "The process's rank (-1: unknown; the DB then has no _<rank> suffix)", nullptr},
    {SettingId::kDeviceId, "device_id", "GPUPROF_DEVICE_ID", "LOCAL_RANK", T::kInt, -1, kInt32Max, "", "-1",
     "", kNoCommand, "", "The rank's device in RANK_DEVICE_MAP (-1: unknown)", nullptr},
    {SettingId::kWorldSize, "world_size", "GPUPROF_WORLD_SIZE", "WORLD_SIZE", T::kInt, -1, kInt32Max, "",
     "-1", "", kNoCommand, "", "Ranks in the job, COMMUNICATION_OP.rankSize (-1: unknown)", nullptr},
    {SettingId::kFollowChildren, "follow_children", "GPUPROF_FOLLOW_CHILDREN", "", T::kBool, 0, 0, "", "0",
     "--follow-children", kRunCommand | kReplayCommand, "",
     "Also profile (and replay in) child processes that use CUDA, each into its own DB (torchrun's ranks)",
     nullptr},
    {SettingId::kResultFile, "result_file", "GPUPROF_RESULT_FILE", "", T::kString, 0, 0, "", "", "",
     kNoCommand, "", "A file that gets one \"db <path>\" line per finalized DB (set by `gpuprof run`)",
     nullptr},
    {SettingId::kLogLevel, "log_level", "GPUPROF_LOG_LEVEL", "", T::kChoice, 0, 0,
     "debug|info|warning|error|off", "warning", "", kNoCommand, "", "What gpuprof logs to stderr", nullptr},
    {SettingId::kFlushIntervalMs, "flush_interval_ms", "GPUPROF_FLUSH_INTERVAL_MS", "", T::kInt, 1, 60'000,
     "", "200", "", kNoCommand, "", "How often buffered records reach the DB writer, in milliseconds",
     nullptr},
    {SettingId::kDevice, "device", "GPUPROF_DEVICE", "", T::kBool, 0, 0, "", "1", "", kNoCommand, "",
     "Collect device activity when the build and the process have a device", nullptr},
    {SettingId::kCudaTrace, "cuda_trace", "GPUPROF_CUDA_TRACE", "", T::kList, 0, 0,
     "runtime|driver|launches|nvtx|none", "launches,nvtx", "--cuda-trace", kRunCommand, "LIST",
     "Host-side CUDA activity recorded beside kernels, copies and memsets: a comma list of runtime, driver, "
     "launches, nvtx, or none (launches: only the launching, copying, allocating and waiting calls of both "
     "APIs; runtime,driver: every call, each as a CUPTI activity record; launches goes with neither)",
     &CheckCudaTrace, /*inherit=*/true},
    {SettingId::kRootPid, "", "GPUPROF_ROOT_PID", "", T::kInt, 1, kInt32Max, "", "", "", kNoCommand, "",
     "The pid of the process `gpuprof run` started (set by `gpuprof run`)", nullptr},
    {SettingId::kStartedBy, "started_by", "", "", T::kString, 0, 0, "", "api", "", kNoCommand, "",
     "Who started the session: api, injection or fork (recorded with the run)", nullptr},
    {SettingId::kRecordShapes, "record_shapes", "GPUPROF_TORCH_RECORD_SHAPES", "", T::kBool, 0, 0, "", "1",
     "--record-shapes,!--no-record-shapes", kRunCommand, "",
     "PyTorch scripts: record each op's input shapes and dtypes (default: on)", nullptr},
    {SettingId::kProfileMemory, "profile_memory", "GPUPROF_TORCH_PROFILE_MEMORY", "", T::kBool, 0, 0, "", "1",
     "--profile-memory,!--no-profile-memory", kRunCommand, "",
     "PyTorch scripts: record allocator events into MEMORY_RECORD and OP_MEMORY (default: on)", nullptr},
    {SettingId::kWithStack, "with_stack", "GPUPROF_TORCH_WITH_STACK", "", T::kBool, 0, 0, "", "0",
     "--with-stack", kRunCommand, "",
     "PyTorch scripts: record each op's Python call stack into PYTORCH_CALLCHAINS (default: off)", nullptr},
    {SettingId::kWithModules, "with_modules", "GPUPROF_TORCH_WITH_MODULES", "", T::kBool, 0, 0, "", "0",
     "--with-modules", kRunCommand, "",
     "PyTorch scripts: record each nn.Module forward as an MSTX_EVENTS range in domain Module (default: off)",
     nullptr},
    {SettingId::kGcThresholdMs, "gc_threshold_ms", "GPUPROF_TORCH_GC_THRESHOLD_MS", "", T::kInt, -1,
     3'600'000, "", "1", "--gc-threshold", kRunCommand, "MS",
     "PyTorch scripts: record Python garbage-collection pauses of at least MS milliseconds into GC_RECORD "
     "(0: every collection; -1: none; default: 1)",
     nullptr},
    {SettingId::kReplay, "replay", "GPUPROF_REPLAY", "", T::kBool, 0, 0, "", "0", "", kNoCommand, "",
     "Kernel replay: track device memory and replay the selected launches (set by `gpuprof replay`)",
     nullptr},
    {SettingId::kReplayFromScript, "replay_from_script", "GPUPROF_REPLAY_FROM_SCRIPT", "", T::kBool, 0, 0, "",
     "0", "--from-script", kReplayCommand, "",
     "Track memory from the start but replay only what the program asks for "
     "(gpuprof.profile(kernel_replay=gpuprof.KernelReplay(...))); excludes the selection flags",
     nullptr},
    {SettingId::kReplayPasses, "replay_passes", "GPUPROF_REPLAY_PASSES", "", T::kInt, 2, 1000, "", "5",
     "--passes", kReplayCommand | kDemoCommand, "N", "Passes per replayed kernel launch", nullptr},
    {SettingId::kReplayKernel, "replay_kernel", "GPUPROF_REPLAY_KERNEL", "", T::kString, 0, 0, "", "",
     "-k,--kernel-name", kReplayCommand, "NAME",
     "Kernel to replay: NAME or regex:PATTERN (default: every kernel)", &CheckKernelSelector},
    {SettingId::kReplaySkip, "replay_skip", "GPUPROF_REPLAY_SKIP", "", T::kInt, 0, kInt64Max, "", "0",
     "-s,--launch-skip", kReplayCommand, "N",
     "Matching launches to run unreplayed first (with --replay-mode range: ranges)", nullptr},
    {SettingId::kReplayCount, "replay_count", "GPUPROF_REPLAY_COUNT", "", T::kInt, 0, kInt64Max, "", "0",
     "-c,--launch-count", kReplayCommand, "N",
     "Replay at most this many launches (with --replay-mode range: ranges; 0: no limit)", nullptr},
    {SettingId::kReplayCacheControl, "replay_cache_control", "GPUPROF_REPLAY_CACHE_CONTROL", "", T::kChoice,
     0, 0, "all|none", "all", "--cache-control", kReplayCommand, "all|none",
     "Flush L2 before each pass (all) or not (none)", nullptr},
    {SettingId::kReplayRestore, "replay_restore", "GPUPROF_REPLAY_RESTORE", "", T::kChoice, 0, 0,
     "auto|exact|full", "auto", "--restore", kReplayCommand | kDemoCommand, "auto|exact|full",
     "Restore between passes: write back the chunks whose hash changed, found on the device in one read "
     "(auto), the chunks that differ byte for byte from a device-resident snapshot (exact, two reads), or "
     "every byte (full)",
     nullptr},
    {SettingId::kReplayStrict, "replay_strict", "GPUPROF_REPLAY_STRICT", "", T::kBool, 0, 0, "", "0",
     "--strict", kReplayCommand, "", "Decline launches while kernel-writable untracked memory is live",
     nullptr},
    {SettingId::kReplayPrintfKernels, "replay_printf_kernels", "GPUPROF_REPLAY_PRINTF_KERNELS", "", T::kBool,
     0, 0, "", "1", "--replay-printf-kernels,!--no-replay-printf-kernels", kReplayCommand, "",
     "Replay kernels that use device printf; what they print repeats once per pass (default: on)", nullptr},
    {SettingId::kReplayMallocKernels, "replay_malloc_kernels", "GPUPROF_REPLAY_MALLOC_KERNELS", "", T::kBool,
     0, 0, "", "0", "--replay-malloc-kernels", kReplayCommand, "",
     "Replay kernels that use device malloc/free, whose allocations each pass repeats (default: off)",
     nullptr},
    {SettingId::kReplayWithLiveArrays, "replay_with_live_arrays", "GPUPROF_REPLAY_WITH_LIVE_ARRAYS", "",
     T::kBool, 0, 0, "", "0", "--replay-with-live-arrays", kReplayCommand, "",
     "Replay launches while CUDA arrays exist, though writes to arrays are not undone (default: off)",
     nullptr},
    {SettingId::kReplayDeviceReserveMib, "replay_device_reserve_mib", "GPUPROF_REPLAY_DEVICE_RESERVE_MIB", "",
     T::kInt, 0, std::int64_t{1} << 30, "", "2048", "--device-reserve", kReplayCommand, "MIB",
     "MiB of device memory that snapshots leave free; beyond it they go to host memory", nullptr},
    {SettingId::kReplayStorage, "replay_storage", "GPUPROF_REPLAY_STORAGE", "", T::kChoice, 0, 0,
     "device|pinned|pageable|file", "device", "--storage", kReplayCommand, "TIER",
     "Fastest storage for snapshots: device memory under the reserve, then pinned host memory, then "
     "pageable host memory, then a spill file (mode 0600, deleted at exit) under the output directory; "
     "what does not fit goes to the next",
     nullptr},
    {SettingId::kReplayMetrics, "replay_metrics", "GPUPROF_REPLAY_METRICS", "", T::kString, 0, 0, "", "",
     "--metrics", kReplayCommand, "LIST",
     "Hardware counters to collect over extra counter passes of each replayed launch: a comma list of Nsight "
     "Compute metric names (e.g. dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed); "
     "launch__* metrics need no pass (default: none; docs/metrics.md)",
     &CheckMetricList},
    // The choices are replay/metric_catalog.cc's section names (base cannot see the catalog;
    // MetricCatalogTest.SettingsRowsAgreeWithTheCatalog holds them equal).
    {SettingId::kReplaySection, "replay_section", "GPUPROF_REPLAY_SECTION", "", T::kList, 0, 0,
     "SpeedOfLight|ComputeWorkloadAnalysis|MemoryWorkloadAnalysis|SchedulerStats|LaunchStats|Occupancy|"
     "WorkloadDistribution",
     "", "--section", kReplayCommand, "LIST",
     "Nsight Compute sections whose metrics to collect, a comma list (case matters), e.g. "
     "SpeedOfLight,Occupancy (default: none)",
     nullptr},
    {SettingId::kReplaySet, "replay_set", "GPUPROF_REPLAY_SET", "", T::kChoice, 0, 0, "none|basic|full",
     "none", "--set", kReplayCommand, "none|basic|full",
     "Nsight Compute section set to collect: basic (SpeedOfLight, LaunchStats, Occupancy, "
     "WorkloadDistribution), "
     "full (every section) or none; unlike ncu, the default collects no counters",
     nullptr},
    {SettingId::kReplayClockControl, "replay_clock_control", "GPUPROF_REPLAY_CLOCK_CONTROL", "", T::kChoice,
     0, 0, "none|base", "none", "--clock-control", kReplayCommand, "none|base",
     "Leave the GPU clocks as they are (none), or lock SM and memory clocks to base through NVML for the "
     "passes "
     "and restore them after (base; NVML allows it to root only: otherwise a warning and clocks unchanged). "
     "Unlike ncu, the default is none",
     nullptr},
    {SettingId::kReplayCounterRange, "replay_counter_range", "GPUPROF_REPLAY_COUNTER_RANGE", "", T::kChoice,
     0, 0, "auto|user", "auto", "--counter-range", kReplayCommand, "auto|user",
     "What a counter pass measures: the replayed kernel alone (auto, CUPTI's auto range) or everything "
     "between the pass's start and stop, the L2 flush of --cache-control all included (user, CUPTI's user "
     "range)",
     nullptr},
    {SettingId::kReplayGraph, "replay_graph", "GPUPROF_REPLAY_GRAPH", "", T::kChoice, 0, 0, "off|graph|node",
     "off", "--graph-replay", kReplayCommand, "off|graph|node",
     "Graph launches (CUDA graphs, torch.compile reduce-overhead, CUDAGraph): off runs each once, "
     "unreplayed; "
     "graph replays a selected graph launch as one unit, timing the graph and its kernel nodes per pass; "
     "node "
     "runs it node by node and replays each kernel node that -k selects in place, with the inputs it sees in "
     "the graph (graphs with host, allocation or conditional nodes fall back to graph). -k selects a graph "
     "when any kernel node matches; -s/-c count graph launches",
     nullptr},
    // Range replay (REPLAY_SPEC.md W1-W6). The three delimiting settings go together as
    // session::CheckRangeSettings says (config.h), checked where a command or a program gives them.
    {SettingId::kReplayMode, "replay_mode", "GPUPROF_REPLAY_MODE", "", T::kChoice, 0, 0, "kernel|range",
     "kernel", "--replay-mode", kReplayCommand, "kernel|range",
     "What one replay repeats (Nsight Compute's --replay-mode): kernel replays each selected launch on its "
     "own; range replays a whole range of one device's work (--range) per pass, the application's own run "
     "being pass 1, and still reports every kernel of it. -s/-c then count ranges. --range nvtx or step, "
     "or --nvtx-include, imply range",
     nullptr},
    {SettingId::kReplayRange, "replay_range", "GPUPROF_REPLAY_RANGE", "", T::kChoice, 0, 0,
     "profiler|nvtx|step", "profiler", "--range", kReplayCommand, "profiler|nvtx|step",
     "With --replay-mode range, what delimits a range: cudaProfilerStart/Stop (profiler, as in ncu), the "
     "NVTX range --nvtx-include names (nvtx), or one training step, optimizer step to optimizer step, or "
     "gpuprof.profile step() to step() where the script calls it (step); nvtx and step imply --replay-mode "
     "range",
     nullptr},
    {SettingId::kReplayNvtxInclude, "replay_nvtx_include", "GPUPROF_REPLAY_NVTX_INCLUDE", "", T::kString, 0,
     0, "", "", "--nvtx-include", kReplayCommand, "NAME",
     "With --replay-mode range, the NVTX range (push/pop or start/end of this name) that delimits each range "
     "(ncu's --nvtx-include); implies --replay-mode range and --range nvtx, and is refused with --range step",
     nullptr},
    {SettingId::kReplayMaxRangeOperations, "replay_max_range_operations",
     "GPUPROF_REPLAY_MAX_RANGE_OPERATIONS", "", T::kInt, 1, kInt64Max, "", "1048576",
     "--max-range-operations", kReplayCommand, "N",
     "A range with more recorded operations (launches, copies, memsets, event records and waits) is "
     "declined whole and runs as it did",
     nullptr},
    {SettingId::kReplayMaxRangeHostMib, "replay_max_range_host_mib", "GPUPROF_REPLAY_MAX_RANGE_HOST_MIB", "",
     T::kInt, 0, std::int64_t{1} << 30, "", "1024", "--max-range-host-mib", kReplayCommand, "MIB",
     "MiB of host memory a range's recording may copy (copy sources and kernel arguments, taken at the "
     "call); a range needing more is declined whole and runs as it did",
     nullptr},
    {SettingId::kProgress, "progress", "GPUPROF_PROGRESS", "", T::kChoice, 0, 0, "auto|off", "auto",
     "--progress", kRunCommand | kReplayCommand | kDbCommand, "auto|off",
     "Progress on stderr while the work runs: auto shows a live line when stderr is a terminal, after a "
     "second (run and replay: the launches, kernels, ops and replays so far, on the terminal's last row; "
     "stats, export and check: the part of the DB being read); off shows none. A pipe or a file gets none",
     nullptr},
    {SettingId::kExecGuard, "exec_guard", "GPUPROF_EXEC_GUARD", "", T::kBool, 0, 0, "", "1",
     "--exec-guard,!--no-exec-guard", kRunCommand | kReplayCommand, "",
     "Preload libgpuprof_exec_guard.so so that a program that calls exec finalizes its profile first "
     "(default: on; left out by itself, with one line, for a program built with AddressSanitizer or "
     "ThreadSanitizer, whose runtime must come first; off: an exec leaves the DB unfinished)",
     nullptr, /*inherit=*/true},
}};

constexpr bool RowsInIdOrder() {
  for (std::size_t i = 0; i < kSettings.size(); ++i) {
    if (static_cast<std::size_t>(kSettings[i].id) != i) return false;
  }
  return true;
}
static_assert(RowsInIdOrder(), "kSettings rows must be in SettingId order");

std::string Lower(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::string_view TypeName(SettingType type) {
  switch (type) {
    case T::kBool: return "bool";
    case T::kInt: return "int";
    case T::kString: return "string";
    case T::kChoice: return "choice";
    case T::kList: return "list";
  }
  return "string";
}

}  // namespace

std::span<const SettingSpec> Settings() noexcept { return kSettings; }

const SettingSpec& Spec(SettingId id) noexcept { return kSettings[static_cast<std::size_t>(id)]; }

const SettingSpec* FindSettingByKey(std::string_view json_key) noexcept {
  if (json_key.empty()) return nullptr;
  for (const SettingSpec& spec : kSettings) {
    if (spec.json_key == json_key) return &spec;
  }
  return nullptr;
}

const SettingSpec* FindSettingByEnv(std::string_view env) noexcept {
  if (env.empty()) return nullptr;
  for (const SettingSpec& spec : kSettings) {
    if (spec.env == env) return &spec;
  }
  return nullptr;
}

std::string UnknownSettingKey(std::string_view json_key) {
  std::vector<std::string> keys;
  for (const SettingSpec& spec : kSettings) {
    if (!spec.json_key.empty()) keys.emplace_back(spec.json_key);
  }
  const std::string closest = ClosestWord(json_key, keys);
  return "no setting has the key " + JsonQuote(json_key) +
         (closest.empty() ? "; gpuprof_settings_json_v1() lists every setting"
                          : "; did you mean " + closest + "?");
}

std::optional<bool> ParseBoolText(std::string_view text) noexcept {
  if (text.size() > 5) return std::nullopt;
  char lower[6] = {};
  for (std::size_t i = 0; i < text.size(); ++i)
    lower[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  const std::string_view word(lower, text.size());
  if (word == "1" || word == "true" || word == "on") return true;
  if (word == "0" || word == "false" || word == "off") return false;
  return std::nullopt;
}

std::vector<std::string_view> SettingChoices(const SettingSpec& spec) {
  std::vector<std::string_view> choices;
  std::string_view rest = spec.choices;
  while (!rest.empty()) {
    const std::size_t bar = rest.find('|');
    choices.push_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return choices;
}

std::vector<std::string_view> SettingListWords(std::string_view canonical) {
  std::vector<std::string_view> words;
  std::size_t begin = 0;
  while (begin <= canonical.size()) {
    const std::size_t comma = canonical.find(',', begin);
    words.push_back(
        canonical.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin));
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return words;
}

std::int64_t SettingInt(std::string_view canonical) noexcept {
  std::int64_t value = 0;
  std::from_chars(canonical.data(), canonical.data() + canonical.size(), value);
  return value;
}

std::string SettingAccepts(const SettingSpec& spec) {
  std::string choices;
  for (std::string_view choice : SettingChoices(spec))
    choices += (choices.empty() ? "" : ", ") + std::string(choice);
  switch (spec.type) {
    case T::kBool: return "0 or 1 (or false/true, off/on)";
    case T::kInt: return "an integer from " + std::to_string(spec.min) + " to " + std::to_string(spec.max);
    case T::kString: return "text";
    case T::kChoice: return "one of " + choices;
    case T::kList: return "a comma list of " + choices;
  }
  return "text";
}

StatusOr<std::string> ParseSettingText(const SettingSpec& spec, std::string_view text,
                                       std::string_view origin) {
  std::string canonical;
  switch (spec.type) {
    case T::kBool: {
      std::optional<bool> value = ParseBoolText(text);
      if (!value) return Invalid(origin, text, "expected " + SettingAccepts(spec));
      canonical = *value ? "1" : "0";
      break;
    }
    case T::kInt: {
      std::int64_t value = 0;
      const char* end = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(text.data(), end, value);
      if (text.empty() || ec != std::errc() || ptr != end || value < spec.min || value > spec.max) {
        return Invalid(origin, text, Noun(spec) + " must be " + SettingAccepts(spec));
      }
      canonical = std::to_string(value);
      break;
    }
    case T::kString: canonical = std::string(text); break;
    case T::kChoice: {
      const std::vector<std::string_view> choices = SettingChoices(spec);
      const std::string lower = Lower(text);
      if (std::find(choices.begin(), choices.end(), lower) == choices.end()) {
        return Invalid(origin, text, "expected " + SettingAccepts(spec));
      }
      canonical = lower;
      break;
    }
    case T::kList: {
      if (text.empty() && spec.default_value.empty()) break;  // the empty list, where it is the default
      const std::vector<std::string_view> choices = SettingChoices(spec);
      std::vector<std::string> seen;
      for (std::string_view word : SettingListWords(text)) {
        const std::string lower(word);  // list words are exact (cuda_trace's "Runtime" is not runtime)
        if (lower.empty() || std::find(choices.begin(), choices.end(), lower) == choices.end()) {
          return Invalid(
              origin, text,
              (lower.empty() ? std::string("an empty entry") : "unknown entry " + JsonQuote(word)) +
                  "; expected " + SettingAccepts(spec));
        }
        if (std::find(seen.begin(), seen.end(), lower) != seen.end()) {
          return Invalid(origin, text,
                         JsonQuote(lower) + " is given twice; expected " + SettingAccepts(spec));
        }
        seen.push_back(lower);
      }
      for (const std::string& word : seen) canonical += (canonical.empty() ? "" : ",") + word;
      break;
    }
  }
  if (spec.check != nullptr) GPUPROF_RETURN_IF_ERROR(spec.check(canonical, origin));
  return canonical;
}

bool RangeReplayWanted(std::string_view mode, std::string_view range,
                       std::string_view nvtx_include) noexcept {
  return mode == "range" || range != "profiler" || !nvtx_include.empty();
}

Status CheckRangeSettings(std::string_view mode, std::string_view range, std::string_view nvtx_include,
                          bool mode_given) {
  const std::string nvtx = "--nvtx-include (replay_nvtx_include) " + JsonQuote(nvtx_include);
  if (mode_given && mode == "kernel" && (range != "profiler" || !nvtx_include.empty())) {
    return InvalidArgumentError(
        (nvtx_include.empty() ? "--range (replay_range) " + std::string(range) : nvtx) +
        " delimits the ranges of range replay, but --replay-mode (replay_mode) is kernel: drop one of them");
  }
  if (range == "step" && !nvtx_include.empty()) {
    return InvalidArgumentError(
        nvtx +
        " delimits ranges by an NVTX range, but --range (replay_range) step delimits them "
        "by training step: give one of them");
  }
  if (range == "nvtx" && nvtx_include.empty()) {
    return InvalidArgumentError(
        "--range (replay_range) nvtx needs the NVTX range's name: add --nvtx-include NAME "
        "(replay_nvtx_include)");
  }
  return OkStatus();
}

std::string SettingsJson() {
  std::string out = "[";
  for (const SettingSpec& spec : kSettings) {
    if (out.size() > 1) out += ",\n ";
    out += "{\"json_key\": " + JsonQuote(spec.json_key) + ", \"env\": " + JsonQuote(spec.env) +
           ", \"launcher_env\": " + JsonQuote(spec.launcher_env) +
           ", \"type\": " + JsonQuote(TypeName(spec.type));
    if (spec.type == T::kInt)
      out += ", \"min\": " + std::to_string(spec.min) + ", \"max\": " + std::to_string(spec.max);
    out += ", \"choices\": [";
    bool first = true;
    for (std::string_view choice : SettingChoices(spec)) {
      out += (first ? "" : ", ") + JsonQuote(choice);
      first = false;
    }
    out += "], \"default\": " + JsonQuote(spec.default_value) + ", \"cli\": " + JsonQuote(spec.cli) +
           ", \"help\": " + JsonQuote(spec.help) + "}";
  }
  out += "]";
  return out;
}

}  // namespace gpuprof::base
