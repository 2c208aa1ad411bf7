// DeviceCollector: what the Session needs from a source of device activity (the CUPTI subscriber
// on NVIDIA; a fake in tests). The Session works without one (CPU-only runs, CUPTI slot taken).
//
// Lifetime: the Session creates it through a DeviceCollectorFactory at Start, calls Start once,
// Flush any number of times, Stop once, then destroys it. After Stop returns the collector calls
// neither hook again.
//
// Threads: Start/Flush/Stop are called from the Session's control paths (Start, gpuprof_flush,
// Stop: the application's thread, the atexit handler, or a teardown hook). `hooks.sink` may be
// called from any thread, concurrently. `hooks.on_teardown` may be called from any thread, at most
// once, but never from inside Start; the Session stops on it and calls this collector's Flush and
// Stop from within that call, so the collector must accept those calls there (re-entrantly).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuprof/replay.h"
#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::session {

struct SessionConfig;
struct ReplaySettings;

struct DeviceCollectorHooks {
  // Delivers one translated record. Never blocks; returns false when the record was dropped
  // (buffer cap, session stopping); the collector may count that.
  std::function<bool(trace::Record&&)> sink;
  // The device side is going away for good (the last CUDA context is being destroyed, the driver
  // is unloading): the Session flushes this collector, stops it and finalizes the DB.
  std::function<void()> on_teardown;
};

class DeviceCollector {
 public:
  virtual ~DeviceCollector() = default;

  // The devices to list in the DB (NPU_INFO) as (ordinal, name); called once, before Start. Empty
  // when unknown (e.g. the driver is still initializing).
  virtual std::vector<std::pair<std::int32_t, std::string>> Devices() { return {}; }
  // The same at the session's stop, after Stop(), asked when Devices() had none (the CUDA injection
  // starts the session inside cuInit; a script may start it before CUDA is initialized). Empty: unknown.
  virtual std::vector<std::pair<std::int32_t, std::string>> DevicesAtStop() { return {}; }

  // The records the device side lost before they reached the sink, per source (db/lost_records.h
  // ids, e.g. those CUPTI dropped for want of a buffer), for the DB's record of losses. Called
  // after Stop(). Default: none counted.
  virtual std::vector<std::pair<std::string, std::uint64_t>> LostRecords() { return {}; }

  // Begins collecting into `hooks.sink`. An error (e.g. Unavailable: the CUPTI slot is held by
  // another tool) leaves the Session running without device data; the message says why.
  virtual Status Start(DeviceCollectorHooks hooks) = 0;
  // Delivers every record collected so far to the sink before returning (best effort: records
  // still in flight on the device arrive with a later Flush or Stop).
  virtual void Flush() = 0;
  // Flushes and stops collecting; idempotent.
  virtual void Stop() = 0;

  // Functions that tag the device work the calling thread launches with a framework op's id
  // until the matching pop (CUPTI external correlation), valid for the life of the process; null
  // when this collector cannot tag (the default). Records of the tags arrive as
  // trace::ExternalCorrelation. Called after a successful Start.
  struct CorrelationFunctions {
    int (*push)(std::uint64_t id) = nullptr;  // 0 on success
    int (*pop)() = nullptr;
  };
  virtual CorrelationFunctions Correlation() const { return {}; }

  // Kernel replay chosen by the program (gpuprof.profile(kernel_replay=...)): new replay settings
  // (session/replay_settings.h) for the launches from now on, passes == 1 pausing; the collector
  // applies them as it applies the process's own at Start (ReplayOptionsFrom). FailedPrecondition
  // naming how to start the process so it can replay, or why a setting cannot change now;
  // InvalidArgument for bad options. Called after a successful Start.
  virtual Status ConfigureReplay(const ReplaySettings& settings) {
    static_cast<void>(settings);
    return FailedPreconditionError("this device collector cannot replay kernels");
  }

  // Range replay by training step (REPLAY_SPEC.md W1, --range step): one optimizer step ended, so
  // the range of the step before ends on the calling thread's device and the next begins. Nothing
  // unless replay runs in range mode by step (and nothing for a collector that cannot replay). Any
  // thread, after a successful Start.
  virtual void ReplayStepBoundary() {}

  // The id device records give the stream `stream` (a cudaStream_t; 0: the legacy default stream),
  // for mstx ranges linked to a stream; nullopt when it cannot be told (the default). Any thread,
  // after a successful Start.
  virtual std::optional<std::uint32_t> StreamId(std::uint64_t stream) {
    static_cast<void>(stream);
    return std::nullopt;
  }
};

// Makes the collector for a Session, or returns nullptr when there is none to make (no device
// support in this build, disabled by configuration), or an error saying why it cannot.
using DeviceCollectorFactory =
    std::function<StatusOr<std::unique_ptr<DeviceCollector>>(const SessionConfig& config)>;

}  // namespace gpuprof::session
