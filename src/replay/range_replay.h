// Range replay (REPLAY_SPEC.md W1-W6): one snapshot and one pass set for a whole stretch of a
// device's work, results per launch.
//
// Begin (a delimiter: cudaProfilerStart, an NVTX range, an optimizer step) drains the device and
// brings its snapshot up to date (W2); from then on every operation issued to that device, from
// any thread, is recorded as the application runs it, which is pass 1 (W3): launches through the
// backend's record of them, copies with their host sources copied at the call, memsets, event
// records and waits. End drains and, unless something in the range could not be repeated
// faithfully (W5: the range is then declined whole, one record with the reason), keeps what the
// application's execution wrote, runs passes 2..N (restore, re-issue through Device::ReissueRange,
// W4), then with metrics the counter passes over the whole range (W7), checks determinism over the
// range's output (B6), and puts back exactly what the
// application's own execution left. Each launch gets one record with one pass row per pass (W6).
//
// The controller owns one RangeReplay and hands it the device's window, snapshot and record sink;
// RangeReplay decides nothing about single launches (the controller's declines are passed in).
//
// Thread-safety: Begin, End and the Record* calls may come from any thread. Each device's range
// state has its own mutex, held while an operation is recorded and issued, so the log's order is
// the order the runtime received the operations in.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "device/device.h"
#include "device/range.h"
#include "gpuprof/replay.h"
#include "replay/inventory.h"

namespace gpuprof::replay {

class CounterPasses;
class Snapshot;

// Why a launch may not be part of a replayed range (the controller's per-launch rules).
using LaunchDecline = std::optional<std::pair<DeclineReason, std::string>>;

class RangeReplay {
 public:
  // What End needs of the controller for one device.
  struct DeviceAccess {
    device::Device& device;
    Snapshot& snapshot;
    std::shared_mutex& window;
    CounterPasses* counters = nullptr;  // with options.metrics: the counter passes (W7)
  };

  RangeReplay(Inventory& inventory, std::size_t device_count);
  ~RangeReplay();
  RangeReplay(const RangeReplay&) = delete;
  RangeReplay& operator=(const RangeReplay&) = delete;

  // Whether a range is recording on `device` now; one relaxed load.
  bool Recording(int device) const noexcept;

  // W1/W2: a range starts on `device`. A delimiter inside an open range is ignored with a note;
  // a range the selector skips (`selected` false) is not recorded. Returns false when the range
  // could not start (its record, declined, went to `publish`).
  bool Begin(const DeviceAccess& access, const ReplayOptions& options, bool selected,
             const std::function<void(const ReplayRecord&)>& publish);
  // W4: the range on `device` ends: passes 2..N, the records to `publish`. Nothing happens when no
  // range records on the device.
  void End(const DeviceAccess& access, const ReplayOptions& options,
           const std::function<void(const ReplayRecord&)>& publish);

  // W3: records a launch of a recording range and runs it (the application's pass 1).
  // `decline`: the controller's reason why this launch cannot be repeated (the range is then
  // declined, and every later operation of it runs unrecorded).
  Status RecordLaunch(const device::LaunchRequest& request, device::LaunchExecutor& executor,
                      const ReplayOptions& options, LaunchDecline decline);
  // W3: records a copy or memset on `device` and issues it through `issue`. `classify` tells
  // where an address lives (device-local memory of which device, or -1 for host memory).
  Status RecordTransfer(const device::TransferArgs& args, const ReplayOptions& options,
                        const std::function<int(device::DevicePtr)>& owner_of,
                        const std::function<Status()>& issue);
  Status RecordEvent(const device::EventArgs& args, const std::function<Status()>& issue);
  // W5: something in the range cannot be re-issued (an allocation or free of tracked memory, a
  // host function, ...): the range on `device` is declined with this reason.
  void Decline(int device, DeclineReason reason, std::string detail);

 private:
  struct DeviceRange;
  DeviceRange* RangeOf(int device) const noexcept;
  // Appends under the range's mutex (held by the caller); false when the range is declined.
  bool Append(DeviceRange& range, device::RangeOp op, const ReplayOptions& options);
  void DeclineLocked(DeviceRange& range, DeclineReason reason, std::string detail);
  // End's passes, with the recording closed and the device drained.
  void RunPasses(const DeviceAccess& access, DeviceRange& range, const ReplayOptions& options,
                 const std::function<void(const ReplayRecord&)>& publish);

  Inventory& inventory_;
  std::vector<std::unique_ptr<DeviceRange>> ranges_;
};

}  // namespace gpuprof::replay
