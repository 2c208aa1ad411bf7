// Range replay's device side (REPLAY_SPEC.md W3, W4): the operations of one recorded range and
// the backend calls that record a launch and re-issue a whole range.
//
// While a range records, every operation the application issues to the device is appended to a
// RangeLog as it is issued: launches through the backend's own record of them (function, shape,
// argument bytes, copied at the call), copies with their host sources copied at the call, memsets,
// event records and waits. For passes 2..N the engine restores the snapshot and hands the log to
// Device::ReissueRange, which runs it again on the backend's own streams in the original order and
// with the original dependencies; a copy into host memory lands in the backend's scratch memory,
// so the application's host memory is written once, by its own execution.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device/device.h"

namespace gpuprof::device {

// A launch as the backend recorded it at the application's call: enough to issue it again,
// however the application's own arguments change afterwards.
class RecordedLaunch {
 public:
  virtual ~RecordedLaunch() = default;
  virtual const std::string& kernel_name() const noexcept = 0;
  // The application's own execution's duration (pass 1), once the device has drained; 0 where
  // the backend measures it elsewhere (CUDA: CUPTI's kernel records).
  virtual std::uint64_t original_duration_ns() const noexcept { return 0; }
  // Where the backend measures pass 1 elsewhere: the application's launch's id in that trace
  // (CUDA: CUPTI's correlation id of the call); 0 otherwise.
  virtual std::uint64_t application_launch_id() const noexcept { return 0; }
  // The launch's shape for launch__* metrics; Unimplemented where the backend does not know it.
  virtual StatusOr<LaunchShape> shape() const {
    return UnimplementedError("the launch's shape was not recorded");
  }
};

enum class RangeOpKind : std::uint8_t {
  kLaunch,
  kCopy,
  kMemset,
  kEventRecord,  // `event` recorded on `stream`
  kEventWait,    // `stream` waits for `event`'s latest record
};

struct RangeOp {
  RangeOpKind kind = RangeOpKind::kLaunch;
  StreamId stream = 0;
  std::shared_ptr<const RecordedLaunch> launch;  // kLaunch
  std::uint32_t launch_index = 0;                // kLaunch: its place among the range's launches
  DevicePtr dst = 0;                             // kCopy / kMemset
  DevicePtr src = 0;                             // kCopy from device memory
  std::uint64_t bytes = 0;                       // kCopy / kMemset
  std::uint8_t value = 0;                        // kMemset
  // kCopy from host memory: the bytes as they were at the call (the application may reuse the
  // buffer before the range ends).
  std::vector<std::uint8_t> host_source;
  // kCopy into host memory: re-issued into scratch memory, never into `dst`.
  bool to_host = false;
  std::uint64_t event = 0;  // kEventRecord / kEventWait: the application's event
};

// One re-issued pass: its wall time on the device, and each launch's duration by launch_index.
struct RangePassTiming {
  std::uint64_t duration_ns = 0;
  std::vector<std::uint64_t> launch_ns;
};

// What the backend is asked to do around each launch of a re-issued pass.
struct ReissueOptions {
  // B7/W6: flush the L2 cache before the pass (before every launch with flush_each_launch).
  bool flush_caches = false;
  bool flush_each_launch = false;
  // A counter pass: its launches are counted, not timed (no kernel records are kept for them).
  bool counter_pass = false;
};

}  // namespace gpuprof::device
