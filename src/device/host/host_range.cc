// Events and range replay on the host platform: cross-stream order (record, wait) and the
// re-issue of a recorded range (device/range.h).
#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "base/logging.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {

namespace {

std::uint64_t ElapsedNs(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

std::uint64_t HostRecordedLaunch::Run(const KernelContext& context) const {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& body : *bodies_) body(context);
  return ElapsedNs(start);
}

// ---- events ---------------------------------------------------------------------------------------

std::shared_ptr<HostEvent> HostPlatform::Impl::FindEvent(std::uint64_t event) const {
  auto locked = events.rlock();
  auto it = locked->find(event);
  return it == locked->end() ? nullptr : it->second;
}

Status HostPlatform::Impl::OriginalEvent(RuntimeApiTable& table, const EventArgs& args) {
  auto* impl = static_cast<Impl*>(table.runtime);
  if (impl == nullptr) return FailedPreconditionError("event: the host runtime is gone");
  return impl->EventOp(args);
}

Status HostPlatform::Impl::EventOp(const EventArgs& args) {
  const char* call = args.kind == EventOpKind::kRecord ? "EventRecord" : "StreamWaitEvent";
  Stream* stream = FindStream(args.stream);
  if (stream == nullptr) {
    return InvalidArgumentError(std::string(call) + ": unknown stream " + std::to_string(args.stream));
  }
  std::shared_ptr<HostEvent> event = FindEvent(args.event);
  if (event == nullptr) {
    return InvalidArgumentError(std::string(call) + ": unknown event " + std::to_string(args.event) +
                                " (create it with CreateEvent)");
  }
  if (args.kind == EventOpKind::kRecord) {
    std::uint64_t record = 0;
    {
      std::lock_guard<std::mutex> lock(event->mu);
      record = ++event->issued;
    }
    stream->Enqueue([event, record] {
      {
        std::lock_guard<std::mutex> lock(event->mu);
        if (event->reached < record) event->reached = record;
      }
      event->reached_cv.notify_all();
    });
    return OkStatus();
  }
  std::uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(event->mu);
    target = event->issued;
  }
  if (target == 0) return OkStatus();
  stream->Enqueue([event, target] {
    std::unique_lock<std::mutex> lock(event->mu);
    event->reached_cv.wait(lock, [&] { return event->reached >= target; });
  });
  return OkStatus();
}

StatusOr<std::uint64_t> HostPlatform::CreateEvent(int device) {
  if (!impl_->ValidDevice(device)) {
    return InvalidArgumentError("CreateEvent: no device " + std::to_string(device));
  }
  const std::uint64_t id = impl_->next_event_id.fetch_add(1);
  auto event = std::make_shared<HostEvent>();
  event->device = device;
  impl_->events.wlock()->emplace(id, std::move(event));
  return id;
}

Status HostPlatform::EventRecord(std::uint64_t event, StreamId stream) {
  EventArgs args{
      .kind = EventOpKind::kRecord, .device = StreamDevice(stream), .stream = stream, .event = event};
  return impl_->api_table.event(impl_->api_table, args);
}

Status HostPlatform::StreamWaitEvent(StreamId stream, std::uint64_t event) {
  EventArgs args{
      .kind = EventOpKind::kWait, .device = StreamDevice(stream), .stream = stream, .event = event};
  return impl_->api_table.event(impl_->api_table, args);
}

// ---- re-issuing a recorded range -------------------------------------------------------------------

StatusOr<RangePassTiming> HostDevice::ReissueRange(std::span<const RangeOp> ops, int pass,
                                                   const ReissueOptions& options) {
  static_cast<void>(options);  // the host device has no cache to flush
  Count(1, 1);
  RangePassTiming timing;
  std::vector<std::uint8_t> scratch;  // copies into host memory land here (W4)
  const auto start = std::chrono::steady_clock::now();
  for (const RangeOp& op : ops) {
    switch (op.kind) {
      case RangeOpKind::kLaunch: {
        const auto* launch = dynamic_cast<const HostRecordedLaunch*>(op.launch.get());
        if (launch == nullptr) {
          return InvalidArgumentError("ReissueRange: launch " + std::to_string(op.launch_index) +
                                      " was not recorded by the host platform");
        }
        if (timing.launch_ns.size() <= op.launch_index) timing.launch_ns.resize(op.launch_index + 1);
        try {
          timing.launch_ns[op.launch_index] = launch->Run(KernelContext{ordinal(), op.stream, pass});
        } catch (const std::exception& e) {
          return InternalError("ReissueRange: kernel '" + launch->kernel_name() + "' threw during pass " +
                               std::to_string(pass) + ": " + e.what());
        }
        break;
      }
      case RangeOpKind::kCopy:
        if (op.to_host) {
          scratch.resize(op.bytes);
          std::memmove(scratch.data(), ToHost(op.src), op.bytes);
        } else if (!op.host_source.empty()) {
          std::memcpy(ToHost(op.dst), op.host_source.data(), op.host_source.size());
        } else {
          std::memmove(ToHost(op.dst), ToHost(op.src), op.bytes);
        }
        break;
      case RangeOpKind::kMemset:
        if (!op.to_host) std::memset(ToHost(op.dst), op.value, op.bytes);
        break;
      case RangeOpKind::kEventRecord:
      case RangeOpKind::kEventWait:
        break;  // the ops run one after another in the recorded order, which keeps every dependency
    }
  }
  timing.duration_ns = ElapsedNs(start);
  return timing;
}

}  // namespace gpuprof::device::host
