// ErrnoText (base/errno_text.h): the C library's message for an errno value, from any thread.
#include "base/errno_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace gpuprof::base {
namespace {

TEST(ErrnoTextTest, IsTheCLibrarysMessage) {
  EXPECT_EQ(ErrnoText(ENOENT), std::string(std::strerror(ENOENT)));
  EXPECT_EQ(ErrnoText(EACCES), std::string(std::strerror(EACCES)));
  EXPECT_FALSE(ErrnoText(0).empty());
}

TEST(ErrnoTextTest, AnUnknownNumberStillNamesIt) {
  EXPECT_THAT(ErrnoText(98765), ::testing::HasSubstr("98765"));
}

TEST(ErrnoTextTest, AnotherThreadGetsItsOwnMessage) {
  std::string other;
  std::thread([&] { other = ErrnoText(EEXIST); }).join();
  EXPECT_EQ(other, std::string(std::strerror(EEXIST)));
  EXPECT_EQ(ErrnoText(ENOSPC), std::string(std::strerror(ENOSPC)));
}

}  // namespace
}  // namespace gpuprof::base
