// The replay controller (rules R9, R11–R14, B6, C2, C4): decides per launch whether to replay,
// and runs the replay window.
//
// For a selected single-kernel launch it takes the device's window exclusively, drains the
// device (bounded), captures a snapshot, runs pass 1, and for passes 2..N restores and runs
// again; the application's completion is signalled once, after the last pass. Anything it cannot
// replay safely is declined: the launch runs exactly once with its original completion
// semantics, one warning line names the reason, and the ReplayRecord carries it.
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
#include <regex>
#include <shared_mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/synchronized.h"
#include "device/device.h"
#include "gpuprof/replay.h"
#include "replay/clock_lock.h"
#include "replay/counter_backend.h"
#include "replay/inventory.h"

namespace gpuprof::replay {

class Snapshot;

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
  Selection Select(Plan& plan, const device::LaunchRequest& request);
  Status RunUnreplayed(const device::LaunchRequest& request, device::LaunchExecutor& executor);
  Status Replay(device::Device& device, ReplayRecord record, device::LaunchExecutor& executor,
                const ReplayOptions& options);
  void Publish(const ReplayRecord& record);
  // The counter passes and launch metrics of one replayed launch (issue 19), after its timing
  // passes; fills record.metrics, counter_passes and counter_status. False when a restore or a
  // pass failed and the replay must stop (record's decline set).
  bool CollectMetrics(Snapshot& snapshot, ReplayRecord& record, device::LaunchExecutor& executor,
                      const ReplayOptions& options);
  void WarnNoCounters(const ReplayRecord& record);

  Inventory& inventory_;
  std::vector<device::Device*> devices_;
  std::mutex plans_mu_;
  std::vector<std::unique_ptr<Plan>> plans_;  // every plan made, guarded by plans_mu_; never freed early
  std::atomic<Plan*> plan_{nullptr};          // the one in force (one of plans_)
  std::unique_ptr<std::shared_mutex[]> windows_;
  // Per device, the snapshot kept across replayed launches (B3); used under the device's window.
  std::vector<std::unique_ptr<Snapshot>> snapshots_;
  std::atomic<bool> warned_graph_{false};
  base::Synchronized<std::shared_ptr<CounterBackend>> counter_backend_;  // may be set while launches run
  base::Synchronized<std::unordered_set<std::string>> counter_warned_;   // counter_status texts warned about
  base::Synchronized<std::shared_ptr<ClockApi>> clock_api_;
  base::Synchronized<std::unordered_set<int>> clocks_given_up_;  // devices whose clocks could not be locked
  base::Synchronized<std::unordered_set<std::string>> printf_warned_;  // kernels warned about (C2)
  base::Synchronized<std::vector<ReplayRecord>> records_;
  base::Synchronized<std::function<void(const ReplayRecord&)>> sink_;
};

}  // namespace gpuprof::replay
