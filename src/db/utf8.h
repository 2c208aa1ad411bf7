// UTF-8 validation shared by the read side's text output (JSON strings, terminal tables).
#pragma once

#include <cstddef>

namespace gpuprof::db {

// The length (2..4) of the valid multi-byte UTF-8 sequence at `bytes`, or 0 when the bytes there
// are not one: an invalid lead byte, a missing or wrong continuation byte, an overlong form, a
// UTF-16 surrogate or a code point above U+10FFFF (RFC 3629). `bytes[0]` must be >= 0x80.
inline std::size_t ValidUtf8SequenceLength(const unsigned char* bytes, std::size_t available) noexcept {
  const unsigned char c = bytes[0];
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the valid range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c == 0xE0) {
    length = 3, low = 0xA0;
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    length = 3;
  } else if (c == 0xED) {
    length = 3, high = 0x9F;
  } else if (c == 0xF0) {
    length = 4, low = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    length = 4;
  } else if (c == 0xF4) {
    length = 4, high = 0x8F;
  } else {
    return 0;
  }
  if (available < length || bytes[1] < low || bytes[1] > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (bytes[k] < 0x80 || bytes[k] > 0xBF) return 0;
  }
  return length;
}

}  // namespace gpuprof::db
