#include "replay/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/hash.h"
#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::host::CompletionSignal;
using device::host::FaultPoint;
using device::host::Kernel;
using device::host::KernelContext;
using device::host::ModuleSpec;
using device::host::ModuleVariableSpec;
using gpuprof::testing::ReplayRig;

std::uint32_t* Words(DevicePtr p) { return reinterpret_cast<std::uint32_t*>(p); }

// Records, per pass, the hash of the bytes a kernel read before writing, and how often it ran.
class InputLog {
 public:
  void Record(const KernelContext& context, const void* data, std::size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    passes_.push_back(context.pass);
    hashes_.push_back(base::HashBytes(data, size));
  }
  int runs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(passes_.size());
  }
  bool AllInputsIdentical() const {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::uint64_t h : hashes_) {
      if (h != hashes_.front()) return false;
    }
    return !hashes_.empty();
  }
  std::vector<int> passes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return passes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<int> passes_;
  std::vector<std::uint64_t> hashes_;
};

// x[i] = x[i] * 3 + 1 over `count` words: compounds across passes unless memory is restored.
Kernel InPlaceUpdate(DevicePtr buffer, std::size_t count, InputLog* log,
                     std::string name = "in_place_update") {
  return Kernel{std::move(name), [=](const KernelContext& context) {
                  std::uint32_t* x = Words(buffer);
                  log->Record(context, x, count * sizeof(std::uint32_t));
                  for (std::size_t i = 0; i < count; ++i) x[i] = x[i] * 3 + 1;
                }};
}

class ControllerTest : public ::testing::Test {
 protected:
  Controller& Configure(int passes, RestoreMode mode = RestoreMode::kAuto) {
    ReplayOptions options;
    options.passes = passes;
    options.restore = mode;
    options.chunk_size = 4096;
    options_ = options;
    return rig_.Configure(options);
  }
  Controller& Configure(const ReplayOptions& options) {
    options_ = options;
    return rig_.Configure(options);
  }

  DevicePtr AllocWords(int device, std::size_t count, std::uint32_t first = 0) {
    auto ptr = rig_.platform().Malloc(device, count * sizeof(std::uint32_t));
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    for (std::size_t i = 0; i < count; ++i) Words(*ptr)[i] = first + static_cast<std::uint32_t>(i);
    return *ptr;
  }

  void LaunchAndWait(const Kernel& kernel, int device = 0, CompletionSignal* signal = nullptr) {
    auto& platform = rig_.platform();
    ASSERT_TRUE(platform.Launch(platform.DefaultStream(device), kernel, signal).ok());
    ASSERT_TRUE(platform.DeviceSynchronize(device).ok());
  }

  std::vector<ReplayRecord> Records() { return rig_.controller()->records(); }

  ReplayRig rig_;
  ReplayOptions options_;
};

// An executor shaped like the CUDA backend's: a CUPTI entry callback cannot skip the call it
// reports, so every pass is the executor's own copy and the application's launch runs after
// Dispatch returns.
class RunsAfterReturnExecutor : public device::LaunchExecutor {
 public:
  explicit RunsAfterReturnExecutor(std::function<void()> body) : body_(std::move(body)) {}
  Status RunOriginal() override {
    ++originals;
    return OkStatus();  // submits nothing: the application's call does
  }
  StatusOr<device::PassTiming> RunPass(int) override {
    body_();
    ++passes;
    return device::PassTiming{1000, 0, 0, {}};
  }
  void SignalCompletion() override { ++completions; }
  bool original_runs_after_return() const noexcept override { return true; }

  int originals = 0;
  int passes = 0;
  int completions = 0;

 private:
  std::function<void()> body_;
};

TEST_F(ControllerTest, LaunchThatRunsAfterReturnFindsItsInputsRestoredAfterTheLastPass) {
  Configure(3);
  constexpr std::size_t kCount = 5000;
  DevicePtr buffer = AllocWords(0, kCount, 1);
  auto update = [buffer] {
    for (std::size_t i = 0; i < kCount; ++i) Words(buffer)[i] = Words(buffer)[i] * 3 + 1;
  };
  RunsAfterReturnExecutor executor(update);
  device::LaunchRequest request;
  request.device = 0;
  request.kernel_name = "in_place_update";
  ASSERT_TRUE(rig_.controller()->Dispatch(request, executor).ok());
  EXPECT_EQ(executor.passes, 3);
  EXPECT_EQ(executor.originals, 0);
  EXPECT_EQ(executor.completions, 1);
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(Words(buffer)[i], 1 + static_cast<std::uint32_t>(i)) << "inputs not restored at word " << i;
  }
  update();  // the application's own launch, after the callback returned
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(Words(buffer)[i], (1 + static_cast<std::uint32_t>(i)) * 3 + 1) << "word " << i;
  }
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_EQ(records[0].passes.size(), 3u);
}

TEST_F(ControllerTest, RestoreBeforeTheApplicationsLaunchWritesBackOnlyWhatTheLastPassChanged) {
  for (RestoreMode mode : {RestoreMode::kAuto, RestoreMode::kFull}) {
    SCOPED_TRACE(std::string(RestoreModeName(mode)));
    Configure(2, mode);
    constexpr std::size_t kCount = 4096;  // 4 chunks of 4096 bytes
    DevicePtr written = AllocWords(0, kCount, 1);
    DevicePtr untouched = AllocWords(0, kCount, 7);
    RunsAfterReturnExecutor executor([written] { Words(written)[0] += 1; });
    std::vector<DevicePtr> copies;
    rig_.platform().SetBeforeRestoreCopyHook([&copies](DevicePtr dst) { copies.push_back(dst); });
    device::LaunchRequest request;
    request.device = 0;
    request.kernel_name = "touches_one_word";
    ASSERT_TRUE(rig_.controller()->Dispatch(request, executor).ok());
    rig_.platform().SetBeforeRestoreCopyHook({});
    EXPECT_EQ(Words(written)[0], 1u) << "the application's launch must find its inputs";
    // One restore before pass 2, one before the application's launch.
    if (mode == RestoreMode::kAuto) {
      EXPECT_EQ(copies, (std::vector<DevicePtr>{written, written}))
          << "only the changed chunk is written back";
    } else {
      EXPECT_EQ(copies, (std::vector<DevicePtr>{written, untouched, written, untouched}));
    }
    ASSERT_TRUE(rig_.platform().Free(written).ok());
    ASSERT_TRUE(rig_.platform().Free(untouched).ok());
  }
}

TEST_F(ControllerTest, NameMatchesAndExhaustedLetABackendSkipDispatch) {
  ReplayOptions options;
  options.passes = 2;
  options.chunk_size = 4096;
  options.selector.name = "regex:gemm";
  options.selector.count = 1;
  Controller& controller = Configure(options);
  EXPECT_TRUE(controller.NameMatches("cutlass_sgemm_64x64"));
  EXPECT_FALSE(controller.NameMatches("relu_kernel"));
  EXPECT_FALSE(controller.Exhausted());
  constexpr std::size_t kCount = 1000;
  DevicePtr buffer = AllocWords(0, kCount, 1);
  InputLog log;
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "sgemm_like"));
  EXPECT_EQ(log.runs(), 2) << "the one allowed launch was replayed";
  EXPECT_TRUE(controller.Exhausted()) << "count 1 used up";
}

TEST_F(ControllerTest, OnePassMeansExhaustedAndExactNamesMatchExactly) {
  ReplayOptions options;
  options.passes = 1;
  options.selector.name = "k";
  Controller& controller = Configure(options);
  EXPECT_TRUE(controller.Exhausted());
  EXPECT_TRUE(controller.NameMatches("k"));
  EXPECT_FALSE(controller.NameMatches("k2"));
}

// What gpuprof.profile(kernel_replay=...) relies on: the options change while the process runs,
// a paused controller (1 pass) replays nothing, and the selector's counts start again.
TEST_F(ControllerTest, ReconfigureChangesTheSelectionAndRestartsTheCounts) {
  Controller& controller = Configure(1);
  constexpr std::size_t kCount = 256;
  DevicePtr buffer = AllocWords(0, kCount, 1);
  InputLog log;
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "gemm_a"));
  EXPECT_EQ(log.runs(), 1) << "paused: one run";

  ReplayOptions options;
  options.passes = 3;
  options.chunk_size = 4096;
  options.selector.name = "regex:gemm";
  options.selector.skip = 1;
  options.selector.count = 1;
  ASSERT_TRUE(controller.Reconfigure(options).ok());
  EXPECT_FALSE(controller.Exhausted());
  EXPECT_FALSE(controller.NameMatches("relu")) << "the new selector is in force";
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "gemm_a"));
  EXPECT_EQ(log.runs(), 2) << "skip 1 counts from the reconfiguration: the first gemm after it is skipped";
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "relu"));
  EXPECT_EQ(log.runs(), 3) << "a name the selector rejects runs once";
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "gemm_b"));
  EXPECT_EQ(log.runs(), 6) << "the second gemm is replayed, 3 passes";
  EXPECT_TRUE(controller.Exhausted()) << "count 1 used up";

  options.passes = 0;
  Status bad = controller.Reconfigure(options);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(controller.Exhausted()) << "a refused configuration leaves the one in force";

  options.passes = 2;
  options.selector.skip = 0;
  ASSERT_TRUE(controller.Reconfigure(options).ok());
  EXPECT_FALSE(controller.Exhausted()) << "the count starts again";
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "gemm_c"));
  EXPECT_EQ(log.runs(), 8);
  EXPECT_EQ(controller.options().passes, 2);

  options.passes = 1;
  ASSERT_TRUE(controller.Reconfigure(options).ok());
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log, "gemm_d"));
  EXPECT_EQ(log.runs(), 9) << "paused again";
  ASSERT_EQ(Records().size(), 2u);
  EXPECT_EQ(Records()[0].kernel_name, "gemm_b");
  EXPECT_EQ(Records()[1].kernel_name, "gemm_c");
}

TEST_F(ControllerTest, ReplaysAnInPlaceUpdateWithIdenticalInputsEveryPass) {
  Configure(4);
  constexpr std::size_t kCount = 5000;
  DevicePtr buffer = AllocWords(0, kCount, 1);
  InputLog log;
  CompletionSignal signal;
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log), 0, &signal);
  EXPECT_EQ(log.passes(), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(log.AllInputsIdentical());
  EXPECT_EQ(signal.count(), 1) << "the application's completion is signalled exactly once";
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(Words(buffer)[i], (1 + static_cast<std::uint32_t>(i)) * 3 + 1) << "word " << i;
  }
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_TRUE(records[0].deterministic);
  ASSERT_EQ(records[0].passes.size(), 4u);
  EXPECT_EQ(records[0].passes[0].bytes_restored, 0u);
  EXPECT_EQ(records[0].passes[1].bytes_restored, kCount * sizeof(std::uint32_t));
  EXPECT_EQ(records[0].snapshot_bytes, kCount * sizeof(std::uint32_t));
}

// replay_ns is what replay added to the application's launch: it spans every pass (each sleeps
// 2 ms here) and the capture, and is 0 for a launch declined before the drain.
TEST_F(ControllerTest, ReplayTimeSpansTheCaptureAndEveryPass) {
  Configure(3);
  constexpr std::size_t kCount = 1024;
  DevicePtr buffer = AllocWords(0, kCount, 1);
  InputLog log;
  Kernel update = InPlaceUpdate(buffer, kCount, &log);
  Kernel slow{"slow_update", [body = update.body](const KernelContext& context) {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                body(context);
              }};
  LaunchAndWait(slow);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  ASSERT_TRUE(records[0].replayed);
  EXPECT_GE(records[0].replay_ns, 3u * 2'000'000u) << "three passes of 2 ms each ran inside the replay";
  EXPECT_GT(records[0].replay_ns, records[0].snapshot_ns);
}

TEST_F(ControllerTest, DeviceCounterIncrementIsUndoneBetweenPasses) {
  Configure(3);
  ModuleSpec spec;
  spec.name = "counters";
  spec.variables.push_back(ModuleVariableSpec{"launches", 4, false, {}});
  auto module = rig_.platform().LoadModule(0, spec);
  ASSERT_TRUE(module.ok());
  DevicePtr counter = *rig_.platform().VariableAddress(*module, "launches");
  InputLog log;
  Kernel bump{"bump", [&](const KernelContext& context) {
                log.Record(context, Words(counter), 4);
                Words(counter)[0] += 1;
              }};
  bump.module = *module;
  LaunchAndWait(bump);
  LaunchAndWait(bump);
  EXPECT_EQ(Words(counter)[0], 2u) << "two launches, each replayed 3 times, count 2";
  EXPECT_EQ(log.runs(), 6);
}

TEST_F(ControllerTest, IncompleteSnapshotRunsTheKernelExactlyOnce) {
  Configure(5);
  constexpr std::size_t kCount = 1000;
  DevicePtr buffer = AllocWords(0, kCount, 1);
  AllocWords(0, 10);
  rig_.platform().InjectFault(FaultPoint::kSaveCopy, 1, 0);
  InputLog log;
  CompletionSignal signal;
  base::ScopedLogCapture warnings;
  LaunchAndWait(InPlaceUpdate(buffer, kCount, &log), 0, &signal);
  EXPECT_EQ(log.passes(), (std::vector<int>{0})) << "declined: one ordinary run";
  EXPECT_EQ(signal.count(), 1);
  EXPECT_EQ(Words(buffer)[0], 4u);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].replayed);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kIncompleteSnapshot);
  EXPECT_NE(records[0].decline_detail.find("capturing 2 region(s) failed"), std::string::npos)
      << records[0].decline_detail;
  EXPECT_EQ(warnings.Count("replay declined for in_place_update"), 1);
}

TEST_F(ControllerTest, GraphLaunchRunsOnceAndWarnsOncePerProcess) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 64);
  InputLog log;
  base::ScopedLogCapture warnings;
  std::vector<Kernel> graph{InPlaceUpdate(buffer, 64, &log, "node_a"),
                            InPlaceUpdate(buffer, 64, &log, "node_b")};
  auto& platform = rig_.platform();
  ASSERT_TRUE(platform.LaunchGraph(platform.DefaultStream(0), graph).ok());
  ASSERT_TRUE(platform.LaunchGraph(platform.DefaultStream(0), graph).ok());
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  EXPECT_EQ(log.runs(), 4) << "each graph node ran once per graph launch";
  EXPECT_EQ(warnings.Count("graph launches are not replayed"), 1);
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].decline_reason, DeclineReason::kGraphLaunch);
  EXPECT_EQ(records[1].replay_ns, 0u) << "declined before the drain: replay held nothing";
}

TEST_F(ControllerTest, LaunchIntoACapturingStreamIsDeclined) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 64);
  InputLog log;
  auto& platform = rig_.platform();
  auto stream = platform.CreateStream(0);
  ASSERT_TRUE(stream.ok());
  platform.SetStreamCapturing(*stream, true);
  ASSERT_TRUE(platform.Launch(*stream, InPlaceUpdate(buffer, 64, &log)).ok());
  ASSERT_TRUE(platform.StreamSynchronize(*stream).ok());
  EXPECT_EQ(log.runs(), 1);
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records()[0].decline_reason, DeclineReason::kStreamCapture);
}

TEST_F(ControllerTest, MultiDispatchSubmissionTakesTheNormalPath) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 64, 1);
  InputLog log;
  auto& platform = rig_.platform();
  ASSERT_TRUE(platform
                  .LaunchBatch(platform.DefaultStream(0), {InPlaceUpdate(buffer, 64, &log, "first"),
                                                           InPlaceUpdate(buffer, 64, &log, "second")})
                  .ok());
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  EXPECT_EQ(log.runs(), 2);
  EXPECT_EQ(Words(buffer)[0], 13u);  // (1*3+1)*3+1: each dispatch exactly once
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records()[0].decline_reason, DeclineReason::kMultiDispatch);
}

TEST_F(ControllerTest, ModuleLoadedLazilyByTheLaunchIsInTheSnapshot) {
  Configure(3);
  ModuleSpec spec;
  spec.name = "lazy";
  spec.lazy = true;
  spec.variables.push_back(ModuleVariableSpec{"state", 4, false, {5, 0, 0, 0}});
  auto module = rig_.platform().LoadModule(0, spec);
  ASSERT_TRUE(module.ok());
  ASSERT_FALSE(rig_.platform().ModuleLoaded(*module));
  InputLog log;
  Kernel mutate{"mutate_own_global", [&](const KernelContext& context) {
                  DevicePtr state = *rig_.platform().VariableAddress(*module, "state");
                  log.Record(context, Words(state), 4);
                  Words(state)[0] *= 2;
                }};
  mutate.module = *module;
  LaunchAndWait(mutate);  // the first launch loads the module
  EXPECT_TRUE(log.AllInputsIdentical()) << "a module loaded inside the launch escaped the snapshot";
  EXPECT_EQ(log.runs(), 3);
  EXPECT_EQ(Words(*rig_.platform().VariableAddress(*module, "state"))[0], 10u);
}

TEST_F(ControllerTest, NondeterministicKernelIsFlaggedEveryTime) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 16);
  std::atomic<std::uint32_t> clock{100};
  Kernel timer{"write_timer", [&](const KernelContext&) { Words(buffer)[0] = clock.fetch_add(1); }};
  base::ScopedLogCapture warnings;
  LaunchAndWait(timer);
  LaunchAndWait(timer);
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  for (const ReplayRecord& record : records) {
    EXPECT_FALSE(record.deterministic);
    EXPECT_EQ(record.mismatched_passes, (std::vector<int>{2, 3}));
  }
  EXPECT_EQ(warnings.Count("is nondeterministic"), 2);
}

TEST_F(ControllerTest, DeterministicKernelIsNotFlagged) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 100);
  InputLog log;
  LaunchAndWait(InPlaceUpdate(buffer, 100, &log));
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_TRUE(Records()[0].deterministic);
  EXPECT_TRUE(Records()[0].mismatched_passes.empty());
  const std::vector<PassRecord> passes = Records()[0].passes;
  EXPECT_EQ(passes[0].output_hash, passes[2].output_hash);
}

TEST_F(ControllerTest, AutoRestoreWritesBackOnlyWhatTheKernelChangedAndFullEverything) {
  constexpr std::size_t kWords = 64 * 1024;  // 256 KiB = 64 chunks of 4 KiB
  for (RestoreMode mode : {RestoreMode::kAuto, RestoreMode::kFull}) {
    ReplayRig rig;
    ReplayOptions options;
    options.passes = 3;
    options.restore = mode;
    options.chunk_size = 4096;
    rig.Configure(options);
    DevicePtr buffer = *rig.platform().Malloc(0, kWords * 4);
    std::memset(Words(buffer), 0, kWords * 4);
    InputLog log;
    Kernel partial{"partial_write", [&](const KernelContext& context) {
                     log.Record(context, Words(buffer), kWords * 4);
                     Words(buffer)[10] += 1;     // chunk 0
                     Words(buffer)[40000] += 1;  // chunk 39
                   }};
    ASSERT_TRUE(rig.platform().Launch(rig.platform().DefaultStream(0), partial).ok());
    ASSERT_TRUE(rig.platform().DeviceSynchronize(0).ok());
    EXPECT_TRUE(log.AllInputsIdentical()) << RestoreModeName(mode);
    auto records = rig.controller()->records();
    ASSERT_EQ(records.size(), 1u);
    const PassRecord& second = records[0].passes.at(1);
    if (mode == RestoreMode::kAuto) {
      EXPECT_EQ(second.bytes_restored, 2u * 4096);
      EXPECT_EQ(second.dirty_chunks, 2u);
    } else {
      EXPECT_EQ(second.bytes_restored, kWords * 4);
    }
    EXPECT_EQ(Words(buffer)[10], 1u);
    EXPECT_EQ(Words(buffer)[40000], 1u);
  }
}

TEST_F(ControllerTest, StrictModeDeclinesWhileKernelWritableUntrackedMemoryIsLive) {
  ReplayOptions options;
  options.passes = 3;
  options.strict = true;
  Configure(options);
  DevicePtr buffer = AllocWords(0, 16);
  auto managed = rig_.platform().Malloc(0, 4096, device::MemoryKind::kManaged);
  ASSERT_TRUE(managed.ok());
  InputLog log;
  LaunchAndWait(InPlaceUpdate(buffer, 16, &log));
  EXPECT_EQ(log.runs(), 1);
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records()[0].decline_reason, DeclineReason::kUntrackedWritableMemory);
  EXPECT_EQ(Records()[0].untracked_writable_bytes, 4096u);
  ASSERT_TRUE(rig_.platform().Free(*managed).ok());
  LaunchAndWait(InPlaceUpdate(buffer, 16, &log));
  EXPECT_EQ(log.runs(), 4);
  EXPECT_TRUE(Records()[1].replayed);
}

TEST_F(ControllerTest, NonStrictModeReplaysAndReportsUntrackedWritableBytes) {
  Configure(2);
  DevicePtr buffer = AllocWords(0, 16);
  ASSERT_TRUE(rig_.platform().Malloc(0, 1000, device::MemoryKind::kHostMapped).ok());
  InputLog log;
  LaunchAndWait(InPlaceUpdate(buffer, 16, &log));
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_TRUE(Records()[0].replayed);
  EXPECT_EQ(Records()[0].untracked_writable_bytes, 1000u);
}

TEST_F(ControllerTest, DeviceThatDoesNotDrainDeclinesInsteadOfHanging) {
  ReplayOptions options;
  options.passes = 3;
  options.drain_timeout = std::chrono::milliseconds(50);
  Configure(options);
  auto& platform = rig_.platform();
  DevicePtr buffer = AllocWords(0, 16, 1);
  auto stuck = platform.CreateStream(0);
  ASSERT_TRUE(stuck.ok());
  platform.StallStream(*stuck);
  ASSERT_TRUE(platform.MemsetAsync(*stuck, buffer, 0, 4).ok());  // waits on a "peer" forever
  InputLog log;
  auto other = platform.CreateStream(0);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(platform.Launch(*other, InPlaceUpdate(buffer, 16, &log)).ok());
  ASSERT_TRUE(platform.StreamSynchronize(*other).ok());
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records()[0].decline_reason, DeclineReason::kDrainTimeout);
  EXPECT_EQ(log.runs(), 1);
  platform.ReleaseStream(*stuck);
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
}

TEST_F(ControllerTest, PendingWorkOnOtherStreamsLandsBeforeTheSnapshot) {
  ReplayOptions options;
  options.passes = 3;
  options.selector.name = "in_place_update";
  Configure(options);
  auto& platform = rig_.platform();
  DevicePtr buffer = AllocWords(0, 256, 0);
  auto producer = platform.CreateStream(0);
  ASSERT_TRUE(producer.ok());
  Kernel slow_writer{"slow_writer", [&](const KernelContext&) {
                       std::this_thread::sleep_for(std::chrono::milliseconds(30));
                       for (int i = 0; i < 256; ++i) Words(buffer)[i] = 7;
                     }};
  // Not selected for replay (another kernel name), asynchronous on its own stream.
  ASSERT_TRUE(platform.Launch(*producer, slow_writer).ok());
  InputLog log;
  ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), InPlaceUpdate(buffer, 256, &log)).ok());
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  EXPECT_TRUE(log.AllInputsIdentical());
  EXPECT_EQ(Words(buffer)[0], 22u) << "pass inputs were the drained (written) bytes";
}

TEST_F(ControllerTest, CollectiveAndDeviceMallocKernelsAreDeclinedByDefault) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog log;
  LaunchAndWait(InPlaceUpdate(buffer, 16, &log, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  Kernel allocator = InPlaceUpdate(buffer, 16, &log, "allocator");
  allocator.uses_device_malloc = true;
  LaunchAndWait(allocator);
  EXPECT_EQ(log.runs(), 2);
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kCollectiveKernel);
  EXPECT_EQ(records[1].decline_reason, DeclineReason::kSideEffects);
  EXPECT_NE(records[1].decline_detail.find("device malloc"), std::string::npos) << records[1].decline_detail;
  EXPECT_NE(records[1].decline_detail.find("--replay-malloc-kernels=1 (GPUPROF_REPLAY_MALLOC_KERNELS=1, "
                                           "gpuprof.KernelReplay(malloc_kernels=True))"),
            std::string::npos)
      << records[1].decline_detail;
}

TEST_F(ControllerTest, DeviceMallocKernelsAreReplayedWhenAsked) {
  ReplayOptions options;
  options.passes = 3;
  options.replay_malloc_kernels = true;
  Configure(options);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog log;
  Kernel allocator = InPlaceUpdate(buffer, 16, &log, "allocator");
  allocator.uses_device_malloc = true;
  LaunchAndWait(allocator);
  EXPECT_EQ(log.runs(), 3);
  EXPECT_TRUE(Records().at(0).replayed);
}

TEST_F(ControllerTest, PrintfKernelsAreReplayedByDefaultWithOneWarningPerKernel) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog log;
  InputLog other_log;
  base::ScopedLogCapture warnings;
  Kernel printer = InPlaceUpdate(buffer, 16, &log, "printer");
  printer.uses_device_printf = true;
  Kernel other_printer = InPlaceUpdate(buffer, 16, &other_log, "other_printer");
  other_printer.uses_device_printf = true;
  LaunchAndWait(printer);
  LaunchAndWait(printer);
  LaunchAndWait(other_printer);
  EXPECT_EQ(log.runs(), 6) << "two launches, 3 passes each";
  EXPECT_EQ(other_log.runs(), 3);
  for (const ReplayRecord& record : Records()) EXPECT_TRUE(record.replayed) << record.kernel_name;
  EXPECT_EQ(
      warnings.Count("replaying printer, which uses device printf: a message it prints repeats once per "
                     "pass; pass --replay-printf-kernels=0 (GPUPROF_REPLAY_PRINTF_KERNELS=0, "
                     "gpuprof.KernelReplay(printf_kernels=False)) to decline it"),
      1)
      << "once per kernel name, not per launch";
  EXPECT_EQ(warnings.Count("replaying other_printer, which uses device printf"), 1);
  EXPECT_EQ(warnings.Count("replay declined"), 0);
}

TEST_F(ControllerTest, PrintfKernelsAreDeclinedWhenTheOptionIsOff) {
  ReplayOptions options;
  options.passes = 3;
  options.replay_printf_kernels = false;
  Configure(options);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog log;
  base::ScopedLogCapture warnings;
  Kernel printer = InPlaceUpdate(buffer, 16, &log, "printer");
  printer.uses_device_printf = true;
  LaunchAndWait(printer);
  EXPECT_EQ(log.runs(), 1) << "declined: one ordinary run";
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].replayed);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kSideEffects);
  EXPECT_NE(records[0].decline_detail.find("device printf"), std::string::npos) << records[0].decline_detail;
  EXPECT_NE(records[0].decline_detail.find("--replay-printf-kernels=1 (GPUPROF_REPLAY_PRINTF_KERNELS=1, "
                                           "gpuprof.KernelReplay(printf_kernels=True))"),
            std::string::npos)
      << records[0].decline_detail;
  EXPECT_EQ(warnings.Count("which uses device printf"), 0) << "declined, so nothing repeats";
}

TEST_F(ControllerTest, LiveCudaArraysAndPeerAccessDeclineUnlessAsked) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog log;
  Kernel with_arrays = InPlaceUpdate(buffer, 16, &log, "reads_a_texture");
  with_arrays.live_arrays = 2;
  LaunchAndWait(with_arrays);
  Kernel with_peer = InPlaceUpdate(buffer, 16, &log, "reads_a_peer");
  with_peer.peer_access = true;
  LaunchAndWait(with_peer);
  EXPECT_EQ(log.runs(), 2) << "each declined launch runs once";
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kIncompleteSnapshot);
  EXPECT_NE(records[0].decline_detail.find("2 CUDA array(s)"), std::string::npos)
      << records[0].decline_detail;
  EXPECT_NE(records[0].decline_detail.find("--replay-with-live-arrays=1 (GPUPROF_REPLAY_WITH_LIVE_ARRAYS=1, "
                                           "gpuprof.KernelReplay(with_live_arrays=True))"),
            std::string::npos)
      << records[0].decline_detail;
  EXPECT_EQ(records[1].decline_reason, DeclineReason::kIncompleteSnapshot);
  EXPECT_NE(records[1].decline_detail.find("peer access"), std::string::npos) << records[1].decline_detail;
}

TEST_F(ControllerTest, LiveCudaArraysAreReplayedAnywayWhenAsked) {
  ReplayOptions options;
  options.passes = 3;
  options.replay_with_live_arrays = true;
  Configure(options);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog log;
  Kernel with_arrays = InPlaceUpdate(buffer, 16, &log, "reads_a_texture");
  with_arrays.live_arrays = 1;
  LaunchAndWait(with_arrays);
  EXPECT_EQ(log.runs(), 3);
}

TEST_F(ControllerTest, EachSideEffectOptionCoversOnlyItsOwnKind) {
  ReplayOptions options;
  options.passes = 3;
  options.replay_printf_kernels = false;
  options.replay_malloc_kernels = true;
  options.replay_with_live_arrays = true;
  Configure(options);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog printer_log;
  InputLog allocator_log;
  InputLog arrays_log;
  Kernel printer = InPlaceUpdate(buffer, 16, &printer_log, "printer");
  printer.uses_device_printf = true;
  LaunchAndWait(printer);
  Kernel allocator = InPlaceUpdate(buffer, 16, &allocator_log, "allocator");
  allocator.uses_device_malloc = true;
  LaunchAndWait(allocator);
  Kernel with_arrays = InPlaceUpdate(buffer, 16, &arrays_log, "reads_a_texture");
  with_arrays.live_arrays = 1;
  LaunchAndWait(with_arrays);
  EXPECT_EQ(printer_log.runs(), 1) << "printf off: declined though the other two are on";
  EXPECT_EQ(allocator_log.runs(), 3);
  EXPECT_EQ(arrays_log.runs(), 3);
  auto records = Records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kSideEffects);
  EXPECT_TRUE(records[1].replayed);
  EXPECT_TRUE(records[2].replayed);
}

TEST_F(ControllerTest, SelectorMatchesByNameOrRegexAndHonoursSkipAndCount) {
  ReplayOptions options;
  options.passes = 2;
  options.selector.name = "regex:^gemm_";
  options.selector.skip = 1;
  options.selector.count = 2;
  Configure(options);
  DevicePtr buffer = AllocWords(0, 16);
  InputLog gemm_log;
  InputLog other_log;
  for (int i = 0; i < 5; ++i)
    LaunchAndWait(InPlaceUpdate(buffer, 16, &gemm_log, "gemm_" + std::to_string(i)));
  LaunchAndWait(InPlaceUpdate(buffer, 16, &other_log, "softmax"));
  EXPECT_EQ(gemm_log.runs(), 1 + 2 * 2 + 2);  // skipped one, replayed two, two over the cap
  EXPECT_EQ(other_log.runs(), 1);
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kernel_name, "gemm_1");
  EXPECT_EQ(records[1].kernel_name, "gemm_2");
}

TEST_F(ControllerTest, FailedRestoreIsRetriedSoEveryPassStillSeesIdenticalInputs) {
  Configure(3);
  DevicePtr buffer = AllocWords(0, 2048, 1);
  InputLog log;
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 1, 0);
  LaunchAndWait(InPlaceUpdate(buffer, 2048, &log));
  EXPECT_EQ(rig_.platform().FaultsFired(FaultPoint::kRestoreCopy), 1);
  EXPECT_EQ(log.runs(), 3);
  EXPECT_TRUE(log.AllInputsIdentical());
  EXPECT_EQ(Words(buffer)[5], 6u * 3 + 1);
  EXPECT_TRUE(Records().at(0).replayed);
}

TEST_F(ControllerTest, RestoreThatKeepsFailingStopsTheReplay) {
  Configure(4);
  DevicePtr buffer = AllocWords(0, 2048, 1);
  InputLog log;
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 100, 0);
  LaunchAndWait(InPlaceUpdate(buffer, 2048, &log));
  EXPECT_EQ(log.runs(), 1) << "no pass may run on inputs that were not restored";
  EXPECT_EQ(Records().at(0).decline_reason, DeclineReason::kRestoreFailed);
  EXPECT_EQ(Words(buffer)[0], 4u);
}

TEST(ControllerOptionsTest, ValidateOptionsNamesTheBadOption) {
  ReplayOptions options;
  options.passes = 0;
  Status status = Controller::ValidateOptions(options);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--passes"), std::string::npos);
  options.passes = 2;
  options.selector.name = "regex:([unclosed";
  status = Controller::ValidateOptions(options);
  EXPECT_NE(status.message().find("regular expression"), std::string::npos);
  options.selector.name = "regex:^ok$";
  EXPECT_TRUE(Controller::ValidateOptions(options).ok());
}

// B3 through the controller: the second replayed launch refreshes only what changed since the
// first, and the application's writes in between (a copy, a memset, an unreplayed kernel) are in
// its inputs.
TEST(ControllerArenaTest, ConsecutiveReplaysReuseTheArenaAndSeeTheApplicationsWritesInBetween) {
  ReplayRig rig;
  ReplayOptions options;
  options.passes = 3;
  options.chunk_size = 4096;
  options.selector.name = "in_place_update";
  rig.Configure(options);
  auto& platform = rig.platform();
  constexpr std::size_t kCount = 64 * 1024;  // 256 KiB: 64 chunks
  StatusOr<DevicePtr> buffer = platform.Malloc(0, kCount * 4);
  StatusOr<DevicePtr> other = platform.Malloc(0, kCount * 4);
  ASSERT_TRUE(buffer.ok() && other.ok());
  for (std::size_t i = 0; i < kCount; ++i) Words(*buffer)[i] = static_cast<std::uint32_t>(i);
  InputLog log;
  auto launch = [&](const Kernel& kernel) {
    ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), kernel).ok());
    ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  };
  launch(InPlaceUpdate(*buffer, kCount, &log));
  // In between: a memset of one chunk, a copy into another, an unreplayed kernel writing a word.
  ASSERT_TRUE(platform.Memset(*buffer + 8 * 4096, 0x5A, 4096).ok());
  ASSERT_TRUE(platform.Memcpy(*buffer + 20 * 4096, *other, 4096).ok());
  launch(Kernel{"unreplayed_writer", [b = *buffer](const KernelContext&) { Words(b)[40 * 1024] = 77; }});
  std::vector<std::uint32_t> expected(Words(*buffer), Words(*buffer) + kCount);
  for (std::uint32_t& x : expected) x = x * 3 + 1;
  launch(InPlaceUpdate(*buffer, kCount, &log));

  std::vector<ReplayRecord> records = rig.controller()->records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_TRUE(records[1].replayed);
  EXPECT_TRUE(records[1].deterministic);
  EXPECT_EQ(records[0].snapshot_copied_bytes, 2 * kCount * 4) << "the first capture copies everything";
  // Every chunk of `buffer` changed (the kernel rewrote all of it): the incremental capture copies
  // those and none of `other`.
  EXPECT_EQ(records[1].snapshot_copied_bytes, kCount * 4);
  EXPECT_EQ(std::vector<std::uint32_t>(Words(*buffer), Words(*buffer) + kCount), expected)
      << "memory after the second replay is what one unreplayed run leaves";
}

// The snapshot arena gives way to the application: after a replay, allocating nearly all the
// device's free memory succeeds, and the next replay captures again from scratch.
TEST(ControllerArenaTest, ApplicationAllocatingNearlyAllFreeMemoryAfterAReplaySucceeds) {
  device::host::HostPlatformOptions platform_options;
  platform_options.device_memory_bytes = std::uint64_t{64} << 20;
  ReplayRig rig(platform_options);
  ReplayOptions options;
  options.passes = 2;
  options.chunk_size = 64 * 1024;
  rig.Configure(options);
  auto& platform = rig.platform();
  constexpr std::size_t kCount = 4 * 1024 * 1024;  // 16 MiB
  StatusOr<DevicePtr> buffer = platform.Malloc(0, kCount * 4);
  ASSERT_TRUE(buffer.ok());
  InputLog log;
  ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), InPlaceUpdate(*buffer, kCount, &log)).ok());
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  EXPECT_EQ(platform.device(0).device_arena_bytes(), kCount * 4) << "the snapshot sits in device memory";
  // The application now wants what it sees free: 48 MiB minus a little.
  StatusOr<DevicePtr> big = platform.Malloc(0, (std::uint64_t{47} << 20));
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(platform.device(0).device_arena_bytes(), 0u);
  EXPECT_EQ(platform.device(0).arena_stats().releases, 1u);
  // The next replay still works, from host memory now that the device is full.
  ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), InPlaceUpdate(*buffer, kCount, &log)).ok());
  ASSERT_TRUE(platform.DeviceSynchronize(0).ok());
  std::vector<ReplayRecord> records = rig.controller()->records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[1].replayed) << records[1].decline_detail;
  EXPECT_EQ(records[1].snapshot_copied_bytes, kCount * 4 + (std::uint64_t{47} << 20)) << "all of it, afresh";
  EXPECT_EQ(records[1].snapshot_device_bytes, 0u);
}

}  // namespace
}  // namespace gpuprof::replay
