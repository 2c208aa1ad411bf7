// The controller's side of range replay (REPLAY_SPEC.md W1-W6): delimiters, the launches,
// transfers and events of a recording device, handed to RangeReplay with the device's window,
// snapshot and the controller's record sink.
#include "base/logging.h"
#include "replay/controller.h"
#include "replay/range_replay.h"
#include "replay/snapshot.h"

namespace gpuprof::replay {

device::Device* Controller::DeviceAt(int ordinal) const noexcept {
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices_.size()) return nullptr;
  return devices_[static_cast<std::size_t>(ordinal)];
}

void Controller::BeginRange(int device) {
  Plan& plan = CurrentPlan();
  device::Device* target = DeviceAt(device);
  if (!plan.options.range_replay || plan.options.passes <= 1 || target == nullptr) {
    GPUPROF_LOG(kDebug) << "replay: a range start on device " << device << " is not a range (range replay "
                        << (plan.options.range_replay ? "on" : "off") << ", " << plan.options.passes
                        << " pass(es)" << (target == nullptr ? ", unknown device" : "") << ")";
    return;
  }
  // A delimiter inside an open range is not a range: it neither counts nor starts one (W1).
  const bool selected = !range_->Recording(device) && Select(plan, /*name_matches=*/true).selected;
  range_->Begin(
      {*target, *snapshots_[static_cast<std::size_t>(device)], windows_[static_cast<std::size_t>(device)]},
      plan.options, selected, [this](const ReplayRecord& record) { Publish(record); });
}

void Controller::EndRange(int device) {
  device::Device* target = DeviceAt(device);
  if (target == nullptr || !range_->Recording(device)) return;
  range_->End({*target, *snapshots_[static_cast<std::size_t>(device)],
               windows_[static_cast<std::size_t>(device)], &counters_},
              CurrentPlan().options, [this](const ReplayRecord& record) { Publish(record); });
}

bool Controller::RangeRecording(int device) const noexcept { return range_->Recording(device); }

Status Controller::DispatchInRange(Plan& plan, const device::LaunchRequest& request,
                                   device::LaunchExecutor& executor) {
  if (!range_->Recording(request.device)) return RunUnreplayed(request, executor);
  auto shared = EnterDeviceShared(request.device);
  return range_->RecordLaunch(request, executor, plan.options, RangeLaunchDecline(plan.options, request));
}

Status Controller::RecordRangeTransfer(const device::TransferArgs& args,
                                       const std::function<Status()>& issue) {
  device::Device* target = DeviceAt(args.device);
  if (target == nullptr) return issue();
  // Device-local memory of which device; anything else (host, mapped, managed) is host memory here.
  auto owner_of = [target](device::DevicePtr ptr) {
    StatusOr<device::PointerInfo> info = target->QueryPointer(ptr);
    return info.ok() && info->kind == device::MemoryKind::kDeviceLocal ? info->owner_device : -1;
  };
  return range_->RecordTransfer(args, CurrentPlan().options, owner_of, issue);
}

Status Controller::RecordRangeEvent(const device::EventArgs& args, const std::function<Status()>& issue) {
  return range_->RecordEvent(args, issue);
}

void Controller::DeclineRange(int device, DeclineReason reason, std::string detail) {
  range_->Decline(device, reason, std::move(detail));
}

}  // namespace gpuprof::replay
