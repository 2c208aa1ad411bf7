// A strict JSON parser (RFC 8259) for tests that check what `gpuprof export` writes: rejects
// trailing commas, leading zeros, raw control characters and invalid UTF-8 in strings, lone
// surrogate escapes, and anything after the top-level value. Numbers keep their text so a test
// can check exact decimal output.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::db::fixture {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // kString: the decoded string; kNumber: the number as written
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  // The member named `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
  // Member `key` as a string/number, or "" / 0 when absent or of another type.
  std::string Str(std::string_view key) const;
  double Num(std::string_view key) const;
  std::string NumText(std::string_view key) const;
};

StatusOr<JsonValue> ParseJson(std::string_view text);

}  // namespace gpuprof::db::fixture
