// Wrappers over a runtime's allocate/free/transfer/launch entry points (rules R1–R3, R5, R13).
//
// Install() saves the table's original entries and installs wrappers that
// - classify every allocation through the device and record it in the Inventory (R1, R6),
// - record frees before the memory is released (so a restore holding the inventory's read lock
//   never writes into released memory, R10),
// - hold the owning device's replay window shared around frees, copies and memsets (R13, B5),
// - hand launches to the Controller when one is attached, and while it records a range on a
//   device (range replay, W3), that device's transfers and event operations too; an allocation or
//   free of its memory declines the range (W5).
// Wrappers are installed at most once per table: a second Interceptor finds them (the table's
// hook_context) and attaches to the first instead of wrapping the wrapper (R2). With recording
// off, an allocation costs one relaxed load plus the chained call (R3).
//
// Lifetime: the interceptor must outlive every call through the table while installed; its
// destructor begins the inventory's finalization (R5) and puts the original entries back.
#pragma once

#include <atomic>
#include <vector>

#include "device/device.h"
#include "replay/controller.h"
#include "replay/inventory.h"

namespace gpuprof::replay {

class Interceptor {
 public:
  // `devices[i]` classifies pointers of device i; all must outlive the interceptor.
  Interceptor(Inventory& inventory, std::vector<device::Device*> devices);
  ~Interceptor();
  Interceptor(const Interceptor&) = delete;
  Interceptor& operator=(const Interceptor&) = delete;

  // Installs the wrappers, or attaches to the interceptor already installed in `table`.
  // FailedPrecondition when this interceptor is already installed somewhere.
  Status Install(device::RuntimeApiTable& table);
  // True when Install found another interceptor's wrappers and attached to it.
  bool attached() const noexcept { return attached_to_ != nullptr; }
  // The interceptor whose wrappers are live in `table` (null when none).
  static Interceptor* InstalledIn(const device::RuntimeApiTable& table) noexcept;

  // Launches go to `controller` (null: straight to the runtime). Thread-safe.
  void SetController(Controller* controller) noexcept {
    controller_.store(controller, std::memory_order_release);
  }

  Inventory& inventory() noexcept { return inventory_; }

 private:
  static Status WrappedAllocate(device::RuntimeApiTable& table, const device::AllocateArgs& args,
                                device::DevicePtr* out);
  static Status WrappedFree(device::RuntimeApiTable& table, const device::FreeArgs& args);
  static Status WrappedTransfer(device::RuntimeApiTable& table, const device::TransferArgs& args);
  static Status WrappedEvent(device::RuntimeApiTable& table, const device::EventArgs& args);
  static Status WrappedLaunch(device::RuntimeApiTable& table, const device::LaunchRequest& request,
                              device::LaunchExecutor& executor);

  device::Device* DeviceFor(int ordinal) const noexcept;

  Inventory& inventory_;
  std::vector<device::Device*> devices_;
  std::atomic<Controller*> controller_{nullptr};
  device::RuntimeApiTable* table_ = nullptr;  // where our wrappers are installed
  device::RuntimeApiTable original_{};        // the entries we chain to
  Interceptor* attached_to_ = nullptr;
};

}  // namespace gpuprof::replay
