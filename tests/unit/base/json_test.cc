// base::AppendJsonString / JsonQuote, the tree's one JSON string escaper: every control character
// escaped, valid UTF-8 kept, every byte outside valid UTF-8 replaced by U+FFFD. A lenient escaper
// (one that passes bytes >= 0x80 through, or misses a control character) fails these.
#include "base/json.h"

#include <gtest/gtest.h>

#include <string>

#include "base/utf8.h"

namespace gpuprof::base {
namespace {

std::string Json(std::string_view text) {
  std::string out;
  AppendJsonString(&out, text);
  return out;
}

const std::string kR = "\xEF\xBF\xBD";  // U+FFFD

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Json("plain"), "\"plain\"");
  EXPECT_EQ(Json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Json("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Json(std::string("\x01\x1f\x00", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(Json("\x7f/"), "\"\x7f/\"");  // DEL and '/' need no escape
  EXPECT_EQ(Json(""), "\"\"");
}

TEST(JsonStringTest, EveryControlCharacterIsEscaped) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string out = Json(std::string(1, static_cast<char>(c)));
    SCOPED_TRACE(c);
    ASSERT_GE(out.size(), 4u);
    EXPECT_EQ(out[1], '\\') << "control character 0x" << std::hex << c << " written raw";
    for (char byte : out) EXPECT_GE(static_cast<unsigned char>(byte), 0x20u);
  }
  EXPECT_EQ(Json("\x0b"), "\"\\u000b\"");
  EXPECT_EQ(Json("\x1b[0m"), "\"\\u001b[0m\"");  // a terminal escape stays inert
}

TEST(JsonStringTest, AppendsToWhatIsThereAndQuoteReturnsTheSame) {
  std::string out = "x:";
  AppendJsonString(&out, "a\n");
  EXPECT_EQ(out, "x:\"a\\n\"");
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\x01"), R"("a\"b\\c\nd\u0001")");
  EXPECT_EQ(JsonQuote("\xff"), "\"" + kR + "\"");
}

TEST(JsonStringTest, KeepsValidUtf8) {
  EXPECT_EQ(Json("µs ✓ 😀"), "\"µs ✓ 😀\"");
  EXPECT_EQ(Json("\xEF\xBF\xBD"), "\"\xEF\xBF\xBD\"");          // U+FFFD itself
  EXPECT_EQ(Json("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF
  EXPECT_EQ(Json("\xED\x9F\xBF"), "\"\xED\x9F\xBF\"");          // U+D7FF, just below the surrogates
  EXPECT_EQ(Json("\xEE\x80\x80"), "\"\xEE\x80\x80\"");          // U+E000, just above them
  EXPECT_EQ(Json("\xC2\x80"), "\"\xC2\x80\"");                  // U+0080, the smallest 2-byte form
}

TEST(JsonStringTest, ReplacesInvalidUtf8WithReplacementCharacter) {
  EXPECT_EQ(Json("a\xff"
                 "b"),
            "\"a" + kR + "b\"");                                                  // never valid
  EXPECT_EQ(Json("\x80"), "\"" + kR + "\"");                                      // lone continuation byte
  EXPECT_EQ(Json("\xF4\x90\x80\x80"), "\"" + kR + kR + kR + kR + "\"");           // above U+10FFFF
  EXPECT_EQ(Json("\xF8\x88\x80\x80\x80"), "\"" + kR + kR + kR + kR + kR + "\"");  // 5-byte form
  EXPECT_EQ(Json("\xE2\x82"), "\"" + kR + kR + "\"");                             // truncated at the end
  EXPECT_EQ(Json("\xE2\x82x"), "\"" + kR + kR + "x\"");                           // truncated mid-string
  EXPECT_EQ(Json("\xC3"
                 "\""),
            "\"" + kR + "\\\"\"");  // a lead byte cannot swallow the quote after it
}

TEST(JsonStringTest, ReplacesOverlongEncodings) {
  EXPECT_EQ(Json("\xC0\x80"), "\"" + kR + kR + "\"");                    // overlong NUL
  EXPECT_EQ(Json("\xC1\xBF"), "\"" + kR + kR + "\"");                    // overlong DEL
  EXPECT_EQ(Json("\xC0\xA2"), "\"" + kR + kR + "\"");                    // overlong '"'
  EXPECT_EQ(Json("\xE0\x80\xAF"), "\"" + kR + kR + kR + "\"");           // overlong '/'
  EXPECT_EQ(Json("\xF0\x80\x80\x80"), "\"" + kR + kR + kR + kR + "\"");  // overlong NUL, 4 bytes
}

TEST(JsonStringTest, ReplacesUtf16Surrogates) {
  EXPECT_EQ(Json("\xED\xA0\x80"), "\"" + kR + kR + kR + "\"");  // U+D800, high surrogate
  EXPECT_EQ(Json("\xED\xBF\xBF"), "\"" + kR + kR + kR + "\"");  // U+DFFF, low surrogate
  // A CESU-8 pair (surrogates encoded one by one) is not UTF-8 either.
  std::string six;
  for (int i = 0; i < 6; ++i) six += kR;
  EXPECT_EQ(Json("\xED\xA0\xBD\xED\xB8\x80"), "\"" + six + "\"");
}

TEST(JsonStringTest, OutputIsValidUtf8WithNoRawControlBytesForEveryByte) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte.push_back(static_cast<char>(c));
  const std::string out = Json(every_byte);
  EXPECT_TRUE(IsValidUtf8(out));
  for (char byte : out) EXPECT_GE(static_cast<unsigned char>(byte), 0x20u);
  // ASCII printable bytes survive; the 128 bytes >= 0x80 are each one U+FFFD (none is a valid
  // sequence on its own, and in this order no two form one).
  EXPECT_NE(out.find(" !\\\"#$%&'()*+,-./0123456789"), std::string::npos);
  std::size_t replacements = 0;
  for (std::size_t at = out.find(kR); at != std::string::npos; at = out.find(kR, at + kR.size()))
    ++replacements;
  EXPECT_EQ(replacements, 128u);
}

// ReadJsonString: the string literal at *pos, decoded, or the problem and where it is.
struct Read {
  Status status;
  std::string value;
  std::size_t pos = 0;
};
Read ReadAt(std::string_view text, std::size_t pos = 0, JsonUtf8 utf8 = JsonUtf8::kReject) {
  Read r;
  r.pos = pos;
  r.status = ReadJsonString(text, &r.pos, &r.value, utf8);
  return r;
}

TEST(ReadJsonStringTest, DecodesEscapesAndStopsPastTheClosingQuote) {
  Read r = ReadAt(R"(x "a\"b\\c\/d\b\f\n\r\t" tail)", 2);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.value, "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(r.pos, 24u);
  EXPECT_EQ(ReadAt(R"("\u00e9\u20AC\u0001")").value, "\xC3\xA9\xE2\x82\xAC\x01");
  EXPECT_EQ(ReadAt(R"("\ud83d\ude00")").value, "\xF0\x9F\x98\x80");  // a surrogate pair: one code point
  EXPECT_EQ(ReadAt(R"("µs ✓")").value, "µs ✓");
}

TEST(ReadJsonStringTest, RejectsWhatRfc8259Rejects) {
  auto problem = [](std::string_view text) { return std::string(ReadAt(text).status.message()); };
  EXPECT_EQ(problem("\"abc"), "unterminated string");
  EXPECT_EQ(problem("\"abc\\"), "unterminated string");
  EXPECT_EQ(problem("\"a\nb\""), "control character in a string");
  EXPECT_EQ(problem(R"("\q")"), "bad escape \\q");
  EXPECT_EQ(problem(R"("\u12")"), "truncated \\u escape");
  EXPECT_EQ(problem(R"("\u12g4")"), "bad hex digit in \\u escape");
  EXPECT_EQ(problem(R"("\ud800")"), "unpaired surrogate in \\u escape");
  EXPECT_EQ(problem(R"("\ud800\u0041")"), "unpaired surrogate in \\u escape");
  EXPECT_EQ(problem(R"("\udc00")"), "unpaired surrogate in \\u escape");
  EXPECT_EQ(problem("\"\xff\""), "invalid UTF-8 in a string");
  EXPECT_EQ(problem("\"\xC0\xAF\""), "invalid UTF-8 in a string");      // overlong
  EXPECT_EQ(problem("\"\xED\xA0\x80\""), "invalid UTF-8 in a string");  // surrogate
  EXPECT_EQ(ReadAt("x \"abc", 2).pos, 2u);  // unterminated: reported at the opening quote
}

TEST(ReadJsonStringTest, KeepsInvalidUtf8WhenAsked) {
  Read r = ReadAt("\"a\xff\xC0\"", 0, JsonUtf8::kKeep);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.value, "a\xff\xC0");
}

TEST(ReadJsonStringTest, ReadsBackWhatAppendJsonStringWrote) {
  std::string text;
  for (int c = 0; c < 0x80; ++c) text.push_back(static_cast<char>(c));
  text += "µs ✓ 😀\xEF\xBF\xBD";
  Read r = ReadAt(JsonQuote(text));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.value, text);
}

}  // namespace
}  // namespace gpuprof::base
