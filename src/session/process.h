// ProcessSession: the one Session of this process, behind the C API (gpuprof_c.h).
//
// It counts starts (gpuprof_start joins a running session; the last gpuprof_stop stops it),
// attaches to another copy of libgpuprof.so that already runs a session instead of starting a
// second one, stops the session at exit, and handles fork(): the child abandons the parent's
// session (never stopping, destroying or writing it) and, when the configuration follows
// children, starts its own session under its own pid.
//
// One instance per copy of the library, created on first use and never destroyed (exit handlers,
// fork handlers and other copies may reach it until the process ends).
//
// Locks. `lifecycle_` serializes Start/Stop/exit (they may take seconds: DB creation,
// finalization); `state_` guards the small shared state and is held only for pointer and counter
// updates, never across a Session call or a call into another copy. The fork handlers take both
// (so a child never inherits them held by a thread it does not have), except `lifecycle_` when
// the forking thread itself holds it (a driver that forks from inside a start).
//
// Results are CallResult: a gpuprof_status code and the reason, without the call's name (the C
// layer adds that).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/synchronized.h"
#include "gpuprof/gpuprof_c.h"
#include "replay/counter_backend.h"
#include "session/device_collector.h"
#include "session/replay_settings.h"
#include "session/session.h"
#include "trace/records.h"

namespace gpuprof::session {

struct CallResult {
  int code = GPUPROF_OK;
  std::string message;
  bool ok() const noexcept { return code == GPUPROF_OK; }
};

// The result of a call forwarded to another copy's `table` (`code` from it), with that copy's reason.
CallResult Forwarded(const gpuprof_session_v1* table, int code);

// The device collector factory of this build: the CUPTI subscriber with GPUPROF_ENABLE_CUDA,
// none otherwise.
DeviceCollectorFactory DefaultDeviceCollectorFactory();

// The metrics the counter backend of this build offers for `device` (or, `chip` not empty, for that
// chip): CUPTI's with GPUPROF_ENABLE_CUDA (cupti/range_profiler_backend.h); otherwise Unavailable,
// saying that hardware counters need the CUDA build.
StatusOr<std::vector<replay::MetricInfo>> QueryDeviceMetrics(int device, std::string_view chip);
// `metrics` as gpuprof_query_metrics_v1's JSON array.
std::string MetricsJson(const std::vector<replay::MetricInfo>& metrics);

class ProcessSession {
 public:
  static ProcessSession& Get();

  // `config_json` may be null. `started_by` is stored with the run ("api", "injection").
  CallResult Start(const char* config_json, std::string_view started_by);
  // Joins the running session owned by this copy (another copy's acquire).
  CallResult Acquire();
  CallResult Stop();
  CallResult Flush();
  // gpuprof_window_begin_v1 / _end_v1 / _db_v1 (arguments checked by the caller).
  CallResult WindowBegin(const char* out_dir);
  CallResult WindowEnd();
  CallResult WindowDb(char* path, std::size_t path_size);
  // `message` is validated by the caller (non-null, NUL-terminated, within the size limit).
  CallResult Mark(const char* message);
  CallResult RangeStart(const char* message, std::uint64_t* range_id);
  // With a domain and (a range) a device link; the struct is checked by the caller.
  CallResult MarkV1(const gpuprof_mstx_v1& mark);
  CallResult RangeStartV1(const gpuprof_mstx_v1& range, std::uint64_t* range_id);
  CallResult RangeEnd(std::uint64_t range_id);
  // A framework record (validated by the caller) for the running session, or forwarded to the
  // copy that owns it.
  CallResult RecordTorchOp(const gpuprof_torch_op_v1& op);
  CallResult RecordAllocatorEvent(const gpuprof_allocator_event_v1& event);
  CallResult RecordGcEvent(const gpuprof_gc_event_v1& event);
  CallResult RecordRange(const gpuprof_range_v1& range);
  CallResult NameThread(std::uint32_t tid, const char* name);
  CallResult DeviceCorrelation(gpuprof_device_correlation_v1* out);
  // gpuprof_configure_replay_settings_v1: `count` settings by JSON key (`keys`, `values` non-null
  // arrays, checked by the caller) through session/replay_settings.h, then the session's replay path.
  CallResult ConfigureReplaySettings(const char* const* keys, const char* const* values, std::size_t count);
  // `config` is non-null with a v1 size (checked by the caller): its fields as the settings they
  // stand for, the same way.
  CallResult ConfigureReplay(const gpuprof_replay_config_v1& config);
  // gpuprof_replay_step_boundary_v1: DeviceCollector::ReplayStepBoundary of the running session.
  CallResult ReplayStepBoundary();

  // This copy's table while it owns a running session, else null. Lock-free.
  const gpuprof_session_v1* ActiveTable() const noexcept;
  // The session this copy owns (null when none, or when attached to another copy's).
  std::shared_ptr<Session> current();

  // The exit handler's body: stops the session this copy owns, whatever its start count.
  void StopAtExit() noexcept;
  // gpuprof_add_signal_stop_hook_v1.
  CallResult AddSignalStopHook(void (*hook)());
  // A finalizing signal (signal_finalizer.h): the registered hooks, then StopAtExit.
  void StopOnSignal() noexcept;
  void PrepareFork() noexcept;
  void ParentAfterFork() noexcept;
  void ChildAfterFork() noexcept;

 private:
  struct State {
    std::shared_ptr<Session> session;              // owned by this copy
    int starts = 0;                                // of `session`, or of `attached`
    const gpuprof_session_v1* attached = nullptr;  // another copy's session
    std::uint32_t fork_parent_pid = 0;             // set in a fork child that does not profile
    // Sessions inherited from a parent: kept reachable and never destroyed in the child.
    // Capacity is reserved while starting, so the fork child handler does not allocate for it.
    std::vector<std::shared_ptr<Session>> abandoned;
  };

  // A mutex that knows its holder, so the fork handler can tell "held by the forking thread".
  class OwnedMutex {
   public:
    void lock() {
      mu_.lock();
      owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
    void unlock() {
      owner_.store(std::thread::id(), std::memory_order_relaxed);
      mu_.unlock();
    }
    bool HeldByMe() const noexcept {
      return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
    }

   private:
    std::mutex mu_;
    std::atomic<std::thread::id> owner_{};
  };

  ProcessSession() = default;

  CallResult NotStarted(const State& state) const;
  // The one way of both replay calls: parse and check `named`, then configure this copy's session
  // or `forward` to the copy whose session runs.
  using ForwardReplay = std::function<CallResult(const gpuprof_session_v1* table)>;
  CallResult ConfigureReplaySettings(std::span<const NamedSetting> named, const ForwardReplay& forward);
  // What a call acts on while a session runs: this copy's session, or the other copy's table it
  // attached to (exactly one is set). NotStarted when neither runs.
  struct Target {
    std::shared_ptr<Session> session;
    const gpuprof_session_v1* attached = nullptr;
  };
  CallResult Running(Target* target);
  const gpuprof_session_v1* FindOtherCopy() const;
  // Appends `record` to this copy's session, or calls `forward` with the owning copy's table.
  template <typename Forward>
  CallResult Record(trace::Record&& record, Forward forward);
  void RegisterProcessHooks();
  void ReleaseForkLocks() noexcept;

  OwnedMutex lifecycle_;
  base::Synchronized<State, std::mutex> state_;
  std::atomic<bool> published_{false};
  bool hooks_registered_ = false;  // guarded by lifecycle_

  // Held from PrepareFork to the matching after-fork handler.
  std::optional<base::Synchronized<State, std::mutex>::WriteLocked> fork_state_lock_;
  bool fork_holds_lifecycle_ = false;
};

}  // namespace gpuprof::session
