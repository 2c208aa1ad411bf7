// JSON string literals: the one escaper of the tree (profiler_info json, the Perfetto export, the
// session's configuration echo, error messages that quote user input).
//
// It is strict, so its output is valid JSON (RFC 8259) and valid UTF-8 whatever the input bytes:
//   - '"' and '\' are escaped;
//   - every control character U+0000..U+001F is escaped: \b \f \n \r \t by name, the others as
//     \u00XX (lowercase hex); DEL (0x7F) and '/' need no escape and are kept;
//   - valid UTF-8 is copied as it is;
//   - every byte that is not part of a valid UTF-8 sequence (a stray continuation byte, an invalid
//     lead byte, a truncated sequence, an overlong form, a UTF-16 surrogate, a code point above
//     U+10FFFF) becomes U+FFFD, one per byte.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpuprof::base {

// Appends `text` as a JSON string literal, quotes included, to `*out`.
void AppendJsonString(std::string* out, std::string_view text);

// `text` as a JSON string literal, quotes included (AppendJsonString into a new string).
std::string JsonQuote(std::string_view text);

}  // namespace gpuprof::base
