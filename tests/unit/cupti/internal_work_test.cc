#include "cupti/internal_work.h"

#include <gtest/gtest.h>

#include <string>
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
trace::Record NamedApi(std::uint64_t correlation, std::string name) {
  trace::ApiCall call;
  call.correlation_id = correlation;
  call.name = std::move(name);
  return call;
}
trace::Record KindTask(std::uint64_t correlation, trace::TaskKind kind, std::string name) {
  trace::DeviceTask task;
  task.correlation_id = correlation;
  task.kind = kind;
  task.name = std::move(name);
  return task;
}
std::uint64_t CorrelationOf(const trace::Record& record) {
  if (const auto* call = std::get_if<trace::ApiCall>(&record)) return call->correlation_id;
  return std::get<trace::DeviceTask>(record).correlation_id;
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

TEST(ScopedApplicationCallTest, NamesTheInnermostApplicationCallOfThisThread) {
  EXPECT_EQ(ScopedApplicationCall::Current(), 0u);
  {
    ScopedApplicationCall outer(41);
    EXPECT_EQ(ScopedApplicationCall::Current(), 41u);
    {
      ScopedApplicationCall inner(42);
      EXPECT_EQ(ScopedApplicationCall::Current(), 42u);
    }
    EXPECT_EQ(ScopedApplicationCall::Current(), 41u);
    std::uint64_t other_thread = 1;
    std::thread([&] { other_thread = ScopedApplicationCall::Current(); }).join();
    EXPECT_EQ(other_thread, 0u);
  }
  EXPECT_EQ(ScopedApplicationCall::Current(), 0u);
}

// Replay inside the application's cuLaunchKernel callback (id 30): gpuprof's nested copy, memset
// (L2 flush) and two pass launches carry id 30 too. Exactly those records go; the application's
// runtime and driver API records and its own kernel (which starts last) stay.
TEST(InternalWorkFilterTest, NestedWorkDropsItsOwnRecordsAndKeepsTheApplications) {
  InternalWorkFilter filter;
  filter.MarkNested(30, "cuMemcpyDtoDAsync_v2");
  filter.MarkNested(30, "cuMemsetD8Async");
  filter.MarkNested(30, "cuLaunchKernel");
  filter.MarkNested(30, "cuLaunchKernel");
  filter.MarkNested(30, "cuEventRecord");
  EXPECT_FALSE(filter.IsInternal(30));
  std::vector<trace::Record> device = {
      KindTask(30, trace::TaskKind::kMemcpy, ""),      KindTask(30, trace::TaskKind::kMemset, ""),
      KindTask(30, trace::TaskKind::kKernel, "k"),     KindTask(30, trace::TaskKind::kKernel, "k"),
      KindTask(31, trace::TaskKind::kKernel, "other"), KindTask(30, trace::TaskKind::kKernel, "k")};
  EXPECT_EQ(filter.Filter(device), 4u);
  ASSERT_EQ(device.size(), 2u);
  EXPECT_EQ(CorrelationOf(device[0]), 31u);
  EXPECT_EQ(CorrelationOf(device[1]), 30u);  // the application's launch
  // API records may arrive in another buffer, in any order.
  std::vector<trace::Record> api = {NamedApi(30, "cudaLaunchKernel"),     NamedApi(30, "cuLaunchKernel"),
                                    NamedApi(30, "cuMemcpyDtoDAsync_v2"), NamedApi(30, "cuLaunchKernel"),
                                    NamedApi(30, "cuEventRecord"),        NamedApi(30, "cuLaunchKernel"),
                                    NamedApi(30, "cuMemsetD8Async")};
  EXPECT_EQ(filter.Filter(api), 5u);
  ASSERT_EQ(api.size(), 2u);
  EXPECT_EQ(std::get<trace::ApiCall>(api[0]).name, "cudaLaunchKernel");
  EXPECT_EQ(std::get<trace::ApiCall>(api[1]).name, "cuLaunchKernel");
  // Counts are used up: a later record of the id stays.
  std::vector<trace::Record> later = {KindTask(30, trace::TaskKind::kMemcpy, "")};
  EXPECT_EQ(filter.Filter(later), 0u);
}

// Issue 24: gpuprof's own cuGraphLaunch inside the application's graph launch (a whole-graph
// replay pass) produces one task per node under the application's id; the filter drops that many,
// earliest first, and hands the kernels on for the replay tables.
TEST(InternalWorkFilterTest, NestedGraphLaunchesDropOneTaskPerNodeAndHandOnTheKernels) {
  InternalWorkFilter filter;
  for (int pass = 0; pass < 2; ++pass) {
    ScopedNestedGraphLaunch tasks({2, 1, 0});  // 2 kernel nodes, 1 memcpy node
    filter.MarkNested(40, "cuGraphLaunch");
  }
  auto node_kernel = [](std::uint64_t node) {
    trace::DeviceTask task;
    task.correlation_id = 40;
    task.kind = trace::TaskKind::kKernel;
    task.graph_node_id = node;
    task.start_ns = 100;
    task.end_ns = 100 + static_cast<std::int64_t>(node);
    return trace::Record(task);
  };
  std::vector<trace::Record> device = {
      node_kernel(1), KindTask(40, trace::TaskKind::kMemcpy, ""), node_kernel(2), node_kernel(1),
      KindTask(40, trace::TaskKind::kMemcpy, ""), node_kernel(2),
      // the application's own launch of the graph, after the passes
      node_kernel(1), KindTask(40, trace::TaskKind::kMemcpy, ""), node_kernel(2)};
  // gpuprof's own snapshot kernel nested in the same call (no graph node id) is dropped, not handed on.
  filter.MarkNested(40, "cuLaunchKernel");
  device.insert(device.begin(), KindTask(40, trace::TaskKind::kKernel, "gpuprof_chunk_op"));
  std::vector<trace::DeviceTask> kernels;
  EXPECT_EQ(filter.Filter(device, &kernels), 7u);
  EXPECT_EQ(device.size(), 3u) << "the application's graph launch stays in the trace";
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_EQ(kernels[0].graph_node_id, 1u);
  EXPECT_EQ(kernels[1].graph_node_id, 2u);
  EXPECT_EQ(kernels[2].graph_node_id, 1u);
  // Without an active ScopedNestedGraphLaunch a nested cuGraphLaunch counts no tasks.
  filter.MarkNested(41, "cuGraphLaunch");
  std::vector<trace::Record> other = {KindTask(41, trace::TaskKind::kKernel, "k")};
  EXPECT_EQ(filter.Filter(other), 0u);
}

// Issue 40, item 4: a nested launch on a context whose kernel records are held off (counter
// passes) gets no kernel record from CUPTI, so none is counted, for a plain or a graph launch;
// its other records (API call, memcpy nodes) still are.
TEST(InternalWorkFilterTest, NestedLaunchesWithoutKernelRecordsCountNoKernel) {
  InternalWorkFilter filter;
  filter.MarkNested(50, "cuLaunchKernel", /*kernel_records=*/false);
  {
    ScopedNestedGraphLaunch tasks({2, 1, 0});
    filter.MarkNested(50, "cuGraphLaunch", /*kernel_records=*/false);
  }
  std::vector<trace::Record> records = {NamedApi(50, "cuLaunchKernel"), NamedApi(50, "cuGraphLaunch"),
                                        KindTask(50, trace::TaskKind::kMemcpy, ""),
                                        KindTask(50, trace::TaskKind::kKernel, "the application's")};
  EXPECT_EQ(filter.Filter(records), 3u);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(std::get<trace::DeviceTask>(records[0]).name, "the application's");
}

TEST(KernelRecordsHeldOffTest, HoldsNestPerContext) {
  int a = 0;
  int b = 0;
  const std::uint64_t holds = KernelRecordHoldOffs();
  EXPECT_FALSE(KernelRecordsHeldOff(&a));
  ASSERT_TRUE(HoldOffKernelRecords(&a));
  ASSERT_TRUE(HoldOffKernelRecords(&a));
  EXPECT_TRUE(KernelRecordsHeldOff(&a));
  EXPECT_FALSE(KernelRecordsHeldOff(&b));
  ResumeKernelRecords(&a);
  EXPECT_TRUE(KernelRecordsHeldOff(&a));
  ResumeKernelRecords(&a);
  EXPECT_FALSE(KernelRecordsHeldOff(&a));
  ResumeKernelRecords(&b);  // never held: nothing happens
  EXPECT_FALSE(KernelRecordsHeldOff(&b));
  EXPECT_EQ(KernelRecordHoldOffs(), holds + 2);
}

}  // namespace
}  // namespace gpuprof::cupti
