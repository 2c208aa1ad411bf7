// The counter passes of a replayed unit (issue 19): after the unit's timing passes, the counter
// backend plans the metric list, and each counter pass restores the unit's inputs, calls
// BeginPass, runs the unit and EndPass, until the backend has every pass; launch__* metrics come
// from the launch itself, with no pass.
//
// A class of its own, owned by the Controller: it alone holds the counter backend and the
// warnings about missing counters, and the replay window calls it once per unit.
//
// Thread-safety: Run is called under the unit's device window (so never twice at once for one
// device); SetBackend and Idle may be called from any thread while launches run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/synchronized.h"
#include "device/device.h"
#include "gpuprof/replay.h"
#include "replay/counter_backend.h"
#include "replay/replay_unit.h"
#include "replay/snapshot.h"

namespace gpuprof::replay {

class CounterPasses {
 public:
  // Puts the unit's inputs back before a counter pass (the snapshot's restore, then the unit's
  // after_restore): the restore's figures, with the output it overwrote hashed into `output_hash`
  // when the determinism check is on, and after_restore's failure in `failure`.
  using RestoreInputs = std::function<RestoreStats(std::uint64_t* output_hash, std::string* failure)>;

  // A launch already replaying keeps the backend it started with.
  void SetBackend(std::shared_ptr<CounterBackend> backend);
  // CounterBackend::Idle: no collection is coming soon.
  void Idle() noexcept;

  // With options.metrics, after the unit's timing passes (when they did not stop): fills
  // record.metrics, counter_passes and counter_status, and warns once per counter_status text. A
  // restore or pass that fails stops the replay: record's decline is set and logged.
  void Run(ReplayRecord& record, device::LaunchExecutor& executor, const ReplayOptions& options,
           const ReplayUnit& unit, const RestoreInputs& restore_inputs);

  // Range replay (W7), after the range's timing passes: each counter pass restores the range's
  // inputs (`restore`: false when it failed) and re-issues the whole range (`reissue`) between
  // BeginPass and EndPass; one decode gives every launch its metrics. records[i] is launch i's,
  // shapes[i] its shape for launch__* metrics. False when a restore or a pass failed (`failure`
  // says which; the records' metrics stay empty).
  bool RunRange(std::vector<ReplayRecord>& records, int device, const ReplayOptions& options,
                const std::vector<StatusOr<device::LaunchShape>>& shapes,
                const std::function<bool()>& restore, const std::function<Status(int pass)>& reissue,
                std::string* failure);

 private:
  // False when a restore or a pass failed and the replay must stop (record's decline set).
  bool Collect(ReplayRecord& record, device::LaunchExecutor& executor, const ReplayOptions& options,
               const ReplayUnit& unit, const RestoreInputs& restore_inputs);
  void WarnNoCounters(const ReplayRecord& record);

  base::Synchronized<std::shared_ptr<CounterBackend>> backend_;  // may be set while launches run
  base::Synchronized<std::unordered_set<std::string>> warned_;   // counter_status texts warned about
};

}  // namespace gpuprof::replay
