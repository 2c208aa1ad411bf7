#include "replay/interceptor.h"

#include "base/logging.h"

namespace gpuprof::replay {

using device::AllocateArgs;
using device::DevicePtr;
using device::FreeArgs;
using device::LaunchExecutor;
using device::LaunchRequest;
using device::RuntimeApiTable;
using device::TransferArgs;

Interceptor::Interceptor(Inventory& inventory, std::vector<device::Device*> devices)
    : inventory_(inventory), devices_(std::move(devices)) {}

Interceptor::~Interceptor() {
  if (table_ == nullptr) return;
  // From here on a free arriving from the runtime's own teardown must not touch our state (R5);
  // put the original entries back so later calls do not reach us at all.
  inventory_.BeginFinalization();
  table_->allocate = original_.allocate;
  table_->free = original_.free;
  table_->transfer = original_.transfer;
  table_->launch = original_.launch;
  table_->event = original_.event;
  table_->hook_context = nullptr;
}

Interceptor* Interceptor::InstalledIn(const RuntimeApiTable& table) noexcept {
  return table.allocate == &WrappedAllocate ? static_cast<Interceptor*>(table.hook_context) : nullptr;
}

Status Interceptor::Install(RuntimeApiTable& table) {
  if (table_ != nullptr || attached_to_ != nullptr) {
    return FailedPreconditionError("replay interceptor is already installed; install it once per process");
  }
  if (Interceptor* existing = InstalledIn(table)) {
    // Wrapping the wrapper would chain our entries to themselves (R2): attach instead.
    attached_to_ = existing;
    GPUPROF_LOG(kInfo) << "replay wrappers already installed by another instance; attaching to it";
    return OkStatus();
  }
  if (table.allocate == nullptr || table.free == nullptr || table.transfer == nullptr ||
      table.launch == nullptr) {
    return InvalidArgumentError(
        "runtime api table is incomplete (a null entry); cannot install replay wrappers");
  }
  original_ = table;
  table_ = &table;
  table.hook_context = this;
  table.allocate = &WrappedAllocate;
  table.free = &WrappedFree;
  table.transfer = &WrappedTransfer;
  table.launch = &WrappedLaunch;
  if (table.event != nullptr) table.event = &WrappedEvent;
  return OkStatus();
}

device::Device* Interceptor::DeviceFor(int ordinal) const noexcept {
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices_.size()) {
    return devices_.empty() ? nullptr : devices_.front();
  }
  return devices_[static_cast<std::size_t>(ordinal)];
}

Status Interceptor::WrappedAllocate(RuntimeApiTable& table, const AllocateArgs& args, DevicePtr* out) {
  auto* self = static_cast<Interceptor*>(table.hook_context);
  if (args.kind == device::MemoryKind::kDeviceLocal && self->inventory_.recording()) {
    // The application's memory comes first: a snapshot arena in the way is freed (and the next
    // replayed launch captures in full), never kept at the cost of the application's allocation.
    Controller* controller = self->controller_.load(std::memory_order_acquire);
    device::Device* device = self->DeviceFor(args.device);
    if (controller != nullptr && device != nullptr) {
      auto window = controller->EnterDeviceShared(args.device);
      if (device->MakeRoomFor(args.size)) {
        GPUPROF_LOG(kInfo) << "replay: released the snapshot arena of device " << args.device << " for a "
                           << args.size << "-byte allocation of the application";
      }
    }
  }
  Status status = self->original_.allocate(table, args, out);
  if (args.kind == device::MemoryKind::kDeviceLocal && status.ok()) {
    Controller* controller = self->controller_.load(std::memory_order_acquire);
    if (controller != nullptr && controller->RangeRecording(args.device)) {
      controller->DeclineRange(args.device, DeclineReason::kAllocationInRange,
                               "an allocation of " + std::to_string(args.size) + " bytes of device memory");
    }
  }
  // R3: with replay off this relaxed load is all the wrapper adds.
  if (!status.ok() || !self->inventory_.recording() || *out == 0) return status;
  if (device::Device* device = self->DeviceFor(args.device)) {
    StatusOr<device::PointerInfo> info = device->QueryPointer(*out);
    if (info.ok()) {
      self->inventory_.RecordAlloc(*info);
    } else {
      GPUPROF_LOG(kWarning) << "replay: cannot classify allocation at 0x" << std::hex << *out << std::dec
                            << " (" << args.size << " bytes): " << info.status().ToString()
                            << "; it is not tracked";
    }
  }
  return status;
}

Status Interceptor::WrappedFree(RuntimeApiTable& table, const FreeArgs& args) {
  auto* self = static_cast<Interceptor*>(table.hook_context);
  if (!self->inventory_.recording()) return self->original_.free(table, args);
  Controller* controller = self->controller_.load(std::memory_order_acquire);
  std::shared_lock<std::shared_mutex> window;
  const int owner = self->inventory_.OwnerOf(args.ptr);
  if (controller != nullptr) window = controller->EnterDeviceShared(owner);
  if (controller != nullptr && controller->RangeRecording(owner)) {
    controller->DeclineRange(owner, DeclineReason::kAllocationInRange, "a free of the device's memory");
  }
  // Recorded before the memory goes away: a restore holding the inventory's read lock finishes
  // its copy first, and later restores see the region gone (R10).
  self->inventory_.RecordFree(args.ptr);
  return self->original_.free(table, args);
}

Status Interceptor::WrappedTransfer(RuntimeApiTable& table, const TransferArgs& args) {
  auto* self = static_cast<Interceptor*>(table.hook_context);
  Controller* controller = self->controller_.load(std::memory_order_acquire);
  if (controller == nullptr) return self->original_.transfer(table, args);
  auto window = controller->EnterDeviceShared(args.device);
  if (controller->RangeRecording(args.device)) {
    return controller->RecordRangeTransfer(args, [&] { return self->original_.transfer(table, args); });
  }
  return self->original_.transfer(table, args);
}

Status Interceptor::WrappedEvent(RuntimeApiTable& table, const device::EventArgs& args) {
  auto* self = static_cast<Interceptor*>(table.hook_context);
  Controller* controller = self->controller_.load(std::memory_order_acquire);
  if (controller == nullptr || !controller->RangeRecording(args.device))
    return self->original_.event(table, args);
  return controller->RecordRangeEvent(args, [&] { return self->original_.event(table, args); });
}

Status Interceptor::WrappedLaunch(RuntimeApiTable& table, const LaunchRequest& request,
                                  LaunchExecutor& executor) {
  auto* self = static_cast<Interceptor*>(table.hook_context);
  Controller* controller = self->controller_.load(std::memory_order_acquire);
  if (controller == nullptr) return self->original_.launch(table, request, executor);
  return controller->Dispatch(request, executor);
}

}  // namespace gpuprof::replay
