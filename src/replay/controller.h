// The replay controller (rules R9, R11–R14, B6, C2, C4): decides per launch whether to replay,
// and runs the replay window.
//
// For a selected single-kernel launch it takes the device's window exclusively, drains the
// device (bounded), captures a snapshot, runs pass 1, and for passes 2..N restores and runs
// again; the application's completion is signalled once, after the last pass. Anything it cannot
// replay safely is declined: the launch runs exactly once with its original completion
// semantics, one warning line names the reason, and the ReplayRecord carries it.
//
// One job a file: controller.cc selects launches, declines those it must before the window and
// picks the shape of a replay; replay_window.cc is the one window path every shape runs through;
// counter_passes.* runs the counter passes of a unit.
//
// Thread-safety: Dispatch may be called from any number of threads. Ordinary launches, frees and
// transfers on a device hold its window shared (EnterDeviceShared); a replay holds it exclusive,
// so none of them interleave with a window (R13, B5). Lock order: window, then inventory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <shared_mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/synchronized.h"
#include "device/device.h"
#include "gpuprof/replay.h"
#include "replay/clock_lock.h"
#include "replay/counter_backend.h"
#include "replay/counter_passes.h"
#include "replay/inventory.h"
#include "replay/replay_unit.h"

namespace gpuprof::replay {

class RangeReplay;
class Snapshot;
struct RestoreStats;

class Controller {
 public:
  // `devices[i]` is the device of ordinal i; all must outlive the controller. Options must have
  // passed ValidateOptions.
  Controller(Inventory& inventory, std::vector<device::Device*> devices, ReplayOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // InvalidArgument naming the option and the accepted values.
  static Status ValidateOptions(const ReplayOptions& options);

  // Replaces the options (the selector's launch counts start again from zero); a launch already
  // in Dispatch finishes under the options it started with. passes == 1 pauses replay.
  // InvalidArgument as ValidateOptions, leaving the current options in force. Thread-safe. Each
  // call keeps its options until the controller goes (a few hundred bytes; a program reconfigures
  // once per recording), so the per-launch checks read them without a lock.
  Status Reconfigure(ReplayOptions options);

  // Runs one intercepted launch, replayed or not. Returns the status of the application's launch
  // (an error only when even the single unreplayed run could not be submitted); replay problems
  // never become the application's error.
  Status Dispatch(const device::LaunchRequest& request, device::LaunchExecutor& executor);

  // Whether `kernel_name` passes the selector's name test (C4), without counting a launch. A
  // backend may skip Dispatch for a launch whose name fails it, or once Exhausted().
  bool NameMatches(const std::string& kernel_name) const;
  // True when replay is off (1 pass) or the launch count cap has been reached: no later launch
  // will be replayed.
  bool Exhausted() const noexcept;
  // True when graph launches are replayed (options.graph_replay graph or node) and not
  // Exhausted(): a backend then hands every graph launch to Dispatch (its kernel nodes' names
  // decide the selection there).
  bool ReplaysGraphs() const noexcept;

  // Range replay (options.range_replay, REPLAY_SPEC.md W1-W6; controller_range.cc). A backend
  // calls BeginRange and EndRange at the range's delimiters (cudaProfilerStart/Stop, an NVTX
  // range, an optimizer step); -s/-c count ranges. Inside a range every launch, transfer and event
  // on the device is recorded as it runs (pass 1); EndRange re-issues the recording for passes
  // 2..N and publishes one record per launch. Thread-safe.
  void BeginRange(int device);
  void EndRange(int device);
  // Whether a range records on `device` now (one relaxed load).
  bool RangeRecording(int device) const noexcept;
  // A copy or memset, and an event operation, on a recording device: recorded, then issued.
  Status RecordRangeTransfer(const device::TransferArgs& args, const std::function<Status()>& issue);
  Status RecordRangeEvent(const device::EventArgs& args, const std::function<Status()>& issue);
  // Something the range on `device` cannot repeat (an allocation or free of tracked memory, W5).
  void DeclineRange(int device, DeclineReason reason, std::string detail);

  // Holds `device`'s window shared for the lifetime of the returned lock (no-op lock for an
  // unknown ordinal).
  std::shared_lock<std::shared_mutex> EnterDeviceShared(int device);

  // Receives every record as it completes (replayed or declined), on the dispatching thread.
  void SetRecordSink(std::function<void(const ReplayRecord&)> sink);
  // Every record so far, in completion order.
  std::vector<ReplayRecord> records() const;

  // The options in force (valid for the controller's life).
  const ReplayOptions& options() const noexcept;

  // The backend that collects hardware counters when the options ask for metrics (issue 19);
  // without one, a launch asked for counters is replayed and timed, and its counter_status says
  // why it has none. Thread-safe: a launch already replaying keeps the backend it started with.
  void SetCounterBackend(std::shared_ptr<CounterBackend> backend);
  // Tells the counter backend no collection is coming soon (CounterBackend::Idle): called here
  // after the selector's last launch and at Reconfigure, and by the CUDA hook when a context is
  // being destroyed or the session stops. Thread-safe.
  void IdleCounters() noexcept;

  // NVML's clock calls, for options.clock_control == kBase (C3): each replayed launch's passes,
  // timing and counter, run with the SM and memory clocks locked at base (ClockLock), restored
  // before the application's launch proceeds. Without an api, or when a device's clocks cannot be
  // locked (not root, not supported), that device's launches run at the clocks as they are, with
  // one warning naming the fix, and their records say clock_control kNone. Thread-safe.
  void SetClockApi(std::shared_ptr<ClockApi> api);

 private:
  struct Selection {
    bool selected = false;
    std::uint64_t launch_index = 0;
  };
  // The options in force and the launch counts made under them.
  struct Plan {
    ReplayOptions options;
    std::unique_ptr<std::regex> name_regex;  // selector "regex:..."
    std::atomic<std::uint64_t> matched{0};
    std::atomic<std::uint64_t> replayed{0};
    bool NameMatches(const std::string& kernel_name) const;
  };
  static std::unique_ptr<Plan> MakePlan(ReplayOptions options);
  Plan& CurrentPlan() const noexcept { return *plan_.load(std::memory_order_acquire); }
  Selection Select(Plan& plan, bool name_matches);
  Status RunUnreplayed(const device::LaunchRequest& request, device::LaunchExecutor& executor);
  // The request's device; null, with one warning line naming `launch`, for an unknown ordinal.
  device::Device* DeviceOf(const device::LaunchRequest& request, const std::string& launch);
  // C2 and R14 for one kernel (a launch's or a graph node's); nullopt when it may be replayed.
  static std::optional<std::pair<DeclineReason, std::string>> SideEffectDecline(const ReplayOptions& options,
                                                                                const std::string& kernel,
                                                                                bool uses_printf,
                                                                                bool uses_malloc);
  // The device state a snapshot cannot cover (C2 arrays, R14 peers, R6 strict); nullopt when none.
  std::optional<std::pair<DeclineReason, std::string>> DeviceStateDecline(
      const ReplayOptions& options, const device::LaunchRequest& request, ReplayRecord& record);
  void WarnPrintf(const std::string& kernel, bool uses_printf);
  // "--graph-replay graph or node (GPUPROF_REPLAY_GRAPH)", for messages.
  static std::string GraphReplayHint();
  // A launch while options.range_replay: recorded when its device records a range, else run once.
  Status DispatchInRange(Plan& plan, const device::LaunchRequest& request, device::LaunchExecutor& executor);
  // Why a launch cannot be part of a replayed range (the kernel-replay rules that apply to it).
  std::optional<std::pair<DeclineReason, std::string>> RangeLaunchDecline(
      const ReplayOptions& options, const device::LaunchRequest& request);
  device::Device* DeviceAt(int ordinal) const noexcept;
  // A graph launch with options.graph_replay graph or node (issue 24).
  Status DispatchGraph(Plan& plan, const device::LaunchRequest& request, device::LaunchExecutor& executor);
  // An open replay window (R9): the device's window held exclusively from construction to
  // destruction, its snapshot captured (OpenWindow), its clocks locked (LockClocks).
  struct Window {
    Window(std::shared_mutex& window, device::Device& device, device::LaunchExecutor& executor,
           const ReplayOptions& options);
    std::uint64_t held_ns() const;  // since the window was asked for
    const std::int64_t start_ns;
    std::unique_lock<std::shared_mutex> lock;
    device::Device& device;
    device::LaunchExecutor& executor;
    const ReplayOptions& options;
    Snapshot* snapshot = nullptr;     // the device's, once captured
    std::optional<ClockLock> clocks;  // released before the lock
  };
  // What a shape's units left for the window's close.
  struct Units {
    std::vector<ReplayRecord> records;  // one per replayed unit, in order
    // Pass 1, the application's own work, failed: its error to see; the window closes at once.
    std::optional<Status> application_failed;
    // Non-empty: why the shape stopped early; the window restores fully and the application's
    // work runs once, as it asked.
    std::string stopped;
    // The device holds records.back()'s last pass output: the final restore hashes it, and its
    // determinism is checked then (a node's is checked before the next node runs).
    bool output_on_device = false;
  };
  // One shape of replay (ARCHITECTURE.md: one replay window, four shapes): a kernel, a whole graph
  // or a range is one `unit`; a graph run node by node is a `walk` over its nodes' units.
  struct Shape {
    ReplayUnit unit;                                                        // without `walk`
    std::function<Units(Window&, const ReplayRecord& window_record)> walk;  // calls RunUnit per unit
    std::string what;       // messages: "replay of K", "node-by-node replay of graph G"
    std::string final_run;  // what follows the final restore: "the application's launch"
    std::string runs_once;  // when a walk stops: "the graph runs once"
  };

  // The one decline routine of every shape (R9): the launch runs once as the application asked,
  // one warning line names the reason (when `warn`), and the record is published. Before the
  // window (`window` null) it runs on the ordinary path, the window held shared; inside it, still
  // holding the window, and the record carries the time held.
  Status Decline(ReplayRecord record, DeclineReason reason, std::string detail,
                 device::LaunchExecutor& executor, const Window* window, bool warn = true);
  // A kernel launch, or a graph launch replayed as a whole (`graph` not null).
  Status Replay(device::Device& device, ReplayRecord record, device::LaunchExecutor& executor,
                const ReplayOptions& options, const device::GraphDescription* graph);
  // A graph launch run node by node (B8): one record per selected kernel node.
  Status ReplayNodes(device::Device& device, ReplayRecord graph_record, device::LaunchExecutor& executor,
                     const ReplayOptions& options, const device::GraphDescription& graph, Plan& plan);
  Units WalkNodes(Window& window, const ReplayRecord& graph_record, const device::GraphDescription& graph,
                  Plan& plan);

  // replay_window.cc: the one window path. Opens the window (drain, prepare, snapshot, clocks),
  // runs the shape's units, checks determinism and closes it (CloseWindow); a decline decided
  // while opening runs through Decline, inside the window.
  Status ReplayInWindow(device::Device& device, ReplayRecord record, device::LaunchExecutor& executor,
                        const ReplayOptions& options, const Shape& shape);
  // Drains, prepares and captures the device's snapshot into window.snapshot and `record`; the
  // reason to decline when it could not.
  std::optional<std::pair<DeclineReason, std::string>> OpenWindow(Window& window, ReplayRecord& record);
  void LockClocks(const ReplayOptions& options, int device, std::optional<ClockLock>& clocks,
                  ReplayRecord& record);
  // One unit's timing passes, then its counter passes. A failed pass 1 is returned (no counter
  // passes ran); later failures stop the passes with record's decline set.
  std::optional<Status> RunUnit(Window& window, ReplayRecord& record, const ReplayUnit& unit);
  // The clocks released, unit.end_passes, the final restore (when the application's launch runs
  // after, or fully when the shape stopped), determinism, the application's completion signalled
  // once (or its work run once when the shape stopped), every record published.
  Status CloseWindow(Window& window, ReplayRecord& window_record, Units& units, const Shape& shape);
  // Restores the snapshot (hashing the output on the way when the determinism check is on), then
  // runs steps.after_restore; its failure lands in `failure`.
  RestoreStats RestoreInputs(Snapshot& snapshot, const ReplayUnit& steps, const ReplayOptions& options,
                             std::uint64_t* output_hash, std::string* failure);
  // The timing passes into record.passes. A failed pass 1 (the application's own work) is
  // returned; later failures stop the passes with record's decline set.
  std::optional<Status> RunTimingPasses(Snapshot& snapshot, ReplayRecord& record, const ReplayUnit& steps,
                                        const ReplayOptions& options);
  // B6: the last pass's output hash and the comparison with pass 1.
  void CheckDeterminism(Snapshot& snapshot, ReplayRecord& record, const ReplayOptions& options);
  void Publish(const ReplayRecord& record);

  Inventory& inventory_;
  std::vector<device::Device*> devices_;
  std::mutex plans_mu_;
  std::vector<std::unique_ptr<Plan>> plans_;  // every plan made, guarded by plans_mu_; never freed early
  std::atomic<Plan*> plan_{nullptr};          // the one in force (one of plans_)
  std::unique_ptr<std::shared_mutex[]> windows_;
  // Per device, the snapshot kept across replayed launches (B3); used under the device's window.
  std::vector<std::unique_ptr<Snapshot>> snapshots_;
  std::unique_ptr<RangeReplay> range_;
  std::atomic<bool> warned_graph_{false};
  base::Synchronized<std::unordered_set<std::uint64_t>> fallback_warned_;  // graphs told they run whole
  CounterPasses counters_;
  base::Synchronized<std::shared_ptr<ClockApi>> clock_api_;
  base::Synchronized<std::unordered_set<int>> clocks_given_up_;  // devices whose clocks could not be locked
  base::Synchronized<std::unordered_set<std::string>> printf_warned_;  // kernels warned about (C2)
  base::Synchronized<std::vector<ReplayRecord>> records_;
  base::Synchronized<std::function<void(const ReplayRecord&)>> sink_;
};

}  // namespace gpuprof::replay
