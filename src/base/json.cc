#include "base/json.h"

#include <cstdint>

#include "base/utf8.h"

namespace gpuprof::base {
namespace {

// The four hex digits at text[*pos], *pos moved past them.
Status ReadHex4(std::string_view text, std::size_t* pos, std::uint32_t* value) {
  if (*pos + 4 > text.size()) {
    *pos = text.size();
    return InvalidArgumentError("truncated \\u escape");
  }
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char h = text[(*pos)++];
    v <<= 4;
    if (h >= '0' && h <= '9') {
      v |= static_cast<std::uint32_t>(h - '0');
    } else if (h >= 'a' && h <= 'f') {
      v |= static_cast<std::uint32_t>(h - 'a' + 10);
    } else if (h >= 'A' && h <= 'F') {
      v |= static_cast<std::uint32_t>(h - 'A' + 10);
    } else {
      return InvalidArgumentError("bad hex digit in \\u escape");
    }
  }
  *value = v;
  return OkStatus();
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->reserve(out->size() + text.size() + 2);
  out->push_back('"');
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i < size) {
    const unsigned char c = bytes[i];
    if (c >= 0x80) {
      const std::size_t length = ValidUtf8SequenceLength(bytes + i, size - i);
      if (length > 0) {
        out->append(text.data() + i, length);
        i += length;
      } else {
        out->append(kUtf8Replacement);
        ++i;
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

std::string JsonQuote(std::string_view text) {
  std::string out;
  AppendJsonString(&out, text);
  return out;
}

Status ReadJsonString(std::string_view text, std::size_t* pos, std::string* out, JsonUtf8 utf8) {
  const std::size_t start = *pos;
  std::size_t& at = *pos;
  ++at;  // the opening quote
  auto unterminated = [&] {
    at = start;
    return InvalidArgumentError("unterminated string");
  };
  while (true) {
    if (at >= text.size()) return unterminated();
    const auto c = static_cast<unsigned char>(text[at++]);
    if (c == '"') return OkStatus();
    if (c < 0x20) return InvalidArgumentError("control character in a string");
    if (c >= 0x80) {
      const std::size_t length = ValidUtf8SequenceLength(
          reinterpret_cast<const unsigned char*>(text.data()) + at - 1, text.size() - at + 1);
      if (length == 0) {
        if (utf8 == JsonUtf8::kReject) return InvalidArgumentError("invalid UTF-8 in a string");
        out->push_back(static_cast<char>(c));
        continue;
      }
      out->append(text.substr(at - 1, length));
      at += length - 1;
      continue;
    }
    if (c != '\\') {
      out->push_back(static_cast<char>(c));
      continue;
    }
    if (at >= text.size()) return unterminated();
    const char e = text[at++];
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
        GPUPROF_RETURN_IF_ERROR(ReadHex4(text, pos, &cp));
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text.substr(at, 2) != "\\u") return InvalidArgumentError("unpaired surrogate in \\u escape");
          at += 2;
          std::uint32_t low = 0;
          GPUPROF_RETURN_IF_ERROR(ReadHex4(text, pos, &low));
          if (low < 0xDC00 || low > 0xDFFF) return InvalidArgumentError("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return InvalidArgumentError("unpaired surrogate in \\u escape");
        }
        AppendUtf8(out, cp);
        break;
      }
      default: return InvalidArgumentError(std::string("bad escape \\") + e);
    }
  }
}

}  // namespace gpuprof::base
