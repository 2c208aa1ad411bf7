// CudaReplayHook's range replay (REPLAY_SPEC W1, W3, W5): delimiters, and the copies, memsets,
// event operations and unrepeatable calls of a recording range, classified by range_calls.h and
// handed to the controller. The application's own call runs after the entry callback returns, so
// every `issue` handed to the controller does nothing: the controller records, the driver issues.
#include <cstring>

#include "base/logging.h"
#include "cupti/internal_work.h"
#include "cupti/range_calls.h"
#include "cupti/replay_hook.h"

namespace gpuprof::cupti {

using device::cuda::CudaDevice;

namespace {

Status Issued() { return OkStatus(); }

}  // namespace

CudaDevice* CudaReplayHook::RangeDeviceOf(const CUpti_CallbackData& call) noexcept {
  CudaDevice* device = devices_.DeviceOf(call.context);
  if (device != nullptr) return device;
  ScopedInternalWork internal;
  return devices_.DeviceOfCurrentContext();
}

bool CudaReplayHook::OnRangeCall(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  if (call.callbackSite != CUPTI_API_ENTER || !range_mode_.load(std::memory_order_relaxed)) return false;
  RangeCall range_call = ClassifyRangeCall(cbid, call.functionParams);
  if (range_call.kind == RangeCall::Kind::kNone) return false;
  if (!EnsureDevices() || inventory_.finalizing()) return true;
  try {
    CudaDevice* device = RangeDeviceOf(call);
    if (device == nullptr) return true;
    const int ordinal = device->ordinal();
    const replay::ReplayOptions& options = controller_->options();
    switch (range_call.kind) {
      case RangeCall::Kind::kProfilerStart:
      case RangeCall::Kind::kProfilerStop:
        GPUPROF_LOG(kDebug) << "replay: profiler "
                            << (range_call.kind == RangeCall::Kind::kProfilerStart ? "start" : "stop")
                            << " on device " << ordinal << " (range replay "
                            << (options.range_replay ? "on" : "off") << ", delimiter "
                            << replay::RangeDelimiterName(options.range_delimiter) << ")";
        if (!options.range_replay || options.range_delimiter != replay::RangeDelimiter::kProfilerApi) break;
        if (range_call.kind == RangeCall::Kind::kProfilerStart) {
          controller_->BeginRange(ordinal);
        } else {
          controller_->EndRange(ordinal);
        }
        break;
      case RangeCall::Kind::kTransfer:
        if (!controller_->RangeRecording(ordinal)) break;
        range_call.transfer.device = ordinal;
        if (Status status = controller_->RecordRangeTransfer(range_call.transfer, Issued); !status.ok()) {
          GPUPROF_LOG(kWarning) << "replay: recording a copy in a range: " << status.message();
        }
        break;
      case RangeCall::Kind::kEvent:
        if (!controller_->RangeRecording(ordinal)) break;
        range_call.event.device = ordinal;
        if (Status status = controller_->RecordRangeEvent(range_call.event, Issued); !status.ok()) {
          GPUPROF_LOG(kWarning) << "replay: recording an event in a range: " << status.message();
        }
        break;
      case RangeCall::Kind::kDecline:
        if (controller_->RangeRecording(ordinal)) {
          const char* name = call.functionName != nullptr ? call.functionName : "a driver call";
          controller_->DeclineRange(ordinal, replay::DeclineReason::kNotRecordable,
                                    std::string(name) + ": " + range_call.detail);
        }
        break;
      case RangeCall::Kind::kNone: break;
    }
  } catch (const std::exception& e) {
    GPUPROF_LOG(kWarning) << "replay: range bookkeeping failed: " << e.what();
  }
  return true;
}

void CudaReplayHook::DeclineRangeForMemory(int device, const char* what) noexcept {
  if (controller_ == nullptr || device < 0 || !controller_->RangeRecording(device)) return;
  try {
    controller_->DeclineRange(device, replay::DeclineReason::kAllocationInRange, what);
  } catch (...) {
  }
}

void CudaReplayHook::StepBoundary() noexcept {
  if (!EnsureDevices() || !controller_->options().range_replay ||
      controller_->options().range_delimiter != replay::RangeDelimiter::kStep) {
    return;
  }
  CudaDevice* device = nullptr;
  {
    ScopedInternalWork internal;
    device = devices_.DeviceOfCurrentContext();
  }
  if (device == nullptr) return;
  controller_->EndRange(device->ordinal());
  controller_->BeginRange(device->ordinal());
}

void CudaReplayHook::ConfigureRanges(const replay::ReplayOptions& options) {
  // Sticky: a range still recording under the old options must keep seeing its copies and events.
  if (options.range_replay && options.passes > 1) range_mode_.store(true, std::memory_order_relaxed);
  const bool by_nvtx = options.range_replay && options.range_delimiter == replay::RangeDelimiter::kNvtx;
  nvtx_delimiter_.Configure(by_nvtx ? options.range_nvtx_name : std::string());
}

void CudaReplayHook::OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) noexcept {
  try {
    const NvtxDelimiter::Action action = nvtx_delimiter_.OnNvtx(cbid, data);
    if (action == NvtxDelimiter::Action::kNone || !EnsureDevices() || inventory_.finalizing()) return;
    CudaDevice* device = nullptr;
    {
      ScopedInternalWork internal;
      device = devices_.DeviceOfCurrentContext();
    }
    if (device == nullptr) {
      GPUPROF_LOG(kInfo)
          << "replay: an NVTX range delimiter on a thread without a current CUDA context is ignored";
      return;
    }
    if (action == NvtxDelimiter::Action::kBegin) {
      controller_->BeginRange(device->ordinal());
    } else {
      controller_->EndRange(device->ordinal());
    }
  } catch (const std::exception& e) {
    GPUPROF_LOG(kWarning) << "replay: NVTX range bookkeeping failed: " << e.what();
  }
}

}  // namespace gpuprof::cupti
