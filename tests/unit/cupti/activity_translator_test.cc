#include "cupti/activity_translator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "base/logging.h"
#include "unit/cupti/fake_cupti.h"

namespace gpuprof::cupti {
namespace {

using ::testing::ElementsAre;
using testing::MakeApi;
using testing::MakeExternalCorrelation;
using testing::MakeKernel;
using testing::MakeMarker;
using testing::MakeMemcpy;
using testing::MakeMemset;
using testing::Zeroed;

constexpr std::int64_t kOffset = 1'700'000'000'000'000'000;  // CUPTI ns -> epoch ns
const TimeConverter kTime = TimeConverter::WithOffset(kOffset);
constexpr std::uint32_t kPid = 4242;

const CUpti_Activity& AsActivity(const void* record) { return *static_cast<const CUpti_Activity*>(record); }

// ---- names ----------------------------------------------------------------------------------

TEST(DemangleKernelNameTest, DemanglesItaniumNames) {
  EXPECT_EQ(DemangleKernelName("_Z6vecAddPfS_S_i"), "vecAdd(float*, float*, float*, int)");
  EXPECT_EQ(DemangleKernelName("_Z15elementwise_addIfEvPT_PKS0_S3_i"),
            "void elementwise_add<float>(float*, float const*, float const*, int)");
}

TEST(DemangleKernelNameTest, KeepsUnmangledAndBrokenNames) {
  EXPECT_EQ(DemangleKernelName("vecAdd"), "vecAdd");  // extern "C" kernel
  EXPECT_EQ(DemangleKernelName("_Z!!not-a-name"), "_Z!!not-a-name");
  EXPECT_EQ(DemangleKernelName(""), "");
}

TEST(ShortKernelNameTest, StripsReturnTypeNamespacesTemplatesAndParameters) {
  EXPECT_EQ(ShortKernelName("vecAdd(float*, float*, float*, int)"), "vecAdd");
  EXPECT_EQ(ShortKernelName("void elementwise_add<float>(float*, float const*, float const*, int)"),
            "elementwise_add");
  EXPECT_EQ(ShortKernelName(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"),
            "vectorized_elementwise_kernel");
}

TEST(ShortKernelNameTest, HandlesLambdasAnonymousNamespacesAndPlainNames) {
  EXPECT_EQ(ShortKernelName(
                "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<"
                "at::native::(anonymous namespace)::foo(at::TensorIteratorBase&)::{lambda(float)#1}>("
                "at::TensorIteratorBase&, at::native::(anonymous namespace)::foo(at::TensorIteratorBase&)"
                "::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
                "at::native::gpu_kernel_impl<at::native::(anonymous namespace)::foo(at::TensorIteratorBase&)"
                "::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::(anonymous namespace)::foo("
                "at::TensorIteratorBase&)::{lambda(float)#1} const&)::{lambda(int)#1})"),
            "elementwise_kernel");
  EXPECT_EQ(ShortKernelName(
                "void (anonymous namespace)::softmax_warp_forward<float, float, float, 5, false>(float*, "
                "float const*, int, int, int)"),
            "softmax_warp_forward");
  EXPECT_EQ(ShortKernelName("vecAdd"), "vecAdd");
  EXPECT_EQ(ShortKernelName(""), "");
}

TEST(NormalizeApiNameTest, StripsTheRuntimeVersionSuffixOnly) {
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_RUNTIME, 211, "cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_RUNTIME, 214, "cudaLaunchKernel_ptsz_v7000"),
            "cudaLaunchKernel_ptsz");
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_RUNTIME, 1, "cudaStreamGetCaptureInfo_v2_v11030"),
            "cudaStreamGetCaptureInfo_v2");
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_RUNTIME, 1, "cudaGraphAddNode_v2"), "cudaGraphAddNode_v2");
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_DRIVER, 1, "cuMemAlloc_v2"), "cuMemAlloc_v2");
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_RUNTIME, 211, ""), "runtime cbid 211");
  EXPECT_EQ(NormalizeApiName(CUPTI_ACTIVITY_KIND_DRIVER, 307, ""), "driver cbid 307");
}

TEST(LaunchesDeviceWorkTest, LaunchCopyAndMemsetCallsLaunchWork) {
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                 "cudaLaunchKernel"));
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                                 "cudaGraphLaunch"));
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                                 "cuLaunchKernelEx"));
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                                 "cudaMemcpyAsync"));
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                                 "cudaMemsetAsync"));
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                                 "cuMemcpyHtoDAsync_v2"));
  EXPECT_TRUE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
                                 "cuMemsetD32_v2"));
}

TEST(LaunchesDeviceWorkTest, OtherCallsDoNot) {
  EXPECT_FALSE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                  "cudaMalloc"));
  EXPECT_FALSE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                                  "cudaStreamSynchronize"));
  EXPECT_FALSE(
      LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, "cuMemAlloc_v2"));
  EXPECT_FALSE(LaunchesDeviceWork(CUPTI_ACTIVITY_KIND_RUNTIME,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000, "cudaLaunchHostFunc"));
}

// ---- memcpy kinds -----------------------------------------------------------------------------

TEST(MemcpyOperationIdTest, MapsCopyKindsToTheDbEnum) {
  const auto op = [](CUpti_ActivityMemcpyKind kind) {
    return MemcpyOperationId(static_cast<std::uint8_t>(kind), 0, 0);
  };
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), 1u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), 2u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), 3u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH), 0u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), 3u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA), 1u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH), 2u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA), 3u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD), 3u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA), 3u);
  EXPECT_EQ(op(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN), 65535u);
}

TEST(MemcpyOperationIdTest, UnknownKindOnManagedMemoryIsManaged) {
  EXPECT_EQ(MemcpyOperationId(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED,
                              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE),
            4u);
  EXPECT_EQ(MemcpyOperationId(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED,
                              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE),
            1u);  // a known direction wins
}

// ---- per-kind translation ---------------------------------------------------------------------

TEST(TranslateKernelTest, FillsEveryFieldWithEpochTimes) {
  auto k = MakeKernel(/*correlation=*/77, /*start=*/1000, /*end=*/1500, "_Z6vecAddPfS_S_i");
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 13;
  k.gridX = 128;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 4;
  const trace::DeviceTask task = TranslateKernel(k, kTime, kPid);
  EXPECT_EQ(task.kind, trace::TaskKind::kKernel);
  EXPECT_EQ(task.start_ns, kOffset + 1000);
  EXPECT_EQ(task.end_ns, kOffset + 1500);
  EXPECT_EQ(task.device, 1);
  EXPECT_EQ(task.context, 3u);
  EXPECT_EQ(task.stream, 13u);
  EXPECT_EQ(task.correlation_id, 77u);
  EXPECT_EQ(task.pid, kPid);
  EXPECT_EQ(task.name, "vecAdd(float*, float*, float*, int)");
  EXPECT_EQ(task.short_name, "vecAdd");
  EXPECT_THAT(task.grid, ElementsAre(128u, 2u, 1u));
  EXPECT_THAT(task.block, ElementsAre(256u, 1u, 4u));
}

TEST(TranslateKernelTest, NullNameLeavesNamesEmpty) {
  const trace::DeviceTask task = TranslateKernel(MakeKernel(1, 10, 20, nullptr), kTime, kPid);
  EXPECT_EQ(task.name, "");
  EXPECT_EQ(task.short_name, "");
}

TEST(TranslateMemcpyTest, CarriesBytesDirectionAndIds) {
  const trace::DeviceTask task =
      TranslateMemcpy(MakeMemcpy(9, 100, 250, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 4096), kTime, kPid);
  EXPECT_EQ(task.kind, trace::TaskKind::kMemcpy);
  EXPECT_EQ(task.start_ns, kOffset + 100);
  EXPECT_EQ(task.end_ns, kOffset + 250);
  EXPECT_EQ(task.bytes, 4096u);
  EXPECT_EQ(task.memcpy_operation, kMemcpyDeviceToHost);
  EXPECT_EQ(task.correlation_id, 9u);
  EXPECT_EQ(task.stream, 7u);
  EXPECT_EQ(task.context, 1u);
}

TEST(TranslateMemcpyTest, KeepsTheMemoryKindOfEachSide) {
  auto record = MakeMemcpy(9, 100, 250, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096);
  record.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  record.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  const trace::DeviceTask task = TranslateMemcpy(record, kTime, kPid);
  EXPECT_EQ(task.src_memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(task.dst_memory_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
}

TEST(TranslatePeerMemcpyTest, IsADeviceToDeviceCopy) {
  auto copy = Zeroed<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  copy.bytes = 1 << 20;
  copy.start = 5;
  copy.end = 9;
  copy.deviceId = 1;
  copy.correlationId = 31;
  const trace::DeviceTask task = TranslatePeerMemcpy(copy, kTime, kPid);
  EXPECT_EQ(task.kind, trace::TaskKind::kMemcpy);
  EXPECT_EQ(task.memcpy_operation, kMemcpyDeviceToDevice);
  EXPECT_EQ(task.bytes, 1u << 20);
  EXPECT_EQ(task.device, 1);
  EXPECT_EQ(task.correlation_id, 31u);
}

TEST(TranslateMemsetTest, CarriesBytes) {
  const trace::DeviceTask task = TranslateMemset(MakeMemset(12, 40, 60, 512), kTime, kPid);
  EXPECT_EQ(task.kind, trace::TaskKind::kMemset);
  EXPECT_EQ(task.bytes, 512u);
  EXPECT_EQ(task.start_ns, kOffset + 40);
  EXPECT_EQ(task.correlation_id, 12u);
}

TEST(TranslateApiTest, CarriesThreadCorrelationAndLaunchFlag) {
  const auto api = MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 77,
                           900, 990, /*tid=*/321);
  const trace::ApiCall call = TranslateApi(api, "cudaLaunchKernel", kTime, kPid);
  EXPECT_EQ(call.name, "cudaLaunchKernel");
  EXPECT_EQ(call.start_ns, kOffset + 900);
  EXPECT_EQ(call.end_ns, kOffset + 990);
  EXPECT_EQ(call.pid, 4242u);
  EXPECT_EQ(call.tid, 321u);
  EXPECT_EQ(call.correlation_id, 77u);
  EXPECT_TRUE(call.launches_device_work);

  auto sync =
      MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 78, 1, 2, 1);
  sync.processId = 0;
  const trace::ApiCall sync_call = TranslateApi(sync, "cudaDeviceSynchronize", kTime, kPid);
  EXPECT_FALSE(sync_call.launches_device_work);
  EXPECT_EQ(sync_call.pid, kPid);  // no process id in the record: the run's
}

// ---- NVTX ---------------------------------------------------------------------------------------

TEST(MarkerPairerTest, PairsStartAndEndById) {
  MarkerPairer pairer;
  EXPECT_FALSE(
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 5, 100, 11, "forward", "Module"), kTime, kPid));
  EXPECT_EQ(pairer.open_ranges(), 1u);
  const auto mark =
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 5, 180, 12, nullptr, "Module"), kTime, kPid);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->type, trace::Mark::Type::kStartEnd);
  EXPECT_EQ(mark->start_ns, kOffset + 100);
  EXPECT_EQ(mark->end_ns, kOffset + 180);
  EXPECT_EQ(mark->message, "forward");
  EXPECT_EQ(mark->domain, "Module");
  EXPECT_EQ(mark->range_id, 5u);
  EXPECT_EQ(mark->tid, 11u);
  EXPECT_EQ(mark->end_tid, 12u);
  EXPECT_EQ(mark->pid, 4242u);
  EXPECT_FALSE(mark->device);  // host-only
  EXPECT_EQ(pairer.open_ranges(), 0u);
}

TEST(MarkerPairerTest, InterleavedRangesPairByIdNotByOrder) {
  MarkerPairer pairer;
  EXPECT_FALSE(
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 10, 1, "outer", nullptr), kTime, kPid));
  EXPECT_FALSE(
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 20, 2, "other", nullptr), kTime, kPid));
  const auto first =
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 30, 1, nullptr, nullptr), kTime, kPid);
  const auto second =
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 40, 2, nullptr, nullptr), kTime, kPid);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->message, "outer");
  EXPECT_EQ(first->end_ns - first->start_ns, 20);
  EXPECT_EQ(second->message, "other");
  EXPECT_EQ(second->domain, "default");
}

TEST(MarkerPairerTest, InstantaneousMarkerIsEmittedAtOnce) {
  MarkerPairer pairer;
  const auto mark = pairer.Add(
      MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 9, 77, 3, "checkpoint", nullptr), kTime, kPid);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->type, trace::Mark::Type::kMarkerEx);
  EXPECT_EQ(mark->start_ns, mark->end_ns);
  EXPECT_EQ(mark->message, "checkpoint");
  EXPECT_EQ(mark->domain, "default");
  EXPECT_EQ(pairer.open_ranges(), 0u);
}

TEST(MarkerPairerTest, EndWithoutStartIsCountedAndDropped) {
  MarkerPairer pairer;
  EXPECT_FALSE(
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 4, 10, 1, nullptr, nullptr), kTime, kPid));
  EXPECT_EQ(pairer.unmatched_ends(), 1u);
}

TEST(MarkerPairerTest, OpenRangesAreTakenInStartOrder) {
  MarkerPairer pairer;
  (void)pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 8, 300, 1, "late", nullptr), kTime, kPid);
  (void)pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 7, 100, 1, "early", nullptr), kTime, kPid);
  const std::vector<trace::Mark> open = pairer.TakeOpenRanges();
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0].message, "early");
  EXPECT_EQ(open[1].message, "late");
  EXPECT_EQ(pairer.open_ranges(), 0u);
}

TEST(MarkerPairerTest, SyncMarkersAreIgnored) {
  MarkerPairer pairer;
  EXPECT_FALSE(
      pairer.Add(MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_SYNC_ACQUIRE, 1, 5, 1, "lock", nullptr), kTime, kPid));
  EXPECT_EQ(pairer.open_ranges(), 0u);
  EXPECT_EQ(pairer.unmatched_ends(), 0u);
}

// ---- the stateful translator ------------------------------------------------------------------

class ActivityTranslatorTest : public ::testing::Test {
 protected:
  testing::FakeCuptiApi api_;
  ActivityTranslator translator_{&api_, kTime, kPid};
  std::vector<trace::Record> out_;
};

TEST_F(ActivityTranslatorTest, DispatchesEachKind) {
  api_.callback_names[{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}] =
      "cudaLaunchKernel_v7000";
  const auto api =
      MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 1, 2, 5);
  const auto kernel = MakeKernel(1, 3, 4, "_Z6vecAddPfS_S_i");
  const auto copy = MakeMemcpy(2, 5, 6, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 8);
  const auto set = MakeMemset(3, 7, 8, 16);
  const auto start = MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 9, 5, "r", nullptr);
  const auto end = MakeMarker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 10, 5, nullptr, nullptr);
  for (const void* record :
       {static_cast<const void*>(&api), static_cast<const void*>(&kernel), static_cast<const void*>(&copy),
        static_cast<const void*>(&set), static_cast<const void*>(&start), static_cast<const void*>(&end)}) {
    EXPECT_TRUE(translator_.Translate(AsActivity(record), out_));
  }
  ASSERT_EQ(out_.size(), 5u);  // the range start emits nothing until its end
  EXPECT_EQ(std::get<trace::ApiCall>(out_[0]).name, "cudaLaunchKernel");
  EXPECT_EQ(std::get<trace::DeviceTask>(out_[1]).kind, trace::TaskKind::kKernel);
  EXPECT_EQ(std::get<trace::DeviceTask>(out_[2]).kind, trace::TaskKind::kMemcpy);
  EXPECT_EQ(std::get<trace::DeviceTask>(out_[3]).kind, trace::TaskKind::kMemset);
  EXPECT_EQ(std::get<trace::Mark>(out_[4]).message, "r");
  const TranslatorStats& stats = translator_.stats();
  EXPECT_EQ(stats.api_calls, 1u);
  EXPECT_EQ(stats.kernels, 1u);
  EXPECT_EQ(stats.memcpys, 1u);
  EXPECT_EQ(stats.memsets, 1u);
  EXPECT_EQ(stats.marks, 1u);
}

TEST_F(ActivityTranslatorTest, LegacyKernelKindTranslatesLikeConcurrentKernel) {
  auto kernel = MakeKernel(1, 3, 4, "k");
  kernel.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  EXPECT_TRUE(translator_.Translate(AsActivity(&kernel), out_));
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(std::get<trace::DeviceTask>(out_[0]).name, "k");
}

TEST_F(ActivityTranslatorTest, ApiNamesComeFromCuptiOncePerCallbackId) {
  api_.callback_names[{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}] =
      "cuLaunchKernel";
  const auto call = MakeApi(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, 1, 2, 5);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(translator_.Translate(AsActivity(&call), out_));
  EXPECT_EQ(api_.callback_name_calls, 1);
  ASSERT_EQ(out_.size(), 3u);
  EXPECT_EQ(std::get<trace::ApiCall>(out_[2]).name, "cuLaunchKernel");
  EXPECT_TRUE(std::get<trace::ApiCall>(out_[2]).launches_device_work);
}

TEST_F(ActivityTranslatorTest, UnknownCallbackIdGetsANumberedName) {
  const auto call = MakeApi(CUPTI_ACTIVITY_KIND_RUNTIME, 99999, 1, 1, 2, 5);
  ASSERT_TRUE(translator_.Translate(AsActivity(&call), out_));
  EXPECT_EQ(std::get<trace::ApiCall>(out_[0]).name, "runtime cbid 99999");
}

TEST_F(ActivityTranslatorTest, KernelNamesAreDemangledOnceAndReused) {
  const auto a = MakeKernel(1, 1, 2, "_Z15elementwise_addIfEvPT_PKS0_S3_i");
  const auto b = MakeKernel(2, 3, 4, "_Z15elementwise_addIfEvPT_PKS0_S3_i");
  ASSERT_TRUE(translator_.Translate(AsActivity(&a), out_));
  ASSERT_TRUE(translator_.Translate(AsActivity(&b), out_));
  for (const trace::Record& record : out_) {
    EXPECT_EQ(std::get<trace::DeviceTask>(record).name,
              "void elementwise_add<float>(float*, float const*, float const*, int)");
    EXPECT_EQ(std::get<trace::DeviceTask>(record).short_name, "elementwise_add");
  }
}

TEST_F(ActivityTranslatorTest, GpuprofsExternalCorrelationsBecomeRecordsOtherToolsAreSkipped) {
  const auto e1 = MakeExternalCorrelation(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1001, 41);
  const auto e2 = MakeExternalCorrelation(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1001, 42);
  const auto other = MakeExternalCorrelation(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 7, 43);
  ASSERT_TRUE(translator_.Translate(AsActivity(&e1), out_));
  ASSERT_TRUE(translator_.Translate(AsActivity(&e2), out_));
  ASSERT_TRUE(translator_.Translate(AsActivity(&other), out_));
  ASSERT_EQ(out_.size(), 2u);
  const auto& first = std::get<trace::ExternalCorrelation>(out_[0]);
  const auto& second = std::get<trace::ExternalCorrelation>(out_[1]);
  EXPECT_EQ(first.external_id, 1001u);
  EXPECT_EQ(first.correlation_id, 41u);
  EXPECT_EQ(second.correlation_id, 42u);
  EXPECT_EQ(translator_.stats().external_correlations, 2u);
}

TEST_F(ActivityTranslatorTest, UnsupportedKindIsSkippedAndCounted) {
  const auto context = Zeroed<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
  EXPECT_FALSE(translator_.Translate(AsActivity(&context), out_));
  EXPECT_TRUE(out_.empty());
  EXPECT_EQ(translator_.stats().unsupported, 1u);
}

TEST_F(ActivityTranslatorTest, CorrelationIdAtTheConnectionIdSpaceWarnsOnce) {
  base::ScopedLogCapture capture;
  const auto kernel = MakeKernel(static_cast<std::uint32_t>(kCorrelationIdLimit), 1, 2, "k");
  ASSERT_TRUE(translator_.Translate(AsActivity(&kernel), out_));
  ASSERT_TRUE(translator_.Translate(AsActivity(&kernel), out_));
  EXPECT_EQ(translator_.stats().correlation_ids_over_limit, 2u);
  EXPECT_EQ(capture.Count("5<<28"), 1);
}

TEST_F(ActivityTranslatorTest, UnknownTimestampsStayZero) {
  const auto kernel = MakeKernel(1, 0, 0, "k");
  ASSERT_TRUE(translator_.Translate(AsActivity(&kernel), out_));
  EXPECT_EQ(std::get<trace::DeviceTask>(out_[0]).start_ns, 0);
  EXPECT_EQ(std::get<trace::DeviceTask>(out_[0]).end_ns, 0);
}

}  // namespace
}  // namespace gpuprof::cupti
