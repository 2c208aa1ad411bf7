// UTF-8 as RFC 3629 defines it: the one validator and encoder of the tree (JSON strings, terminal
// text, JSON parsing). Header-only and allocation-free apart from the appended bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuprof::base {

// U+FFFD REPLACEMENT CHARACTER, which stands for each byte that is not part of valid UTF-8.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// The length (2..4) of the valid multi-byte UTF-8 sequence at `bytes`, or 0 when the bytes there
// are not one: an invalid lead byte, a missing or wrong continuation byte, an overlong form, a
// UTF-16 surrogate or a code point above U+10FFFF (RFC 3629). `bytes[0]` must be >= 0x80 and
// `available` >= 1.
inline std::size_t ValidUtf8SequenceLength(const unsigned char* bytes, std::size_t available) noexcept {
  const unsigned char c = bytes[0];
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the valid range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c == 0xE0) {
    length = 3, low = 0xA0;  // below: overlong
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    length = 3;
  } else if (c == 0xED) {
    length = 3, high = 0x9F;  // above: UTF-16 surrogates
  } else if (c == 0xF0) {
    length = 4, low = 0x90;  // below: overlong
  } else if (c >= 0xF1 && c <= 0xF3) {
    length = 4;
  } else if (c == 0xF4) {
    length = 4, high = 0x8F;  // above: past U+10FFFF
  } else {
    return 0;  // 0x80..0xC1 (continuation bytes, overlong 2-byte leads) and 0xF5..0xFF
  }
  if (available < length || bytes[1] < low || bytes[1] > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (bytes[k] < 0x80 || bytes[k] > 0xBF) return 0;
  }
  return length;
}

// True when every byte of `text` belongs to a valid UTF-8 sequence.
inline bool IsValidUtf8(std::string_view text) noexcept {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    if (bytes[i] < 0x80) {
      ++i;
      continue;
    }
    const std::size_t length = ValidUtf8SequenceLength(bytes + i, text.size() - i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

// Appends the UTF-8 encoding of `code_point`. A value that is not a Unicode scalar value (a
// surrogate, U+D800..U+DFFF, or above U+10FFFF) appends U+FFFD instead, so the output is always
// valid UTF-8.
inline void AppendUtf8(std::string* out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if ((code_point >= 0xD800 && code_point <= 0xDFFF) || code_point > 0x10FFFF) {
    out->append(kUtf8Replacement);
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// The longest prefix of `text` of at most `max_bytes` that does not end inside a UTF-8 sequence
// (a continuation byte is never its last): where a long name is cut for display.
inline std::string_view Utf8Prefix(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
  return text.substr(0, cut);
}

// `text` for a terminal: C0 and C1 control characters shown as escapes (\t, \n, \x1b, \u009b),
// invalid UTF-8 bytes as U+FFFD, so a name read from a DB can neither garble nor misalign what is
// printed, nor send the terminal escape sequences. Every line gpuprof prints with text from a DB
// goes through it.
inline std::string PrintableText(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = bytes[i];
    if (c >= 0x80) {
      const std::size_t length = ValidUtf8SequenceLength(bytes + i, text.size() - i);
      if (length == 0) {
        out.append(kUtf8Replacement);
        ++i;
      } else if (length == 2 && c == 0xC2 && bytes[i + 1] <= 0x9F) {
        out.append("\\u00");  // U+0080..U+009F: C1 controls (0x9b is CSI)
        out.push_back(kHex[bytes[i + 1] >> 4]);
        out.push_back(kHex[bytes[i + 1] & 0xf]);
        i += 2;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    if (c == '\t') {
      out.append("\\t");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c < 0x20 || c == 0x7f) {
      out.append("\\x");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  return out;
}

}  // namespace gpuprof::base
