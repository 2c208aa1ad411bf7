#include "base/check.h"

#include <gtest/gtest.h>

namespace gpuprof::base {
namespace {

TEST(CheckTest, PassingCheckDoesNotEvaluateItsMessage) {
  int calls = 0;
  auto describe = [&calls] {
    ++calls;
    return "never";
  };
  GPUPROF_CHECK(calls == 0) << describe();
  EXPECT_EQ(calls, 0);
}

TEST(CheckTest, ConditionIsEvaluatedExactlyOnce) {
  int evaluations = 0;
  GPUPROF_CHECK(++evaluations == 1);
  EXPECT_EQ(evaluations, 1);
}

TEST(CheckDeathTest, FailingCheckAbortsWithConditionLocationAndMessage) {
  int size = 0;
  EXPECT_DEATH(GPUPROF_CHECK(size > 0) << "region 0x" << std::hex << 4096 << " has no bytes",
               "\\[gpuprof\\] FATAL .*check_test\\.cc:[0-9]+\\] check failed: size > 0 region 0x1000 has no "
               "bytes");
}

TEST(CheckDeathTest, FailingCheckWithoutMessageNamesTheCondition) {
  bool ready = false;
  EXPECT_DEATH(GPUPROF_CHECK(ready), "check failed: ready");
}

#ifdef NDEBUG
TEST(CheckTest, DcheckIsCompiledOutWithNdebug) {
  int evaluations = 0;
  GPUPROF_DCHECK(++evaluations == 42) << "not evaluated either";
  EXPECT_EQ(evaluations, 0);
}
#else
TEST(CheckDeathTest, DcheckAbortsInDebugBuilds) {
  bool ready = false;
  EXPECT_DEATH(GPUPROF_DCHECK(ready) << "debug invariant", "check failed: ready debug invariant");
}
#endif

}  // namespace
}  // namespace gpuprof::base
