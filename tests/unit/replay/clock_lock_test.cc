// C3: the clock lock against a fake NVML. No real clock is ever changed by these tests.
#include "replay/clock_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/logging.h"
#include "fakes/fake_clock_api.h"

namespace gpuprof::replay {
namespace {

using gpuprof::testing::FakeClockApi;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ClockLockTest, NoneNeverTouchesTheClocks) {
  FakeClockApi nvml;
  {
    ClockLock lock(&nvml, 0, ClockControl::kNone);
    EXPECT_FALSE(lock.locked());
    EXPECT_THAT(lock.warning(), IsEmpty());
  }
  EXPECT_THAT(nvml.calls, IsEmpty());
}

TEST(ClockLockTest, BaseLocksSmAndMemoryToBaseAndRestoresOnDestruction) {
  FakeClockApi nvml;
  {
    ClockLock lock(&nvml, 1, ClockControl::kBase);
    EXPECT_TRUE(lock.locked());
    EXPECT_THAT(lock.warning(), IsEmpty());
    EXPECT_EQ(lock.sm_mhz(), 1590u);
    EXPECT_EQ(lock.memory_mhz(), 3201u);
    EXPECT_EQ(nvml.locked_sm, 1590u);
    EXPECT_EQ(nvml.locked_memory, 3201u);
  }
  EXPECT_EQ(nvml.locked_sm, 0u);
  EXPECT_EQ(nvml.locked_memory, 0u);
  EXPECT_THAT(nvml.calls, ElementsAre("base 1", "lock sm 1 1590,1590", "lock memory 1 3201,3201",
                                      "reset memory 1", "reset sm 1"));
}

TEST(ClockLockTest, ReleaseRestoresOnceAndDestructionDoesNotRepeatIt) {
  FakeClockApi nvml;
  ClockLock lock(&nvml, 0, ClockControl::kBase);
  lock.Release();
  EXPECT_FALSE(lock.locked());
  EXPECT_EQ(nvml.locked_sm, 0u);
  const std::size_t calls = nvml.calls.size();
  lock.Release();
  EXPECT_EQ(nvml.calls.size(), calls);
}

TEST(ClockLockTest, NotPermittedWarnsNamingTheFixAndLeavesTheClocksAlone) {
  base::ScopedLogCapture log;
  FakeClockApi nvml;
  nvml.sm_result = {ClockCallCode::kNoPermission, "Insufficient Permissions"};
  {
    ClockLock lock(&nvml, 0, ClockControl::kBase);
    EXPECT_FALSE(lock.locked());
    EXPECT_THAT(lock.warning(), HasSubstr("not permitted"));
    EXPECT_THAT(lock.warning(), HasSubstr("root"));
    EXPECT_THAT(lock.warning(), HasSubstr("nvidia-smi -i 0 --lock-gpu-clocks=1590,1590"));
    EXPECT_THAT(lock.warning(), HasSubstr("the clocks as they are"));
  }
  EXPECT_EQ(nvml.locked_sm, 0u);
  EXPECT_EQ(nvml.locked_memory, 0u);
  EXPECT_THAT(nvml.calls, ElementsAre("base 0", "lock sm 0 1590,1590"))
      << "nothing was locked, nothing to reset";
  EXPECT_EQ(log.Count("--clock-control base"), 1);
}

TEST(ClockLockTest, MemoryLockFailingAfterSmResetsTheSmClock) {
  FakeClockApi nvml;
  nvml.memory_result = {ClockCallCode::kNoPermission, "Insufficient Permissions"};
  {
    ClockLock lock(&nvml, 0, ClockControl::kBase);
    EXPECT_FALSE(lock.locked());
    EXPECT_EQ(nvml.locked_sm, 0u) << "reset at once: all or nothing";
    EXPECT_THAT(lock.warning(), HasSubstr("memory clock"));
    EXPECT_THAT(lock.warning(), HasSubstr("the SM clock was reset too"));
  }
  EXPECT_THAT(nvml.calls,
              ElementsAre("base 0", "lock sm 0 1590,1590", "lock memory 0 3201,3201", "reset sm 0"));

  FakeClockApi unsupported;
  unsupported.memory_result = {ClockCallCode::kNotSupported, ""};
  ClockLock lock(&unsupported, 0, ClockControl::kBase);
  EXPECT_FALSE(lock.locked());
  EXPECT_EQ(unsupported.locked_sm, 0u);
  EXPECT_THAT(lock.warning(), HasSubstr("not supported"));
}

TEST(ClockLockTest, UnreadableBaseClocksOrNoNvmlWarnAndChangeNothing) {
  FakeClockApi nvml;
  nvml.base_result = {ClockCallCode::kError, "nvmlDeviceGetDefaultApplicationsClock: Unknown Error"};
  {
    ClockLock lock(&nvml, 0, ClockControl::kBase);
    EXPECT_FALSE(lock.locked());
    EXPECT_THAT(lock.warning(), HasSubstr("Unknown Error"));
  }
  EXPECT_THAT(nvml.calls, ElementsAre("base 0"));

  ClockLock without(nullptr, 2, ClockControl::kBase);
  EXPECT_FALSE(without.locked());
  EXPECT_THAT(without.warning(), HasSubstr("NVML is not available"));
}

TEST(ClockLockTest, AFailedResetIsReportedWithTheCommandThatUndoesIt) {
  base::ScopedLogCapture log;
  FakeClockApi nvml;
  {
    ClockLock lock(&nvml, 3, ClockControl::kBase);
    ASSERT_TRUE(lock.locked());
    nvml.reset_result = {ClockCallCode::kError, "GPU is lost"};
  }
  EXPECT_EQ(log.Count("nvidia-smi -i 3 --reset-gpu-clocks"), 1);
  EXPECT_EQ(log.Count("nvidia-smi -i 3 --reset-memory-clocks"), 1);
}

}  // namespace
}  // namespace gpuprof::replay
