// Replay windows under concurrent load (rules R13, B5, B6), run under ThreadSanitizer too.
//
// While the test thread replays kernels on device 0, other threads allocate, free (sync and
// stream-ordered), copy and memset (sync and async), and launch unreplayed and replayed kernels
// on device 0 and device 1. Every kernel body appends to one execution log under a mutex, so the
// log's order is an order the kernels really ran in. The checks are ordering facts read from that
// log, never timings:
// - every pass of every replayed kernel saw identical inputs (its inputs include the buffers the
//   other threads keep writing, so a copy, memset or kernel landing between passes shows up);
// - no other kernel on the same device ran between the first and the last pass of a window;
// - a free issued while a window was open returned only after the window's last pass, and the
//   kernel read that buffer in every pass (a free landing between passes would be a
//   use-after-free that the sanitizers report);
// - device 1 ran kernels while a window was open on device 0 (at least once).
// Waits inside kernel bodies are bounded and only make the interleavings likely; the assertions
// hold whichever interleaving happened.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"
#include "gpuprof/replay.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::StreamId;
using device::host::HostPlatform;
using device::host::HostPlatformOptions;
using device::host::Kernel;
using device::host::KernelContext;
using gpuprof::testing::ReplayRig;

using Clock = std::chrono::steady_clock;

// A kernel body may wait for another thread to reach a point, but never unboundedly: if the other
// thread never gets there the test still finishes, and the assertions on what happened decide.
constexpr auto kBodyWaitLimit = std::chrono::seconds(2);
// How long the test thread waits for a helper thread's handshake before failing.
constexpr auto kHandshakeLimit = std::chrono::seconds(60);

constexpr int kWindowsOnDeviceZero = 100;  // replays run by the test thread
constexpr std::uint64_t kSharedBytes = 48 * 1024 + 7;

std::uint8_t* Bytes(DevicePtr p) { return reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(p)); }
DevicePtr HostAddress(const void* p) { return static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(p)); }

// Hash of [p, p+n) computed here rather than with base::HashBytes: libxxhash is an uninstrumented
// system library, so ASan would not see a kernel body reading freed memory through it.
std::uint64_t Checksum(const std::uint8_t* p, std::uint64_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull ^ n;
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 32);
}

// Read-modify-write of [p, p+n): a deterministic function of the old bytes and `salt`.
void Scramble(std::uint8_t* p, std::uint64_t n, std::uint64_t salt) {
  for (std::uint64_t i = 0; i < n; ++i) {
    p[i] = static_cast<std::uint8_t>(p[i] * 31u + static_cast<std::uint8_t>(salt >> ((i % 8) * 8)) + 1u);
  }
}

// ---- the execution log ---------------------------------------------------------------------------

enum class EventKind : std::uint8_t { kBegin, kEnd, kFreeReturned };

struct Event {
  EventKind kind = EventKind::kBegin;
  int device = 0;
  std::uint64_t launch = 0;  // kFreeReturned: the window (test-thread iteration) it belongs to
  int pass = 0;
  std::uint64_t input_hash = 0;
};

class ExecutionLog {
 public:
  void Append(const Event& event) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);
  }
  std::vector<Event> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

// Errors reported by helper threads, checked by the test thread (gtest assertions stay there).
class Errors {
 public:
  void Add(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    errors_.push_back(std::move(what));
  }
  void Check(const Status& status, const std::string& what) {
    if (!status.ok()) Add(what + ": " + status.ToString());
  }
  std::vector<std::string> all() const {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> errors_;
};

// ---- the scenario -----------------------------------------------------------------------------

struct Scenario {
  int passes = 3;
  RestoreMode restore = RestoreMode::kAuto;
};

// Hands a buffer from the test thread's window to the freeing thread: the window's pass 1 posts
// it, the freeing thread frees it (some after a memset; all must wait for the window), then
// reports done.
struct FreeHandoff {
  std::mutex mu;
  std::condition_variable cv;
  int requested = -1;  // iteration whose buffer is to be freed
  DevicePtr buffer = 0;
  std::uint64_t bytes = 0;
  std::atomic<int> issued{-1};  // iteration whose free the freeing thread is issuing
  int done = -1;                // iteration whose free has returned
  bool stop = false;
};

class ConcurrencyScenario {
 public:
  explicit ConcurrencyScenario(Scenario scenario) : scenario_(scenario), rig_(PlatformOptions()) {
    ReplayOptions options;
    options.passes = scenario.passes;
    options.restore = scenario.restore;
    options.chunk_size = 4096;
    options.selector.name = "regex:^replayed";
    rig_.Configure(options);
  }

  void Run();
  void Check();

 private:
  static HostPlatformOptions PlatformOptions() {
    HostPlatformOptions options;
    options.device_count = 2;
    return options;
  }

  HostPlatform& platform() { return rig_.platform(); }

  // Waits until pred() holds, at most kBodyWaitLimit. Once one wait has run out something is
  // already wrong (a window waiting on work it should not), so later waits give up at once and
  // the test fails fast rather than slowly.
  template <typename Pred>
  bool WaitBounded(Pred pred) {
    const auto deadline = Clock::now() + kBodyWaitLimit;
    while (!pred()) {
      if (wait_gave_up_.load(std::memory_order_relaxed) || Clock::now() > deadline) {
        wait_gave_up_.store(true, std::memory_order_relaxed);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }
  std::uint64_t NextLaunch() { return next_launch_.fetch_add(1, std::memory_order_relaxed); }

  // A kernel that logs its begin (with the hash of `inputs` read before writing) and end, and
  // scrambles `outputs` in place in between. `during` runs after the begin event.
  Kernel MakeKernel(std::string name, int device, std::vector<std::pair<DevicePtr, std::uint64_t>> inputs,
                    std::vector<std::pair<DevicePtr, std::uint64_t>> outputs,
                    std::function<void(const KernelContext&)> during = nullptr, std::uint64_t* id = nullptr) {
    const std::uint64_t launch = NextLaunch();
    if (id != nullptr) *id = launch;
    return Kernel{std::move(name),
                  [this, launch, device, inputs = std::move(inputs), outputs = std::move(outputs),
                   during = std::move(during)](const KernelContext& ctx) {
                    std::uint64_t h = launch;
                    for (const auto& [p, n] : inputs) h = h * 0x100000001b3ull ^ Checksum(Bytes(p), n);
                    for (const auto& [p, n] : outputs) h = h * 0x100000001b3ull ^ Checksum(Bytes(p), n);
                    log_.Append(Event{EventKind::kBegin, device, launch, ctx.pass, h});
                    if (during) during(ctx);
                    for (const auto& [p, n] : outputs) Scramble(Bytes(p), n, h);
                    log_.Append(Event{EventKind::kEnd, device, launch, ctx.pass, 0});
                  }};
  }

  void ReplayOnDeviceZero();                 // the test thread
  void FreeVictims();                        // frees the buffers the device-0 windows read
  void Mix(int device, std::uint64_t seed);  // random work on `device` until stopped

  Scenario scenario_;
  ExecutionLog log_;
  Errors errors_;
  std::atomic<std::uint64_t> next_launch_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> wait_gave_up_{false};
  std::atomic<std::uint64_t> device_one_kernels_{0};  // plain kernels finished on device 1
  FreeHandoff handoff_;

  DevicePtr shared_[2] = {0, 0};   // per device: read by the replayed kernels, written by everyone
  DevicePtr scratch_[2] = {0, 0};  // per device: written by unreplayed kernels on the default stream
  DevicePtr window_output_ = 0;    // scrambled in place by the test thread's replayed kernels
  std::vector<std::uint64_t> window_launches_;  // launch ids of the test thread's replays
  int frees_seen_during_window_ = 0;            // passes that saw the free issued meanwhile
  // Last, so it is destroyed first: its streams drain while the log the kernels write is alive.
  ReplayRig rig_;
};

void ConcurrencyScenario::ReplayOnDeviceZero() {
  HostPlatform& p = platform();
  std::mt19937_64 rng(0x5eed0);
  for (int i = 0; i < kWindowsOnDeviceZero; ++i) {
    // The buffer this window reads in every pass and the freeing thread frees mid-window.
    const std::uint64_t bytes =
        std::uniform_int_distribution<std::uint64_t>(1, std::uint64_t{200} * 1024)(rng);
    StatusOr<DevicePtr> victim = i % 3 == 0 ? p.MallocAsync(p.DefaultStream(0), bytes) : p.Malloc(0, bytes);
    if (!victim.ok()) {
      errors_.Add("allocating the victim: " + victim.status().ToString());
      return;
    }
    errors_.Check(p.MemsetAsync(p.DefaultStream(0), *victim, static_cast<std::uint8_t>(i), bytes),
                  "victim memset");

    // Shared with the kernel body, which runs on the stream's worker thread.
    struct WindowState {
      std::atomic<std::uint64_t> device_one_at_pass_one{0};
      std::atomic<bool> saw_free_issued{false};
    };
    auto state = std::make_shared<WindowState>();
    const DevicePtr victim_ptr = *victim;
    std::uint64_t launch = 0;
    Kernel kernel = MakeKernel(
        "replayed_window_" + std::to_string(i), 0, {{shared_[0], kSharedBytes}, {victim_ptr, bytes}},
        {{window_output_, kSharedBytes}},
        [this, state, i, victim_ptr, bytes](const KernelContext& ctx) {
          if (ctx.pass <= 1) {  // pass 0 only if the launch was (wrongly) declined
            state->device_one_at_pass_one = device_one_kernels_.load(std::memory_order_acquire);
            {
              std::lock_guard<std::mutex> lock(handoff_.mu);
              handoff_.requested = i;
              handoff_.buffer = victim_ptr;
              handoff_.bytes = bytes;
            }
            handoff_.cv.notify_all();
            // Let the freeing thread run into the window before pass 1 ends: a free that did not
            // wait would land before pass 2, which reads the buffer.
            if (WaitBounded([&] { return handoff_.issued.load(std::memory_order_acquire) >= i; })) {
              state->saw_free_issued = true;
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
          }
          if (ctx.pass == scenario_.passes) {
            // Let device 1 make progress while this window is open.
            WaitBounded([&] {
              return device_one_kernels_.load(std::memory_order_acquire) >
                     state->device_one_at_pass_one.load();
            });
          }
        },
        &launch);
    window_launches_.push_back(launch);
    errors_.Check(p.Launch(p.DefaultStream(0), kernel), "launching " + kernel.name);
    errors_.Check(p.StreamSynchronize(p.DefaultStream(0)), "synchronizing device 0's default stream");
    if (state->saw_free_issued) ++frees_seen_during_window_;

    // Do not open the next window before this one's free has returned: the freeing thread would
    // otherwise still be waiting on this window's buffer when the next window asks it to free.
    std::unique_lock<std::mutex> lock(handoff_.mu);
    if (!handoff_.cv.wait_for(lock, kHandshakeLimit, [&] { return handoff_.done >= i; })) {
      errors_.Add("window " + std::to_string(i) + ": the freeing thread never freed its buffer");
      return;
    }
  }
}

void ConcurrencyScenario::FreeVictims() {
  HostPlatform& p = platform();
  int next = 0;
  for (;;) {
    DevicePtr buffer = 0;
    std::uint64_t bytes = 0;
    {
      std::unique_lock<std::mutex> lock(handoff_.mu);
      handoff_.cv.wait(lock, [&] { return handoff_.stop || handoff_.requested >= next; });
      if (handoff_.requested < next) return;  // stopped
      buffer = handoff_.buffer;
      bytes = handoff_.bytes;
    }
    handoff_.issued.store(next, std::memory_order_release);
    // All of these must wait for the window: a free landing between passes would pull the buffer
    // from under the next pass, a memset would change its inputs.
    switch (next % 4) {
      case 0: errors_.Check(p.Free(buffer), "victim free"); break;
      case 1: errors_.Check(p.FreeAsync(p.DefaultStream(0), buffer), "victim stream-ordered free"); break;
      case 2:
        errors_.Check(p.Memset(buffer, 0xEE, bytes), "victim memset");
        errors_.Check(p.Free(buffer), "victim free");
        break;
      default:
        errors_.Check(p.MemsetAsync(p.DefaultStream(0), buffer, 0xEE, bytes), "victim memset");
        errors_.Check(p.FreeAsync(p.DefaultStream(0), buffer), "victim stream-ordered free");
        break;
    }
    log_.Append(Event{EventKind::kFreeReturned, 0, static_cast<std::uint64_t>(next), 0, 0});
    {
      std::lock_guard<std::mutex> lock(handoff_.mu);
      handoff_.done = next;
    }
    handoff_.cv.notify_all();
    ++next;
  }
}

// Random application work on one device, on a stream of its own: allocations, sync and
// stream-ordered frees, sync and async copies and memsets into the device's shared buffer,
// unreplayed kernels writing it, and replayed kernels reading it.
void ConcurrencyScenario::Mix(int device, std::uint64_t seed) {
  HostPlatform& p = platform();
  std::mt19937_64 rng(seed);
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  StatusOr<StreamId> created = p.CreateStream(device);
  if (!created.ok()) {
    errors_.Add("creating a stream: " + created.status().ToString());
    return;
  }
  const StreamId stream = *created;
  const std::string tag = "d" + std::to_string(device);
  struct Buffer {
    DevicePtr ptr = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<Buffer> own;
  std::vector<std::uint8_t> host(kSharedBytes);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 7 + seed);
  // Synchronous transfers order only after the default stream: drain ours first, like an
  // application that knows its stream is still writing the buffer.
  auto sync_own_stream = [&] { errors_.Check(p.StreamSynchronize(stream), tag + " stream sync"); };
  auto random_range = [&](std::uint64_t size) {
    std::uint64_t offset = uniform(0, size - 1);
    return std::pair<std::uint64_t, std::uint64_t>{offset, uniform(1, size - offset)};
  };

  for (std::uint64_t op = 0; !stop_.load(std::memory_order_acquire); ++op) {
    switch (uniform(0, 9)) {
      case 0: {  // allocate
        if (own.size() >= 4) break;
        std::uint64_t bytes = uniform(1, std::uint64_t{64} * 1024);
        StatusOr<DevicePtr> ptr = uniform(0, 1) == 0 ? p.MallocAsync(stream, bytes) : p.Malloc(device, bytes);
        errors_.Check(ptr.status(), tag + " allocate");
        if (!ptr.ok()) break;
        errors_.Check(p.MemsetAsync(stream, *ptr, static_cast<std::uint8_t>(op), bytes), tag + " memset");
        own.push_back({*ptr, bytes});
        break;
      }
      case 1: {  // free
        if (own.empty()) break;
        auto i = static_cast<std::size_t>(uniform(0, own.size() - 1));
        errors_.Check(uniform(0, 1) == 0 ? p.FreeAsync(stream, own[i].ptr) : p.Free(own[i].ptr),
                      tag + " free");
        own.erase(own.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case 2: {  // async memset / copy into the shared buffer
        auto [offset, bytes] = random_range(kSharedBytes);
        if (uniform(0, 1) == 0) {
          errors_.Check(p.MemsetAsync(stream, shared_[device] + offset, static_cast<std::uint8_t>(op), bytes),
                        tag + " memset");
        } else {
          errors_.Check(p.MemcpyAsync(stream, shared_[device] + offset, HostAddress(host.data()), bytes),
                        tag + " copy");
        }
        break;
      }
      case 3: {  // sync memset / copy into the shared buffer or between own buffers
        sync_own_stream();
        auto [offset, bytes] = random_range(kSharedBytes);
        if (!own.empty() && uniform(0, 1) == 0) {
          const Buffer& src = own[static_cast<std::size_t>(uniform(0, own.size() - 1))];
          errors_.Check(p.Memcpy(shared_[device] + offset, src.ptr, std::min(bytes, src.bytes)),
                        tag + " copy");
        } else {
          errors_.Check(p.Memset(shared_[device] + offset, static_cast<std::uint8_t>(op), bytes),
                        tag + " memset");
        }
        break;
      }
      case 4:
      case 5:
      case 6: {  // unreplayed kernel writing the shared buffer (or, on the default stream, scratch)
        // Kernels on two streams must not write the same bytes (a data race in any runtime): the
        // shared and own buffers belong to our stream, the scratch buffer to the default one.
        const bool on_default = uniform(0, 3) == 0;
        std::vector<std::pair<DevicePtr, std::uint64_t>> outputs;
        if (on_default) {
          outputs.emplace_back(scratch_[device], kSharedBytes);
        } else {
          auto [offset, bytes] = random_range(kSharedBytes);
          outputs.emplace_back(shared_[device] + offset, bytes);
          if (!own.empty()) {
            const Buffer& b = own[static_cast<std::size_t>(uniform(0, own.size() - 1))];
            outputs.emplace_back(b.ptr, b.bytes);
          }
        }
        Kernel kernel =
            MakeKernel("plain_" + tag, device, {}, std::move(outputs), [this, device](const KernelContext&) {
              if (device == 1) device_one_kernels_.fetch_add(1, std::memory_order_release);
            });
        errors_.Check(p.Launch(on_default ? p.DefaultStream(device) : stream, kernel), tag + " launch");
        break;
      }
      case 7: {  // replayed kernel reading the shared buffer, scrambling an own buffer
        if (own.empty()) break;
        const Buffer& b = own[static_cast<std::size_t>(uniform(0, own.size() - 1))];
        Kernel kernel =
            MakeKernel("replayed_" + tag, device, {{shared_[device], kSharedBytes}}, {{b.ptr, b.bytes}});
        errors_.Check(p.Launch(stream, kernel), tag + " replayed launch");
        break;
      }
      default: sync_own_stream(); break;
    }
    if (op % 8 == 7) sync_own_stream();  // bounds the queue
  }
  sync_own_stream();
  for (const Buffer& b : own) errors_.Check(p.Free(b.ptr), tag + " final free");
}

void ConcurrencyScenario::Run() {
  HostPlatform& p = platform();
  for (int d = 0; d < 2; ++d) {
    StatusOr<DevicePtr> shared = p.Malloc(d, kSharedBytes);
    ASSERT_TRUE(shared.ok()) << shared.status().ToString();
    shared_[d] = *shared;
    ASSERT_TRUE(p.Memset(shared_[d], 0x5A, kSharedBytes).ok());
    StatusOr<DevicePtr> scratch = p.Malloc(d, kSharedBytes);
    ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
    scratch_[d] = *scratch;
    ASSERT_TRUE(p.Memset(scratch_[d], 0x22, kSharedBytes).ok());
  }
  StatusOr<DevicePtr> output = p.Malloc(0, kSharedBytes);
  ASSERT_TRUE(output.ok());
  window_output_ = *output;
  ASSERT_TRUE(p.Memset(window_output_, 0x11, kSharedBytes).ok());

  std::thread freer([this] { FreeVictims(); });
  std::thread mix0([this] { Mix(0, 0x5eed1); });
  std::thread mix1([this] { Mix(1, 0x5eed2); });
  // Device 1's first kernel before the first window, so every window can see it progress.
  WaitBounded([&] { return device_one_kernels_.load(std::memory_order_acquire) > 0; });

  ReplayOnDeviceZero();

  stop_.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(handoff_.mu);
    handoff_.stop = true;
  }
  handoff_.cv.notify_all();
  freer.join();
  mix0.join();
  mix1.join();
  ASSERT_TRUE(p.DeviceSynchronize(0).ok());
  ASSERT_TRUE(p.DeviceSynchronize(1).ok());
}

void ConcurrencyScenario::Check() {
  for (const std::string& error : errors_.all()) ADD_FAILURE() << error;
  const std::vector<Event> events = log_.events();
  const std::vector<ReplayRecord> records = rig_.controller()->records();

  // Every replay was a replay: no faults here, so nothing is declined, and B6 sees no
  // nondeterminism in deterministic kernels.
  for (const ReplayRecord& r : records) {
    EXPECT_TRUE(r.replayed) << r.kernel_name << " declined: " << DeclineReasonName(r.decline_reason) << ": "
                            << r.decline_detail;
    EXPECT_EQ(r.passes.size(), static_cast<std::size_t>(scenario_.passes)) << r.kernel_name;
    EXPECT_TRUE(r.deterministic) << r.kernel_name;
  }

  // Per launch: where its first and last events are in the log, its passes and input hashes.
  struct Launch {
    int device = 0;
    std::size_t first = SIZE_MAX;
    std::size_t last = 0;
    std::vector<int> passes;            // from begin events, in log order
    std::vector<std::uint64_t> inputs;  // input hash per begin event
    int ends = 0;
  };
  std::map<std::uint64_t, Launch> launches;
  std::map<std::uint64_t, std::size_t> free_returned;  // window iteration -> log index
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::kFreeReturned) {
      free_returned[e.launch] = i;
      continue;
    }
    Launch& l = launches[e.launch];
    l.device = e.device;
    l.first = std::min(l.first, i);
    l.last = std::max(l.last, i);
    if (e.kind == EventKind::kBegin) {
      l.passes.push_back(e.pass);
      l.inputs.push_back(e.input_hash);
    } else {
      ++l.ends;
    }
  }

  std::size_t replayed = 0;
  std::vector<int> expected_passes;
  for (int pass = 1; pass <= scenario_.passes; ++pass) expected_passes.push_back(pass);
  for (const auto& [id, l] : launches) {
    EXPECT_EQ(static_cast<std::size_t>(l.ends), l.passes.size())
        << "launch " << id << " did not finish every run";
    if (l.passes.size() == 1 && l.passes[0] == 0) continue;  // unreplayed: ran once
    ++replayed;
    EXPECT_EQ(l.passes, expected_passes) << "launch " << id << " on device " << l.device;
    for (std::size_t k = 1; k < l.inputs.size(); ++k) {
      EXPECT_EQ(l.inputs[k], l.inputs[0]) << "launch " << id << " on device " << l.device << ": pass "
                                          << k + 1 << " saw different inputs than pass 1";
    }
  }
  EXPECT_EQ(replayed, records.size()) << "every replayed launch has a record, every record a replayed launch";

  // Isolation: nothing else on a window's device ran between its first and its last pass.
  // A launch's span is [first event, last event]; a window's span must not intersect any other
  // launch's span on the same device (which also rules out one that began before and ended after).
  std::size_t windows_checked = 0;
  for (const auto& [id, window] : launches) {
    if (window.passes.size() < 2) continue;
    ++windows_checked;
    for (const auto& [other_id, other] : launches) {
      if (other_id == id || other.device != window.device) continue;
      bool disjoint = other.last < window.first || other.first > window.last;
      EXPECT_TRUE(disjoint) << "launch " << other_id << " (log " << other.first << ".." << other.last
                            << ") ran inside the window of replayed launch " << id << " (log " << window.first
                            << ".." << window.last << ") on device " << window.device;
    }
  }
  EXPECT_EQ(windows_checked, records.size());

  // The test thread's windows: the frees waited, and device 1 made progress during one at least.
  ASSERT_EQ(window_launches_.size(), static_cast<std::size_t>(kWindowsOnDeviceZero));
  int device_one_during_window = 0;
  for (std::size_t i = 0; i < window_launches_.size(); ++i) {
    auto it = launches.find(window_launches_[i]);
    ASSERT_NE(it, launches.end()) << "window " << i << " never ran";
    const Launch& window = it->second;
    ASSERT_EQ(free_returned.count(i), 1u) << "window " << i << "'s buffer was never freed";
    EXPECT_GT(free_returned[i], window.last)
        << "window " << i << ": the free of a buffer it reads returned before its last pass ended";
    bool progressed = false;
    for (std::size_t e = window.first; e < window.last && !progressed; ++e) {
      progressed = events[e].kind != EventKind::kFreeReturned && events[e].device == 1;
    }
    device_one_during_window += progressed ? 1 : 0;
  }
  EXPECT_GT(frees_seen_during_window_, 0) << "no free was issued while a window was open";
  EXPECT_GT(device_one_during_window, 0) << "device 1 never ran a kernel while device 0's window was open";
  std::cout << "windows on device 0: " << kWindowsOnDeviceZero
            << ", frees issued inside a window: " << frees_seen_during_window_
            << ", windows with device-1 kernels inside: " << device_one_during_window
            << ", launches logged: " << launches.size() << ", replayed: " << replayed << std::endl;
}

TEST(ReplayConcurrencyTest, ThreePassAutoRestoreWindowsStayIsolatedUnderConcurrentWork) {
  ConcurrencyScenario scenario(Scenario{3, RestoreMode::kAuto});
  scenario.Run();
  if (::testing::Test::HasFatalFailure()) return;
  scenario.Check();
}

TEST(ReplayConcurrencyTest, FourPassFullRestoreWindowsStayIsolatedUnderConcurrentWork) {
  ConcurrencyScenario scenario(Scenario{4, RestoreMode::kFull});
  scenario.Run();
  if (::testing::Test::HasFatalFailure()) return;
  scenario.Check();
}

}  // namespace
}  // namespace gpuprof::replay
