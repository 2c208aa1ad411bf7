// `gpuprof export` (perfetto_export.h): one Chrome trace event written field by field into the
// output buffer, with the number formatting and the cutting of over-long strings every table's
// events share. Internal to the export.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include "base/json.h"
#include "db/perfetto_export.h"

namespace gpuprof::db::perfetto_internal {

// A string from the DB longer than this is cut in the trace (a multi-megabyte op name repeated in
// every event made traces of gigabytes); the DB keeps it whole.
constexpr std::size_t kMaxTraceStringBytes = 2048;

inline void AppendInt(std::string* out, std::int64_t value) {
  char text[24];
  auto result = std::to_chars(text, text + sizeof(text), value);
  out->append(text, result.ptr);
}

inline void AppendUint(std::string* out, std::uint64_t value) {
  char text[24];
  auto result = std::to_chars(text, text + sizeof(text), value);
  out->append(text, result.ptr);
}

// One trace event, written field by field into the buffer. Keys are literals and need no escaping.
// Strings cut to kMaxTraceStringBytes, for the export's note.
struct CutStrings {
  std::uint64_t events = 0;
  std::set<std::size_t> distinct;  // hashes of the whole strings
  std::size_t longest_bytes = 0;
};

class Event {
 public:
  Event(std::string* out, bool* first_event, std::int64_t time_base_ns, CutStrings* cut = nullptr)
      : out_(out), base_(time_base_ns), cut_(cut) {
    out_->append(*first_event ? "\n{" : ",\n{");
    *first_event = false;
  }
  ~Event() { out_->push_back('}'); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  Event& Str(std::string_view key, std::string_view value) {
    Key(key);
    if (value.size() <= kMaxTraceStringBytes) {
      base::AppendJsonString(out_, value);
      return *this;
    }
    std::size_t cut = kMaxTraceStringBytes;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0U) == 0x80U) --cut;  // a code point
    if (cut_ != nullptr) {
      ++cut_->events;
      cut_->distinct.insert(std::hash<std::string_view>{}(value));
      cut_->longest_bytes = std::max(cut_->longest_bytes, value.size());
    }
    base::AppendJsonString(out_, std::string(value.substr(0, cut)) + "... [cut from " +
                                     std::to_string(value.size()) + " bytes]");
    return *this;
  }
  // A value already in JSON (an array of Input Dims).
  Event& Json(std::string_view key, std::string_view json) {
    Key(key);
    out_->append(json);
    return *this;
  }
  Event& Int(std::string_view key, std::int64_t value) {
    Key(key);
    AppendInt(out_, value);
    return *this;
  }
  Event& Uint(std::string_view key, std::uint64_t value) {
    Key(key);
    AppendUint(out_, value);
    return *this;
  }
  Event& Ts(std::int64_t ns) {
    Key("ts");
    AppendMicros(out_, ns - base_);
    return *this;
  }
  Event& Dur(std::int64_t ns) {
    Key("dur");
    AppendMicros(out_, std::max<std::int64_t>(0, ns));
    return *this;
  }
  Event& BeginArgs() { return BeginObject("args"); }
  Event& EndArgs() { return EndObject(); }
  // An object member (args, or one nested in args: "args":{"metrics":{...}}), closed by EndObject.
  Event& BeginObject(std::string_view key) {
    Key(key);
    out_->push_back('{');
    first_field_ = true;
    return *this;
  }
  Event& EndObject() {
    out_->push_back('}');
    first_field_ = false;
    return *this;
  }
  // A number under a key from the DB (escaped); JSON has no NaN or infinity: those become null.
  Event& Double(std::string_view key_text, double value) {
    if (!first_field_) out_->push_back(',');
    first_field_ = false;
    base::AppendJsonString(out_, key_text);
    out_->push_back(':');
    if (!std::isfinite(value)) {
      out_->append("null");
      return *this;
    }
    char text[32];
    auto result = std::to_chars(text, text + sizeof(text), value);
    out_->append(text, result.ptr);
    return *this;
  }

 private:
  void Key(std::string_view key) {
    if (!first_field_) out_->push_back(',');
    first_field_ = false;
    out_->push_back('"');
    out_->append(key);
    out_->append("\":");
  }

  std::string* out_;
  std::int64_t base_;
  CutStrings* cut_;
  bool first_field_ = true;
};

inline std::string HexId(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace gpuprof::db::perfetto_internal
