#include "db/thread_names.h"

#include <charconv>

#include "base/json.h"
#include "db/meta_json.h"

namespace gpuprof::db {
namespace {

using meta_json::SkipSpace;
using meta_json::Take;

Status Bad(std::string_view what, std::size_t pos) {
  return InvalidArgumentError("META_DATA " + std::string(kMetaThreadNames) + ": " + std::string(what) +
                              " at byte " + std::to_string(pos));
}

}  // namespace

std::string EncodeThreadNames(const ThreadNames& names) {
  std::string out = "{";
  for (const auto& [tid, name] : names) {
    if (out.size() > 1) out += ", ";
    base::AppendJsonString(&out, std::to_string(tid));
    out += ": ";
    base::AppendJsonString(&out, name);
  }
  out += "}";
  return out;
}

StatusOr<ThreadNames> DecodeThreadNames(std::string_view json) {
  ThreadNames names;
  std::size_t pos = 0;
  if (!Take(json, &pos, '{')) return Bad("expected a JSON object", pos);
  if (Take(json, &pos, '}')) return names;
  while (true) {
    SkipSpace(json, &pos);
    std::string key;
    std::string value;
    if (pos >= json.size() || json[pos] != '"') return Bad("expected a thread id in quotes", pos);
    if (Status read = base::ReadJsonString(json, &pos, &key, base::JsonUtf8::kKeep); !read.ok()) {
      return Bad(read.message(), pos);
    }
    std::uint32_t tid = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), tid);
    if (ec != std::errc() || end != key.data() + key.size() || tid == 0) return Bad("bad thread id", pos);
    if (!Take(json, &pos, ':')) return Bad("expected ':'", pos);
    SkipSpace(json, &pos);
    if (pos >= json.size() || json[pos] != '"') return Bad("expected a name in quotes", pos);
    if (Status read = base::ReadJsonString(json, &pos, &value, base::JsonUtf8::kKeep); !read.ok()) {
      return Bad(read.message(), pos);
    }
    names[tid] = std::move(value);
    if (Take(json, &pos, '}')) break;
    if (!Take(json, &pos, ',')) return Bad("expected ',' or '}'", pos);
  }
  SkipSpace(json, &pos);
  if (pos != json.size()) return Bad("text after the object", pos);
  return names;
}

}  // namespace gpuprof::db
