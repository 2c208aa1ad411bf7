#include "device/host/host_platform.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/hash.h"

namespace gpuprof::device::host {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

::testing::AssertionResult IsOk(const Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.ToString();
}
template <typename T>
::testing::AssertionResult IsOk(const StatusOr<T>& status_or) {
  return IsOk(status_or.status());
}

template <typename T>
T* HostPtr(DevicePtr ptr) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr));  // NOLINT(performance-no-int-to-ptr)
}
DevicePtr DevPtr(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr); }

std::string Hex(DevicePtr ptr) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(ptr));
  return buffer;
}

std::uint64_t ResidentBytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return 0;
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int read = std::fscanf(file, "%llu %llu", &size, &resident);
  std::fclose(file);
  if (read != 2) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

Kernel MakeKernel(std::string name, std::function<void(const KernelContext&)> body, ModuleId module = 0) {
  Kernel kernel;
  kernel.name = std::move(name);
  kernel.body = std::move(body);
  kernel.module = module;
  return kernel;
}

// Installs wrappers in a platform's api table that record every call and chain to the
// originals, the way replay::Interceptor patches it. Must outlive the platform (its destructor
// frees the stream pools through the table).
class TableSpy {
 public:
  void Install(RuntimeApiTable& table) {
    original_ = table;
    table.hook_context = this;
    table.allocate = &Allocate;
    table.free = &Free;
    table.transfer = &Transfer;
    table.launch = &Launch;
  }

  // Replaces the default launch behaviour (chain to the original) for the tests that drive an
  // executor like the replay controller does.
  void SetLaunchHandler(std::function<Status(const LaunchRequest&, LaunchExecutor&)> handler) {
    std::lock_guard<std::mutex> lock(mu_);
    launch_handler_ = std::move(handler);
  }

  std::vector<AllocateArgs> allocations() const { return Copy(allocations_); }
  std::vector<FreeArgs> frees() const { return Copy(frees_); }
  std::vector<TransferArgs> transfers() const { return Copy(transfers_); }
  std::vector<LaunchRequest> launches() const { return Copy(launches_); }

  int CountAllocations(MemoryKind kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    int count = 0;
    for (const AllocateArgs& args : allocations_) count += args.kind == kind ? 1 : 0;
    return count;
  }

 private:
  template <typename T>
  std::vector<T> Copy(const std::vector<T>& values) const {
    std::lock_guard<std::mutex> lock(mu_);
    return values;
  }
  static TableSpy& Of(RuntimeApiTable& table) { return *static_cast<TableSpy*>(table.hook_context); }

  static Status Allocate(RuntimeApiTable& table, const AllocateArgs& args, DevicePtr* out) {
    TableSpy& spy = Of(table);
    {
      std::lock_guard<std::mutex> lock(spy.mu_);
      spy.allocations_.push_back(args);
    }
    return spy.original_.allocate(table, args, out);
  }
  static Status Free(RuntimeApiTable& table, const FreeArgs& args) {
    TableSpy& spy = Of(table);
    {
      std::lock_guard<std::mutex> lock(spy.mu_);
      spy.frees_.push_back(args);
    }
    return spy.original_.free(table, args);
  }
  static Status Transfer(RuntimeApiTable& table, const TransferArgs& args) {
    TableSpy& spy = Of(table);
    {
      std::lock_guard<std::mutex> lock(spy.mu_);
      spy.transfers_.push_back(args);
    }
    return spy.original_.transfer(table, args);
  }
  static Status Launch(RuntimeApiTable& table, const LaunchRequest& request, LaunchExecutor& executor) {
    TableSpy& spy = Of(table);
    std::function<Status(const LaunchRequest&, LaunchExecutor&)> handler;
    {
      std::lock_guard<std::mutex> lock(spy.mu_);
      spy.launches_.push_back(request);
      handler = spy.launch_handler_;
    }
    if (handler) return handler(request, executor);
    return spy.original_.launch(table, request, executor);
  }

  RuntimeApiTable original_{};
  mutable std::mutex mu_;
  std::vector<AllocateArgs> allocations_;
  std::vector<FreeArgs> frees_;
  std::vector<TransferArgs> transfers_;
  std::vector<LaunchRequest> launches_;
  std::function<Status(const LaunchRequest&, LaunchExecutor&)> launch_handler_;
};

// ---- memory -------------------------------------------------------------------------------------

TEST(HostPlatformTest, QueryPointerClassifiesEveryMemoryKindIncludingInteriorPointers) {
  HostPlatform platform;
  const MemoryKind kinds[] = {MemoryKind::kDeviceLocal,     MemoryKind::kHost,
                              MemoryKind::kHostMapped,      MemoryKind::kFineGrained,
                              MemoryKind::kManaged,         MemoryKind::kKernelArgument,
                              MemoryKind::kRuntimeInternal, MemoryKind::kIpcImported};
  for (MemoryKind kind : kinds) {
    SCOPED_TRACE(std::string(MemoryKindName(kind)));
    StatusOr<DevicePtr> ptr = platform.Malloc(1, 4096, kind);
    ASSERT_TRUE(IsOk(ptr));
    EXPECT_EQ(*ptr % 256, 0u);
    EXPECT_EQ(HostPtr<std::uint8_t>(*ptr)[4095], 0u);  // zero-filled
    for (DevicePtr probe : {*ptr, *ptr + 100, *ptr + 4095}) {
      StatusOr<PointerInfo> info = platform.device(0).QueryPointer(probe);
      ASSERT_TRUE(IsOk(info));
      EXPECT_EQ(info->base, *ptr);
      EXPECT_EQ(info->size, 4096u);
      EXPECT_EQ(info->kind, kind);
      EXPECT_EQ(info->owner_device, kind == MemoryKind::kHost ? -1 : 1);
    }
    EXPECT_EQ(platform.device(1).QueryPointer(*ptr + 4096).status().code(), StatusCode::kNotFound);
    ASSERT_TRUE(IsOk(platform.Free(*ptr)));
    EXPECT_EQ(platform.device(1).QueryPointer(*ptr).status().code(), StatusCode::kNotFound);
  }
}

TEST(HostPlatformTest, MistakenAllocationsAndFreesReturnErrorsInsteadOfAborting) {
  HostPlatform platform;
  EXPECT_EQ(platform.Malloc(7, 64).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(platform.Malloc(0, 64, MemoryKind::kUnknown).status().code(), StatusCode::kInvalidArgument);
  StatusOr<DevicePtr> empty = platform.Malloc(0, 0);
  ASSERT_TRUE(IsOk(empty));
  EXPECT_EQ(*empty, 0u);
  EXPECT_TRUE(IsOk(platform.Free(0)));

  StatusOr<DevicePtr> ptr = platform.Malloc(0, 1024);
  ASSERT_TRUE(IsOk(ptr));
  Status interior = platform.Free(*ptr + 8);
  EXPECT_EQ(interior.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(interior.message(), HasSubstr("free its base"));
  ASSERT_TRUE(IsOk(platform.Free(*ptr)));
  Status twice = platform.Free(*ptr);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.message(), HasSubstr(Hex(*ptr)));
  EXPECT_EQ(platform.Malloc(0, std::uint64_t{1} << 62).status().code(), StatusCode::kResourceExhausted);
}

TEST(HostPlatformTest, MemcpyAndMemsetMoveBytesBetweenDevicesAndHostMemory) {
  HostPlatform platform;
  StatusOr<DevicePtr> a = platform.Malloc(0, 4096);
  StatusOr<DevicePtr> b = platform.Malloc(1, 4096);
  ASSERT_TRUE(IsOk(a));
  ASSERT_TRUE(IsOk(b));
  ASSERT_TRUE(IsOk(platform.Memset(*a, 0x5A, 4096)));
  ASSERT_TRUE(IsOk(platform.Memcpy(*b, *a, 4096)));
  std::vector<std::uint8_t> host(4096, 0);
  ASSERT_TRUE(IsOk(platform.Memcpy(DevPtr(host.data()), *b, 4096)));
  EXPECT_EQ(host, std::vector<std::uint8_t>(4096, 0x5A));

  std::vector<std::uint8_t> pattern(4096, 7);
  ASSERT_TRUE(IsOk(platform.device(1).CopyHostToDevice(*b, pattern.data(), 4096)));
  ASSERT_TRUE(IsOk(platform.device(0).CopyDeviceToDevice(*a, *b, 4096)));
  ASSERT_TRUE(IsOk(platform.device(0).CopyDeviceToHost(host.data(), *a, 4096)));
  EXPECT_EQ(host, pattern);
}

TEST(HostPlatformTest, CopiesOutsideAnAllocationNameTheCallAddressSizeAndDevice) {
  HostPlatform platform;
  StatusOr<DevicePtr> ptr = platform.Malloc(1, 4096);
  ASSERT_TRUE(IsOk(ptr));
  std::vector<std::uint8_t> host(4096, 1);

  Status overrun = platform.Memcpy(*ptr + 1, DevPtr(host.data()), 4096);
  EXPECT_EQ(overrun.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(overrun.message(), HasSubstr("Memcpy: destination " + Hex(*ptr + 1) +
                                           " (+4096 bytes) is not inside any allocation of device 1"));

  Status outside = platform.device(1).CopyDeviceToHost(host.data(), DevPtr(host.data()), 16);
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(outside.message(),
              HasSubstr("CopyDeviceToHost: source " + Hex(DevPtr(host.data())) + " (+16 bytes)"));
  EXPECT_THAT(outside.message(), HasSubstr("device 1"));

  Status past_end = platform.device(1).CopyHostToDevice(*ptr + 4000, host.data(), 200);
  EXPECT_EQ(past_end.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(past_end.message(), HasSubstr(Hex(*ptr + 4000)));
  EXPECT_EQ(HostPtr<std::uint8_t>(*ptr)[4000], 0u);  // nothing written
  EXPECT_EQ(platform.MemsetAsync(platform.DefaultStream(0), 0, 1, 8).code(), StatusCode::kInvalidArgument);
}

// ---- streams ------------------------------------------------------------------------------------

TEST(HostPlatformTest, AsyncCopyQueuedAfterAKernelSeesTheKernelsWrite) {
  HostPlatform platform;
  const StreamId stream = platform.DefaultStream(0);
  StatusOr<DevicePtr> src = platform.Malloc(0, sizeof(int));
  ASSERT_TRUE(IsOk(src));
  int result = 0;
  const DevicePtr p = *src;
  ASSERT_TRUE(IsOk(platform.Launch(stream, MakeKernel("slow_write", [p](const KernelContext&) {
                                     std::this_thread::sleep_for(30ms);
                                     *HostPtr<int>(p) = 42;
                                   }))));
  ASSERT_TRUE(IsOk(platform.MemcpyAsync(stream, DevPtr(&result), p, sizeof(int))));
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(stream)));
  EXPECT_EQ(result, 42);
}

TEST(HostPlatformTest, SynchronousMemcpyWaitsForTheDestinationDevicesDefaultStream) {
  HostPlatform platform;
  StatusOr<DevicePtr> dst = platform.Malloc(1, sizeof(int));
  ASSERT_TRUE(IsOk(dst));
  const DevicePtr p = *dst;
  ASSERT_TRUE(
      IsOk(platform.Launch(platform.DefaultStream(1), MakeKernel("slow_write", [p](const KernelContext&) {
                             std::this_thread::sleep_for(20ms);
                             *HostPtr<int>(p) = 1;
                           }))));
  const int value = 2;
  ASSERT_TRUE(IsOk(platform.Memcpy(p, DevPtr(&value), sizeof(int))));
  EXPECT_EQ(*HostPtr<int>(p), 2);  // the copy landed after the kernel's write
}

TEST(HostPlatformTest, StreamsRunConcurrentlyWhileOneIsStalled) {
  HostPlatform platform;
  StatusOr<StreamId> stalled = platform.CreateStream(0);
  StatusOr<StreamId> running = platform.CreateStream(0);
  ASSERT_TRUE(IsOk(stalled));
  ASSERT_TRUE(IsOk(running));
  std::atomic<bool> stalled_ran{false};
  std::atomic<bool> running_ran{false};
  platform.StallStream(*stalled);
  ASSERT_TRUE(
      IsOk(platform.Launch(*stalled, MakeKernel("a", [&](const KernelContext&) { stalled_ran = true; }))));
  ASSERT_TRUE(
      IsOk(platform.Launch(*running, MakeKernel("b", [&](const KernelContext&) { running_ran = true; }))));
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(*running)));
  EXPECT_TRUE(running_ran);
  EXPECT_FALSE(stalled_ran);
  platform.ReleaseStream(*stalled);
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(*stalled)));
  EXPECT_TRUE(stalled_ran);
}

TEST(HostPlatformTest, FreeAsyncReleasesOnlyWhenTheStreamReachesIt) {
  HostPlatform platform;
  StatusOr<StreamId> stream = platform.CreateStream(1);
  ASSERT_TRUE(IsOk(stream));
  StatusOr<DevicePtr> ptr = platform.MallocAsync(*stream, 512);
  ASSERT_TRUE(IsOk(ptr));
  platform.StallStream(*stream);
  ASSERT_TRUE(IsOk(platform.FreeAsync(*stream, *ptr)));
  StatusOr<PointerInfo> still = platform.device(1).QueryPointer(*ptr);
  ASSERT_TRUE(IsOk(still));
  EXPECT_EQ(still->owner_device, 1);
  EXPECT_EQ(platform.FreeAsync(*stream, *ptr).code(), StatusCode::kInvalidArgument);  // pending
  platform.ReleaseStream(*stream);
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(*stream)));
  EXPECT_EQ(platform.device(1).QueryPointer(*ptr).status().code(), StatusCode::kNotFound);
}

TEST(HostPlatformTest, FreeWaitsForWorkQueuedOnTheOwningDevice) {
  HostPlatform platform;
  StatusOr<DevicePtr> ptr = platform.Malloc(0, sizeof(int));
  ASSERT_TRUE(IsOk(ptr));
  std::atomic<bool> wrote{false};
  const DevicePtr p = *ptr;
  ASSERT_TRUE(
      IsOk(platform.Launch(platform.DefaultStream(0), MakeKernel("late_write", [&, p](const KernelContext&) {
                             std::this_thread::sleep_for(20ms);
                             *HostPtr<int>(p) = 3;  // a use-after-free (ASan) if Free did not wait
                             wrote = true;
                           }))));
  ASSERT_TRUE(IsOk(platform.Free(p)));
  EXPECT_TRUE(wrote);
}

TEST(HostPlatformTest, SynchronizeTimesOutOnAStalledStreamAndSucceedsAfterRelease) {
  HostPlatform platform;
  StatusOr<StreamId> stream = platform.CreateStream(1);
  ASSERT_TRUE(IsOk(stream));
  platform.StallStream(*stream);
  ASSERT_TRUE(IsOk(platform.Launch(*stream, MakeKernel("k", [](const KernelContext&) {}))));
  Status timeout = platform.device(1).Synchronize(20ms);
  EXPECT_EQ(timeout.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(timeout.message(), HasSubstr("device 1"));
  EXPECT_THAT(timeout.message(), HasSubstr("20 ms"));
  EXPECT_TRUE(IsOk(platform.device(0).Synchronize(20ms)));  // other devices are unaffected
  platform.ReleaseStream(*stream);
  EXPECT_TRUE(IsOk(platform.device(1).Synchronize(10s)));
}

TEST(HostPlatformTest, StreamIdsAreUniqueAcrossDevicesAndMapBackToTheirDevice) {
  HostPlatform platform(HostPlatformOptions{3, 4096});
  std::vector<StreamId> ids;
  for (int d = 0; d < 3; ++d) {
    ids.push_back(platform.DefaultStream(d));
    EXPECT_EQ(platform.StreamDevice(platform.DefaultStream(d)), d);
    StatusOr<StreamId> created = platform.CreateStream(d);
    ASSERT_TRUE(IsOk(created));
    EXPECT_EQ(platform.StreamDevice(*created), d);
    ids.push_back(*created);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
  EXPECT_EQ(platform.StreamDevice(999), -1);
  EXPECT_EQ(platform.CreateStream(3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(platform.Launch(999, MakeKernel("k", [](const KernelContext&) {})).code(),
            StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, DestructionRunsQueuedWorkOfStalledStreams) {
  std::atomic<bool> ran{false};
  {
    HostPlatform platform;
    platform.StallStream(platform.DefaultStream(0));
    ASSERT_TRUE(IsOk(platform.Launch(platform.DefaultStream(0),
                                     MakeKernel("k", [&](const KernelContext&) { ran = true; }))));
    StatusOr<DevicePtr> leaked = platform.Malloc(0, 128);  // released by the destructor
    ASSERT_TRUE(IsOk(leaked));
  }
  EXPECT_TRUE(ran);
}

// ---- launches -----------------------------------------------------------------------------------

TEST(HostPlatformTest, LaunchRequestsCarryKindDispatchCountAndFlags) {
  TableSpy spy;
  HostPlatform platform;
  spy.Install(platform.api_table());
  StatusOr<StreamId> stream = platform.CreateStream(1);
  ASSERT_TRUE(IsOk(stream));
  auto noop = [](const KernelContext&) {};
  Kernel printing = MakeKernel("printing", noop);
  printing.uses_device_printf = true;
  Kernel allocating = MakeKernel("allocating", noop);
  allocating.uses_device_malloc = true;

  ASSERT_TRUE(IsOk(platform.Launch(*stream, printing)));
  ASSERT_TRUE(IsOk(
      platform.LaunchBatch(*stream, {MakeKernel("first", noop), allocating, MakeKernel("third", noop)})));
  platform.SetStreamCapturing(*stream, true);
  ASSERT_TRUE(
      IsOk(platform.LaunchGraph(*stream, {MakeKernel("graph_head", noop), MakeKernel("tail", noop)})));
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(*stream)));

  std::vector<LaunchRequest> launches = spy.launches();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].kind, LaunchKind::kKernel);
  EXPECT_EQ(launches[0].dispatch_count, 1u);
  EXPECT_EQ(launches[0].kernel_name, "printing");
  EXPECT_TRUE(launches[0].uses_device_printf);
  EXPECT_FALSE(launches[0].uses_device_malloc);
  EXPECT_EQ(launches[0].device, 1);
  EXPECT_EQ(launches[0].stream, *stream);
  EXPECT_FALSE(launches[0].stream_capturing);
  EXPECT_EQ(launches[1].kind, LaunchKind::kBatch);
  EXPECT_EQ(launches[1].dispatch_count, 3u);
  EXPECT_EQ(launches[1].kernel_name, "first");
  EXPECT_TRUE(launches[1].uses_device_malloc);
  EXPECT_EQ(launches[2].kind, LaunchKind::kGraph);
  EXPECT_EQ(launches[2].dispatch_count, 2u);
  EXPECT_EQ(launches[2].kernel_name, "graph_head");
  EXPECT_TRUE(launches[2].stream_capturing);
}

TEST(HostPlatformTest, RunOriginalQueuesKernelsThenSignalAndReturnsWithoutWaiting) {
  HostPlatform platform;
  const StreamId stream = platform.DefaultStream(0);
  CompletionSignal signal;
  std::vector<int> order;  // written only by the stream's worker
  platform.StallStream(stream);
  ASSERT_TRUE(IsOk(
      platform.LaunchBatch(stream,
                           {MakeKernel("one", [&](const KernelContext& c) { order.push_back(1 + c.pass); }),
                            MakeKernel("two", [&](const KernelContext& c) { order.push_back(2 + c.pass); })},
                           &signal)));
  EXPECT_EQ(signal.count(), 0);  // the launch returned before anything ran
  platform.ReleaseStream(stream);
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(stream)));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(signal.count(), 1);
}

TEST(HostPlatformTest, RunPassWaitsForTheKernelReportsItsDurationAndSignalsOnlyWhenAsked) {
  TableSpy spy;
  HostPlatform platform;
  spy.Install(platform.api_table());
  std::mutex mu;
  std::vector<int> passes;
  std::vector<std::uint64_t> durations;
  std::vector<std::size_t> seen_after_pass;
  CompletionSignal signal;
  int signals_before_completion = -1;
  spy.SetLaunchHandler([&](const LaunchRequest&, LaunchExecutor& executor) -> Status {
    if (Status s = executor.PrepareForSnapshot(); !s.ok()) return s;
    for (int pass = 1; pass <= 3; ++pass) {
      StatusOr<PassTiming> timing = executor.RunPass(pass);
      if (!timing.ok()) return timing.status();
      durations.push_back(timing->duration_ns);
      std::lock_guard<std::mutex> lock(mu);
      seen_after_pass.push_back(passes.size());
    }
    signals_before_completion = signal.count();
    executor.SignalCompletion();
    return OkStatus();
  });
  ASSERT_TRUE(IsOk(platform.Launch(platform.DefaultStream(1),
                                   MakeKernel("timed",
                                              [&](const KernelContext& c) {
                                                std::this_thread::sleep_for(5ms);
                                                std::lock_guard<std::mutex> lock(mu);
                                                passes.push_back(c.pass);
                                              }),
                                   &signal)));
  ASSERT_TRUE(IsOk(platform.DeviceSynchronize(1)));
  EXPECT_EQ(passes, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(seen_after_pass, (std::vector<std::size_t>{1, 2, 3}));  // each pass done on return
  ASSERT_EQ(durations.size(), 3u);
  for (std::uint64_t ns : durations) EXPECT_GE(ns, 5'000'000u);  // sleep_for sleeps at least that
  EXPECT_EQ(signals_before_completion, 0);
  EXPECT_EQ(signal.count(), 1);
}

TEST(HostPlatformTest, RunPassReportsAKernelThatThrowsAsAnError) {
  TableSpy spy;
  HostPlatform platform;
  spy.Install(platform.api_table());
  Status pass_status;
  spy.SetLaunchHandler([&](const LaunchRequest&, LaunchExecutor& executor) -> Status {
    pass_status = executor.RunPass(1).status();
    return OkStatus();
  });
  ASSERT_TRUE(IsOk(platform.Launch(platform.DefaultStream(0), MakeKernel("thrower", [](const KernelContext&) {
                                     throw std::runtime_error("boom");
                                   }))));
  EXPECT_EQ(pass_status.code(), StatusCode::kInternal);
  EXPECT_THAT(pass_status.message(), HasSubstr("thrower"));
  EXPECT_THAT(pass_status.message(), HasSubstr("boom"));
}

// ---- api table ----------------------------------------------------------------------------------

TEST(HostPlatformTest, PatchedTableSeesEveryApplicationCall) {
  TableSpy spy;
  HostPlatform platform;
  spy.Install(platform.api_table());
  const StreamId stream = platform.DefaultStream(1);
  std::vector<std::uint8_t> host(256, 0);

  StatusOr<DevicePtr> a = platform.Malloc(1, 256);
  StatusOr<DevicePtr> b = platform.MallocAsync(stream, 256);
  ASSERT_TRUE(IsOk(a));
  ASSERT_TRUE(IsOk(b));
  ASSERT_TRUE(IsOk(platform.Memset(*a, 1, 256)));
  ASSERT_TRUE(IsOk(platform.MemsetAsync(stream, *b, 2, 256)));
  ASSERT_TRUE(IsOk(platform.Memcpy(DevPtr(host.data()), *a, 256)));
  ASSERT_TRUE(IsOk(platform.MemcpyAsync(stream, *a, *b, 256)));
  auto noop = [](const KernelContext&) {};
  ASSERT_TRUE(IsOk(platform.Launch(stream, MakeKernel("k", noop))));
  ASSERT_TRUE(IsOk(platform.LaunchBatch(stream, {MakeKernel("b1", noop), MakeKernel("b2", noop)})));
  ASSERT_TRUE(IsOk(platform.LaunchGraph(stream, {MakeKernel("g", noop)})));
  ASSERT_TRUE(IsOk(platform.FreeAsync(stream, *b)));
  ASSERT_TRUE(IsOk(platform.Free(*a)));
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(stream)));

  std::vector<AllocateArgs> allocations = spy.allocations();
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0].device, 1);
  EXPECT_FALSE(allocations[0].stream_ordered);
  EXPECT_TRUE(allocations[1].stream_ordered);
  EXPECT_EQ(allocations[1].stream, stream);
  EXPECT_EQ(allocations[1].kind, MemoryKind::kDeviceLocal);

  std::vector<TransferArgs> transfers = spy.transfers();
  ASSERT_EQ(transfers.size(), 4u);
  EXPECT_EQ(transfers[0].kind, TransferKind::kMemset);
  EXPECT_FALSE(transfers[0].asynchronous);
  EXPECT_EQ(transfers[0].device, 1);
  EXPECT_EQ(transfers[1].kind, TransferKind::kMemset);
  EXPECT_TRUE(transfers[1].asynchronous);
  EXPECT_EQ(transfers[2].kind, TransferKind::kCopy);
  EXPECT_EQ(transfers[2].device, 1);  // device-to-host: the device read
  EXPECT_EQ(transfers[3].dst, *a);
  EXPECT_EQ(transfers[3].src, *b);
  EXPECT_TRUE(transfers[3].asynchronous);

  EXPECT_EQ(spy.launches().size(), 3u);
  std::vector<FreeArgs> frees = spy.frees();
  ASSERT_EQ(frees.size(), 2u);
  EXPECT_EQ(frees[0].ptr, *b);
  EXPECT_TRUE(frees[0].stream_ordered);
  EXPECT_EQ(frees[1].ptr, *a);
  EXPECT_FALSE(frees[1].stream_ordered);
  EXPECT_EQ(host, std::vector<std::uint8_t>(256, 1));
}

TEST(HostPlatformTest, StreamPoolsAreAllocatedAndFreedThroughTheApiTable) {
  TableSpy spy;
  {
    HostPlatform platform(HostPlatformOptions{2, 8192});
    spy.Install(platform.api_table());
    StatusOr<StreamId> stream = platform.CreateStream(1);
    ASSERT_TRUE(IsOk(stream));
    std::vector<AllocateArgs> allocations = spy.allocations();
    ASSERT_EQ(allocations.size(), 2u);
    EXPECT_EQ(spy.CountAllocations(MemoryKind::kKernelArgument), 1);
    EXPECT_EQ(spy.CountAllocations(MemoryKind::kRuntimeInternal), 1);
    for (const AllocateArgs& args : allocations) {
      EXPECT_EQ(args.device, 1);
      EXPECT_EQ(args.size, 8192u);
      EXPECT_EQ(args.stream, *stream);
    }
    EXPECT_TRUE(spy.frees().empty());
  }
  // Two pools for each of the three streams (two default streams and the created one), freed
  // through the table by the destructor, including those allocated before the spy was installed.
  std::vector<FreeArgs> frees = spy.frees();
  EXPECT_EQ(frees.size(), 6u);
  for (const FreeArgs& args : frees) EXPECT_FALSE(args.stream_ordered);
}

// ---- HostDevice ---------------------------------------------------------------------------------

// A temporary directory for spill files, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/gpuprof_host_arena_XXXXXX";
    path_ = ::mkdtemp(name) != nullptr ? name : "";
  }
  ~TempDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  const std::string& path() const { return path_; }
  std::size_t Entries() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::string path_;
};

HostPlatformOptions WithSpillDirectory(const std::string& directory) {
  HostPlatformOptions options;
  options.arena.spill_directory = directory;
  return options;
}

TEST(HostPlatformTest, ChunkOpsCaptureRefreshAndRestoreInEveryTier) {
  TempDir spill;
  HostPlatform platform(WithSpillDirectory(spill.path()));
  HostDevice& device = platform.device(0);
  constexpr std::uint64_t kChunk = 32;
  std::vector<ArenaRegion> table;
  const StorageTier tiers[] = {StorageTier::kDevice, StorageTier::kPinnedHost, StorageTier::kPageableHost,
                               StorageTier::kFile};
  for (StorageTier tier : tiers) {
    StatusOr<DevicePtr> ptr = platform.Malloc(0, 100);  // 4 chunks, the last one short
    ASSERT_TRUE(IsOk(ptr));
    ASSERT_TRUE(IsOk(platform.Memset(*ptr, 0x11, 100)));
    table.push_back(ArenaRegion{*ptr, 100, tier, 128});  // at slot 4 of its tier
  }
  ASSERT_TRUE(IsOk(device.ReserveArena({256, 256, 256, 256}, kChunk)));
  EXPECT_FALSE(device.spill_file_path().empty());
  std::vector<std::uint64_t> captured(16);
  StatusOr<ChunkOpResult> capture = device.RunChunkOp(ChunkOp::kCapture, table, kChunk, captured);
  ASSERT_TRUE(IsOk(capture));
  EXPECT_EQ(capture->chunks, 16u);
  EXPECT_EQ(capture->copied_chunks, 16u);
  EXPECT_EQ(capture->copied_bytes, 400u);
  EXPECT_EQ(captured[0], base::HashBytes(HostPtr<std::uint8_t>(table[0].base), 32));
  EXPECT_EQ(captured[3], base::HashBytes(HostPtr<std::uint8_t>(table[0].base) + 96, 4));

  // The application changes chunk 1 of every region: only those are written back, in every tier.
  for (const ArenaRegion& region : table) HostPtr<std::uint8_t>(region.base)[40] = 0x99;
  std::vector<std::uint64_t> before(16);
  StatusOr<ChunkOpResult> restore = device.RunChunkOp(ChunkOp::kRestoreChanged, table, kChunk, before);
  ASSERT_TRUE(IsOk(restore));
  EXPECT_EQ(restore->copied_chunks, 4u);
  EXPECT_EQ(restore->copied_bytes, 128u);
  EXPECT_NE(before[1], captured[1]) << "the hashes are those of the bytes before the restore";
  for (const ArenaRegion& region : table) EXPECT_EQ(HostPtr<std::uint8_t>(region.base)[40], 0x11);

  // Refresh: the arena takes the application's change, so a later restore keeps it.
  for (const ArenaRegion& region : table) HostPtr<std::uint8_t>(region.base)[99] = 0x42;
  StatusOr<ChunkOpResult> refresh = device.RunChunkOp(ChunkOp::kRefreshChanged, table, kChunk, {});
  ASSERT_TRUE(IsOk(refresh));
  EXPECT_EQ(refresh->copied_chunks, 4u);
  EXPECT_EQ(refresh->copied_bytes, 16u);  // the short last chunks
  for (const ArenaRegion& region : table) ASSERT_TRUE(IsOk(platform.Memset(region.base, 0, 100)));
  StatusOr<ChunkOpResult> all = device.RunChunkOp(ChunkOp::kRestoreAll, table, kChunk, {});
  ASSERT_TRUE(IsOk(all));
  EXPECT_EQ(all->copied_chunks, 16u);
  for (const ArenaRegion& region : table) {
    EXPECT_EQ(HostPtr<std::uint8_t>(region.base)[0], 0x11);
    EXPECT_EQ(HostPtr<std::uint8_t>(region.base)[99], 0x42);
  }
  // Exact: a device-tier change is found by comparing bytes; nothing else differs.
  HostPtr<std::uint8_t>(table[0].base)[70] = 1;
  StatusOr<ChunkOpResult> exact = device.RunChunkOp(ChunkOp::kRestoreDiffering, table, kChunk, {});
  ASSERT_TRUE(IsOk(exact));
  EXPECT_EQ(exact->copied_chunks, 1u);
  EXPECT_EQ(HostPtr<std::uint8_t>(table[0].base)[70], 0x11);

  // A table that does not fit its arena, or a wrong chunk size or hash span, is refused.
  std::vector<ArenaRegion> too_far = {ArenaRegion{table[0].base, 100, StorageTier::kDevice, 224}};
  EXPECT_EQ(device.RunChunkOp(ChunkOp::kRestoreAll, too_far, kChunk, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(device.RunChunkOp(ChunkOp::kHash, table, 64, {}).status().code(), StatusCode::kInvalidArgument);
  std::vector<std::uint64_t> short_span(3);
  EXPECT_EQ(device.RunChunkOp(ChunkOp::kHash, table, kChunk, short_span).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, SpillFileIsPrivateAndGoneWhenReleased) {
  TempDir spill;
  {
    HostPlatform platform(WithSpillDirectory(spill.path()));
    HostDevice& device = platform.device(1);
    EXPECT_GT(device.ArenaLimit(StorageTier::kFile), 0u);
    ASSERT_TRUE(IsOk(device.ReserveArena({0, 0, 0, 4096}, 1024)));
    const std::string path = device.spill_file_path();
    ASSERT_FALSE(path.empty());
    EXPECT_EQ(path.rfind(spill.path() + "/", 0), 0u) << path;
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u) << "never readable by anyone else";
    device.ReleaseArena();
    EXPECT_EQ(spill.Entries(), 0u);
    ASSERT_TRUE(IsOk(device.ReserveArena({0, 0, 0, 4096}, 1024)));
    EXPECT_EQ(spill.Entries(), 1u);
  }
  EXPECT_EQ(spill.Entries(), 0u) << "the platform's end removes the spill file";
  HostPlatform without;
  EXPECT_EQ(without.device(0).ArenaLimit(StorageTier::kFile), 0u) << "no spill directory, no file tier";
}

TEST(HostPlatformTest, ArenaGrowsGeometricallyAndMakeRoomForReleasesTheDeviceTier) {
  HostPlatformOptions options;
  options.device_memory_bytes = 1 << 20;
  HostPlatform platform(options);
  HostDevice& device = platform.device(0);
  EXPECT_EQ(device.ArenaLimit(StorageTier::kDevice), 1u << 20);
  ASSERT_TRUE(IsOk(device.ReserveArena({100 * 1024, 0, 0, 0}, 4096)));
  const ArenaStats first = device.arena_stats();
  EXPECT_EQ(first.capacity[0], 102400u);
  ASSERT_TRUE(IsOk(device.ReserveArena({110 * 1024, 0, 0, 0}, 4096)));
  const ArenaStats grown = device.arena_stats();
  EXPECT_EQ(grown.capacity[0], 204800u) << "doubled, not grown by the shortfall";
  EXPECT_NE(grown.generation, first.generation) << "a regrown arena lost its contents";
  ASSERT_TRUE(IsOk(device.ReserveArena({150 * 1024, 0, 0, 0}, 4096)));
  EXPECT_EQ(device.arena_stats().generation, grown.generation) << "no reallocation while it fits";
  EXPECT_EQ(device.arena_stats().allocations, 2u);

  // The arena counts against the device's memory: an allocation that would not fit beside it
  // makes room; one that fits leaves it alone.
  EXPECT_FALSE(device.MakeRoomFor(4096));
  StatusOr<DevicePtr> blocked = platform.Malloc(0, 900 * 1024);
  EXPECT_EQ(blocked.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(device.MakeRoomFor(900 * 1024));
  EXPECT_EQ(device.arena_stats().capacity[0], 0u);
  EXPECT_EQ(device.arena_stats().releases, 1u);
  EXPECT_TRUE(IsOk(platform.Malloc(0, 900 * 1024)));
  EXPECT_EQ(device.ArenaLimit(StorageTier::kDevice), 1024u * 1024 - 900 * 1024);
  EXPECT_EQ(device.ReserveArena({200 * 1024, 0, 0, 0}, 4096).code(), StatusCode::kResourceExhausted);
}

TEST(HostPlatformTest, HashChunksMatchesTheBaseHashAndRejectsAMismatchedOutput) {
  HostPlatform platform;
  StatusOr<DevicePtr> ptr = platform.Malloc(1, 300);
  ASSERT_TRUE(IsOk(ptr));
  for (std::uint64_t i = 0; i < 300; ++i) HostPtr<std::uint8_t>(*ptr)[i] = static_cast<std::uint8_t>(i);
  std::vector<std::uint64_t> hashes(3);
  ASSERT_TRUE(IsOk(platform.device(1).HashChunks(*ptr, 300, 128, hashes)));
  std::vector<std::uint64_t> expected(3);
  base::HashChunks(HostPtr<std::uint8_t>(*ptr), 300, 128, expected);
  EXPECT_EQ(hashes, expected);
  std::vector<std::uint64_t> wrong(2);
  EXPECT_EQ(platform.device(1).HashChunks(*ptr, 300, 128, wrong).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(platform.device(1).HashChunks(*ptr, 300, 0, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(platform.device(1).HashChunks(*ptr + 1, 300, 128, hashes).code(), StatusCode::kInvalidArgument);
  platform.InjectFault(FaultPoint::kHashChunks);
  EXPECT_EQ(platform.device(1).HashChunks(*ptr, 300, 128, hashes).code(), StatusCode::kInternal);
  EXPECT_EQ(platform.FaultsFired(FaultPoint::kHashChunks), 1);
}

TEST(HostPlatformTest, MetadataResourceAllocatesUntilItsFaultFires) {
  HostPlatform platform;
  std::pmr::memory_resource* resource = platform.device(0).metadata_resource();
  std::pmr::vector<std::uint64_t> values(resource);
  values.assign(1000, 7);
  EXPECT_EQ(values.size(), 1000u);
  platform.InjectFault(FaultPoint::kMetadataAllocation);
  std::pmr::vector<std::uint64_t> more(resource);
  EXPECT_THROW(more.assign(10, 1), std::bad_alloc);
  EXPECT_EQ(platform.FaultsFired(FaultPoint::kMetadataAllocation), 1);
}

// ---- fault injection ----------------------------------------------------------------------------

struct FaultFixture {
  FaultFixture() : platform(WithSpillDirectory(spill.path())) {}
  TempDir spill;
  HostPlatform platform;
  DevicePtr ptr = 0;
  std::vector<std::uint8_t> host = std::vector<std::uint8_t>(64);
  std::vector<ArenaRegion> Table(StorageTier tier) const { return {ArenaRegion{ptr, 64, tier, 0}}; }
};

// One call at `point`; true when it succeeded.
bool CallAt(FaultPoint point, FaultFixture& f) {
  HostDevice& device = f.platform.device(0);
  switch (point) {
    case FaultPoint::kArenaGrowth: device.ReleaseArena(); return device.ReserveArena({64, 0, 0, 0}, 32).ok();
    case FaultPoint::kSaveCopy:
      return device.RunChunkOp(ChunkOp::kCapture, f.Table(StorageTier::kDevice), 32, {}).ok();
    case FaultPoint::kRestoreCopy:
      return device.RunChunkOp(ChunkOp::kRestoreAll, f.Table(StorageTier::kDevice), 32, {}).ok();
    case FaultPoint::kDeviceToHostCopy: return device.CopyDeviceToHost(f.host.data(), f.ptr, 64).ok();
    case FaultPoint::kHashChunks: {
      // (HashChunks fails at the same point: HashChunksMatchesTheBaseHash covers it.)
      std::vector<std::uint64_t> out(2);
      return device.RunChunkOp(ChunkOp::kHash, f.Table(StorageTier::kDevice), 32, out).ok();
    }
    case FaultPoint::kMetadataAllocation:
      try {
        std::pmr::memory_resource* resource = device.metadata_resource();
        void* p = resource->allocate(64);
        resource->deallocate(p, 64);
        return true;
      } catch (const std::bad_alloc&) {
        return false;
      }
    case FaultPoint::kModuleEnumeration: return device.EnumerateModuleVariables().ok();
    case FaultPoint::kSynchronizeTimeout: return device.Synchronize(1s).ok();
    case FaultPoint::kCompareChunks:
      return device.RunChunkOp(ChunkOp::kRestoreDiffering, f.Table(StorageTier::kDevice), 32, {}).ok();
    case FaultPoint::kPinnedPoolExhausted: return device.ArenaLimit(StorageTier::kPinnedHost) > 64;
    case FaultPoint::kSpillFileWrite:
      return device.RunChunkOp(ChunkOp::kCapture, f.Table(StorageTier::kFile), 32, {}).ok();
  }
  return false;
}

TEST(HostPlatformTest, EveryFaultPointFailsExactlyCountCallsAfterSkip) {
  const FaultPoint points[] = {
      FaultPoint::kArenaGrowth,         FaultPoint::kSaveCopy,           FaultPoint::kRestoreCopy,
      FaultPoint::kDeviceToHostCopy,    FaultPoint::kHashChunks,         FaultPoint::kMetadataAllocation,
      FaultPoint::kModuleEnumeration,   FaultPoint::kSynchronizeTimeout, FaultPoint::kCompareChunks,
      FaultPoint::kPinnedPoolExhausted, FaultPoint::kSpillFileWrite};
  for (FaultPoint point : points) {
    SCOPED_TRACE(std::string(FaultPointName(point)));
    FaultFixture f;
    StatusOr<DevicePtr> ptr = f.platform.Malloc(0, 64);
    ASSERT_TRUE(IsOk(ptr));
    f.ptr = *ptr;
    ASSERT_TRUE(IsOk(f.platform.device(0).ReserveArena({64, 64, 64, 64}, 32)));

    EXPECT_TRUE(CallAt(point, f));  // unarmed: calls before InjectFault do not count as skips
    f.platform.InjectFault(point, /*count=*/2, /*skip=*/1);
    std::vector<bool> results;
    for (int i = 0; i < 5; ++i) results.push_back(CallAt(point, f));
    EXPECT_EQ(results, (std::vector<bool>{true, false, false, true, true}));
    EXPECT_EQ(f.platform.FaultsFired(point), 2);
    for (FaultPoint other : points) {
      if (other != point) {
        EXPECT_EQ(f.platform.FaultsFired(other), 0) << FaultPointName(other);
      }
    }
    f.platform.InjectFault(point, 1);
    f.platform.InjectFault(point, 1);  // cumulative
    EXPECT_FALSE(CallAt(point, f));
    EXPECT_FALSE(CallAt(point, f));
    EXPECT_TRUE(CallAt(point, f));
    EXPECT_EQ(f.platform.FaultsFired(point), 4);
    f.platform.InjectFault(point, 3);
    f.platform.ClearFaults();
    EXPECT_TRUE(CallAt(point, f));
    EXPECT_EQ(f.platform.FaultsFired(point), 0);
  }
}

TEST(HostPlatformTest, InjectedFaultsReportTheDocumentedCodes) {
  HostPlatform platform;
  HostDevice& device = platform.device(1);
  StatusOr<DevicePtr> ptr = platform.Malloc(1, 64);
  ASSERT_TRUE(IsOk(ptr));

  platform.InjectFault(FaultPoint::kArenaGrowth);
  Status growth = device.ReserveArena({0, 64, 0, 0}, 32);
  EXPECT_EQ(growth.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(growth.message(), HasSubstr("pinned-host arena of device 1"));

  platform.InjectFault(FaultPoint::kModuleEnumeration);
  EXPECT_EQ(device.EnumerateModuleVariables().status().code(), StatusCode::kUnavailable);

  platform.InjectFault(FaultPoint::kSynchronizeTimeout);
  Status sync = device.Synchronize(10s);
  EXPECT_EQ(sync.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(sync.message(), HasSubstr("device 1"));

  // A failed batched restore may leave part of the table written: here the first half.
  StatusOr<DevicePtr> second = platform.Malloc(1, 64);
  ASSERT_TRUE(IsOk(second));
  const std::vector<ArenaRegion> table = {ArenaRegion{*ptr, 64, StorageTier::kDevice, 0},
                                          ArenaRegion{*second, 64, StorageTier::kDevice, 64}};
  ASSERT_TRUE(IsOk(device.ReserveArena({128, 0, 0, 0}, 32)));
  ASSERT_TRUE(IsOk(device.RunChunkOp(ChunkOp::kCapture, table, 32, {})));  // zeros
  ASSERT_TRUE(IsOk(platform.Memset(*ptr, 0xAA, 64)));
  ASSERT_TRUE(IsOk(platform.Memset(*second, 0xAA, 64)));
  platform.InjectFault(FaultPoint::kRestoreCopy);
  StatusOr<ChunkOpResult> restore = device.RunChunkOp(ChunkOp::kRestoreAll, table, 32, {});
  EXPECT_EQ(restore.status().code(), StatusCode::kInternal);
  EXPECT_EQ(HostPtr<std::uint8_t>(*ptr)[0], 0);
  EXPECT_EQ(HostPtr<std::uint8_t>(*second)[0], 0xAA);

  platform.InjectFault(FaultPoint::kSaveCopy);
  EXPECT_FALSE(device.RunChunkOp(ChunkOp::kRefreshChanged, table, 32, {}).ok());
  platform.InjectFault(FaultPoint::kDeviceToHostCopy);
  std::array<std::uint8_t, 64> host{};
  EXPECT_FALSE(device.CopyDeviceToHost(host.data(), *ptr, 64).ok());
  EXPECT_EQ(host[0], 0);
}

TEST(HostPlatformTest, RunChunkOpIsOneCallAndOneWaitWhateverTheTable) {
  HostPlatform platform;
  HostDevice& device = platform.device(0);
  std::vector<ArenaRegion> table;
  for (int i = 0; i < 300; ++i) {
    StatusOr<DevicePtr> ptr = platform.Malloc(0, 256);
    ASSERT_TRUE(IsOk(ptr));
    table.push_back(ArenaRegion{*ptr, 256, StorageTier::kDevice, static_cast<std::uint64_t>(i) * 256});
  }
  ASSERT_TRUE(IsOk(device.ReserveArena({300 * 256, 0, 0, 0}, 64)));
  device.ResetCallCounts();
  std::vector<std::uint64_t> hashes(1200);
  ASSERT_TRUE(IsOk(device.RunChunkOp(ChunkOp::kCapture, table, 64, hashes)));
  const DeviceCallCounts counts = device.call_counts();
  EXPECT_EQ(counts.calls, 1u);
  EXPECT_EQ(counts.host_waits, 1u);
  EXPECT_EQ(counts.chunk_ops, 1u);
  EXPECT_EQ(counts.launches, 1u);
}

TEST(HostPlatformTest, RestoreHookRunsWithEachDestinationBeforeItIsWritten) {
  HostPlatform platform;
  HostDevice& device = platform.device(0);
  StatusOr<DevicePtr> a = platform.Malloc(0, 128);
  StatusOr<DevicePtr> b = platform.Malloc(0, 128);
  ASSERT_TRUE(IsOk(a));
  ASSERT_TRUE(IsOk(b));
  const std::vector<ArenaRegion> table = {ArenaRegion{*a, 128, StorageTier::kDevice, 0},
                                          ArenaRegion{*b, 128, StorageTier::kDevice, 128}};
  ASSERT_TRUE(IsOk(device.ReserveArena({256, 0, 0, 0}, 64)));
  ASSERT_TRUE(IsOk(device.RunChunkOp(ChunkOp::kCapture, table, 64, {})));

  std::vector<DevicePtr> seen;
  std::vector<std::uint8_t> byte_at_hook;
  platform.SetBeforeRestoreCopyHook([&](DevicePtr dst) {
    seen.push_back(dst);
    byte_at_hook.push_back(HostPtr<std::uint8_t>(dst)[100]);
  });
  HostPtr<std::uint8_t>(*b)[100] = 9;  // only b changed
  ASSERT_TRUE(IsOk(device.RunChunkOp(ChunkOp::kRestoreChanged, table, 64, {})));
  EXPECT_EQ(seen, (std::vector<DevicePtr>{*b})) << "the hook sees what is written, once per region";
  EXPECT_EQ(byte_at_hook[0], 9);  // before the copy
  EXPECT_EQ(HostPtr<std::uint8_t>(*b)[100], 0);
  ASSERT_TRUE(IsOk(device.RunChunkOp(ChunkOp::kRestoreAll, table, 64, {})));
  EXPECT_EQ(seen, (std::vector<DevicePtr>{*b, *a, *b}));
  platform.SetBeforeRestoreCopyHook({});
}

// ---- modules ------------------------------------------------------------------------------------

TEST(HostPlatformTest, ModuleVariablesHoldTheirInitialBytesAndAreEnumerated) {
  TableSpy spy;
  HostPlatform platform;
  spy.Install(platform.api_table());
  ModuleSpec spec;
  spec.name = "mod";
  spec.variables.push_back({"counter", 16, false, {1, 2, 3}});
  spec.variables.push_back({"table", 8, true, {9}});
  spec.variables.push_back({"empty", 0, false, {}});
  StatusOr<ModuleId> module = platform.LoadModule(1, spec);
  ASSERT_TRUE(IsOk(module));
  EXPECT_TRUE(platform.ModuleLoaded(*module));
  EXPECT_TRUE(spy.allocations().empty());  // not through the api table

  StatusOr<DevicePtr> counter = platform.VariableAddress(*module, "counter");
  ASSERT_TRUE(IsOk(counter));
  std::array<std::uint8_t, 16> bytes{};
  ASSERT_TRUE(IsOk(platform.device(1).CopyDeviceToHost(bytes.data(), *counter, 16)));
  EXPECT_EQ(bytes, (std::array<std::uint8_t, 16>{1, 2, 3}));
  StatusOr<PointerInfo> info = platform.device(1).QueryPointer(*counter + 15);
  ASSERT_TRUE(IsOk(info));
  EXPECT_EQ(info->kind, MemoryKind::kDeviceLocal);
  EXPECT_EQ(info->owner_device, 1);
  EXPECT_EQ(platform.Free(*counter).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(platform.VariableAddress(*module, "missing").status().code(), StatusCode::kNotFound);

  StatusOr<std::vector<ModuleVariable>> variables = platform.device(1).EnumerateModuleVariables();
  ASSERT_TRUE(IsOk(variables));
  ASSERT_EQ(variables->size(), 3u);
  EXPECT_EQ((*variables)[0].name, "counter");
  EXPECT_EQ((*variables)[0].address, *counter);
  EXPECT_EQ((*variables)[0].module_id, *module);
  EXPECT_TRUE((*variables)[1].is_constant);
  EXPECT_EQ((*variables)[2].name, "empty");
  EXPECT_EQ((*variables)[2].size, 0u);
  EXPECT_EQ((*variables)[2].address, 0u);
  StatusOr<std::vector<ModuleVariable>> other = platform.device(0).EnumerateModuleVariables();
  ASSERT_TRUE(IsOk(other));
  EXPECT_TRUE(other->empty());

  ModuleSpec bad;
  bad.variables.push_back({"x", 2, false, {1, 2, 3}});
  EXPECT_EQ(platform.LoadModule(0, bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(platform.LoadModule(5, spec).status().code(), StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, HugeModuleVariableIsEnumeratedWithoutTouchingItsPages) {
  HostPlatform platform;
  const std::uint64_t huge = std::uint64_t{3} << 29;  // 1.5 GiB
  const std::uint64_t resident_before = ResidentBytes();
  ModuleSpec spec;
  spec.name = "big";
  spec.variables.push_back({"weights", huge, false, {0xEE}});
  StatusOr<ModuleId> module = platform.LoadModule(0, spec);
  ASSERT_TRUE(IsOk(module));
  StatusOr<std::vector<ModuleVariable>> variables = platform.device(0).EnumerateModuleVariables();
  ASSERT_TRUE(IsOk(variables));
  ASSERT_EQ(variables->size(), 1u);
  EXPECT_EQ((*variables)[0].size, huge);
  StatusOr<PointerInfo> info = platform.device(0).QueryPointer((*variables)[0].address + huge - 1);
  ASSERT_TRUE(IsOk(info));
  EXPECT_EQ(info->size, huge);
  std::uint8_t first = 0;
  ASSERT_TRUE(IsOk(platform.device(0).CopyDeviceToHost(&first, (*variables)[0].address, 1)));
  EXPECT_EQ(first, 0xEE);
  const std::uint64_t resident_after = ResidentBytes();
  if (resident_before != 0 && resident_after != 0) {
    EXPECT_LT(resident_after, resident_before + (std::uint64_t{256} << 20));
  }
}

TEST(HostPlatformTest, LazyModuleIsLoadedByTheFirstLaunchOfOneOfItsKernels) {
  HostPlatform platform;
  ModuleSpec spec;
  spec.name = "lazy";
  spec.lazy = true;
  spec.variables.push_back({"value", sizeof(int), false, {5}});
  StatusOr<ModuleId> module = platform.LoadModule(0, spec);
  ASSERT_TRUE(IsOk(module));
  EXPECT_FALSE(platform.ModuleLoaded(*module));
  EXPECT_EQ(platform.VariableAddress(*module, "value").status().code(), StatusCode::kNotFound);
  StatusOr<std::vector<ModuleVariable>> before = platform.device(0).EnumerateModuleVariables();
  ASSERT_TRUE(IsOk(before));
  EXPECT_TRUE(before->empty());

  std::atomic<int> seen{-1};
  const ModuleId id = *module;
  ASSERT_TRUE(IsOk(platform.Launch(platform.DefaultStream(0),
                                   MakeKernel(
                                       "reader",
                                       [&, id](const KernelContext&) {
                                         StatusOr<DevicePtr> address = platform.VariableAddress(id, "value");
                                         seen = address.ok() ? *HostPtr<int>(*address) : -2;
                                       },
                                       id))));
  EXPECT_TRUE(platform.ModuleLoaded(id));  // loaded on the launching thread, before queuing
  ASSERT_TRUE(IsOk(platform.StreamSynchronize(platform.DefaultStream(0))));
  EXPECT_EQ(seen, 5);
  StatusOr<std::vector<ModuleVariable>> after = platform.device(0).EnumerateModuleVariables();
  ASSERT_TRUE(IsOk(after));
  EXPECT_EQ(after->size(), 1u);

  EXPECT_EQ(platform
                .Launch(platform.DefaultStream(1), MakeKernel(
                                                       "wrong_device", [](const KernelContext&) {}, id))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(platform
                .Launch(platform.DefaultStream(0), MakeKernel(
                                                       "no_module", [](const KernelContext&) {}, 77))
                .code(),
            StatusCode::kNotFound);
}

TEST(HostPlatformTest, PrepareForSnapshotLoadsTheLazyModuleBeforeTheKernelRuns) {
  TableSpy spy;
  HostPlatform platform;
  spy.Install(platform.api_table());
  ModuleSpec spec;
  spec.name = "lazy";
  spec.lazy = true;
  spec.variables.push_back({"v", 64, false, {}});
  StatusOr<ModuleId> module = platform.LoadModule(1, spec);
  ASSERT_TRUE(IsOk(module));
  const ModuleId id = *module;
  bool loaded_at_intercept = true;
  bool loaded_after_prepare = false;
  std::size_t variables_after_prepare = 0;
  spy.SetLaunchHandler([&](const LaunchRequest&, LaunchExecutor& executor) -> Status {
    loaded_at_intercept = platform.ModuleLoaded(id);
    if (Status s = executor.PrepareForSnapshot(); !s.ok()) return s;
    loaded_after_prepare = platform.ModuleLoaded(id);
    StatusOr<std::vector<ModuleVariable>> variables = platform.device(1).EnumerateModuleVariables();
    if (variables.ok()) variables_after_prepare = variables->size();
    return executor.RunOriginal();
  });
  ASSERT_TRUE(IsOk(platform.Launch(platform.DefaultStream(1), MakeKernel(
                                                                  "k", [](const KernelContext&) {}, id))));
  ASSERT_TRUE(IsOk(platform.DeviceSynchronize(1)));
  EXPECT_FALSE(loaded_at_intercept);
  EXPECT_TRUE(loaded_after_prepare);
  EXPECT_EQ(variables_after_prepare, 1u);
}

// ---- concurrency --------------------------------------------------------------------------------

TEST(HostPlatformTest, ConcurrentClientsOnSeveralStreamsKeepTheirDataApart) {
  HostPlatform platform;
  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int device = t % 2;
      StatusOr<StreamId> stream = platform.CreateStream(device);
      if (!stream.ok()) {
        ++failures;
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        StatusOr<DevicePtr> buffer = platform.MallocAsync(*stream, 256);
        if (!buffer.ok()) {
          ++failures;
          continue;
        }
        const DevicePtr p = *buffer;
        const auto value = static_cast<std::uint8_t>(t * kRounds + round);
        std::array<std::uint8_t, 256> host{};
        bool ok = platform.MemsetAsync(*stream, p, value, 256).ok() &&
                  platform
                      .Launch(*stream, MakeKernel("inc",
                                                  [p](const KernelContext&) {
                                                    for (int i = 0; i < 256; ++i)
                                                      ++HostPtr<std::uint8_t>(p)[i];
                                                  }))
                      .ok() &&
                  platform.MemcpyAsync(*stream, DevPtr(host.data()), p, 256).ok() &&
                  platform.FreeAsync(*stream, p).ok() && platform.StreamSynchronize(*stream).ok();
        if (!ok || host[255] != static_cast<std::uint8_t>(value + 1)) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace gpuprof::device::host
