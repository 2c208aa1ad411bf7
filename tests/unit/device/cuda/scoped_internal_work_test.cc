// C1's guard (device/cuda/scoped_internal_work.h): scoped, nested and per thread. What the CUPTI
// layer does with it (the filter) is tested in tests/unit/cupti/internal_work_test.cc.
#include "device/cuda/scoped_internal_work.h"

#include <gtest/gtest.h>

#include <thread>

namespace gpuprof::device::cuda {
namespace {

TEST(ScopedInternalWorkTest, ActiveOnlyWithinTheScope) {
  EXPECT_FALSE(ScopedInternalWork::Active());
  {
    ScopedInternalWork internal;
    EXPECT_TRUE(ScopedInternalWork::Active());
  }
  EXPECT_FALSE(ScopedInternalWork::Active());
}

TEST(ScopedInternalWorkTest, NestedScopesKeepItActiveUntilTheOutermostEnds) {
  ScopedInternalWork outer;
  {
    ScopedInternalWork inner;
    EXPECT_TRUE(ScopedInternalWork::Active());
  }
  EXPECT_TRUE(ScopedInternalWork::Active());
}

TEST(ScopedInternalWorkTest, IsPerThread) {
  ScopedInternalWork internal;
  bool other_thread_active = true;
  std::thread([&] { other_thread_active = ScopedInternalWork::Active(); }).join();
  EXPECT_FALSE(other_thread_active);
}

}  // namespace
}  // namespace gpuprof::device::cuda
