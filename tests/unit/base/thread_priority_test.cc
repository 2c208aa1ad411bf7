#include "base/thread_priority.h"

#include <gtest/gtest.h>

#include <thread>

#include "fakes/thread_nice.h"

namespace gpuprof::base {
namespace {

TEST(ThreadPriorityTest, AThreadLowersItselfTenNiceLevelsAndLeavesTheOthersAlone) {
  const int ours = thread_nice::ThisThreadsNice();
  if (ours >= kLowestNice) GTEST_SKIP() << "this test runs at nice " << ours << ": nothing lower to go to";
  int before = -100;
  int returned = -100;
  int after = -100;
  std::thread([&] {
    before = thread_nice::ThisThreadsNice();
    returned = LowerThisThreadsPriority();
    after = thread_nice::ThisThreadsNice();
  }).join();
  EXPECT_EQ(before, ours);  // a new thread starts at its creator's value
  const int expected =
      ours + kBackgroundNiceLevels > kLowestNice ? kLowestNice : ours + kBackgroundNiceLevels;
  EXPECT_EQ(returned, expected);
  EXPECT_EQ(after, expected);
  EXPECT_EQ(thread_nice::ThisThreadsNice(), ours);
}

TEST(ThreadPriorityTest, AThreadAtTheLowestPriorityStaysThere) {
  int returned = -100;
  int after = -100;
  std::thread([&] {
    LowerThisThreadsPriority();
    LowerThisThreadsPriority();
    returned = LowerThisThreadsPriority();
    after = thread_nice::ThisThreadsNice();
  }).join();
  EXPECT_EQ(returned, kLowestNice);
  EXPECT_EQ(after, kLowestNice);
}

}  // namespace
}  // namespace gpuprof::base
