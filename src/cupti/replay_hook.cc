#include "cupti/replay_hook.h"

#include <shared_mutex>

#include "base/logging.h"
#include "cupti/graph_executor.h"
#include "cupti/internal_work.h"
#include "cupti/launch_executor.h"
#include "cupti/range_calls.h"
#include "cupti/range_pass_tags.h"
#include "cupti/subscriber.h"

namespace gpuprof::cupti {
namespace {

using device::cuda::CudaDevice;
using device::cuda::CudaDriver;

// Window locks taken at an API entry and dropped at its exit, per thread (entries nest rarely).
thread_local std::vector<std::shared_lock<std::shared_mutex>> held_windows;

// The allocation calls that make device memory: at their entry the snapshot arena makes room
// (MakeRoomForAllocation), and each entry pushes one (maybe empty) window lock that its exit pops.
bool AllocatesDeviceMemory(CUpti_CallbackId cbid) noexcept {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: return true;
    default: return false;
  }
}

// W6: each launch of a re-issued pass names itself for the subscriber, which files its kernel
// record as that application launch's pass (RangePassTags).
device::cuda::CudaDeviceOptions WithRangePassTags(device::cuda::CudaDeviceOptions options) {
  options.before_reissued_launch = [](std::uint64_t application_launch_id, int pass) {
    if (application_launch_id != 0) RangePassTags::SetPending({application_launch_id, pass});
  };
  return options;
}

}  // namespace

CudaReplayHook::CudaReplayHook(CudaReplaySettings settings,
                               std::function<void(const replay::ReplayRecord&)> sink)
    : graphs_(std::move(settings.cupti)),
      options_(std::move(settings.options)),
      flush_l2_(settings.flush_l2),
      sink_(std::move(sink)),
      devices_(WithRangePassTags(settings.device)),
      make_counter_backend_(std::move(settings.make_counter_backend)),
      clock_api_(std::move(settings.clock_api)) {
  inventory_.EnableRecording(true);
  ConfigureRanges(options_);
}

CudaReplayHook::~CudaReplayHook() { inventory_.BeginFinalization(); }

void CudaReplayHook::BeginFinalization() noexcept { inventory_.BeginFinalization(); }

void CudaReplayHook::OnContextDestroy(CUcontext context) noexcept {
  static_cast<void>(context);  // the backend keeps few contexts: all of them go (Idle)
  IdleCounters();
}

void CudaReplayHook::IdleCounters() noexcept {
  replay::Controller* controller = nullptr;
  {
    // A backend exists only once EnsureCounterBackend ran, after the controller was made.
    std::lock_guard<std::mutex> lock(counter_backend_mu_);
    if (!counter_backend_tried_) return;
    controller = controller_.get();
  }
  if (controller != nullptr) controller->IdleCounters();
}

Status CudaReplayHook::Configure(const replay::ReplayOptions& options, bool flush_l2) noexcept {
  try {
    if (!EnsureDevices()) return UnavailableError("no CUDA device could be set up for replay");
    if (!options.metrics.empty()) EnsureCounterBackend();
    GPUPROF_RETURN_IF_ERROR(controller_->Reconfigure(options));
    ConfigureRanges(options);
    flush_l2_.store(flush_l2, std::memory_order_relaxed);
    // The cached selector verdicts (FunctionInfo::matches) were the old selector's.
    functions_.Clear();
    return OkStatus();
  } catch (const std::exception& e) {
    return InternalError(std::string("configuring replay: ") + e.what());
  }
}

bool CudaReplayHook::EnsureDevices() noexcept {
  std::call_once(devices_once_, [this] {
    ScopedInternalWork internal;
    StatusOr<const CudaDriver*> driver = CudaDriver::Get();
    if (!driver.ok()) {
      GPUPROF_LOG(kWarning) << "replay off: " << driver.status().message();
      return;
    }
    driver_ = *driver;
    try {
      std::vector<device::Device*> raw = devices_.Open(*driver_);
      controller_ = std::make_unique<replay::Controller>(inventory_, raw, options_);
      controller_->SetRecordSink(sink_);
      controller_->SetClockApi(clock_api_);
      if (!options_.metrics.empty()) EnsureCounterBackend();
    } catch (const std::exception& e) {
      GPUPROF_LOG(kWarning) << "replay off: " << e.what();
      controller_.reset();
    }
  });
  return controller_ != nullptr;
}

void CudaReplayHook::EnsureCounterBackend() noexcept {
  try {
    std::lock_guard<std::mutex> lock(counter_backend_mu_);
    if (counter_backend_tried_ || controller_ == nullptr) return;
    counter_backend_tried_ = true;
    if (!make_counter_backend_) {
      GPUPROF_LOG(kWarning) << "replay: no hardware counters (this session has no counter backend); launches "
                               "are replayed and timed without them";
      return;
    }
    ScopedInternalWork internal;
    StatusOr<std::shared_ptr<replay::CounterBackend>> backend = make_counter_backend_();
    if (!backend.ok()) {
      GPUPROF_LOG(kWarning) << "replay: no hardware counters: " << backend.status().message()
                            << "; launches are replayed and timed without them";
      return;
    }
    controller_->SetCounterBackend(*std::move(backend));
  } catch (const std::exception& e) {
    GPUPROF_LOG(kWarning) << "replay: no hardware counters: " << e.what();
  }
}

void CudaReplayHook::RecordDeviceMemory(CudaDevice& device, CUdeviceptr ptr, std::uint64_t size) noexcept {
  device::PointerInfo info;
  StatusOr<device::PointerInfo> queried = device.QueryPointer(ptr);
  if (queried.ok()) {
    info = *queried;
  } else {
    info.kind = device::MemoryKind::kDeviceLocal;
    info.owner_device = device.ordinal();
  }
  // The call's own range: a pool allocation's attributes may describe the whole pool.
  info.base = ptr;
  info.size = size;
  if (info.owner_device < 0 && info.kind == device::MemoryKind::kDeviceLocal)
    info.owner_device = device.ordinal();
  inventory_.RecordAlloc(info);
}

void CudaReplayHook::MakeRoomForAllocation(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  std::shared_lock<std::shared_mutex> window;  // stays empty unless the arena holds device memory
  try {
    if (EnsureDevices() && !inventory_.finalizing()) {
      const void* p = call.functionParams;
      CudaDevice* device = nullptr;
      std::uint64_t bytes = 0;
      CUstream stream = nullptr;
      bool stream_ordered = false;
      switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
          bytes = static_cast<const cuMemAlloc_v2_params*>(p)->bytesize;
          break;
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
          // The pitch is not known yet; each row rounds up by less than the alignment (512 bytes).
          auto* a = static_cast<const cuMemAllocPitch_v2_params*>(p);
          bytes = (static_cast<std::uint64_t>(a->WidthInBytes) + 512) * a->Height;
          break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
          auto* a = static_cast<const cuMemAllocAsync_params*>(p);
          bytes = a->bytesize;
          stream = a->hStream;
          stream_ordered = true;
          break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
        case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
          auto* a = static_cast<const cuMemAllocFromPoolAsync_params*>(p);
          bytes = a->bytesize;
          stream = a->hStream;
          stream_ordered = true;
          break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
          // Physical memory for the VMM (PyTorch's expandable segments): the device is the
          // allocation's location, not the current context's.
          auto* a = static_cast<const cuMemCreate_params*>(p);
          bytes = a->size;
          if (a->prop != nullptr && a->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
            device = devices_.ExistingDeviceAt(a->prop->location.id);
          }
          break;
        }
        default: break;
      }
      if (cbid != CUPTI_DRIVER_TRACE_CBID_cuMemCreate) device = devices_.DeviceOf(call.context);
      // Past the device lookup, one relaxed load for almost every allocation: no device-tier arena.
      if (device != nullptr && device->device_arena_bytes() != 0 && bytes > 0) {
        // Into a capturing stream the call adds a graph node and allocates nothing now.
        if (!stream_ordered || !Capturing(stream)) {
          window = controller_->EnterDeviceShared(device->ordinal());
          device->MakeRoomFor(bytes);
        }
      }
    }
  } catch (...) {
  }
  try {
    held_windows.push_back(std::move(window));
  } catch (...) {
  }
}

void CudaReplayHook::OnAlloc(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  const bool makes_device_memory = AllocatesDeviceMemory(cbid);
  if (call.callbackSite == CUPTI_API_ENTER) {
    if (makes_device_memory) MakeRoomForAllocation(cbid, call);
    if ((makes_device_memory || cbid == CUPTI_DRIVER_TRACE_CBID_cuMemMap) && EnsureDevices()) {
      if (CudaDevice* device = devices_.DeviceOf(call.context)) {
        DeclineRangeForMemory(device->ordinal(), "an allocation of device memory");
      }
    }
    return;
  }
  // The window the entry took (maybe none) is dropped once the allocation is recorded, so that no
  // replay window opens between the two.
  struct DropEntryWindow {
    bool held;
    ~DropEntryWindow() {
      if (held && !held_windows.empty()) held_windows.pop_back();
    }
  } drop_entry_window{makes_device_memory};
  if (call.callbackSite != CUPTI_API_EXIT || call.functionReturnValue == nullptr ||
      *static_cast<const CUresult*>(call.functionReturnValue) != CUDA_SUCCESS) {
    return;
  }
  if (!EnsureDevices()) return;
  CudaDevice* device = devices_.DeviceOf(call.context);
  if (device == nullptr) return;
  const void* p = call.functionParams;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      auto* a = static_cast<const cuMemAlloc_v2_params*>(p);
      RecordDeviceMemory(*device, *a->dptr, a->bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto* a = static_cast<const cuMemAllocPitch_v2_params*>(p);
      RecordDeviceMemory(*device, *a->dptr, static_cast<std::uint64_t>(*a->pPitch) * a->Height);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* a = static_cast<const cuMemAllocManaged_params*>(p);
      StatusOr<device::PointerInfo> info = device->QueryPointer(*a->dptr);
      if (info.ok()) inventory_.RecordAlloc(*info);
      break;
    }
    // Into a capturing stream these add a memory-allocation node: the address is the graph's, with
    // no memory behind it outside the graph's launches, so it is not tracked (issue 24).
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      auto* a = static_cast<const cuMemAllocAsync_params*>(p);
      if (!Capturing(a->hStream)) RecordDeviceMemory(*device, *a->dptr, a->bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      auto* a = static_cast<const cuMemAllocFromPoolAsync_params*>(p);
      if (!Capturing(a->hStream)) RecordDeviceMemory(*device, *a->dptr, a->bytesize);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: break;  // memory without an address: cuMemMap records it
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto* a = static_cast<const cuMemMap_params*>(p);
      device::PointerInfo info{a->ptr, a->size, device::MemoryKind::kDeviceLocal, device->ordinal()};
      inventory_.RecordAlloc(info);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2: {
      // Another process's memory: counted, never snapshotted (R6; strict mode declines).
      auto* a = static_cast<const cuIpcOpenMemHandle_v2_params*>(p);
      StatusOr<device::PointerInfo> queried = device->QueryPointer(*a->pdptr);
      device::PointerInfo info{*a->pdptr, queried.ok() ? queried->size : 0, device::MemoryKind::kIpcImported,
                               device->ordinal()};
      inventory_.RecordAlloc(info);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      // Pinned host memory the device may write when mapped (R6).
      auto* a = static_cast<const cuMemHostAlloc_params*>(p);
      if ((a->Flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0) {
        device::PointerInfo info{reinterpret_cast<device::DevicePtr>(*a->pp), a->bytesize,
                                 device::MemoryKind::kHostMapped, -1};
        inventory_.RecordAlloc(info);
      }
      break;
    }
    default: break;
  }
}

void CudaReplayHook::OnFree(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  if (call.callbackSite == CUPTI_API_EXIT) {
    if (!held_windows.empty()) held_windows.pop_back();
    return;
  }
  CUdeviceptr ptr = 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      ptr = static_cast<const cuMemFree_v2_params*>(call.functionParams)->dptr;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      ptr = static_cast<const cuMemFreeAsync_params*>(call.functionParams)->dptr;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      ptr = static_cast<const cuMemUnmap_params*>(call.functionParams)->ptr;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
      ptr = static_cast<const cuIpcCloseMemHandle_params*>(call.functionParams)->dptr;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      ptr = reinterpret_cast<CUdeviceptr>(static_cast<const cuMemFreeHost_params*>(call.functionParams)->p);
      break;
    default: break;
  }
  int owner = inventory_.OwnerOf(ptr);
  DeclineRangeForMemory(owner, "a free of the device's memory");
  // R13: a free waits for an open window on its device, and holds it shared until it returns.
  try {
    if (controller_ != nullptr && owner >= 0) {
      held_windows.push_back(controller_->EnterDeviceShared(owner));
    } else {
      held_windows.emplace_back();
    }
  } catch (...) {
  }
  inventory_.RecordFree(ptr);
}

std::shared_ptr<const FunctionInfo> CudaReplayHook::InfoOf(CUfunction function, CUstream stream) noexcept {
  return functions_.InfoOf(*driver_, *controller_, modules_, function, stream);
}

void CudaReplayHook::OnGraphCall(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  if (!EnsureDevices() || inventory_.finalizing()) return;
  graphs_.OnGraphCall(*driver_, cbid, call);
}

bool CudaReplayHook::Capturing(CUstream stream) const noexcept {
  ScopedInternalWork internal;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver_->StreamIsCapturing(stream, &capture) == CUDA_SUCCESS &&
         capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

void CudaReplayHook::OnLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  if (call.callbackSite == CUPTI_API_EXIT) {
    if (!held_windows.empty()) held_windows.pop_back();
    return;
  }
  // Every launch entry pushes exactly one lock (maybe empty), which its exit pops.
  auto hold_for_the_call = [this](int device) {
    try {
      if (controller_ != nullptr && device >= 0) {
        held_windows.push_back(controller_->EnterDeviceShared(device));
      } else {
        held_windows.emplace_back();
      }
    } catch (...) {
    }
  };
  if (!EnsureDevices() || inventory_.finalizing()) {
    hold_for_the_call(-1);
    return;
  }
  CudaDevice* device = devices_.DeviceOf(call.context);
  if (device == nullptr) {
    hold_for_the_call(-1);
    return;
  }
  const CudaDriver& d = *driver_;
  device::LaunchRequest request;
  request.device = device->ordinal();
  CUfunction function = nullptr;
  CUstream stream = nullptr;
  CUgraphExec graph_exec = nullptr;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto* a = static_cast<const cuLaunchKernel_params*>(call.functionParams);
      function = a->f;
      stream = a->hStream;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto* a = static_cast<const cuLaunchCooperativeKernel_params*>(call.functionParams);
      function = a->f;
      stream = a->hStream;
      request.kind = device::LaunchKind::kCooperativeKernel;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* a = static_cast<const cuLaunchKernelEx_params*>(call.functionParams);
      function = a->f;
      stream = a->config != nullptr ? a->config->hStream : nullptr;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      // Both forms are (CUgraphExec, CUstream).
      auto* a = static_cast<const cuGraphLaunch_params*>(call.functionParams);
      graph_exec = a->hGraph;
      stream = a->hStream;
      request.kind = device::LaunchKind::kGraph;
      request.kernel_name = "<graph>";
      break;
    }
    default: hold_for_the_call(device->ordinal()); return;
  }
  // A graph's work is not re-issued in a range, whether or not the selector would pass it on (W5).
  if (graph_exec != nullptr && controller_->RangeRecording(device->ordinal())) {
    controller_->DeclineRange(device->ordinal(), replay::DeclineReason::kGraphLaunch,
                              "graph launches inside a range are not re-issued");
  }
  // The idle path (R3): a kernel whose name the selector rejects, or any launch once the count
  // is used up, costs two cached lookups and no driver call.
  std::shared_ptr<const FunctionInfo> info;
  // Graph replay selects by the kernel nodes' names (DescribeGraph); without it a graph launch
  // reaches the controller only when its name matches, to be declined.
  const bool replayed_graph = function == nullptr && controller_->ReplaysGraphs();
  if (function != nullptr) {
    // Inside a recording range every launch is part of it, whatever the selector says (W3).
    const bool in_range = controller_->RangeRecording(device->ordinal());
    info = controller_->Exhausted() && !in_range ? nullptr : InfoOf(function, stream);
    if (in_range && info == nullptr) {
      controller_->DeclineRange(device->ordinal(), replay::DeclineReason::kNotRecordable,
                                "a launch of a function without a name");
    }
    if (info == nullptr || (!info->matches && !in_range)) {
      hold_for_the_call(device->ordinal());
      return;
    }
    request.kernel_name = info->name;
    request.uses_device_printf = info->uses_printf;  // C2
    request.uses_device_malloc = info->uses_device_malloc;
  } else if (!replayed_graph &&
             (controller_->Exhausted() || !controller_->NameMatches(request.kernel_name))) {
    hold_for_the_call(device->ordinal());
    return;
  }
  if (function != nullptr || replayed_graph) {
    usage_.Describe(static_cast<std::size_t>(device->ordinal()), request);  // C2 arrays, R14
    request.stream_capturing = Capturing(stream);
  }
  if (graph_exec != nullptr) {
    CudaGraphExecutor executor(*this, *device, graph_exec, stream, graphs_.GraphOf(graph_exec));
    Status status = controller_->Dispatch(request, executor);
    if (!status.ok()) {
      GPUPROF_LOG(kWarning) << "replay of a graph launch: " << status.message()
                            << "; the application's launch runs unreplayed";
    }
    hold_for_the_call(device->ordinal());
    return;
  }
  std::function<CUresult()> launch;
  device::LaunchShape shape;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      cuLaunchKernel_params copy = *static_cast<const cuLaunchKernel_params*>(call.functionParams);
      shape = ShapeOf(copy);
      launch = [&d, copy] {
        return d.LaunchKernel(copy.f, copy.gridDimX, copy.gridDimY, copy.gridDimZ, copy.blockDimX,
                              copy.blockDimY, copy.blockDimZ, copy.sharedMemBytes, copy.hStream,
                              copy.kernelParams, copy.extra);
      };
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      cuLaunchCooperativeKernel_params copy =
          *static_cast<const cuLaunchCooperativeKernel_params*>(call.functionParams);
      shape = ShapeOf(copy);
      launch = [&d, copy] {
        CUlaunchAttribute attribute{};
        attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attribute.value.cooperative = 1;
        CUlaunchConfig config{};
        config.gridDimX = copy.gridDimX;
        config.gridDimY = copy.gridDimY;
        config.gridDimZ = copy.gridDimZ;
        config.blockDimX = copy.blockDimX;
        config.blockDimY = copy.blockDimY;
        config.blockDimZ = copy.blockDimZ;
        config.sharedMemBytes = copy.sharedMemBytes;
        config.hStream = copy.hStream;
        config.attrs = &attribute;
        config.numAttrs = 1;
        return d.LaunchKernelEx(&config, copy.f, copy.kernelParams, nullptr);
      };
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      cuLaunchKernelEx_params copy = *static_cast<const cuLaunchKernelEx_params*>(call.functionParams);
      if (copy.config != nullptr) shape = ShapeOf(*copy.config);
      launch = [&d, copy] { return d.LaunchKernelEx(copy.config, copy.f, copy.kernelParams, copy.extra); };
      break;
    }
    default: launch = [] { return CUDA_SUCCESS; }; break;  // graphs: declined, never run by us
  }
  CudaLaunchExecutor executor(*this, *device, info != nullptr ? info->resolved : nullptr, stream,
                              std::move(launch), shape);
  if (info != nullptr && controller_->RangeRecording(device->ordinal())) {
    if (std::optional<LaunchCall> range_call = LaunchCallOf(cbid, call.functionParams)) {
      range_call->function = info->resolved;
      range_call->correlation_id = call.correlationId;
      executor.set_range_call(*range_call, request.kernel_name);
    }
  }
  Status status = controller_->Dispatch(request, executor);
  if (!status.ok()) {
    GPUPROF_LOG(kWarning) << "replay of " << request.kernel_name << ": " << status.message()
                          << "; the application's launch runs unreplayed";
  }
  hold_for_the_call(device->ordinal());
}

void CudaReplayHook::OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: OnAlloc(cbid, call); return;
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxEnablePeerAccess:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDisablePeerAccess: OnDeviceState(cbid, call); return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
    case CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost: OnFree(cbid, call); return;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: OnLaunch(cbid, call); return;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventRecordNodeSetEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventWaitNodeSetEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams: OnGraphCall(cbid, call); return;
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleUnload:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload: modules_.OnCodeLoad(cbid, call); return;
    default: OnRangeCall(cbid, call); return;
  }
}

void CudaReplayHook::OnDeviceState(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  if (!EnsureDevices()) return;
  CudaDevice* device = devices_.DeviceOf(call.context);
  if (device == nullptr) return;
  usage_.OnDeviceState(static_cast<std::size_t>(device->ordinal()), cbid, call);
}

void CudaReplayHook::OnModule(const ModuleEvent& event) noexcept {
  if (event.kind == ModuleEvent::Kind::kUnloadStarting) {
    functions_.Clear();  // function handles of an unloaded module may come back for another kernel
    modules_.OnModuleUnloading(event.module_id);
    // Its variables' memory goes with it: no later snapshot may read it.
    devices_.UnregisterModule(event.module_id);
    return;
  }
  modules_.OnModuleLoaded(event);
}

}  // namespace gpuprof::cupti
