// CuptiDeviceCollector: the Session's DeviceCollector on NVIDIA GPUs, an adapter over
// cupti::CuptiSubscriber (built only with GPUPROF_ENABLE_CUDA).
//
// Start loads CUPTI at run time and subscribes (one subscriber per process: when another tool
// holds the slot, Start fails with the subscriber's message naming it and the Session runs on
// without device data). Records reach the Session's sink one completed activity buffer at a time.
// Flush is a forced cuptiActivityFlushAll; Stop stops the subscriber (which flushes, closes open
// NVTX ranges and reports CUPTI's dropped records).
//
// Context teardown: the subscriber flushes its buffers itself when a CUDA context is destroyed,
// so records survive a runtime that tears its contexts down before gpuprof's exit handler runs;
// the hook `on_teardown` is not used (CuptiSubscriber may not be stopped from its own callbacks).
//
// NVTX: the application's NVTX calls reach CUPTI only through the library NVTX_INJECTION64_PATH
// names, read at the application's first NVTX call. When the variable is unset, a successful
// Start sets it to the libcupti.so this process loaded, so NVTX ranges opened after CUDA
// initialization are recorded (a user's own setting is left alone).
//
// The loaders are seams: tests pass a fake CuptiApi / DriverApi.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/synchronized.h"
#include "cupti/cupti_api.h"
#include "cupti/subscriber.h"
#include "session/config.h"
#include "session/device_collector.h"

namespace gpuprof::cupti {
class CudaReplayHook;
}

namespace gpuprof::session {

struct CuptiLoaders {
  std::function<StatusOr<std::unique_ptr<cupti::CuptiApi>>()> cupti;
  std::function<StatusOr<std::unique_ptr<cupti::DriverApi>>()> driver;
};

// The real libraries: LoadCuptiApi / LoadDriverApi with their default candidates.
CuptiLoaders DefaultCuptiLoaders();

class CuptiDeviceCollector final : public DeviceCollector {
 public:
  // `started_by_injection`: the session starts from InitializeInjection (`gpuprof run` or
  // `gpuprof replay`). Then Devices() does not query the driver for NPU_INFO (the driver is inside
  // cuInit and must not be called back). `replay`: kernel replay's settings (off unless enabled).
  // `spill_directory`: where a snapshot that fits nowhere faster spills (B2's file tier; the
  // session's output directory); empty: no file tier.
  CuptiDeviceCollector(CuptiLoaders loaders, cupti::SubscriberOptions options, bool started_by_injection,
                       ReplaySettings replay = SessionConfig().replay, std::string spill_directory = {});
  ~CuptiDeviceCollector() override;

  std::vector<std::pair<std::int32_t, std::string>> Devices() override;
  // When Devices() had none (under the injection, inside cuInit; from a script, before CUDA was
  // initialized): the driver can be asked once the program ran.
  std::vector<std::pair<std::int32_t, std::string>> DevicesAtStop() override;
  std::vector<std::pair<std::string, std::uint64_t>> LostRecords() override;
  Status Start(DeviceCollectorHooks hooks) override;
  void Flush() override;
  void Stop() override;
  CorrelationFunctions Correlation() const override;
  Status ConfigureReplay(const ReplaySettings& settings) override;
  void ReplayStepBoundary() override;
  // CUPTI's id of the stream (its context from the driver), as its kernel records give it.
  std::optional<std::uint32_t> StreamId(std::uint64_t stream) override;

  // Null before Start and after a failed one.
  cupti::CuptiSubscriber* subscriber() const noexcept { return subscriber_.get(); }

 private:
  CuptiLoaders loaders_;
  cupti::SubscriberOptions options_;
  bool started_by_injection_;
  // (ordinal, name) of every device, from the driver (empty when it cannot be asked).
  std::vector<std::pair<std::int32_t, std::string>> QueryDevices();
  // At the first context made (the driver is up): the names DevicesAtStop falls back on.
  void RememberDevices();
  bool devices_known_at_start_ = false;  // Devices() found some
  std::atomic<bool> devices_remembered_{false};
  std::mutex devices_mu_;
  std::vector<std::pair<std::int32_t, std::string>> devices_at_first_context_;  // guarded by devices_mu_
  ReplaySettings replay_settings_;
  std::string spill_directory_;
  bool replay_from_script_ = false;  // `gpuprof replay --from-script`: the program configures replay
  // The counter range (replay_counter_range) the counter backend is made with: the process's own until
  // the program names another; fixed once the backend is made (at the first counter pass).
  struct CounterRange {
    std::string range;
    bool made = false;
  };
  std::shared_ptr<base::Synchronized<CounterRange, std::mutex>> counter_range_;
  std::unique_ptr<cupti::CudaReplayHook> replay_hook_;  // before subscriber_: outlives its callbacks
  std::unique_ptr<cupti::CuptiSubscriber> subscriber_;
};

// The factory a CUDA build uses: none when the configuration turns devices off or when the
// process has no CUDA driver (libcuda.so.1 does not load: a CPU-only machine or process), else a
// CuptiDeviceCollector.
DeviceCollectorFactory CuptiDeviceCollectorFactory(CuptiLoaders loaders = DefaultCuptiLoaders());

// The path of the first loaded object whose file name starts with `prefix` (e.g. "libcupti.so"),
// or "" when none is loaded.
std::string LoadedObjectPath(std::string_view prefix);

}  // namespace gpuprof::session
