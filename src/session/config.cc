#include "session/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "base/check.h"
#include "replay/metric_catalog.h"

namespace gpuprof::session {
namespace {

constexpr int kMaxJsonDepth = 64;

// One member of the top-level object: its key, the value's text as given, and the decoded text of
// a string value.
struct JsonMember {
  enum class Kind : std::uint8_t { kString, kNumber, kBool, kNull, kObject, kArray };
  std::string key;
  std::string_view raw;
  Kind kind = Kind::kNull;
  std::string text;  // kString: decoded; kBool: "true"/"false"; kNumber: the literal
  std::size_t offset = 0;
};

// A strict RFC 8259 reader for one JSON object. It keeps the top-level members and validates the
// nested values without building them: the configuration only reads flat keys.
class JsonObjectReader {
 public:
  JsonObjectReader(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {}

  Status Read(std::vector<JsonMember>* members) {
    SkipSpace();
    if (!Consume('{')) return Error("expected a JSON object ('{')");
    SkipSpace();
    if (!Consume('}')) {
      while (true) {
        SkipSpace();
        JsonMember member;
        member.offset = pos_;
        if (Peek() != '"') return Error("expected a string key");
        GPUPROF_RETURN_IF_ERROR(ReadString(&member.key));
        for (const JsonMember& other : *members) {
          if (other.key == member.key) return ErrorAt(member.offset, "duplicate key \"" + member.key + "\"");
        }
        SkipSpace();
        if (!Consume(':')) return Error("expected ':' after key \"" + member.key + "\"");
        SkipSpace();
        std::size_t start = pos_;
        GPUPROF_RETURN_IF_ERROR(ReadValue(1, &member));
        member.raw = text_.substr(start, pos_ - start);
        members->push_back(std::move(member));
        SkipSpace();
        if (Consume(',')) continue;
        if (Consume('}')) break;
        return Error("expected ',' or '}' in the object");
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the object");
    return OkStatus();
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  Status ErrorAt(std::size_t offset, const std::string& what) const {
    std::string near(text_.substr(offset, 24));
    std::ostringstream out;
    out << origin_ << ": invalid JSON at offset " << offset << ": " << what;
    if (!near.empty()) out << " (near " << JsonQuote(near) << ")";
    return InvalidArgumentError(out.str());
  }
  Status Error(const std::string& what) const { return ErrorAt(pos_, what); }

  Status ReadValue(int depth, JsonMember* member) {
    if (depth > kMaxJsonDepth) return Error("nesting deeper than 64 levels");
    char c = Peek();
    if (c == '"') {
      std::string decoded;
      GPUPROF_RETURN_IF_ERROR(ReadString(&decoded));
      if (member != nullptr) {
        member->kind = JsonMember::Kind::kString;
        member->text = std::move(decoded);
      }
      return OkStatus();
    }
    if (c == '{' || c == '[') {
      if (member != nullptr) member->kind = c == '{' ? JsonMember::Kind::kObject : JsonMember::Kind::kArray;
      return ReadContainer(depth);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t start = pos_;
      GPUPROF_RETURN_IF_ERROR(ReadNumber());
      if (member != nullptr) {
        member->kind = JsonMember::Kind::kNumber;
        member->text = std::string(text_.substr(start, pos_ - start));
      }
      return OkStatus();
    }
    for (std::string_view word :
         {std::string_view("true"), std::string_view("false"), std::string_view("null")}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        if (member != nullptr) {
          member->kind = word == "null" ? JsonMember::Kind::kNull : JsonMember::Kind::kBool;
          member->text = std::string(word);
        }
        return OkStatus();
      }
    }
    return Error("expected a value");
  }

  Status ReadContainer(int depth) {
    const char open = text_[pos_++];
    const char close = open == '{' ? '}' : ']';
    SkipSpace();
    if (Consume(close)) return OkStatus();
    while (true) {
      SkipSpace();
      if (open == '{') {
        std::string key;
        if (Peek() != '"') return Error("expected a string key");
        GPUPROF_RETURN_IF_ERROR(ReadString(&key));
        SkipSpace();
        if (!Consume(':')) return Error("expected ':'");
        SkipSpace();
      }
      GPUPROF_RETURN_IF_ERROR(ReadValue(depth + 1, nullptr));
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume(close)) return OkStatus();
      return Error(open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }

  Status ReadNumber() {
    std::size_t start = pos_;
    Consume('-');
    if (Consume('0')) {
    } else if (Peek() >= '1' && Peek() <= '9') {
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    } else {
      return ErrorAt(start, "malformed number");
    }
    if (Consume('.')) {
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return ErrorAt(start, "malformed number");
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) return ErrorAt(start, "malformed number");
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    }
    return OkStatus();
  }

  // base's reader of JSON string literals; bytes that are not UTF-8 are kept, as the configuration
  // always accepted them (they are stored with the run as given).
  Status ReadString(std::string* out) {
    Status read = base::ReadJsonString(text_, &pos_, out, base::JsonUtf8::kKeep);
    if (read.ok()) return read;
    return ErrorAt(pos_, std::string(read.message()));
  }

  std::string_view text_;
  std::string_view origin_;
  std::size_t pos_ = 0;
};

using base::SettingId;
using base::SettingSpec;
using base::SettingType;

bool IsJsonKind(const SettingSpec& spec, JsonMember::Kind kind) {
  switch (spec.type) {
    case SettingType::kBool: return kind == JsonMember::Kind::kBool;
    case SettingType::kInt: return kind == JsonMember::Kind::kNumber;
    case SettingType::kString:
    case SettingType::kChoice:
    case SettingType::kList: return kind == JsonMember::Kind::kString;
  }
  return false;
}

std::string_view JsonKindExpected(const SettingSpec& spec) {
  switch (spec.type) {
    case SettingType::kBool: return "true or false";
    case SettingType::kInt: return "an integer";
    default: return "a string";
  }
}

Status WrongType(std::string_view origin, const JsonMember& m, std::string_view expected) {
  return InvalidArgumentError(std::string(origin) + ": key \"" + m.key + "\" (offset " +
                              std::to_string(m.offset) + ") must be " + std::string(expected) + ", got " +
                              std::string(m.raw));
}

// One setting's JSON member as the text the table parses.
StatusOr<std::string> JsonMemberText(const SettingSpec& spec, const JsonMember& m, std::string_view origin) {
  if (!IsJsonKind(spec, m.kind)) return WrongType(origin, m, JsonKindExpected(spec));
  if (spec.type == SettingType::kBool) return std::string(m.text == "true" ? "1" : "0");
  if (spec.type == SettingType::kChoice) {
    const std::vector<std::string_view> choices = base::SettingChoices(spec);
    if (std::find(choices.begin(), choices.end(), m.text) == choices.end()) {
      std::string quoted;
      for (std::string_view choice : choices) quoted += (quoted.empty() ? "" : ", ") + JsonQuote(choice);
      return WrongType(origin, m, "one of " + quoted);
    }
  }
  if (spec.type == SettingType::kInt && m.text.find_first_of(".eE") != std::string::npos) {
    return WrongType(origin, m, "an integer");
  }
  return m.text;
}

}  // namespace

SessionConfig::SessionConfig() {
  for (const SettingSpec& spec : base::Settings()) {
    // An unset log level leaves logging as GPUPROF_LOG_LEVEL (read by base/logging) set it.
    if (spec.id == SettingId::kLogLevel) continue;
    Status set = SetSetting(*this, spec.id, spec.default_value, "the default");
    GPUPROF_CHECK(set.ok()) << "the declared default of " << spec.json_key << spec.env
                            << " does not parse: " << set.message();
  }
}

Status SetSetting(SessionConfig& c, SettingId id, std::string_view text, std::string_view origin) {
  const SettingSpec& spec = base::Spec(id);
  // The root pid and the choice-less strings have "unset" as their default.
  if (text.empty() && (id == SettingId::kRootPid)) {
    c.root_pid = 0;
    return OkStatus();
  }
  const StatusOr<std::string> parsed = base::ParseSettingText(spec, text, origin);
  if (!parsed.ok()) return parsed.status();
  const std::string& v = *parsed;
  const bool on = v == "1";
  const std::int64_t n = spec.type == SettingType::kInt ? base::SettingInt(v) : 0;
  switch (id) {
    case SettingId::kOutputDir: c.output_dir = v; break;
    case SettingId::kWorkerName: c.worker_name = v; break;
    case SettingId::kRank: c.rank = static_cast<std::int32_t>(n); break;
    case SettingId::kDeviceId: c.device_id = static_cast<std::int32_t>(n); break;
    case SettingId::kWorldSize: c.world_size = static_cast<std::int32_t>(n); break;
    case SettingId::kFollowChildren: c.follow_children = on; break;
    case SettingId::kResultFile: c.result_file = v; break;
    case SettingId::kLogLevel: c.log_level = base::ParseLogLevel(v, base::LogLevel::kWarning); break;
    case SettingId::kFlushIntervalMs: c.flush_interval = std::chrono::milliseconds(n); break;
    case SettingId::kDevice: c.device = on; break;
    case SettingId::kCudaTrace: {
      SessionConfig::CudaTrace trace;
      for (std::string_view word : base::SettingListWords(v)) {
        if (word == "runtime") trace.runtime = true;
        if (word == "driver") trace.driver = true;
        if (word == "launches") trace.launches = true;
        if (word == "nvtx") trace.nvtx = true;
      }
      c.cuda_trace = trace;
      break;
    }
    case SettingId::kRootPid: c.root_pid = static_cast<std::uint32_t>(n); break;
    case SettingId::kStartedBy: c.started_by = v; break;
    case SettingId::kRecordShapes: c.torch.record_shapes = on; break;
    case SettingId::kProfileMemory: c.torch.profile_memory = on; break;
    case SettingId::kWithStack: c.torch.with_stack = on; break;
    case SettingId::kWithModules: c.torch.with_modules = on; break;
    case SettingId::kGcThresholdMs: c.torch.gc_threshold_ms = static_cast<int>(n); break;
    case SettingId::kReplay: c.replay.enabled = on; break;
    case SettingId::kReplayFromScript: c.replay.from_script = on; break;
    case SettingId::kReplayPasses: c.replay.passes = static_cast<int>(n); break;
    case SettingId::kReplayKernel: c.replay.kernel = v; break;
    case SettingId::kReplaySkip: c.replay.skip = static_cast<std::uint64_t>(n); break;
    case SettingId::kReplayCount: c.replay.count = static_cast<std::uint64_t>(n); break;
    case SettingId::kReplayCacheControl: c.replay.flush_l2 = v == "all"; break;
    case SettingId::kReplayRestore:
      replay::ParseRestoreMode(v, &c.replay.restore);  // checked against the declared choices
      break;
    case SettingId::kReplayStrict: c.replay.strict = on; break;
    case SettingId::kReplayPrintfKernels: c.replay.printf_kernels = on; break;
    case SettingId::kReplayMallocKernels: c.replay.malloc_kernels = on; break;
    case SettingId::kReplayWithLiveArrays: c.replay.with_live_arrays = on; break;
    case SettingId::kReplayDeviceReserveMib:
      c.replay.device_reserve_bytes = static_cast<std::uint64_t>(n) << 20;
      break;
    case SettingId::kReplayStorage: replay::ParseSnapshotStorage(v, &c.replay.storage); break;
    // Checked by the rows (the metric grammar, the catalog's section and set names); expanded once,
    // by ReplayOptionsFrom.
    case SettingId::kReplayMetrics: c.replay.metrics = v; break;
    case SettingId::kReplaySection: c.replay.sections = v; break;
    case SettingId::kReplaySet: c.replay.set = v; break;
    case SettingId::kReplayClockControl: replay::ParseClockControl(v, &c.replay.clock_control); break;
    case SettingId::kReplayGraph: replay::ParseGraphReplay(v, &c.replay.graph_replay); break;
    case SettingId::kReplayCounterRange: c.replay.counter_range = v; break;
    case SettingId::kReplayMode: c.replay.range_mode = v == "range"; break;
    case SettingId::kReplayRange: replay::ParseRangeDelimiter(v, &c.replay.range); break;
    case SettingId::kReplayNvtxInclude: c.replay.nvtx_include = v; break;
    case SettingId::kReplayMaxRangeOperations:
      c.replay.max_range_operations = static_cast<std::uint64_t>(n);
      break;
    case SettingId::kReplayMaxRangeHostMib:
      c.replay.max_range_host_bytes = static_cast<std::uint64_t>(n) << 20;
      break;
    case SettingId::kProgress: c.progress = v != "off"; break;
    case SettingId::kExecGuard: c.exec_guard = on; break;
    case SettingId::kCount: break;
  }
  return OkStatus();
}

std::string SettingText(const SessionConfig& c, SettingId id) {
  const auto flag = [](bool on) { return std::string(on ? "1" : "0"); };
  switch (id) {
    case SettingId::kOutputDir: return c.output_dir;
    case SettingId::kWorkerName: return c.worker_name;
    case SettingId::kRank: return std::to_string(c.rank);
    case SettingId::kDeviceId: return std::to_string(c.device_id);
    case SettingId::kWorldSize: return std::to_string(c.world_size);
    case SettingId::kFollowChildren: return flag(c.follow_children);
    case SettingId::kResultFile: return c.result_file;
    case SettingId::kLogLevel:
      return std::string(base::LogLevelName(c.log_level ? *c.log_level : base::CurrentLogLevel()));
    case SettingId::kFlushIntervalMs: return std::to_string(c.flush_interval.count());
    case SettingId::kDevice: return flag(c.device);
    case SettingId::kCudaTrace: return CudaTraceText(c.cuda_trace);
    case SettingId::kRootPid: return c.root_pid == 0 ? std::string() : std::to_string(c.root_pid);
    case SettingId::kStartedBy: return c.started_by;
    case SettingId::kRecordShapes: return flag(c.torch.record_shapes);
    case SettingId::kProfileMemory: return flag(c.torch.profile_memory);
    case SettingId::kWithStack: return flag(c.torch.with_stack);
    case SettingId::kWithModules: return flag(c.torch.with_modules);
    case SettingId::kGcThresholdMs: return std::to_string(c.torch.gc_threshold_ms);
    case SettingId::kReplay: return flag(c.replay.enabled);
    case SettingId::kReplayFromScript: return flag(c.replay.from_script);
    case SettingId::kReplayPasses: return std::to_string(c.replay.passes);
    case SettingId::kReplayKernel: return c.replay.kernel;
    case SettingId::kReplaySkip: return std::to_string(c.replay.skip);
    case SettingId::kReplayCount: return std::to_string(c.replay.count);
    case SettingId::kReplayCacheControl: return c.replay.flush_l2 ? "all" : "none";
    case SettingId::kReplayRestore: return std::string(replay::RestoreModeName(c.replay.restore));
    case SettingId::kReplayStrict: return flag(c.replay.strict);
    case SettingId::kReplayPrintfKernels: return flag(c.replay.printf_kernels);
    case SettingId::kReplayMallocKernels: return flag(c.replay.malloc_kernels);
    case SettingId::kReplayWithLiveArrays: return flag(c.replay.with_live_arrays);
    case SettingId::kReplayDeviceReserveMib: return std::to_string(c.replay.device_reserve_bytes >> 20);
    case SettingId::kReplayStorage: return std::string(replay::SnapshotStorageName(c.replay.storage));
    case SettingId::kReplayMetrics: return c.replay.metrics;
    case SettingId::kReplaySection: return c.replay.sections;
    case SettingId::kReplaySet: return c.replay.set;
    case SettingId::kReplayClockControl: return std::string(replay::ClockControlName(c.replay.clock_control));
    case SettingId::kReplayGraph: return std::string(replay::GraphReplayName(c.replay.graph_replay));
    case SettingId::kReplayCounterRange: return c.replay.counter_range;
    case SettingId::kReplayMode: return c.replay.range_mode ? "range" : "kernel";
    case SettingId::kReplayRange: return std::string(replay::RangeDelimiterName(c.replay.range));
    case SettingId::kReplayNvtxInclude: return c.replay.nvtx_include;
    case SettingId::kReplayMaxRangeOperations: return std::to_string(c.replay.max_range_operations);
    case SettingId::kReplayMaxRangeHostMib: return std::to_string(c.replay.max_range_host_bytes >> 20);
    case SettingId::kProgress: return c.progress ? "auto" : "off";
    case SettingId::kExecGuard: return flag(c.exec_guard);
    case SettingId::kCount: break;
  }
  return {};
}

std::string CudaTraceText(const SessionConfig::CudaTrace& trace) {
  std::string text;
  for (auto [on, word] : {std::pair{trace.runtime, "runtime"},
                          {trace.driver, "driver"},
                          {trace.launches, "launches"},
                          {trace.nvtx, "nvtx"}}) {
    if (!on) continue;
    if (!text.empty()) text += ",";
    text += word;
  }
  return text.empty() ? "none" : text;
}

StatusOr<SessionConfig::CudaTrace> ParseCudaTrace(std::string_view text, std::string_view origin) {
  SessionConfig config;
  GPUPROF_RETURN_IF_ERROR(SetSetting(config, SettingId::kCudaTrace, text, origin));
  return config.cuda_trace;
}

std::string SessionConfig::ToJson() const {
  std::string out = "{";
  bool first = true;
  auto add = [&](std::string_view key, const std::string& value) {
    if (!first) out += ", ";
    first = false;
    out += JsonQuote(key);
    out += ": ";
    out += value;
  };
  // A setting's value as JSON: true/false, a number, or a string.
  auto resolved = [this](const SettingSpec& spec) {
    const std::string text = SettingText(*this, spec.id);
    if (spec.type == SettingType::kBool) return std::string(text == "1" ? "true" : "false");
    if (spec.type == SettingType::kInt) return text;
    return JsonQuote(text);
  };
  for (const auto& [key, raw] : json_members) {
    const SettingSpec* spec = base::FindSettingByKey(key);
    add(key, spec != nullptr ? resolved(*spec) : raw);
  }
  auto given = [&](std::string_view key) {
    return std::any_of(json_members.begin(), json_members.end(),
                       [&](const auto& m) { return m.first == key; });
  };
  for (const SettingSpec& spec : base::Settings()) {
    if (spec.json_key.empty() || given(spec.json_key)) continue;
    add(spec.json_key, resolved(spec));
  }
  out += "}";
  return out;
}

EnvLookup ProcessEnvironment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Status ApplyJsonConfig(std::string_view json, std::string_view origin, SessionConfig& config) {
  std::vector<JsonMember> members;
  GPUPROF_RETURN_IF_ERROR(JsonObjectReader(json, origin).Read(&members));
  SessionConfig next = config;
  for (const JsonMember& m : members) {
    if (const SettingSpec* spec = base::FindSettingByKey(m.key)) {
      GPUPROF_ASSIGN_OR_RETURN(std::string text, JsonMemberText(*spec, m, origin));
      GPUPROF_RETURN_IF_ERROR(SetSetting(next, spec->id, text, std::string(origin) + " \"" + m.key + "\""));
    }
    auto it = std::find_if(next.json_members.begin(), next.json_members.end(),
                           [&](const auto& member) { return member.first == m.key; });
    if (it != next.json_members.end()) {
      it->second = std::string(m.raw);
    } else {
      next.json_members.emplace_back(m.key, std::string(m.raw));
    }
  }
  config = std::move(next);
  return OkStatus();
}

StatusOr<SessionConfig> ConfigFromEnvironment(const EnvLookup& env) {
  SessionConfig config;
  auto get = [&](std::string_view name) -> std::optional<std::string_view> {
    if (name.empty() || !env) return std::nullopt;
    const char* value = env(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string_view(value);
  };
  if (auto json = get("GPUPROF_CONFIG"))
    GPUPROF_RETURN_IF_ERROR(ApplyJsonConfig(*json, "GPUPROF_CONFIG", config));
  for (const SettingSpec& spec : base::Settings()) {
    if (auto v = get(spec.env)) {
      GPUPROF_RETURN_IF_ERROR(SetSetting(config, spec.id, *v, spec.env));
    } else if (auto launcher = get(spec.launcher_env)) {
      // The launcher's variable (torchrun's RANK, LOCAL_RANK, WORLD_SIZE) is theirs: an id of ours
      // when it reads as one (>= 0), else ignored.
      SessionConfig probe = config;
      if (SetSetting(probe, spec.id, *launcher, spec.launcher_env).ok() && base::SettingInt(*launcher) >= 0) {
        config = std::move(probe);
      }
    }
  }
  return config;
}

Status ValidateConfig(const SessionConfig& config) {
  if (config.output_dir.empty()) return InvalidArgumentError("the output directory is empty");
  if (config.worker_name.find('/') != std::string::npos || config.worker_name == "." ||
      config.worker_name == "..") {
    return InvalidArgumentError("worker_name=" + JsonQuote(config.worker_name) +
                                ": a worker name is one directory-name component (no '/', not . or ..)");
  }
  if (config.rank < -1) return InvalidArgumentError("rank " + std::to_string(config.rank) + " is below -1");
  if (config.world_size < -1 || config.world_size == 0) {
    return InvalidArgumentError("world size " + std::to_string(config.world_size) +
                                " must be -1 (unknown) or at least 1");
  }
  if (config.device_id < -1) {
    return InvalidArgumentError("device id " + std::to_string(config.device_id) + " is below -1");
  }
  const base::SettingSpec& flush = base::Spec(SettingId::kFlushIntervalMs);
  if (config.flush_interval.count() < flush.min || config.flush_interval.count() > flush.max) {
    return InvalidArgumentError("flush interval " + std::to_string(config.flush_interval.count()) +
                                " ms is outside [" + std::to_string(flush.min) + ", " +
                                std::to_string(flush.max) + "]");
  }
  return OkStatus();
}

replay::ReplayOptions ReplayOptionsFrom(const ReplaySettings& settings) {
  replay::ReplayOptions options;
  options.passes = settings.passes;
  options.selector.name = settings.kernel;
  options.selector.skip = settings.skip;
  options.selector.count = settings.count;
  options.restore = settings.restore;
  options.storage = settings.storage;
  options.strict = settings.strict;
  options.replay_printf_kernels = settings.printf_kernels;
  options.replay_malloc_kernels = settings.malloc_kernels;
  options.replay_with_live_arrays = settings.with_live_arrays;
  // The one expansion of the three settings; each was checked by its row when it was stored.
  StatusOr<std::vector<std::string>> metrics = replay::ExpandMetricRequest(
      settings.metrics, settings.sections, settings.set == "none" ? "" : settings.set);
  if (metrics.ok()) {
    options.metrics = std::move(*metrics);
  } else {
    GPUPROF_LOG(kWarning) << "no hardware counters: " << metrics.status().message();
  }
  options.clock_control = settings.clock_control;
  options.graph_replay = settings.graph_replay;
  options.range_replay =
      base::RangeReplayWanted(settings.range_mode ? "range" : "kernel",
                              replay::RangeDelimiterName(settings.range), settings.nvtx_include);
  options.range_delimiter = settings.nvtx_include.empty() ? settings.range : replay::RangeDelimiter::kNvtx;
  options.range_nvtx_name = settings.nvtx_include;
  options.max_range_operations = settings.max_range_operations;
  options.max_range_host_bytes = settings.max_range_host_bytes;
  return options;
}

Status CheckRangeSettings(const ReplaySettings& settings, bool mode_given) {
  return base::CheckRangeSettings(settings.range_mode ? "range" : "kernel",
                                  replay::RangeDelimiterName(settings.range), settings.nvtx_include,
                                  mode_given);
}

}  // namespace gpuprof::session
