#include "cupti/internal_work.h"

#include <gtest/gtest.h>

#include <thread>
#include <variant>
#include <vector>

namespace gpuprof::cupti {
namespace {

trace::Record Api(std::uint64_t correlation) {
  trace::ApiCall call;
  call.correlation_id = correlation;
  return call;
}
trace::Record Task(std::uint64_t correlation) {
  trace::DeviceTask task;
  task.correlation_id = correlation;
  return task;
}
std::uint64_t CorrelationOf(const trace::Record& record) {
  if (const auto* call = std::get_if<trace::ApiCall>(&record)) return call->correlation_id;
  return std::get<trace::DeviceTask>(record).correlation_id;
}

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

TEST(InternalWorkFilterTest, ApiEntryOutsideTheGuardMarksNothing) {
  InternalWorkFilter filter;
  EXPECT_FALSE(filter.OnApiEnter(5));
  EXPECT_FALSE(filter.IsInternal(5));
  EXPECT_EQ(filter.size(), 0u);
}

TEST(InternalWorkFilterTest, ApiEntryUnderTheGuardMarksItsCorrelationId) {
  InternalWorkFilter filter;
  {
    ScopedInternalWork internal;
    EXPECT_TRUE(filter.OnApiEnter(5));
  }
  EXPECT_TRUE(filter.IsInternal(5));
  EXPECT_FALSE(filter.IsInternal(6));
}

TEST(InternalWorkFilterTest, OnlyTheGuardedThreadsCallsAreMarked) {
  InternalWorkFilter filter;
  ScopedInternalWork internal;                              // this thread is doing gpuprof work...
  std::thread([&] { (void)filter.OnApiEnter(7); }).join();  // ...the application's thread is not
  (void)filter.OnApiEnter(8);
  EXPECT_FALSE(filter.IsInternal(7));
  EXPECT_TRUE(filter.IsInternal(8));
}

TEST(InternalWorkFilterTest, DropsApiCallsAndTheirDeviceTasksKeepsTheRest) {
  InternalWorkFilter filter;
  filter.MarkInternal(10);
  filter.MarkInternal(12);
  trace::Mark mark;
  std::vector<trace::Record> records = {Api(10),  Task(10), Api(11), Task(11),
                                        Task(12), Task(12), mark,    Task(0)};
  EXPECT_EQ(filter.Filter(records), 4u);  // a graph launch (12) completes several tasks: all go
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(CorrelationOf(records[0]), 11u);
  EXPECT_TRUE(std::holds_alternative<trace::ApiCall>(records[0]));
  EXPECT_EQ(CorrelationOf(records[1]), 11u);
  EXPECT_TRUE(std::holds_alternative<trace::Mark>(records[2]));
  EXPECT_EQ(CorrelationOf(records[3]), 0u);  // id 0 is never treated as internal
}

TEST(InternalWorkFilterTest, DeviceTaskArrivingBeforeItsApiRecordIsStillDropped) {
  // CUPTI completes per-thread buffers in any order; the id is known from the API callback.
  InternalWorkFilter filter;
  {
    ScopedInternalWork internal;
    (void)filter.OnApiEnter(20);
  }
  std::vector<trace::Record> device_buffer = {Task(20), Task(21)};
  std::vector<trace::Record> api_buffer = {Api(21), Api(20)};
  EXPECT_EQ(filter.Filter(device_buffer), 1u);
  EXPECT_EQ(filter.Filter(api_buffer), 1u);
  EXPECT_EQ(CorrelationOf(device_buffer[0]), 21u);
  EXPECT_EQ(CorrelationOf(api_buffer[0]), 21u);
}

TEST(InternalWorkFilterTest, WithNothingMarkedFilterKeepsEverything) {
  InternalWorkFilter filter;
  std::vector<trace::Record> records = {Api(1), Task(1)};
  EXPECT_EQ(filter.Filter(records), 0u);
  EXPECT_EQ(records.size(), 2u);
}

TEST(InternalWorkFilterTest, IdsBeyondTheCapAreCountedNotStored) {
  InternalWorkFilter filter(/*max_ids=*/2);
  filter.MarkInternal(1);
  filter.MarkInternal(2);
  filter.MarkInternal(3);
  EXPECT_EQ(filter.size(), 2u);
  EXPECT_EQ(filter.overflowed(), 1u);
  EXPECT_FALSE(filter.IsInternal(3));
}

}  // namespace
}  // namespace gpuprof::cupti
