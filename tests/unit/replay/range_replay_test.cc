// Range replay on the host platform (REPLAY_SPEC.md W1-W6): random programs of launches on two or
// three streams ordered by events, copies in both directions and memsets, run once plain and once
// inside a replayed range. Properties:
//   (a) every launch of the range saw identical inputs in every pass, equal to the plain run's;
//   (b) afterwards device memory and the application's host buffers equal the plain run's;
//   (c) each launch has one record with one pass row per pass;
//   (d) a range holding something that cannot be re-issued is declined whole, with the reason: one
//       record, every kernel ran exactly once, memory equal to the plain run's.
// GPUPROF_PROPERTY_SEED / GPUPROF_PROPERTY_ITERATIONS as in replay_property_test.cc.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/hash.h"
#include "device/host/host_platform.h"
#include "fakes/fake_counter_backend.h"
#include "fakes/replay_rig.h"
#include "gpuprof/replay.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::StreamId;
using device::host::HostPlatform;
using device::host::Kernel;
using device::host::KernelContext;

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::strtoull(text, nullptr, 0);
}

void* Host(DevicePtr ptr) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)); }
DevicePtr Ptr(const void* p) { return static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(p)); }

// What each kernel of a run saw: input hash by (launch number, pass); pass 0 is the application's.
struct Observations {
  std::mutex mu;
  std::map<std::pair<int, int>, std::uint64_t> inputs;
  std::map<int, int> runs;  // launch number -> times its body ran
};

enum class Spoiler { kNone, kAllocation, kFree, kPrintf, kTooManyOps };

struct Program {
  std::uint64_t seed = 0;
  int passes = 2;
  RestoreMode restore = RestoreMode::kAuto;
  Spoiler spoiler = Spoiler::kNone;
  bool nondeterministic = false;  // one kernel writes its pass number
};

struct RunResult {
  std::vector<std::vector<std::uint8_t>> device_bytes;
  std::vector<std::vector<std::uint8_t>> host_buffers;
  std::vector<ReplayRecord> records;
};

// Builds and runs one program; `replayed` wraps the middle in a range.
RunResult RunProgram(const Program& program, bool replayed, Observations& seen) {
  std::mt19937_64 rng(program.seed);
  auto pick = [&rng](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  testing::ReplayRig rig(device::host::HostPlatformOptions{.device_count = 1});
  HostPlatform& platform = rig.platform();
  ReplayOptions options;
  options.passes = program.passes;
  options.restore = program.restore;
  options.chunk_size = 4096;
  options.range_replay = true;
  options.replay_printf_kernels = false;
  if (program.spoiler == Spoiler::kTooManyOps) options.max_range_operations = 2;
  Controller& controller = rig.Configure(options);

  std::vector<StreamId> streams{platform.DefaultStream(0)};
  const std::uint64_t stream_count = pick(2, 3);
  while (streams.size() < stream_count) streams.push_back(*platform.CreateStream(0));
  std::vector<DevicePtr> buffers;
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t b = 0, n = pick(2, 5); b < n; ++b) {
    sizes.push_back(pick(1, 40000));
    buffers.push_back(*platform.Malloc(0, sizes.back()));
    std::vector<std::uint8_t> init(sizes.back());
    for (auto& byte : init) byte = static_cast<std::uint8_t>(rng());
    EXPECT_TRUE(platform.Memcpy(buffers.back(), Ptr(init.data()), init.size()).ok());
  }
  std::vector<std::vector<std::uint8_t>> host(3, std::vector<std::uint8_t>(40000));
  for (auto& buffer : host) {
    for (auto& byte : buffer) byte = static_cast<std::uint8_t>(rng());
  }
  auto event = *platform.CreateEvent(0);
  DevicePtr spare = program.spoiler == Spoiler::kFree ? *platform.Malloc(0, 256) : 0;

  auto range_of = [&](std::size_t b) {
    const std::uint64_t offset = pick(0, sizes[b] - 1);
    return std::pair{offset, pick(1, sizes[b] - offset)};
  };
  if (replayed) controller.BeginRange(0);
  StreamId last = streams.front();
  const std::uint64_t ops = pick(4, 24);
  const std::uint64_t spoil_at = pick(0, ops - 1);
  int launch_number = 0;
  for (std::uint64_t i = 0; i < ops; ++i) {
    const StreamId stream = streams[pick(0, streams.size() - 1)];
    if (stream != last) {  // every op after the one before it, across streams through the event
      EXPECT_TRUE(platform.EventRecord(event, last).ok());
      EXPECT_TRUE(platform.StreamWaitEvent(stream, event).ok());
      last = stream;
    }
    if (i == spoil_at && program.spoiler == Spoiler::kAllocation) {
      EXPECT_TRUE(platform.Malloc(0, 512).ok());
    }
    if (i == spoil_at && program.spoiler == Spoiler::kFree) {
      EXPECT_TRUE(platform.Free(spare).ok());
    }
    const bool last_op = i + 1 == ops;
    const bool force_kernel =
        (program.spoiler == Spoiler::kPrintf && i == spoil_at) || (program.nondeterministic && last_op);
    const std::uint64_t kind = force_kernel ? 0 : pick(0, 9);
    if (kind <= 4) {  // a kernel: out range = f(in range)
      const std::size_t in = pick(0, buffers.size() - 1), out = pick(0, buffers.size() - 1);
      const auto [in_off, in_len] = range_of(in);
      const auto [out_off, out_len] = range_of(out);
      const std::uint64_t salt = rng();
      const int number = launch_number++;
      const bool writes_pass = program.nondeterministic && last_op;
      Kernel kernel;
      kernel.name = "k" + std::to_string(number);
      kernel.uses_device_printf = program.spoiler == Spoiler::kPrintf && i == spoil_at;
      const DevicePtr dst_ptr = buffers[out] + out_off;
      kernel.body = [&seen, src = buffers[in] + in_off, in_len, dst = dst_ptr, out_len, salt, number,
                     writes_pass](const KernelContext& context) {
        const std::uint64_t h = base::HashBytes(Host(src), in_len) ^ salt;
        {
          std::lock_guard<std::mutex> lock(seen.mu);
          seen.inputs[{number, context.pass}] = h;
          ++seen.runs[number];
        }
        auto* bytes = static_cast<std::uint8_t*>(Host(dst));
        for (std::uint64_t j = 0; j < out_len; ++j) {
          bytes[j] = static_cast<std::uint8_t>((h >> ((j % 8) * 8)) + j +
                                               static_cast<std::uint64_t>(writes_pass ? context.pass : 0));
        }
      };
      EXPECT_TRUE(platform.Launch(stream, kernel).ok());
      if (writes_pass) {  // its output to the application's host memory, which only pass 1 may write
        EXPECT_TRUE(platform.MemcpyAsync(stream, Ptr(host[0].data()), dst_ptr, out_len).ok());
      }
    } else if (kind <= 6) {  // device -> host, asynchronous, into the application's buffer
      const std::size_t b = pick(0, buffers.size() - 1);
      const auto [off, len] = range_of(b);
      auto& buffer = host[pick(0, host.size() - 1)];
      EXPECT_TRUE(platform.MemcpyAsync(stream, Ptr(buffer.data()), buffers[b] + off, len).ok());
    } else if (kind == 7) {  // host -> device, synchronous; the buffer changes right after the call
      EXPECT_TRUE(platform.DeviceSynchronize(0).ok());
      const std::size_t b = pick(0, buffers.size() - 1);
      const auto [off, len] = range_of(b);
      auto& buffer = host[pick(0, host.size() - 1)];
      EXPECT_TRUE(platform.Memcpy(buffers[b] + off, Ptr(buffer.data()), len).ok());
      for (std::uint64_t j = 0; j < len; ++j) buffer[j] = static_cast<std::uint8_t>(buffer[j] + 1);
    } else if (kind == 8) {
      const std::size_t b = pick(0, buffers.size() - 1);
      const auto [off, len] = range_of(b);
      EXPECT_TRUE(platform.MemsetAsync(stream, buffers[b] + off, static_cast<std::uint8_t>(rng()), len).ok());
    } else {  // device -> device
      const std::size_t from = pick(0, buffers.size() - 1), to = (from + 1) % buffers.size();
      const std::uint64_t len = pick(1, std::min(sizes[from], sizes[to]));
      EXPECT_TRUE(platform.MemcpyAsync(stream, buffers[to], buffers[from], len).ok());
    }
  }
  if (replayed) controller.EndRange(0);
  EXPECT_TRUE(platform.DeviceSynchronize(0).ok());
  RunResult result;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    result.device_bytes.emplace_back(sizes[b]);
    EXPECT_TRUE(platform.Memcpy(Ptr(result.device_bytes.back().data()), buffers[b], sizes[b]).ok());
  }
  result.host_buffers = host;
  result.records = controller.records();
  return result;
}

std::string Describe(const Program& p) {
  return "seed " + std::to_string(p.seed) + ", passes " + std::to_string(p.passes) + ", spoiler " +
         std::to_string(static_cast<int>(p.spoiler));
}

void CheckProgram(const Program& program) {
  SCOPED_TRACE(Describe(program));
  Observations plain_seen, seen;
  RunResult plain = RunProgram(program, false, plain_seen);
  RunResult replayed = RunProgram(program, true, seen);
  EXPECT_TRUE(plain.records.empty());
  // (b) and (d): memory and host buffers as one plain run leaves them, replayed or declined.
  EXPECT_EQ(replayed.device_bytes, plain.device_bytes);
  EXPECT_EQ(replayed.host_buffers, plain.host_buffers);
  const int launches = static_cast<int>(plain_seen.runs.size());
  if (program.spoiler != Spoiler::kNone) {
    ASSERT_EQ(replayed.records.size(), 1u);
    const ReplayRecord& record = replayed.records.front();
    EXPECT_FALSE(record.replayed);
    EXPECT_EQ(record.kernel_name, "range 1");
    const DeclineReason expected = program.spoiler == Spoiler::kPrintf ? DeclineReason::kSideEffects
                                   : program.spoiler == Spoiler::kTooManyOps
                                       ? DeclineReason::kRangeTooLarge
                                       : DeclineReason::kAllocationInRange;
    EXPECT_EQ(record.decline_reason, expected) << record.decline_detail;
    for (const auto& [number, runs] : seen.runs) EXPECT_EQ(runs, 1) << "launch " << number;
    return;
  }
  // (c) one record per launch, one pass row per pass.
  ASSERT_EQ(static_cast<int>(replayed.records.size()), launches);
  for (int i = 0; i < launches; ++i) {
    const ReplayRecord& record = replayed.records[static_cast<std::size_t>(i)];
    EXPECT_TRUE(record.replayed) << record.decline_detail;
    EXPECT_EQ(record.replay_mode, ReplayMode::kRange);
    EXPECT_EQ(record.kernel_name, "k" + std::to_string(i));
    EXPECT_EQ(record.range_launch, static_cast<std::uint32_t>(i));
    EXPECT_EQ(record.range_launches, static_cast<std::uint32_t>(launches));
    ASSERT_EQ(record.passes.size(), static_cast<std::size_t>(program.passes));
    EXPECT_EQ(record.deterministic, !program.nondeterministic);
  }
  // (a) identical inputs in every pass, equal to the plain run's.
  for (int i = 0; i < launches; ++i) {
    const std::uint64_t expected = plain_seen.inputs.at({i, 0});
    EXPECT_EQ(seen.inputs.at({i, 0}), expected) << "launch " << i << ", the application's own run";
    for (int p = 2; p <= program.passes; ++p)
      EXPECT_EQ(seen.inputs.at({i, p}), expected) << "launch " << i << ", pass " << p;
  }
}

TEST(RangeReplayTest, RandomRangesSeeIdenticalInputsAndLeaveWhatOnePlainRunLeaves) {
  const std::uint64_t seed = EnvOr("GPUPROF_PROPERTY_SEED", 0x40);
  const std::uint64_t iterations = EnvOr("GPUPROF_PROPERTY_ITERATIONS", 150);
  for (std::uint64_t i = 0; i < iterations && !HasFatalFailure(); ++i) {
    std::mt19937_64 rng(seed + i);
    Program program;
    program.seed = seed + i;
    program.passes = static_cast<int>(2 + rng() % 3);
    program.restore = static_cast<RestoreMode>(rng() % 3);
    CheckProgram(program);
  }
}

TEST(RangeReplayTest, ANondeterministicRangeIsReportedAndLeavesTheApplicationsOwnResult) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Program program{.seed = seed, .passes = 3, .nondeterministic = true};
    CheckProgram(program);
  }
}

TEST(RangeReplayTest, EachDeclineReasonDeclinesTheWholeRangeWhichRunsOnce) {
  for (Spoiler spoiler : {Spoiler::kAllocation, Spoiler::kFree, Spoiler::kPrintf, Spoiler::kTooManyOps}) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed)
      CheckProgram(Program{.seed = seed, .passes = 3, .spoiler = spoiler});
  }
}

TEST(RangeReplayTest, CountersOverARangeTakeOneStartStopPerPassForTheWholeRangeAndCountEachLaunch) {
  testing::ReplayRig rig(device::host::HostPlatformOptions{.device_count = 1});
  HostPlatform& platform = rig.platform();
  auto backend = std::make_shared<testing::FakeCounterBackend>();
  backend->metrics["fake__a.sum"] = {"inst", 1, 10};
  backend->metrics["fake__b.sum"] = {"byte", 2, 20};  // the list needs 3 passes
  ReplayOptions options;
  options.passes = 2;
  options.range_replay = true;
  options.metrics = {"fake__a.sum", "launch__grid_size", "fake__b.sum"};
  Controller& controller = rig.Configure(options);
  controller.SetCounterBackend(backend);
  const DevicePtr buffer = *platform.Malloc(0, 64);
  std::vector<std::uint8_t> zeros(64, 0);
  ASSERT_TRUE(platform.Memcpy(buffer, Ptr(zeros.data()), zeros.size()).ok());
  constexpr int kLaunches = 5;
  std::vector<int> runs(kLaunches, 0);
  controller.BeginRange(0);
  for (int i = 0; i < kLaunches; ++i) {
    Kernel kernel;
    kernel.name = "bump" + std::to_string(i);
    kernel.shape = device::LaunchShape{.grid = {static_cast<std::uint32_t>(i + 1), 2, 1}};
    kernel.body = [&runs, i, buffer](const KernelContext&) {
      ++runs[static_cast<std::size_t>(i)];
      ++static_cast<std::uint8_t*>(Host(buffer))[i];  // in place: every pass must start from the same bytes
    };
    ASSERT_TRUE(platform.Launch(platform.DefaultStream(0), kernel).ok());
  }
  controller.EndRange(0);
  // One collection for the range, one Start/Stop per counter pass, one decode: not per launch.
  EXPECT_EQ(backend->range_begins, 1);
  EXPECT_EQ(backend->begins, 0);
  EXPECT_EQ(backend->begin_passes, 3);
  EXPECT_EQ(backend->end_passes, 3);
  EXPECT_EQ(backend->finishes, 1);
  const std::vector<ReplayRecord> records = controller.records();
  ASSERT_EQ(records.size(), static_cast<std::size_t>(kLaunches));
  for (int i = 0; i < kLaunches; ++i) {
    const ReplayRecord& record = records[static_cast<std::size_t>(i)];
    SCOPED_TRACE(record.kernel_name);
    EXPECT_TRUE(record.replayed) << record.decline_detail;
    EXPECT_TRUE(record.deterministic);
    EXPECT_EQ(record.counter_passes, 3);
    EXPECT_EQ(record.counter_status, "");
    ASSERT_EQ(record.metrics.size(), 3u);  // in the order asked, each launch its own values
    EXPECT_EQ(record.metrics[0].name, "fake__a.sum");
    EXPECT_EQ(record.metrics[0].value, 10 + i);
    EXPECT_EQ(record.metrics[0].passes, 1);
    EXPECT_EQ(record.metrics[1].name, "launch__grid_size");
    EXPECT_EQ(record.metrics[1].value, 2 * (i + 1));
    EXPECT_EQ(record.metrics[2].name, "fake__b.sum");
    EXPECT_EQ(record.metrics[2].value, 20 + i);
    EXPECT_EQ(record.metrics[2].unit, "byte");
    EXPECT_EQ(runs[static_cast<std::size_t>(i)], 1 + 1 + 3);  // its own run, pass 2, three counter passes
  }
  std::vector<std::uint8_t> after(64);
  ASSERT_TRUE(platform.Memcpy(Ptr(after.data()), buffer, after.size()).ok());
  for (int i = 0; i < kLaunches; ++i) EXPECT_EQ(after[static_cast<std::size_t>(i)], 1) << "byte " << i;
}

}  // namespace
}  // namespace gpuprof::replay
