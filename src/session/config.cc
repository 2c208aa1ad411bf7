#include "session/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace gpuprof::session {
namespace {

constexpr int kMaxJsonDepth = 64;
constexpr std::int64_t kMaxFlushIntervalMs = 60'000;

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

  Status ReadHex4(std::uint32_t* value) {
    if (pos_ + 4 > text_.size()) return Error("truncated \\u escape");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') {
        v |= static_cast<std::uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        v |= static_cast<std::uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        v |= static_cast<std::uint32_t>(h - 'A' + 10);
      } else {
        return Error("bad hex digit in \\u escape");
      }
    }
    *value = v;
    return OkStatus();
  }

  static void AppendUtf8(std::uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Status ReadString(std::string* out) {
    std::size_t start = pos_;
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= text_.size()) return ErrorAt(start, "unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) return ErrorAt(start, "unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          std::uint32_t cp = 0;
          GPUPROF_RETURN_IF_ERROR(ReadHex4(&cp));
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (!(Consume('\\') && Consume('u'))) return Error("unpaired surrogate in \\u escape");
            GPUPROF_RETURN_IF_ERROR(ReadHex4(&low));
            if (low < 0xDC00 || low > 0xDFFF) return Error("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error("unpaired surrogate in \\u escape");
          }
          AppendUtf8(cp, out);
          break;
        }
        default: return Error(std::string("bad escape \\") + e);
      }
    }
  }

  std::string_view text_;
  std::string_view origin_;
  std::size_t pos_ = 0;
};

std::string Lower(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::optional<std::int64_t> ParseInt(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::optional<bool> ParseBoolWord(std::string_view text) {
  std::string lower = Lower(text);
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

std::optional<base::LogLevel> ParseLevel(std::string_view text) {
  // ParseLogLevel maps unknown text to the fallback: two different fallbacks expose it.
  base::LogLevel a = base::ParseLogLevel(text, base::LogLevel::kDebug);
  base::LogLevel b = base::ParseLogLevel(text, base::LogLevel::kOff);
  if (a != b) return std::nullopt;
  return a;
}

Status CheckWorkerName(std::string_view name, std::string_view origin) {
  if (name.find('/') != std::string_view::npos || name == "." || name == "..") {
    return InvalidArgumentError(std::string(origin) + "=" + JsonQuote(name) +
                                ": a worker name is one directory-name component (no '/', not . or ..)");
  }
  return OkStatus();
}

// The rank and the device id: integers from -1 (unknown) up. `what` names the setting in errors.
Status SetId(std::optional<std::int64_t> value, std::string_view origin, std::string_view text, std::string_view what,
             std::int32_t& field) {
  if (!value || *value < -1 || *value > std::numeric_limits<std::int32_t>::max()) {
    return InvalidArgumentError(std::string(origin) + "=" + std::string(text) + ": the " + std::string(what) +
                                " must be an integer from -1 (unknown) to 2147483647");
  }
  field = static_cast<std::int32_t>(*value);
  return OkStatus();
}

// An id from gpuprof's own variable (an error when it is not one), else from the launcher's
// (torchrun's RANK / LOCAL_RANK: theirs, so text that is not an id is ignored).
template <typename Get>
Status IdFromEnvironment(const Get& get, const char* own, const char* launchers, std::string_view what,
                         std::int32_t& field) {
  if (auto v = get(own)) {
    const std::optional<std::int64_t> id = ParseInt(*v);
    return SetId(id, own, id ? std::string(*v) : JsonQuote(*v), what, field);  // quoted when not a number
  }
  if (auto v = get(launchers)) {
    if (std::optional<std::int64_t> id = ParseInt(*v); id && *id >= 0) static_cast<void>(SetId(id, "", "", what, field));
  }
  return OkStatus();
}

Status SetFlushInterval(std::int64_t value, std::string_view origin, std::string_view text,
                        SessionConfig& config) {
  if (value < 1 || value > kMaxFlushIntervalMs) {
    return InvalidArgumentError(
        std::string(origin) + "=" + std::string(text) +
        ": the flush interval must be an integer number of milliseconds in [1, 60000]");
  }
  config.flush_interval = std::chrono::milliseconds(value);
  return OkStatus();
}

Status WrongType(std::string_view origin, const JsonMember& m, std::string_view expected) {
  return InvalidArgumentError(std::string(origin) + ": key \"" + m.key + "\" (offset " +
                              std::to_string(m.offset) + ") must be " + std::string(expected) + ", got " +
                              std::string(m.raw));
}

constexpr std::string_view kKnownKeys[] = {"output_dir",      "worker_name",       "rank",
                                           "follow_children", "result_file",       "log_level",
                                           "device",          "flush_interval_ms", "started_by",
                                           "device_id",       "world_size",        "cuda_trace"};

bool IsKnownKey(std::string_view key) {
  return std::find(std::begin(kKnownKeys), std::end(kKnownKeys), key) != std::end(kKnownKeys);
}

// The resolved value of a recognized key, as JSON text.
std::string ResolvedJson(const SessionConfig& c, std::string_view key) {
  if (key == "output_dir") return JsonQuote(c.output_dir);
  if (key == "worker_name") return JsonQuote(c.worker_name);
  if (key == "rank") return std::to_string(c.rank);
  if (key == "device_id") return std::to_string(c.device_id);
  if (key == "world_size") return std::to_string(c.world_size);
  if (key == "follow_children") return c.follow_children ? "true" : "false";
  if (key == "result_file") return JsonQuote(c.result_file);
  if (key == "log_level") {
    return c.log_level ? JsonQuote(base::LogLevelName(*c.log_level))
                       : JsonQuote(base::LogLevelName(base::CurrentLogLevel()));
  }
  if (key == "device") return c.device ? "true" : "false";
  if (key == "flush_interval_ms") return std::to_string(c.flush_interval.count());
  if (key == "started_by") return JsonQuote(c.started_by);
  if (key == "cuda_trace") return JsonQuote(CudaTraceText(c.cuda_trace));
  return "null";
}

}  // namespace

std::string JsonQuote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
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
  const auto invalid = [&](std::string_view why) {
    return InvalidArgumentError(
        std::string(origin) + "=" + JsonQuote(text) + ": " + std::string(why) +
        "; expected a comma list of runtime, driver, launches, nvtx (e.g. \"runtime,nvtx\" "
        "or \"launches,nvtx\"), or none for kernels, copies and memsets alone");
  };
  SessionConfig::CudaTrace trace{false, false, false, false};
  if (text == "none") return trace;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::string_view word =
        text.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin);
    bool* flag = word == "runtime"    ? &trace.runtime
                 : word == "driver"   ? &trace.driver
                 : word == "nvtx"     ? &trace.nvtx
                 : word == "launches" ? &trace.launches
                                      : nullptr;
    if (flag == nullptr) {
      return invalid(word.empty() ? std::string("an empty entry") : "unknown entry " + JsonQuote(word));
    }
    if (*flag) return invalid(JsonQuote(word) + " is given twice");
    *flag = true;
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  if (trace.launches && (trace.runtime || trace.driver)) {
    return invalid(
        std::string("\"launches\" records the launching calls of the runtime and driver APIs, \"") +
        (trace.runtime ? "runtime" : "driver") + "\" every call of " +
        (trace.runtime ? "the runtime" : "the driver") + "; give one of them");
  }
  return trace;
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
  for (const auto& [key, raw] : json_members) add(key, IsKnownKey(key) ? ResolvedJson(*this, key) : raw);
  auto given = [&](std::string_view key) {
    return std::any_of(json_members.begin(), json_members.end(),
                       [&](const auto& m) { return m.first == key; });
  };
  for (std::string_view key : {"output_dir", "worker_name", "rank", "follow_children", "started_by"}) {
    if (given(key)) continue;
    if (key == "worker_name" && worker_name.empty()) continue;
    add(key, ResolvedJson(*this, key));
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
    using Kind = JsonMember::Kind;
    const std::string where = std::string(origin) + " \"" + m.key + "\"";
    if (m.key == "output_dir" || m.key == "worker_name" || m.key == "result_file" || m.key == "log_level" ||
        m.key == "started_by" || m.key == "cuda_trace") {
      if (m.kind != Kind::kString) return WrongType(origin, m, "a string");
      if (m.key == "output_dir") {
        if (m.text.empty()) return WrongType(origin, m, "a non-empty directory path");
        next.output_dir = m.text;
      } else if (m.key == "worker_name") {
        GPUPROF_RETURN_IF_ERROR(CheckWorkerName(m.text, where));
        next.worker_name = m.text;
      } else if (m.key == "result_file") {
        next.result_file = m.text;
      } else if (m.key == "started_by") {
        next.started_by = m.text;
      } else if (m.key == "cuda_trace") {
        GPUPROF_ASSIGN_OR_RETURN(next.cuda_trace, ParseCudaTrace(m.text, where));
      } else {
        std::optional<base::LogLevel> level = ParseLevel(m.text);
        if (!level)
          return WrongType(origin, m, "one of \"debug\", \"info\", \"warning\", \"error\", \"off\"");
        next.log_level = level;
      }
    } else if (m.key == "rank" || m.key == "flush_interval_ms" || m.key == "device_id" || m.key == "world_size") {
      std::optional<std::int64_t> value = m.kind == Kind::kNumber ? ParseInt(m.text) : std::nullopt;
      if (!value) return WrongType(origin, m, "an integer");
      if (m.key == "rank") {
        GPUPROF_RETURN_IF_ERROR(SetId(value, where, m.raw, "rank", next.rank));
      } else if (m.key == "device_id") {
        GPUPROF_RETURN_IF_ERROR(SetId(value, where, m.raw, "device id", next.device_id));
      } else if (m.key == "world_size") {
        GPUPROF_RETURN_IF_ERROR(SetId(value, where, m.raw, "world size", next.world_size));
      } else {
        GPUPROF_RETURN_IF_ERROR(SetFlushInterval(*value, where, m.raw, next));
      }
    } else if (m.key == "follow_children" || m.key == "device") {
      if (m.kind != Kind::kBool) return WrongType(origin, m, "true or false");
      (m.key == "device" ? next.device : next.follow_children) = m.text == "true";
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
  auto get = [&](const char* name) -> std::optional<std::string_view> {
    const char* value = env ? env(name) : nullptr;
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string_view(value);
  };
  if (auto json = get("GPUPROF_CONFIG"))
    GPUPROF_RETURN_IF_ERROR(ApplyJsonConfig(*json, "GPUPROF_CONFIG", config));
  if (auto v = get("GPUPROF_OUTPUT_DIR")) config.output_dir = std::string(*v);
  if (auto v = get("GPUPROF_WORKER_NAME")) {
    GPUPROF_RETURN_IF_ERROR(CheckWorkerName(*v, "GPUPROF_WORKER_NAME"));
    config.worker_name = std::string(*v);
  }
  GPUPROF_RETURN_IF_ERROR(IdFromEnvironment(get, "GPUPROF_RANK", "RANK", "rank", config.rank));
  GPUPROF_RETURN_IF_ERROR(IdFromEnvironment(get, "GPUPROF_DEVICE_ID", "LOCAL_RANK", "device id", config.device_id));
  GPUPROF_RETURN_IF_ERROR(
      IdFromEnvironment(get, "GPUPROF_WORLD_SIZE", "WORLD_SIZE", "world size", config.world_size));
  if (auto v = get("GPUPROF_FOLLOW_CHILDREN")) {
    std::optional<bool> follow = ParseBoolWord(*v);
    if (!follow)
      return InvalidArgumentError("GPUPROF_FOLLOW_CHILDREN=" + JsonQuote(*v) + ": expected 0 or 1");
    config.follow_children = *follow;
  }
  if (auto v = get("GPUPROF_DEVICE")) {
    std::optional<bool> device = ParseBoolWord(*v);
    if (!device) return InvalidArgumentError("GPUPROF_DEVICE=" + JsonQuote(*v) + ": expected 0 or 1");
    config.device = *device;
  }
  if (auto v = get("GPUPROF_CUDA_TRACE")) {
    GPUPROF_ASSIGN_OR_RETURN(config.cuda_trace, ParseCudaTrace(*v, "GPUPROF_CUDA_TRACE"));
  }
  if (auto v = get("GPUPROF_RESULT_FILE")) config.result_file = std::string(*v);
  if (auto v = get("GPUPROF_LOG_LEVEL")) {
    std::optional<base::LogLevel> level = ParseLevel(*v);
    if (!level) {
      return InvalidArgumentError("GPUPROF_LOG_LEVEL=" + JsonQuote(*v) +
                                  ": expected one of debug, info, warning, error, off");
    }
    config.log_level = level;
  }
  if (auto v = get("GPUPROF_ROOT_PID")) {
    std::optional<std::int64_t> pid = ParseInt(*v);
    if (!pid || *pid <= 0 || *pid > std::numeric_limits<std::int32_t>::max()) {
      return InvalidArgumentError("GPUPROF_ROOT_PID=" + JsonQuote(*v) +
                                  ": expected the pid of the process `gpuprof run` started");
    }
    config.root_pid = static_cast<std::uint32_t>(*pid);
  }
  if (auto v = get("GPUPROF_FLUSH_INTERVAL_MS")) {
    std::optional<std::int64_t> ms = ParseInt(*v);
    if (!ms) {
      return InvalidArgumentError(
          "GPUPROF_FLUSH_INTERVAL_MS=" + JsonQuote(*v) +
          ": the flush interval must be an integer number of milliseconds in [1, 60000]");
    }
    GPUPROF_RETURN_IF_ERROR(SetFlushInterval(*ms, "GPUPROF_FLUSH_INTERVAL_MS", *v, config));
  }
  return config;
}

Status ValidateConfig(const SessionConfig& config) {
  if (config.output_dir.empty()) return InvalidArgumentError("the output directory is empty");
  GPUPROF_RETURN_IF_ERROR(CheckWorkerName(config.worker_name, "worker_name"));
  if (config.rank < -1) return InvalidArgumentError("rank " + std::to_string(config.rank) + " is below -1");
  if (config.world_size < -1 || config.world_size == 0) {
    return InvalidArgumentError("world size " + std::to_string(config.world_size) +
                                " must be -1 (unknown) or at least 1");
  }
  if (config.device_id < -1) {
    return InvalidArgumentError("device id " + std::to_string(config.device_id) + " is below -1");
  }
  if (config.flush_interval.count() < 1 || config.flush_interval.count() > kMaxFlushIntervalMs) {
    return InvalidArgumentError("flush interval " + std::to_string(config.flush_interval.count()) +
                                " ms is outside [1, 60000]");
  }
  return OkStatus();
}

}  // namespace gpuprof::session
