// A replay engine wired onto a HostPlatform, the way a Session wires it onto CUDA: an Inventory
// fed by an Interceptor installed in the platform's api table, and (once configured) a
// Controller receiving the launches. For tests, the property test, the benchmark and the demo.
#pragma once

#include <memory>
#include <vector>

#include "device/host/host_platform.h"
#include "gpuprof/replay.h"
#include "replay/controller.h"
#include "replay/interceptor.h"
#include "replay/inventory.h"

namespace gpuprof::testing {

class ReplayRig {
 public:
  explicit ReplayRig(device::host::HostPlatformOptions platform_options = {})
      : platform_(std::make_unique<device::host::HostPlatform>(platform_options)) {
    for (int d = 0; d < platform_->device_count(); ++d) devices_.push_back(&platform_->device_interface(d));
    interceptor_ = std::make_unique<replay::Interceptor>(inventory_, devices_);
    Status installed = interceptor_->Install(platform_->api_table());
    if (!installed.ok()) std::abort();
  }
  ~ReplayRig() {
    // Detach launches first, then the wrappers, then the runtime (which frees its pools).
    interceptor_->SetController(nullptr);
    controller_.reset();
    interceptor_.reset();
    platform_.reset();
  }

  // Starts recording and routes launches through a controller with `options`.
  replay::Controller& Configure(const replay::ReplayOptions& options) {
    inventory_.EnableRecording(true);
    interceptor_->SetController(nullptr);
    controller_ = std::make_unique<replay::Controller>(inventory_, devices_, options);
    interceptor_->SetController(controller_.get());
    return *controller_;
  }

  device::host::HostPlatform& platform() { return *platform_; }
  replay::Inventory& inventory() { return inventory_; }
  replay::Interceptor& interceptor() { return *interceptor_; }
  replay::Controller* controller() { return controller_.get(); }
  device::Device& device(int ordinal) { return platform_->device_interface(ordinal); }
  const std::vector<device::Device*>& devices() const { return devices_; }

 private:
  replay::Inventory inventory_;
  std::unique_ptr<device::host::HostPlatform> platform_;
  std::vector<device::Device*> devices_;
  std::unique_ptr<replay::Interceptor> interceptor_;
  std::unique_ptr<replay::Controller> controller_;
};

}  // namespace gpuprof::testing
