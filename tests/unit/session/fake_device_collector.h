// A DeviceCollector for Session tests: records the calls made on it, and lets the test deliver
// records through the Session's sink and fire the teardown hook.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "session/config.h"
#include "session/device_collector.h"

namespace gpuprof::session::testing {

struct FakeDeviceState {
  std::mutex mu;
  std::vector<std::string> calls;  // "Devices", "Start", "Flush", "Stop", in order
  DeviceCollectorHooks hooks;
  Status start_result;
  std::vector<std::pair<std::int32_t, std::string>> devices;
  // Runs inside Flush (e.g. to deliver a last record, or to fire the teardown hook re-entrantly).
  std::function<void()> on_flush;
  std::vector<ReplaySettings> replays;                      // each ConfigureReplay's settings, in order
  std::vector<std::pair<std::string, std::uint64_t>> lost;  // what LostRecords says

  void Note(const std::string& call) {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(call);
  }
  std::vector<std::string> Calls() {
    std::lock_guard<std::mutex> lock(mu);
    return calls;
  }
  bool Deliver(trace::Record record) { return hooks.sink(std::move(record)); }
};

class FakeDeviceCollector final : public DeviceCollector {
 public:
  explicit FakeDeviceCollector(std::shared_ptr<FakeDeviceState> state) : state_(std::move(state)) {}
  std::vector<std::pair<std::int32_t, std::string>> Devices() override {
    state_->Note("Devices");
    return state_->devices;
  }
  Status Start(DeviceCollectorHooks hooks) override {
    state_->Note("Start");
    if (!state_->start_result.ok()) return state_->start_result;
    state_->hooks = std::move(hooks);
    return OkStatus();
  }
  void Flush() override {
    state_->Note("Flush");
    if (state_->on_flush) state_->on_flush();
  }
  void Stop() override { state_->Note("Stop"); }
  std::vector<std::pair<std::string, std::uint64_t>> LostRecords() override {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->lost;
  }
  Status ConfigureReplay(const ReplaySettings& settings) override {
    state_->Note("ConfigureReplay");
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->replays.push_back(settings);
    return OkStatus();
  }
  void ReplayStepBoundary() override { state_->Note("ReplayStepBoundary"); }

 private:
  std::shared_ptr<FakeDeviceState> state_;
};

inline DeviceCollectorFactory FakeFactory(std::shared_ptr<FakeDeviceState> state) {
  return [state](const SessionConfig&) -> StatusOr<std::unique_ptr<DeviceCollector>> {
    return std::unique_ptr<DeviceCollector>(std::make_unique<FakeDeviceCollector>(state));
  };
}

inline trace::DeviceTask Kernel(std::uint64_t correlation, std::int64_t start_ns, const std::string& name) {
  trace::DeviceTask task;
  task.kind = trace::TaskKind::kKernel;
  task.start_ns = start_ns;
  task.end_ns = start_ns + 1000;
  task.correlation_id = correlation;
  task.name = name;
  task.short_name = name;
  task.grid[0] = 4;
  task.block[0] = 128;
  return task;
}

inline trace::ApiCall Launch(std::uint64_t correlation, std::int64_t start_ns, std::uint32_t pid) {
  trace::ApiCall call;
  call.start_ns = start_ns;
  call.end_ns = start_ns + 500;
  call.pid = pid;
  call.tid = pid;
  call.name = "cudaLaunchKernel";
  call.correlation_id = correlation;
  call.launches_device_work = true;
  return call;
}

}  // namespace gpuprof::session::testing
