// The replay window (R9, R11, R12, B6): one path for every shape of replay. It opens the window
// (the device held exclusive, drained, prepared, its snapshot captured, its clocks locked), runs
// the passes of the shape's units (timing, then counter passes), checks determinism and closes
// (the clocks released, the final restore, the application's completion signalled once).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/logging.h"
#include "replay/controller.h"
#include "replay/snapshot.h"

namespace gpuprof::replay {
namespace {

std::string JoinPasses(const std::vector<int>& passes) {
  std::string out;
  for (int pass : passes) {
    if (!out.empty()) out += ",";
    out += std::to_string(pass);
  }
  return out;
}

}  // namespace

Controller::Window::Window(std::shared_mutex& window, device::Device& device_in,
                           device::LaunchExecutor& executor_in, const ReplayOptions& options_in)
    : start_ns(base::MonotonicNowNs()),
      lock(window),
      device(device_in),
      executor(executor_in),
      options(options_in) {}

std::uint64_t Controller::Window::held_ns() const {
  return static_cast<std::uint64_t>(base::MonotonicNowNs() - start_ns);
}

Status Controller::ReplayInWindow(device::Device& device, ReplayRecord record,
                                  device::LaunchExecutor& executor, const ReplayOptions& options,
                                  const Shape& shape) {
  Window window(windows_[static_cast<std::size_t>(device.ordinal())], device, executor, options);
  record.clock_control = ClockControl::kNone;  // until the clocks are locked below
  record.caches_flushed = executor.flushes_caches();
  if (std::optional<std::pair<DeclineReason, std::string>> refused = OpenWindow(window, record)) {
    return Decline(std::move(record), refused->first, std::move(refused->second), executor, &window);
  }
  LockClocks(options, device.ordinal(), window.clocks, record);

  Units units;
  if (shape.walk) {
    units = shape.walk(window, record);
  } else {
    units.records.push_back(record);
    units.application_failed = RunUnit(window, units.records.back(), shape.unit);
    units.output_on_device = true;
  }
  if (units.application_failed) {
    // The application's own launch failed: that is its error to see, not a replay problem.
    // What it may have written is not what the arena holds any more.
    window.snapshot->Invalidate();
    for (ReplayRecord& unit_record : units.records) {
      unit_record.replay_ns = window.held_ns();
      Publish(unit_record);
    }
    return *units.application_failed;
  }
  return CloseWindow(window, record, units, shape);
}

std::optional<std::pair<DeclineReason, std::string>> Controller::OpenWindow(Window& window,
                                                                            ReplayRecord& record) {
  const ReplayOptions& options = window.options;
  // Everything queued before this launch must land before the snapshot; bounded (R14).
  if (Status drained = window.device.Synchronize(options.drain_timeout); !drained.ok()) {
    return std::pair{DeclineReason::kDrainTimeout, "device did not drain: " + drained.ToString()};
  }
  if (Status prepared = window.executor.PrepareForSnapshot(); !prepared.ok()) {
    return std::pair{DeclineReason::kIncompleteSnapshot,
                     "loading the kernel's module failed: " + prepared.ToString()};
  }
  record.untracked_writable_bytes = inventory_.untracked_writable_live_bytes();

  const SnapshotOptions snapshot_options = SnapshotOptionsFrom(options);
  Snapshot& snapshot = *snapshots_[static_cast<std::size_t>(window.device.ordinal())];
  std::int64_t capture_start = base::MonotonicNowNs();
  const bool captured = snapshot.Capture(inventory_, snapshot_options);
  record.snapshot_ns = static_cast<std::uint64_t>(base::MonotonicNowNs() - capture_start);
  if (!captured) return std::pair{DeclineReason::kIncompleteSnapshot, snapshot.failure()};
  record.snapshot_regions = snapshot.regions().size();
  record.snapshot_bytes = snapshot.total_bytes();
  record.snapshot_device_bytes = snapshot.device_bytes();
  record.snapshot_copied_bytes = snapshot.last_capture().bytes_copied;
  window.snapshot = &snapshot;
  return std::nullopt;
}

std::optional<Status> Controller::RunUnit(Window& window, ReplayRecord& record, const ReplayUnit& unit) {
  Snapshot& snapshot = *window.snapshot;
  const ReplayOptions& options = window.options;
  if (std::optional<Status> failed = RunTimingPasses(snapshot, record, unit, options)) return failed;
  counters_.Run(record, window.executor, options, unit,
                [&](std::uint64_t* output_hash, std::string* failure) {
                  return RestoreInputs(snapshot, unit, options, output_hash, failure);
                });
  return std::nullopt;
}

Status Controller::CloseWindow(Window& window, ReplayRecord& window_record, Units& units,
                               const Shape& shape) {
  const ReplayOptions& options = window.options;
  device::LaunchExecutor& executor = window.executor;
  Snapshot& snapshot = *window.snapshot;
  window.clocks.reset();  // the passes are over: the clocks go back before the application's launch
  if (shape.unit.end_passes) {
    if (Status ended = shape.unit.end_passes(); !ended.ok()) {
      GPUPROF_LOG(kError) << shape.what << ": " << ended.ToString();
    }
  }

  // Back to the inputs when the application's own launch follows (it reads the inputs every pass
  // saw and leaves the state one unreplayed run leaves), or when the shape stopped (its work then
  // runs once here, as the application asked). Like the restores between passes, only what the
  // last pass changed is written back, unless the shape stopped.
  const bool app_runs_after = executor.original_runs_after_return();
  const bool stopped = !units.stopped.empty();
  ReplayRecord* on_device =
      units.output_on_device && !units.records.back().passes.empty() ? &units.records.back() : nullptr;
  if (app_runs_after || stopped) {
    std::uint64_t output_hash = 0;
    RestoreStats restored =
        snapshot.Restore(inventory_, stopped ? RestoreMode::kFull : options.restore,
                         on_device != nullptr && options.determinism_check ? &output_hash : nullptr);
    if (on_device != nullptr && on_device->passes.back().output_hash == 0) {
      on_device->passes.back().output_hash = output_hash;
    }
    if (restored.regions_failed > 0) {
      GPUPROF_LOG(kError) << shape.what << ": " << restored.regions_failed
                          << " region(s) could not be written back before " << shape.final_run
                          << "; its results may differ from an unreplayed run";
      if (on_device != nullptr && on_device->decline_reason == DeclineReason::kNone) {
        on_device->decline_reason = DeclineReason::kRestoreFailed;
        on_device->decline_detail = "the final restore before the application's launch failed";
      }
    }
  }
  if (on_device != nullptr) CheckDeterminism(snapshot, *on_device, options);
  bool declined = stopped;
  for (ReplayRecord& unit_record : units.records) {
    unit_record.replayed = unit_record.decline_reason == DeclineReason::kNone;
    declined = declined || !unit_record.replayed;
  }
  // A stopped replay may have left the arena and the device out of step.
  if (declined) snapshot.Invalidate();

  Status status = OkStatus();
  if (stopped) {
    GPUPROF_LOG(kError) << shape.what << " stopped: " << units.stopped << "; " << shape.runs_once;
    if (!app_runs_after) status = executor.RunOriginal();
    if (units.records.empty()) {
      window_record.decline_reason = DeclineReason::kLaunchFailed;
      window_record.decline_detail = units.stopped;
      units.records.push_back(window_record);
    }
  } else {
    executor.SignalCompletion();
  }
  const std::uint64_t held_ns = window.held_ns();
  for (ReplayRecord& unit_record : units.records) {
    if (unit_record.replay_ns == 0) unit_record.replay_ns = held_ns;
    Publish(unit_record);
  }
  // The selector's last launch: what the counter backend keeps between launches can go now.
  if (!options.metrics.empty() && Exhausted()) IdleCounters();
  return status;
}

void Controller::LockClocks(const ReplayOptions& options, int device, std::optional<ClockLock>& clocks,
                            ReplayRecord& record) {
  // C3: with --clock-control base every pass (timing and counter) runs at base clocks, released
  // before the final restore. A device whose clocks could not be locked is not asked again: its
  // lock warned once, and its launches run at the clocks as they are.
  if (options.clock_control != ClockControl::kBase || clocks_given_up_.rlock()->contains(device)) return;
  const std::shared_ptr<ClockApi> clock_api = *clock_api_.rlock();
  clocks.emplace(clock_api.get(), device, ClockControl::kBase);
  if (clocks->locked()) {
    record.clock_control = ClockControl::kBase;
  } else {
    clocks_given_up_.wlock()->insert(device);
    clocks.reset();
  }
}

RestoreStats Controller::RestoreInputs(Snapshot& snapshot, const ReplayUnit& steps,
                                       const ReplayOptions& options, std::uint64_t* output_hash,
                                       std::string* failure) {
  RestoreStats restored =
      snapshot.Restore(inventory_, options.restore, options.determinism_check ? output_hash : nullptr);
  if (restored.regions_failed == 0 && steps.after_restore) {
    if (Status status = steps.after_restore(); !status.ok()) *failure = status.ToString();
  }
  return restored;
}

std::optional<Status> Controller::RunTimingPasses(Snapshot& snapshot, ReplayRecord& record,
                                                  const ReplayUnit& steps, const ReplayOptions& options) {
  const device::GraphDescription* graph = steps.graph;
  // The output of pass p is hashed by the restore before pass p + 1 (one read for both), and the
  // last pass's by the final inspection or restore.
  for (int pass = 1; pass <= options.passes; ++pass) {
    PassRecord pass_record;
    pass_record.pass = pass;
    if (pass > 1) {
      std::uint64_t output_hash = 0;
      std::string failure;
      // If the copies keep failing, stop: running again on different inputs would both
      // mismeasure and corrupt.
      RestoreStats restored = RestoreInputs(snapshot, steps, options, &output_hash, &failure);
      record.passes.back().output_hash = output_hash;
      if (restored.regions_failed > 0) {
        record.decline_reason = DeclineReason::kRestoreFailed;
        record.decline_detail = std::to_string(restored.regions_failed) +
                                " region(s) could not be written back before pass " + std::to_string(pass) +
                                ", even by full restores; replay stopped after pass " +
                                std::to_string(pass - 1);
        GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail
                            << "; device memory may differ from an unreplayed run";
        break;
      }
      if (!failure.empty()) {
        record.decline_reason = DeclineReason::kLaunchFailed;
        record.decline_detail = "running the graph's nodes before this one again for pass " +
                                std::to_string(pass) + " failed: " + failure;
        GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
        break;
      }
      pass_record.bytes_restored = restored.bytes_restored;
      pass_record.regions_restored = restored.regions_restored;
      pass_record.dirty_chunks = restored.dirty_chunks;
    }
    pass_record.start_ns = base::EpochNowNs();
    StatusOr<device::PassTiming> timing = steps.run(pass);
    if (!timing.ok()) {
      // Pass 1 is the application's own work: its failure is the application's error to see.
      if (pass == 1) return timing.status();
      record.decline_reason = DeclineReason::kLaunchFailed;
      record.decline_detail =
          "pass " + std::to_string(pass) + " failed to launch: " + timing.status().ToString();
      GPUPROF_LOG(kError) << "replay of " << record.kernel_name << ": " << record.decline_detail;
      break;
    }
    pass_record.duration_ns = timing->duration_ns;
    pass_record.sm_clock_before_khz = timing->sm_clock_before_khz;
    pass_record.sm_clock_after_khz = timing->sm_clock_after_khz;
    if (graph != nullptr) {
      for (const device::NodeTiming& node : timing->kernel_nodes) {
        GraphNodeDuration duration;
        duration.node_id = node.node_id;
        duration.duration_ns = node.duration_ns;
        for (const device::GraphNode& described : graph->nodes) {
          if (described.id == node.node_id) duration.kernel_name = described.kernel_name;
        }
        pass_record.kernel_nodes.push_back(std::move(duration));
      }
    }
    record.passes.push_back(std::move(pass_record));
  }
  return std::nullopt;
}

void Controller::CheckDeterminism(Snapshot& snapshot, ReplayRecord& record, const ReplayOptions& options) {
  if (options.determinism_check && !record.passes.empty() && record.passes.back().output_hash == 0 &&
      record.decline_reason == DeclineReason::kNone) {
    StatusOr<std::uint64_t> inspected = snapshot.Inspect(inventory_);
    if (inspected.ok()) {
      record.passes.back().output_hash = *inspected;
    } else {
      GPUPROF_LOG(kWarning) << "replay of " << record.kernel_name << ": hashing pass "
                            << record.passes.back().pass << " output failed ("
                            << inspected.status().ToString() << ")";
    }
  }
  if (options.determinism_check && !record.passes.empty() && record.passes.front().output_hash != 0) {
    std::uint64_t reference = record.passes.front().output_hash;
    for (const PassRecord& pass : record.passes) {
      if (pass.output_hash != 0 && pass.output_hash != reference)
        record.mismatched_passes.push_back(pass.pass);
    }
    record.deterministic = record.mismatched_passes.empty();
    if (!record.deterministic) {
      GPUPROF_LOG(kWarning) << "kernel " << record.kernel_name << " on device " << record.device
                            << " is nondeterministic: pass(es) " << JoinPasses(record.mismatched_passes)
                            << " wrote different bytes than pass 1 from identical inputs";
    }
  }
}

}  // namespace gpuprof::replay
