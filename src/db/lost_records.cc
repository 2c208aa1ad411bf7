#include "db/lost_records.h"

#include <charconv>

#include "base/json.h"
#include "db/meta_json.h"

namespace gpuprof::db {
namespace {

using meta_json::SkipSpace;
using meta_json::Take;

Status Bad(std::string_view what, std::size_t pos) {
  return InvalidArgumentError("META_DATA " + std::string(kMetaLostRecords) + ": " + std::string(what) +
                              " at byte " + std::to_string(pos));
}

}  // namespace

std::string EncodeLostRecords(const LostRecords& lost) {
  std::string out = "{";
  for (const auto& [source, records] : lost) {
    if (out.size() > 1) out += ", ";
    base::AppendJsonString(&out, source);
    out += ": " + std::to_string(records);
  }
  out += "}";
  return out;
}

StatusOr<LostRecords> DecodeLostRecords(std::string_view json) {
  LostRecords lost;
  std::size_t pos = 0;
  if (!Take(json, &pos, '{')) return Bad("expected a JSON object", pos);
  if (Take(json, &pos, '}')) return lost;
  while (true) {
    SkipSpace(json, &pos);
    std::string source;
    if (pos >= json.size() || json[pos] != '"') return Bad("expected a source in quotes", pos);
    if (Status read = base::ReadJsonString(json, &pos, &source, base::JsonUtf8::kKeep); !read.ok()) {
      return Bad(read.message(), pos);
    }
    if (!Take(json, &pos, ':')) return Bad("expected ':'", pos);
    SkipSpace(json, &pos);
    std::uint64_t records = 0;
    const auto [end, ec] = std::from_chars(json.data() + pos, json.data() + json.size(), records);
    if (ec != std::errc()) return Bad("expected a count", pos);
    pos = static_cast<std::size_t>(end - json.data());
    lost.emplace_back(std::move(source), records);
    if (Take(json, &pos, '}')) break;
    if (!Take(json, &pos, ',')) return Bad("expected ',' or '}'", pos);
  }
  SkipSpace(json, &pos);
  if (pos != json.size()) return Bad("text after the object", pos);
  return lost;
}

std::string LostRecordsSourceText(std::string_view source) {
  if (source == kLostCuptiBuffers)
    return "CUPTI activity buffers (device records CUPTI dropped: no buffer free)";
  if (source == kLostSessionBuffer)
    return "the session's record buffer (its cap was reached, or the host ran out of memory)";
  if (source == kLostAfterStop) return "records that arrived after the capture ended";
  if (source == kLostWriterQueue) return "the DB writer (its queue was full, or it stopped on an error)";
  return std::string(source);
}

}  // namespace gpuprof::db
