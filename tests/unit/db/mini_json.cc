#include "unit/db/mini_json.h"

#include <cstdlib>

#include "base/utf8.h"

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

  Status ParseHex4(unsigned* out) {
    if (pos_ + 4 > text_.size()) return Fail("short \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        return Fail("bad hex digit in \\u escape");
      }
    }
    *out = value;
    return OkStatus();
  }

  Status ParseString(std::string* out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= text_.size()) return Fail("unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return OkStatus();
      }
      if (c < 0x20) return Fail("raw control character in string");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= text_.size()) return Fail("unterminated escape");
        const char e = text_[pos_++];
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
            unsigned code = 0;
            GPUPROF_RETURN_IF_ERROR(ParseHex4(&code));
            if (code >= 0xDC00 && code <= 0xDFFF) return Fail("lone low surrogate");
            if (code >= 0xD800 && code <= 0xDBFF) {
              unsigned low = 0;
              if (!Consume("\\u")) return Fail("lone high surrogate");
              GPUPROF_RETURN_IF_ERROR(ParseHex4(&low));
              if (low < 0xDC00 || low > 0xDFFF) return Fail("bad low surrogate");
              code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            }
            base::AppendUtf8(out, code);
            break;
          }
          default: return Fail("bad escape");
        }
        continue;
      }
      if (c < 0x80) {
        out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      // One UTF-8 sequence, validated by the tree's one validator (RFC 3629).
      const std::size_t length = base::ValidUtf8SequenceLength(
          reinterpret_cast<const unsigned char*>(text_.data()) + pos_, text_.size() - pos_);
      if (length == 0) return Fail("invalid UTF-8 sequence");
      out->append(text_.substr(pos_, length));
      pos_ += length;
    }
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
