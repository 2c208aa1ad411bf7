// CudaReplayHook: kernel replay on CUDA through CUPTI's driver-API callbacks (REPLAY_SPEC R1-R14,
// C1-C5, B4, B5, B7 as far as listed in src/cupti/README.md).
//
// The subscriber hands it every driver-API entry and exit that is not gpuprof's own work:
// - allocations (cuMemAlloc, pitch, managed, stream-ordered and pool allocations, VMM cuMemMap)
//   are classified through the CudaDevice and recorded in the replay::Inventory at exit (R1, B4);
//   at the entry of those that make device memory (cuMemAlloc, pitch, stream-ordered, pool, VMM
//   cuMemCreate) the device's snapshot arena is freed when the allocation would not fit beside it
//   (Device::MakeRoomFor, B2). That entry holds the device's replay window shared until the call
//   returns, as a free does, so the arena is never freed under a replay and no replay regrows it
//   before the allocation is made; it costs one relaxed load while the arena holds no device memory;
// - frees (cuMemFree, cuMemFreeAsync, cuMemUnmap) are recorded at entry, before the memory goes
//   (R10), and hold the device's replay window shared until their exit (R13);
// - kernel launches (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their
//   per-thread-stream forms) go to the replay::Controller at entry. A CUPTI callback cannot skip
//   the call it reports, so every pass is a copy of the launch that the executor submits itself
//   (same function, arguments and stream, under ScopedInternalWork: C1), the controller restores
//   the inputs after the last pass, and the application's own launch then runs once, as it
//   would unprofiled. Launches into a capturing stream are declined (R11). Graph launches
//   (cuGraphLaunch) are declined unless --graph-replay asks for them (issue 24): then a
//   CudaGraphExecutor runs the executable graph as a whole per pass, or its nodes one by one as
//   standalone operations (from the clone of the graph taken at its instantiation).
//
// Devices are set up at the first callback that needs them (the driver cannot be called from
// InitializeInjection, which runs inside cuInit), each GPU only when the process uses it: a
// CudaDevice retains its GPU's primary context, which must not happen on GPUs the program never
// touches (a rank of an 8-GPU job uses one).
//
// The hook dispatches; each job it dispatches to has its own file: replay_devices.h (the devices),
// device_usage.h (CUDA arrays, peer access), kernel_functions.h (what a launched function is),
// module_registry.h (R7's loaded code), graph_registry.h (instantiated graphs), and the executors
// (replay_executor.h, launch_executor.h, graph_executor.h), which see the hook only as an
// ExecutorHost.
//
// Thread-safety: the callbacks run on the application's threads, concurrently.
#pragma once

#include <cupti.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

#include "cupti/cupti_api.h"
#include "cupti/device_usage.h"
#include "cupti/graph_registry.h"
#include "cupti/kernel_functions.h"
#include "cupti/module_registry.h"
#include "cupti/nvtx_delimiter.h"
#include "cupti/replay_devices.h"
#include "cupti/replay_executor.h"
#include "cupti/subscriber.h"
#include "device/cuda/cuda_device.h"
#include "gpuprof/replay.h"
#include "replay/controller.h"
#include "replay/inventory.h"

namespace gpuprof::cupti {

// What `gpuprof replay` configures, for the engine and for the CUDA side of it: made by the
// session from its parsed configuration (session/config.h ReplaySettings).
struct CudaReplaySettings {
  replay::ReplayOptions options;           // passes == 1: replay not configured
  bool flush_l2 = true;                    // B7, --cache-control all
  device::cuda::CudaDeviceOptions device;  // B2's device reserve
  // `gpuprof replay --from-script`: track from the start, replay nothing until the program
  // configures replay itself (gpuprof.profile(kernel_replay=...), CudaReplayHook::Configure).
  bool from_script = false;
  // Makes the hardware-counter backend (issue 19); called at most once, at the first moment the
  // options ask for metrics (the first launch, or a Configure with metrics). Empty, or a failure:
  // one warning naming the reason, and replay goes on without counters.
  std::function<StatusOr<std::shared_ptr<replay::CounterBackend>>()> make_counter_backend;
  // NVML's clock calls for --clock-control base (C3; cupti/nvml_clock_api.h); null: that option
  // warns once and changes nothing.
  std::shared_ptr<replay::ClockApi> clock_api;
  // CUPTI's graph and graph-node ids (issue 24), so that replayed graphs carry the ids of CUPTI's
  // kernel records; null: gpuprof numbers graphs and nodes itself.
  std::shared_ptr<CuptiApi> cupti;
};

class CudaReplayHook final : public DriverApiObserver, private ExecutorHost {
 public:
  CudaReplayHook(CudaReplaySettings settings, std::function<void(const replay::ReplayRecord&)> sink);
  ~CudaReplayHook();
  CudaReplayHook(const CudaReplayHook&) = delete;
  CudaReplayHook& operator=(const CudaReplayHook&) = delete;

  // Every driver-API entry/exit outside gpuprof's own work. Never throws.
  void OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept override;
  // NVTX ranges: with RangeDelimiter::kNvtx, the range named by range_nvtx_name begins and ends a
  // range on the current context's device (range_hook.cc).
  void OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) noexcept override;
  // Module loads: the cubin's variables, indexed by the kernels it defines (R7).
  void OnModule(const ModuleEvent& event) noexcept;
  // Process teardown (R5): later callbacks record nothing and replay nothing.
  void BeginFinalization() noexcept;
  // A context's destruction starts: the counter backend lets go of what it keeps enabled on
  // contexts (replay::Controller::IdleCounters), while the context is still alive.
  void OnContextDestroy(CUcontext context) noexcept;
  // The session stops (gpuprof_stop, or the process's end): the same, for every context, so that an
  // application running on after a mid-process stop keeps no profiler enabled by gpuprof.
  void IdleCounters() noexcept;
  // New options and cache control for the launches from now on (passes == 1 pauses); launches
  // already replaying finish under the old ones. InvalidArgument for bad options, Unavailable
  // when no CUDA device could be set up. Thread-safe.
  Status Configure(const replay::ReplayOptions& options, bool flush_l2) noexcept;
  // Range replay by training step (RangeDelimiter::kStep, W1): the step that ran on the current
  // context's device ends (its range is replayed) and the next one begins. Thread-safe.
  void StepBoundary() noexcept;

 private:
  bool EnsureDevices() noexcept;
  // Gives the controller a counter backend, once (see CudaReplaySettings::make_counter_backend).
  void EnsureCounterBackend() noexcept;
  void OnAlloc(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  // The entry of an allocation that makes device memory (see above); pushes one held window.
  void MakeRoomForAllocation(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  void OnFree(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  void OnLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  // Range replay (range_hook.cc): a delimiter, or a copy, memset, event operation or unrepeatable
  // call of a recording range. False when `cbid` is none of those (or not at its entry).
  bool OnRangeCall(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  // The call's device, or the current context's when the callback names no context.
  device::cuda::CudaDevice* RangeDeviceOf(const CUpti_CallbackData& call) noexcept;
  // W5: an allocation or free of `device`'s memory while a range records on it declines the range.
  void DeclineRangeForMemory(int device, const char* what) noexcept;
  // Whether `options` ask for range replay, and the NVTX range name that delimits ranges (none
  // unless range replay by NVTX).
  void ConfigureRanges(const replay::ReplayOptions& options);
  // Whether `stream` is being captured into a graph now (its stream-ordered calls add nodes).
  bool Capturing(CUstream stream) const noexcept;
  // CUDA arrays (C2) and peer access (R14) per device.
  void OnDeviceState(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  void RecordDeviceMemory(device::cuda::CudaDevice& device, CUdeviceptr ptr, std::uint64_t size) noexcept;

  // ExecutorHost: all the launch and graph executors may ask of the hook.
  bool flush_l2() const noexcept override { return flush_l2_.load(std::memory_order_relaxed); }
  Status PrepareFunction(device::cuda::CudaDevice& device, CUfunction function) override {
    return modules_.PrepareFunction(device, function);
  }
  // Cached per function (R3): computed at its first launch, dropped by Configure (the selector
  // changed) and by a module unload (its handles may come back for another kernel).
  std::shared_ptr<const FunctionInfo> InfoOf(CUfunction function, CUstream stream) noexcept override;

  // Graph launches (issue 24): instantiations recorded in graphs_ once the devices are set up.
  void OnGraphCall(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;
  GraphRegistry graphs_;

  replay::ReplayOptions options_;  // the first options; Configure changes the controller's
  std::atomic<bool> flush_l2_;
  std::function<void(const replay::ReplayRecord&)> sink_;
  replay::Inventory inventory_;
  std::once_flag devices_once_;
  const device::cuda::CudaDriver* driver_ = nullptr;
  ReplayDevices devices_;  // set up by EnsureDevices
  std::unique_ptr<replay::Controller> controller_;
  std::function<StatusOr<std::shared_ptr<replay::CounterBackend>>()> make_counter_backend_;
  std::shared_ptr<replay::ClockApi> clock_api_;  // handed to the controller when it is made
  std::mutex counter_backend_mu_;
  bool counter_backend_tried_ = false;  // guarded by counter_backend_mu_

  DeviceUsage usage_;  // CUDA arrays (C2) and peer access (R14) per device

  // Module loads and the code handles they came through (R7, C2).
  ModuleRegistry modules_;

  KernelFunctions functions_;     // what each launched function is (InfoOf)
  NvtxDelimiter nvtx_delimiter_;  // range replay by NVTX range (RangeDelimiter::kNvtx)
  // Range replay configured once (it stays set): until then OnRangeCall costs one relaxed load per
  // driver call.
  std::atomic<bool> range_mode_{false};
};

}  // namespace gpuprof::cupti
