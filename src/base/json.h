// JSON string literals: the one escaper of the tree (profiler_info json, the Perfetto export, the
// session's configuration echo, error messages that quote user input) and the one reader of them
// (JSON parsers: the session's configuration, the tests' strict parser).
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

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuprof/status.h"

namespace gpuprof::base {

// Appends `text` as a JSON string literal, quotes included, to `*out`.
void AppendJsonString(std::string* out, std::string_view text);

// `text` as a JSON string literal, quotes included (AppendJsonString into a new string).
std::string JsonQuote(std::string_view text);

// What ReadJsonString does with raw bytes >= 0x80 that are not valid UTF-8.
enum class JsonUtf8 : unsigned char {
  kReject,  // an error ("invalid UTF-8 in a string"): RFC 8259 text is UTF-8
  kKeep,    // copied as they are
};

// Reads the JSON string literal that starts at text[*pos] (which must be '"') into `*out`
// (appended): the escapes decoded, a UTF-16 surrogate pair of escapes joined into one code point.
// Errors (InvalidArgument, the message only the problem, e.g. "unterminated string", "control
// character in a string", "bad escape \q", "truncated \u escape", "bad hex digit in \u escape",
// "unpaired surrogate in \u escape", "invalid UTF-8 in a string"): *pos is then the offset to
// report, the opening quote for an unterminated string, else just past where reading stopped.
// On success *pos is just past the closing quote.
Status ReadJsonString(std::string_view text, std::size_t* pos, std::string* out,
                      JsonUtf8 utf8 = JsonUtf8::kReject);

}  // namespace gpuprof::base
