// How the report page cuts a long name (cli/page_names.h): whole up to 200 bytes, then its start,
// an ellipsis and its length, never inside a UTF-8 sequence; the tooltip capped at 2000 bytes.
#include "cli/page_names.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuprof::cli {
namespace {

TEST(PageNamesTest, AShortNameIsShownWholeWithoutTooltip) {
  const std::string name(kShownNameBytes, 'a');
  EXPECT_EQ(ShownName(name), name);
  EXPECT_EQ(NameTitle(name), "");
}

TEST(PageNamesTest, ALongNameIsCutWithItsLengthAndACappedTooltip) {
  const std::string name = "op" + std::string(20'000'000, 'x');
  const std::string shown = ShownName(name);
  EXPECT_EQ(shown, "op" + std::string(kShownNameBytes - 2, 'x') + "… (20000002 bytes)");
  const std::string title = NameTitle(name);
  EXPECT_EQ(title.size(), kTitleNameBytes + std::string("…").size());
  EXPECT_EQ(title.substr(0, 2), "op");
}

TEST(PageNamesTest, TheCutNeverSplitsACodePointAndKeepsTheReadersLength) {
  // "é" is two bytes: 199 bytes of 'a' then "é" straddles the 200-byte limit.
  const std::string name = std::string(kShownNameBytes - 1, 'a') + "é" + std::string(100, 'b');
  EXPECT_EQ(ShownName(name),
            std::string(kShownNameBytes - 1, 'a') + "… (" + std::to_string(name.size()) + " bytes)");
  // A name the reader cut to 4 KiB is shown with its whole length.
  EXPECT_EQ(ShownName(std::string(4096, 'z'), 1'000'004),
            std::string(kShownNameBytes, 'z') + "… (1000004 bytes)");
}

}  // namespace
}  // namespace gpuprof::cli
