// Range replay's CUDA side without a GPU: which driver calls a recording range records, declines or
// takes as a delimiter (range_calls.h, nvtx_delimiter.h), and the launch copy a range re-issues
// (recorded_launch.h): argument bytes copied at the call, whatever the application does afterwards.
#include "cupti/range_calls.h"

#include <generated_nvtx_meta.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "cupti/nvtx_delimiter.h"
#include "cupti/range_pass_tags.h"
#include "cupti/recorded_launch.h"

namespace gpuprof::cupti {
namespace {

using ::testing::HasSubstr;

TEST(ClassifyRangeCallTest, CopiesCarryTheirDirectionAndStream) {
  int host = 0;
  auto* stream = reinterpret_cast<CUstream>(0x1234);
  cuMemcpyHtoDAsync_v2_params h2d{0x1000, &host, 64, stream};
  RangeCall call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &h2d);
  ASSERT_EQ(call.kind, RangeCall::Kind::kTransfer);
  EXPECT_EQ(call.transfer.kind, device::TransferKind::kCopy);
  EXPECT_EQ(call.transfer.dst, 0x1000u);
  EXPECT_EQ(call.transfer.src, reinterpret_cast<std::uintptr_t>(&host));
  EXPECT_EQ(call.transfer.bytes, 64u);
  EXPECT_EQ(call.transfer.stream, 0x1234u);
  EXPECT_TRUE(call.transfer.asynchronous);

  cuMemcpyDtoH_v2_params d2h{&host, 0x2000, 4};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &d2h);
  ASSERT_EQ(call.kind, RangeCall::Kind::kTransfer);
  EXPECT_EQ(call.transfer.dst, reinterpret_cast<std::uintptr_t>(&host));
  EXPECT_EQ(call.transfer.src, 0x2000u);
  EXPECT_EQ(call.transfer.stream, kLegacyStream);  // a synchronous copy runs on the legacy stream
  EXPECT_FALSE(call.transfer.asynchronous);

  cuMemcpyDtoD_v2_ptds_params d2d{0x3000, 0x4000, 8};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, &d2d);
  ASSERT_EQ(call.kind, RangeCall::Kind::kTransfer);
  EXPECT_EQ(call.transfer.stream, reinterpret_cast<device::StreamId>(CU_STREAM_PER_THREAD));

  cuMemcpyAsync_params unified{0x5000, 0x6000, 16, stream};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, &unified);
  ASSERT_EQ(call.kind, RangeCall::Kind::kTransfer);
  EXPECT_EQ(call.transfer.dst, 0x5000u);
  EXPECT_EQ(call.transfer.src, 0x6000u);
}

TEST(ClassifyRangeCallTest, MemsetsOfOneBytePatternAreRecordedOthersDeclined) {
  cuMemsetD8Async_params d8{0x1000, 0xAB, 100, nullptr};
  RangeCall call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &d8);
  ASSERT_EQ(call.kind, RangeCall::Kind::kTransfer);
  EXPECT_EQ(call.transfer.kind, device::TransferKind::kMemset);
  EXPECT_EQ(call.transfer.value, 0xAB);
  EXPECT_EQ(call.transfer.bytes, 100u);

  // cudaMemset may reach the driver as a D32 memset of a repeated byte.
  cuMemsetD32_v2_params zeros{0x1000, 0, 25};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &zeros);
  ASSERT_EQ(call.kind, RangeCall::Kind::kTransfer);
  EXPECT_EQ(call.transfer.value, 0);
  EXPECT_EQ(call.transfer.bytes, 100u);

  cuMemsetD16_v2_params pattern{0x1000, 0x1234, 8};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, &pattern);
  EXPECT_EQ(call.kind, RangeCall::Kind::kDecline);
  EXPECT_THAT(call.detail, HasSubstr("bytes differ"));
}

TEST(ClassifyRangeCallTest, EventsHostFunctionsAndDelimiters) {
  auto* event = reinterpret_cast<CUevent>(0x77);
  auto* stream = reinterpret_cast<CUstream>(0x88);
  cuEventRecord_params record{event, stream};
  RangeCall call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &record);
  ASSERT_EQ(call.kind, RangeCall::Kind::kEvent);
  EXPECT_EQ(call.event.kind, device::EventOpKind::kRecord);
  EXPECT_EQ(call.event.event, 0x77u);
  EXPECT_EQ(call.event.stream, 0x88u);

  cuStreamWaitEvent_params wait{stream, event, 0};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &wait);
  ASSERT_EQ(call.kind, RangeCall::Kind::kEvent);
  EXPECT_EQ(call.event.kind, device::EventOpKind::kWait);

  cuLaunchHostFunc_params host_func{stream, nullptr, nullptr};
  call = ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc, &host_func);
  EXPECT_EQ(call.kind, RangeCall::Kind::kDecline);
  EXPECT_EQ(call.detail, "a host function");

  cuMemcpyPeer_params peer{};
  EXPECT_EQ(ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer, &peer).kind, RangeCall::Kind::kDecline);
  CUDA_MEMCPY2D copy2d{};
  cuMemcpy2D_v2_params two_d{&copy2d};
  EXPECT_EQ(ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2, &two_d).kind, RangeCall::Kind::kDecline);

  // cuProfilerStart/Stop take no parameters: CUPTI hands their callbacks no parameter block.
  EXPECT_EQ(ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, nullptr).kind,
            RangeCall::Kind::kProfilerStart);
  EXPECT_EQ(ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, nullptr).kind,
            RangeCall::Kind::kProfilerStop);
  int unused = 0;
  EXPECT_EQ(ClassifyRangeCall(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, &unused).kind,
            RangeCall::Kind::kNone);
}

// A fake cuLaunchKernel: what the re-issue passed.
struct Issued {
  CUfunction function = nullptr;
  unsigned grid_x = 0;
  CUstream stream = nullptr;
  int a = 0;
  double b = 0;
  std::vector<std::uint8_t> extra_bytes;
} issued;

CUresult FakeLaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream stream, void** params, void** extra) {
  issued.function = f;
  issued.grid_x = gx;
  issued.stream = stream;
  if (params != nullptr) {
    std::memcpy(&issued.a, params[0], sizeof(int));
    std::memcpy(&issued.b, params[1], sizeof(double));
  }
  if (extra != nullptr) {
    const auto* bytes = static_cast<const std::uint8_t*>(extra[1]);
    issued.extra_bytes.assign(bytes, bytes + *static_cast<const std::size_t*>(extra[3]));
  }
  return CUDA_SUCCESS;
}

// (int a, double b): offsets 0 and 8.
CUresult TwoParams(std::size_t index, std::size_t* offset, std::size_t* size) {
  if (index == 0) {
    *offset = 0;
    *size = sizeof(int);
    return CUDA_SUCCESS;
  }
  if (index == 1) {
    *offset = 8;
    *size = sizeof(double);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

TEST(CudaRecordedLaunchTest, ArgumentsAreCopiedAtTheCall) {
  device::cuda::CudaDriver driver;
  driver.LaunchKernel = &FakeLaunchKernel;
  int a = 7;
  double b = 2.5;
  void* params[] = {&a, &b};
  LaunchCall call;
  call.function = reinterpret_cast<CUfunction>(0x42);
  call.grid[0] = 3;
  call.kernel_params = params;
  auto recorded = CudaRecordedLaunch::Record(driver, call, "k", &TwoParams);
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  EXPECT_EQ((*recorded)->argument_bytes().size(), 16u);
  a = -1;  // the application reuses its argument storage after the call
  b = -1;
  issued = {};
  EXPECT_EQ((*recorded)->Issue(reinterpret_cast<CUstream>(0x99)), CUDA_SUCCESS);
  EXPECT_EQ(issued.function, reinterpret_cast<CUfunction>(0x42));
  EXPECT_EQ(issued.grid_x, 3u);
  EXPECT_EQ(issued.stream, reinterpret_cast<CUstream>(0x99));  // gpuprof's stream, not the application's
  EXPECT_EQ(issued.a, 7);
  EXPECT_EQ(issued.b, 2.5);
}

TEST(CudaRecordedLaunchTest, ExtraBufferFormIsCopied) {
  device::cuda::CudaDriver driver;
  driver.LaunchKernel = &FakeLaunchKernel;
  std::uint8_t buffer[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::size_t size = sizeof(buffer);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  LaunchCall call;
  call.function = reinterpret_cast<CUfunction>(0x42);
  call.extra = extra;
  auto recorded = CudaRecordedLaunch::Record(driver, call, "k", nullptr);
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  buffer[0] = 99;
  issued = {};
  EXPECT_EQ((*recorded)->Issue(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(issued.extra_bytes.size(), 12u);
  EXPECT_EQ(issued.extra_bytes[0], 1);
  EXPECT_EQ(issued.extra_bytes[11], 12);
}

// launch__* metrics of a range's launches: the recorded launch describes itself when asked (on the
// H100 a range's launches had no launch__grid_size while kernel mode's had).
TEST(CudaRecordedLaunchTest, ShapeIsDescribedWhenAskedAndNamedWhenItCannotBe) {
  device::cuda::CudaDriver driver;
  LaunchCall call;
  call.function = reinterpret_cast<CUfunction>(0x42);
  int described = 0;
  auto recorded = CudaRecordedLaunch::Record(driver, call, "k", nullptr, [&described] {
    ++described;
    device::LaunchShape shape;
    shape.grid[0] = 222;
    return StatusOr<device::LaunchShape>(shape);
  });
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  EXPECT_EQ(described, 0);  // nothing asked at the call: recording stays cheap
  StatusOr<device::LaunchShape> shape = (*recorded)->shape();
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->grid[0], 222u);
  EXPECT_EQ(described, 1);
  auto plain = CudaRecordedLaunch::Record(driver, call, "k", nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->shape().ok());
}

TEST(CudaRecordedLaunchTest, WhatCannotBeCopiedFaithfullyIsAnErrorNamingWhy) {
  device::cuda::CudaDriver driver;
  int a = 1;
  void* params[] = {&a};
  LaunchCall call;
  call.function = reinterpret_cast<CUfunction>(0x42);
  call.kernel_params = params;
  // A driver without cuFuncGetParamInfo.
  auto recorded = CudaRecordedLaunch::Record(driver, call, "k", nullptr);
  ASSERT_FALSE(recorded.ok());
  EXPECT_THAT(recorded.status().message(), HasSubstr("cuFuncGetParamInfo"));

  call.cooperative = true;
  recorded = CudaRecordedLaunch::Record(driver, call, "k", &TwoParams);
  ASSERT_FALSE(recorded.ok());
  EXPECT_THAT(recorded.status().message(), HasSubstr("cooperative"));

  call.cooperative = false;
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  call.attributes = &attribute;
  call.attribute_count = 1;
  recorded = CudaRecordedLaunch::Record(driver, call, "k", &TwoParams);
  ASSERT_FALSE(recorded.ok());
  EXPECT_THAT(recorded.status().message(), HasSubstr("names an event"));

  attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attribute.value.cooperative = 1;
  recorded = CudaRecordedLaunch::Record(driver, call, "k", &TwoParams);
  ASSERT_FALSE(recorded.ok());
  EXPECT_THAT(recorded.status().message(), HasSubstr("cooperative"));
}

TEST(LaunchCallOfTest, KernelExCarriesItsAttributes) {
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  CUlaunchConfig config{};
  config.gridDimX = 4;
  config.blockDimX = 128;
  config.sharedMemBytes = 256;
  config.attrs = &attribute;
  config.numAttrs = 1;
  cuLaunchKernelEx_params params{&config, reinterpret_cast<CUfunction>(0x1), nullptr, nullptr};
  std::optional<LaunchCall> call = LaunchCallOf(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, &params);
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->grid[0], 4u);
  EXPECT_EQ(call->block[0], 128u);
  EXPECT_EQ(call->shared_bytes, 256u);
  EXPECT_EQ(call->attribute_count, 1u);
  EXPECT_FALSE(LaunchCallOf(CUPTI_DRIVER_TRACE_CBID_cuMemcpy, &params).has_value());
}

CUpti_NvtxData Nvtx(const void* params, const void* returned = nullptr) {
  return CUpti_NvtxData{"nvtx", params, returned};
}

TEST(NvtxDelimiterTest, PushedRangeOfTheNameBeginsAndItsPopEnds) {
  NvtxDelimiter delimiter;
  delimiter.Configure("step");
  nvtxRangePushA_params outer{"step"};
  nvtxRangePushA_params inner{"forward"};
  nvtxRangePop_params pop{};
  using Action = NvtxDelimiter::Action;
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePushA, Nvtx(&outer)), Action::kBegin);
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePushA, Nvtx(&inner)), Action::kNone);
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePop, Nvtx(&pop)), Action::kNone);  // "forward" ends
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePop, Nvtx(&pop)), Action::kEnd);   // "step" ends
  // Another name, or NVTX delimiting nothing.
  nvtxRangePushA_params other{"stepper"};
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePushA, Nvtx(&other)), Action::kNone);
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePop, Nvtx(&pop)), Action::kNone);
  delimiter.Configure("");
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangePushA, Nvtx(&outer)), Action::kNone);
}

TEST(NvtxDelimiterTest, StartedRangeEndsByIdOnAnyThread) {
  NvtxDelimiter delimiter;
  delimiter.Configure("step");
  nvtxEventAttributes_t attributes{};
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = "step";
  nvtxRangeStartEx_params start{&attributes};
  nvtxRangeId_t id = 42;
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangeStartEx, Nvtx(&start, &id)),
            NvtxDelimiter::Action::kBegin);
  nvtxRangeEnd_params other_end{7};
  EXPECT_EQ(delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangeEnd, Nvtx(&other_end)), NvtxDelimiter::Action::kNone);
  nvtxRangeEnd_params end{42};
  NvtxDelimiter::Action ended = NvtxDelimiter::Action::kNone;
  std::thread([&] { ended = delimiter.OnNvtx(CUPTI_CBID_NVTX_nvtxRangeEnd, Nvtx(&end)); }).join();
  EXPECT_EQ(ended, NvtxDelimiter::Action::kEnd);
}

// W6: the kernel records of re-issued launches name the application launch and pass. A re-issue
// inside an application call's callback gives all its launches that call's correlation id: the
// CUPTI stream tells them apart, in issue order per stream, whatever order the streams' records
// interleave in.
TEST(RangePassTagsTest, RecordsOfOneCallAreToldApartByStreamInIssueOrder) {
  RangePassTags tags;
  tags.Tag(7, 1, {101, 2});  // stream 1: launches 101, 103
  tags.Tag(7, 2, {102, 2});  // stream 2: launch 102
  tags.Tag(7, 1, {103, 2});
  tags.Tag(8, 1, {101, 3});  // the next pass, under another call
  auto kernel = [](std::uint64_t correlation, std::uint32_t stream, std::int64_t start, std::int64_t end) {
    trace::DeviceTask task;
    task.correlation_id = correlation;
    task.stream = stream;
    task.start_ns = start;
    task.end_ns = end;
    return trace::Record(task);
  };
  trace::DeviceTask memset;
  memset.kind = trace::TaskKind::kMemset;
  memset.correlation_id = 7;
  memset.stream = 1;
  std::vector<trace::Record> records = {kernel(7, 2, 0, 20), trace::Record(memset), kernel(7, 1, 0, 10),
                                        kernel(9, 1, 0, 1), kernel(7, 1, 30, 60)};
  std::vector<trace::ReplayRangeTask> taken = tags.Take(records);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].correlation_id, 102u);
  EXPECT_EQ(taken[0].duration_ns, 20u);
  EXPECT_EQ(taken[1].correlation_id, 101u);
  EXPECT_EQ(taken[1].pass, 2);
  EXPECT_EQ(taken[1].duration_ns, 10u);
  EXPECT_EQ(taken[2].correlation_id, 103u);
  EXPECT_EQ(taken[2].duration_ns, 30u);
  EXPECT_EQ(records.size(), 5u);  // the records stay for the internal-work filter
  EXPECT_EQ(tags.pending(), 1u);
  taken = tags.Take({kernel(8, 1, 5, 9)});
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].pass, 3);
  EXPECT_EQ(tags.pending(), 0u);
}

TEST(RangePassTagsTest, PendingNameIsTakenOnceOnTheThreadThatSetIt) {
  EXPECT_FALSE(RangePassTags::TakePending().has_value());
  RangePassTags::SetPending({42, 4});
  std::optional<RangePassLaunch> other;
  std::thread([&other] { other = RangePassTags::TakePending(); }).join();
  EXPECT_FALSE(other.has_value());
  std::optional<RangePassLaunch> mine = RangePassTags::TakePending();
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->application_correlation_id, 42u);
  EXPECT_EQ(mine->pass, 4);
  EXPECT_FALSE(RangePassTags::TakePending().has_value());
}

}  // namespace
}  // namespace gpuprof::cupti
