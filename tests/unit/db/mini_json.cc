#include "unit/db/mini_json.h"

#include <cstdlib>

#include "base/json.h"

namespace gpuprof::db::fixture {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<JsonValue> ParseDocument() {
    JsonValue value;
    GPUPROF_RETURN_IF_ERROR(ParseValue(&value, 0));
    SkipSpace();
    if (pos_ != text_.size()) return Fail("trailing characters after the top-level value");
    return value;
  }

 private:
  Status Fail(const std::string& what) const {
    return InvalidArgumentError("invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\r' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  bool Consume(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) return false;
    pos_ += literal.size();
    return true;
  }

  Status ParseValue(JsonValue* out, int depth) {
    if (depth > 64) return Fail("nesting too deep");
    SkipSpace();
    if (pos_ >= text_.size()) return Fail("unexpected end");
    const char c = text_[pos_];
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      out->type = JsonValue::Type::kString;
      return ParseString(&out->text);
    }
    if (Consume("true")) {
      out->type = JsonValue::Type::kBool;
      out->boolean = true;
      return OkStatus();
    }
    if (Consume("false")) {
      out->type = JsonValue::Type::kBool;
      return OkStatus();
    }
    if (Consume("null")) {
      out->type = JsonValue::Type::kNull;
      return OkStatus();
    }
    return ParseNumber(out);
  }

  Status ParseObject(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kObject;
    ++pos_;  // {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return OkStatus();
    }
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Fail("expected a member name");
      std::string key;
      GPUPROF_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Consume(":")) return Fail("expected ':'");
      JsonValue value;
      GPUPROF_RETURN_IF_ERROR(ParseValue(&value, depth + 1));
      out->object.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (Consume(",")) continue;
      if (Consume("}")) return OkStatus();
      return Fail("expected ',' or '}'");
    }
  }

  Status ParseArray(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kArray;
    ++pos_;  // [
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return OkStatus();
    }
    while (true) {
      JsonValue value;
      GPUPROF_RETURN_IF_ERROR(ParseValue(&value, depth + 1));
      out->array.push_back(std::move(value));
      SkipSpace();
      if (Consume(",")) continue;
      if (Consume("]")) return OkStatus();
      return Fail("expected ',' or ']'");
    }
  }

  Status ParseNumber(JsonValue* out) {
    const std::size_t start = pos_;
    auto digit = [this] { return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; };
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (!digit()) return Fail("expected a value");
    if (text_[pos_] == '0') {
      ++pos_;
      if (digit()) return Fail("leading zero");
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!digit()) return Fail("digit expected after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!digit()) return Fail("digit expected in exponent");
      while (digit()) ++pos_;
    }
    out->type = JsonValue::Type::kNumber;
    out->text = std::string(text_.substr(start, pos_ - start));
    out->number = std::strtod(out->text.c_str(), nullptr);
    return OkStatus();
  }

  // RFC 8259 strings through base's one reader: raw control characters, bad escapes, lone
  // surrogates and invalid UTF-8 are errors.
  Status ParseString(std::string* out) {
    Status status = base::ReadJsonString(text_, &pos_, out, base::JsonUtf8::kReject);
    return status.ok() ? status : Fail(status.message());
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [name, value] : object) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::string JsonValue::Str(std::string_view key) const {
  const JsonValue* value = Find(key);
  return value != nullptr && value->type == Type::kString ? value->text : "";
}

double JsonValue::Num(std::string_view key) const {
  const JsonValue* value = Find(key);
  return value != nullptr && value->type == Type::kNumber ? value->number : 0;
}

std::string JsonValue::NumText(std::string_view key) const {
  const JsonValue* value = Find(key);
  return value != nullptr && value->type == Type::kNumber ? value->text : "";
}

StatusOr<JsonValue> ParseJson(std::string_view text) { return Parser(text).ParseDocument(); }

}  // namespace gpuprof::db::fixture
