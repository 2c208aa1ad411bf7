// CudaDevice::ReissueRange (REPLAY_SPEC W4): one more pass of a recorded range on gpuprof's own
// streams. The application's streams, events and host memory are never touched: each application
// stream has a gpuprof stream, each application event a gpuprof event recorded and waited where the
// application recorded and waited its own, and copies into host memory land in pinned scratch.
#include <algorithm>
#include <string>
#include <unordered_set>

#include "device/cuda/cuda_device_internal.h"
#include "device/cuda/cuda_recorded_launch.h"

namespace gpuprof::device::cuda {

namespace {

// The legacy default stream (0 or CU_STREAM_LEGACY) orders against every blocking stream: a
// re-issued op of it waits for every other stream's earlier ops and every later op waits for it.
// (The application's non-blocking streams get that order too: more order than the original,
// never less.)
bool IsLegacyStream(StreamId stream) noexcept {
  return stream == 0 || stream == reinterpret_cast<StreamId>(CU_STREAM_LEGACY);
}

}  // namespace

void CudaDevice::ReleaseRangeResources() noexcept {
  if (range_ == nullptr) return;
  std::lock_guard<std::mutex> lock(range_->mu);
  for (auto& [id, stream] : range_->streams) driver_.StreamDestroy(stream);
  for (auto& [stream, event] : range_->stream_marks) driver_.EventDestroy(event);
  for (auto& [id, event] : range_->events) driver_.EventDestroy(event);
  for (CUevent event : range_->timing) driver_.EventDestroy(event);
  if (range_->scratch != nullptr) driver_.MemFreeHost(range_->scratch);
  range_->streams.clear();
  range_->stream_marks.clear();
  range_->events.clear();
  range_->timing.clear();
  range_->scratch = nullptr;
  range_->scratch_bytes = 0;
}

StatusOr<RangePassTiming> CudaDevice::ReissueRange(std::span<const RangeOp> ops, int pass,
                                                   const ReissueOptions& options) {
  InternalScope scope(driver_, context_);
  if (!scope.ok()) return UnavailableError("ReissueRange: the device's context cannot be made current");
  RangeResources& r = *range_;
  std::lock_guard<std::mutex> lock(r.mu);
  const CudaDriver& d = driver_;

  // What the pass needs, made once and kept: streams, events, timing events, scratch.
  std::uint32_t launches = 0;
  std::uint64_t to_host_bytes = 0;
  std::vector<CUstream> order;  // gpuprof's streams in first-use order
  for (const RangeOp& op : ops) {
    auto [it, added] = r.streams.try_emplace(op.stream, nullptr);
    if (added) {
      if (CUresult result = d.StreamCreate(&it->second, CU_STREAM_NON_BLOCKING); result != CUDA_SUCCESS) {
        r.streams.erase(it);
        return d.Check("cuStreamCreate (range replay)", result);
      }
      CUevent mark = nullptr;
      GPUPROF_RETURN_IF_ERROR(
          d.Check("cuEventCreate (range replay)", d.EventCreate(&mark, CU_EVENT_DISABLE_TIMING)));
      r.stream_marks[it->second] = mark;
    }
    if (std::find(order.begin(), order.end(), it->second) == order.end()) order.push_back(it->second);
    if (op.kind == RangeOpKind::kLaunch) launches = std::max(launches, op.launch_index + 1);
    if (op.kind == RangeOpKind::kCopy && op.to_host) to_host_bytes = std::max(to_host_bytes, op.bytes);
    if ((op.kind == RangeOpKind::kEventRecord || op.kind == RangeOpKind::kEventWait) &&
        !r.events.contains(op.event)) {
      CUevent event = nullptr;
      GPUPROF_RETURN_IF_ERROR(
          d.Check("cuEventCreate (range replay)", d.EventCreate(&event, CU_EVENT_DISABLE_TIMING)));
      r.events[op.event] = event;
    }
  }
  RangePassTiming timing;
  if (order.empty()) return timing;
  // Two per launch, then the pass's begin and one end per stream.
  const std::size_t timing_needed = 2 * static_cast<std::size_t>(launches) + 1 + order.size();
  while (r.timing.size() < timing_needed) {
    CUevent event = nullptr;
    GPUPROF_RETURN_IF_ERROR(d.Check("cuEventCreate (range replay timing)", d.EventCreate(&event, 0)));
    r.timing.push_back(event);
  }
  if (to_host_bytes > r.scratch_bytes) {
    if (r.scratch != nullptr) d.MemFreeHost(r.scratch);
    r.scratch = nullptr;
    r.scratch_bytes = 0;
    GPUPROF_RETURN_IF_ERROR(
        d.Check("cuMemHostAlloc (range replay scratch)", d.MemHostAlloc(&r.scratch, to_host_bytes, 0)));
    r.scratch_bytes = to_host_bytes;
  }

  CUevent begin = r.timing[2 * static_cast<std::size_t>(launches)];
  std::vector<bool> timed(launches, false);
  std::unordered_set<std::uint64_t> recorded;  // application events recorded in this pass
  auto issue_all = [&]() -> Status {
    CUstream lead = order.front();
    if (options.flush_caches) GPUPROF_RETURN_IF_ERROR(FlushL2(lead));
    GPUPROF_RETURN_IF_ERROR(d.Check("cuEventRecord (range begin)", d.EventRecord(begin, lead)));
    for (CUstream stream : order) {
      if (stream != lead)
        GPUPROF_RETURN_IF_ERROR(d.Check("cuStreamWaitEvent", d.StreamWaitEvent(stream, begin, 0)));
    }
    for (const RangeOp& op : ops) {
      CUstream stream = r.streams.at(op.stream);
      const bool legacy = IsLegacyStream(op.stream);
      if (legacy) {
        for (CUstream other : order) {
          if (other == stream) continue;
          CUevent mark = r.stream_marks.at(other);
          GPUPROF_RETURN_IF_ERROR(d.Check("cuEventRecord", d.EventRecord(mark, other)));
          GPUPROF_RETURN_IF_ERROR(d.Check("cuStreamWaitEvent", d.StreamWaitEvent(stream, mark, 0)));
        }
      }
      switch (op.kind) {
        case RangeOpKind::kLaunch: {
          const auto* launch = dynamic_cast<const CudaIssuableLaunch*>(op.launch.get());
          if (launch == nullptr) {
            return InvalidArgumentError("ReissueRange: launch " + std::to_string(op.launch_index) +
                                        " was not recorded by the CUDA backend");
          }
          if (options.flush_each_launch) GPUPROF_RETURN_IF_ERROR(FlushL2(stream));
          const std::size_t first = 2 * static_cast<std::size_t>(op.launch_index);
          GPUPROF_RETURN_IF_ERROR(d.Check("cuEventRecord", d.EventRecord(r.timing[first], stream)));
          // Last before the launch: the next driver call on this thread is the one it names.
          if (options_.before_reissued_launch && !options.counter_pass) {
            options_.before_reissued_launch(launch->application_launch_id(), pass);
          }
          if (CUresult result = launch->Issue(stream); result != CUDA_SUCCESS) {
            return InternalError(d.Error(
                ("launch of " + launch->kernel_name() + " (range replay pass " + std::to_string(pass) + ")")
                    .c_str(),
                result));
          }
          GPUPROF_RETURN_IF_ERROR(d.Check("cuEventRecord", d.EventRecord(r.timing[first + 1], stream)));
          timed[op.launch_index] = true;
          break;
        }
        case RangeOpKind::kCopy:
          if (op.to_host) {
            GPUPROF_RETURN_IF_ERROR(d.Check("cuMemcpyDtoHAsync (range replay)",
                                            d.MemcpyDtoHAsync(r.scratch, op.src, op.bytes, stream)));
          } else if (!op.host_source.empty()) {
            GPUPROF_RETURN_IF_ERROR(
                d.Check("cuMemcpyHtoDAsync (range replay)",
                        d.MemcpyHtoDAsync(op.dst, op.host_source.data(), op.host_source.size(), stream)));
          } else if (op.bytes > 0) {
            GPUPROF_RETURN_IF_ERROR(d.Check("cuMemcpyDtoDAsync (range replay)",
                                            d.MemcpyDtoDAsync(op.dst, op.src, op.bytes, stream)));
          }
          break;
        case RangeOpKind::kMemset:
          // A memset of host memory (mapped, managed) is the application's memory: not repeated.
          if (!op.to_host && op.bytes > 0) {
            GPUPROF_RETURN_IF_ERROR(d.Check("cuMemsetD8Async (range replay)",
                                            d.MemsetD8Async(op.dst, op.value, op.bytes, stream)));
          }
          break;
        case RangeOpKind::kEventRecord:
          GPUPROF_RETURN_IF_ERROR(d.Check("cuEventRecord", d.EventRecord(r.events.at(op.event), stream)));
          recorded.insert(op.event);
          break;
        case RangeOpKind::kEventWait:
          // An event last recorded before the range: that work finished before the range began.
          if (recorded.contains(op.event)) {
            GPUPROF_RETURN_IF_ERROR(
                d.Check("cuStreamWaitEvent", d.StreamWaitEvent(stream, r.events.at(op.event), 0)));
          }
          break;
      }
      if (legacy) {
        CUevent mark = r.stream_marks.at(stream);
        GPUPROF_RETURN_IF_ERROR(d.Check("cuEventRecord", d.EventRecord(mark, stream)));
        for (CUstream other : order) {
          if (other != stream)
            GPUPROF_RETURN_IF_ERROR(d.Check("cuStreamWaitEvent", d.StreamWaitEvent(other, mark, 0)));
        }
      }
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      GPUPROF_RETURN_IF_ERROR(
          d.Check("cuEventRecord (range end)", d.EventRecord(r.timing[2 * launches + 1 + i], order[i])));
    }
    return OkStatus();
  };
  Status issued = issue_all();
  // Whatever was issued finishes before the engine restores memory, even after a failure.
  Status drained = OkStatus();
  for (CUstream stream : order) {
    Status synced = d.Check("cuStreamSynchronize (range replay)", d.StreamSynchronize(stream));
    if (drained.ok()) drained = synced;
  }
  GPUPROF_RETURN_IF_ERROR(issued);
  GPUPROF_RETURN_IF_ERROR(drained);

  float ms = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    GPUPROF_RETURN_IF_ERROR(d.Check("cuEventElapsedTime (range)",
                                    d.EventElapsedTime(&ms, begin, r.timing[2 * launches + 1 + i])));
    timing.duration_ns =
        std::max(timing.duration_ns, static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6));
  }
  timing.launch_ns.assign(launches, 0);
  for (std::uint32_t i = 0; i < launches; ++i) {
    if (!timed[i]) continue;
    GPUPROF_RETURN_IF_ERROR(d.Check("cuEventElapsedTime (launch)",
                                    d.EventElapsedTime(&ms, r.timing[2 * i], r.timing[2 * i + 1])));
    timing.launch_ns[i] = static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
  }
  return timing;
}

}  // namespace gpuprof::device::cuda
