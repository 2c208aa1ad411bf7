// base/utf8.h: the validator (RFC 3629's table of well-formed byte sequences) and the encoder.
#include "base/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace gpuprof::base {
namespace {

std::size_t Length(std::string_view bytes) {
  return ValidUtf8SequenceLength(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

std::string Encode(std::uint32_t code_point) {
  std::string out;
  AppendUtf8(&out, code_point);
  return out;
}

TEST(Utf8Test, AcceptsWellFormedSequencesAtTheirBoundaries) {
  EXPECT_EQ(Length("\xC2\x80"), 2u);          // U+0080
  EXPECT_EQ(Length("\xDF\xBF"), 2u);          // U+07FF
  EXPECT_EQ(Length("\xE0\xA0\x80"), 3u);      // U+0800
  EXPECT_EQ(Length("\xED\x9F\xBF"), 3u);      // U+D7FF
  EXPECT_EQ(Length("\xEE\x80\x80"), 3u);      // U+E000
  EXPECT_EQ(Length("\xEF\xBF\xBF"), 3u);      // U+FFFF
  EXPECT_EQ(Length("\xF0\x90\x80\x80"), 4u);  // U+10000
  EXPECT_EQ(Length("\xF4\x8F\xBF\xBF"), 4u);  // U+10FFFF
  EXPECT_EQ(Length("\xC3\xA9tail"), 2u);      // only the sequence itself
}

TEST(Utf8Test, RejectsOverlongSurrogatesAndOutOfRange) {
  EXPECT_EQ(Length("\xC0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(Length("\xC1\xBF"), 0u);          // overlong U+007F
  EXPECT_EQ(Length("\xE0\x9F\xBF"), 0u);      // overlong U+07FF
  EXPECT_EQ(Length("\xF0\x8F\xBF\xBF"), 0u);  // overlong U+FFFF
  EXPECT_EQ(Length("\xED\xA0\x80"), 0u);      // U+D800
  EXPECT_EQ(Length("\xED\xBF\xBF"), 0u);      // U+DFFF
  EXPECT_EQ(Length("\xF4\x90\x80\x80"), 0u);  // U+110000
  EXPECT_EQ(Length("\xF5\x80\x80\x80"), 0u);  // lead byte past F4
  EXPECT_EQ(Length("\xFF"), 0u);
  EXPECT_EQ(Length("\x80"), 0u);  // continuation byte as a lead
}

TEST(Utf8Test, RejectsTruncatedAndBrokenSequences) {
  EXPECT_EQ(Length("\xE2\x82"), 0u);  // ends early
  EXPECT_EQ(Length("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(Length("\xC3("), 0u);  // second byte not a continuation
  EXPECT_EQ(Length("\xE2\x28\xA1"), 0u);
  EXPECT_EQ(Length("\xE2\x82\x28"), 0u);      // third byte not a continuation
  EXPECT_EQ(Length("\xF0\x9F\x98\x28"), 0u);  // fourth byte not a continuation
  // `available` is honoured even when the buffer goes on.
  const auto* euro = reinterpret_cast<const unsigned char*>("\xE2\x82\xAC");
  EXPECT_EQ(ValidUtf8SequenceLength(euro, 2), 0u);
  EXPECT_EQ(ValidUtf8SequenceLength(euro, 3), 3u);
}

TEST(Utf8Test, IsValidUtf8WholeStrings) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8(std::string("ascii\0with nul", 14)));
  EXPECT_TRUE(IsValidUtf8("µs ✓ 😀"));
  EXPECT_FALSE(IsValidUtf8("ok\xff"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));
}

TEST(Utf8Test, AppendUtf8EncodesScalarValuesAndReplacesTheRest) {
  EXPECT_EQ(Encode(0x41), "A");
  EXPECT_EQ(Encode(0x0), std::string(1, '\0'));
  EXPECT_EQ(Encode(0xE9), "\xC3\xA9");
  EXPECT_EQ(Encode(0x20AC), "\xE2\x82\xAC");
  EXPECT_EQ(Encode(0x1F600), "\xF0\x9F\x98\x80");
  EXPECT_EQ(Encode(0x10FFFF), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(Encode(0xD800), kUtf8Replacement);  // a surrogate is no scalar value
  EXPECT_EQ(Encode(0xDFFF), kUtf8Replacement);
  EXPECT_EQ(Encode(0x110000), kUtf8Replacement);
}

TEST(Utf8Test, AppendUtf8RoundTripsThroughTheValidator) {
  for (std::uint32_t cp : {0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFDu, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    const std::string bytes = Encode(cp);
    EXPECT_EQ(Length(bytes), bytes.size()) << std::hex << cp;
  }
}

TEST(PrintableTextTest, EscapesControlCharactersAndReplacesInvalidUtf8) {
  EXPECT_EQ(PrintableText("aten::mm"), "aten::mm");
  EXPECT_EQ(PrintableText("a\tb\nc\r\x01\x7f"), "a\\tb\\nc\\r\\x01\\x7f");
  EXPECT_EQ(PrintableText("\xc2\xb5s \xff!"), "\xc2\xb5s \xEF\xBF\xBD!");
}

TEST(PrintableTextTest, EscapesTerminalEscapeSequencesC0AndC1) {
  // ESC [ 2 J clears a terminal; U+009B is the one-character CSI.
  EXPECT_EQ(PrintableText("\x1b[2Jop"), "\\x1b[2Jop");
  EXPECT_EQ(PrintableText("a\xc2\x9b"
                          "2Jb"),
            "a\\u009b2Jb");
  EXPECT_EQ(PrintableText("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is printable
}

}  // namespace
}  // namespace gpuprof::base
