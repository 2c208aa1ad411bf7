// What the CUDA replay executors share: the narrow view of the hook they run for (ExecutorHost,
// in place of the hook's friendship) and CudaExecutorBase, the base of CudaLaunchExecutor and
// CudaGraphExecutor (and of a later range executor).
//
// Every executor runs inside a CUPTI API-entry callback that cannot skip the call it reports: the
// application's own call runs after the callback returns, and every pass is gpuprof's own work on
// the application's stream, under ScopedInternalWork (C1).
//
// Thread-safety: an executor lives for one intercepted call on the application's thread; the
// ExecutorHost it uses is called from many such threads at once.
#pragma once

#include <cupti.h>

#include <memory>

#include "cupti/kernel_functions.h"
#include "device/cuda/cuda_device.h"
#include "device/device.h"

namespace gpuprof::cupti {

// What an executor may ask of the hook that made it. The hook outlives its executors.
class ExecutorHost {
 public:
  // B7: whether each pass starts with the L2 flushed (--cache-control all; Configure changes it).
  virtual bool flush_l2() const noexcept = 0;
  // R7 for one launched function before a snapshot (ModuleRegistry::PrepareFunction).
  virtual Status PrepareFunction(device::cuda::CudaDevice& device, CUfunction function) = 0;
  // The cached facts about `function` launched on `stream`; null when it has no name.
  virtual std::shared_ptr<const FunctionInfo> InfoOf(CUfunction function, CUstream stream) noexcept = 0;

 protected:
  ~ExecutorHost() = default;
};

class CudaExecutorBase : public device::LaunchExecutor {
 public:
  // The application's call runs after the callback returns: nothing to submit or signal here.
  Status RunOriginal() override { return OkStatus(); }
  bool original_runs_after_return() const noexcept override { return true; }
  void SignalCompletion() override {}
  bool flushes_caches() const noexcept override { return host_.flush_l2(); }
  // The flush finishes before the counters start, so that only the launch is counted.
  Status PrepareCounterPass() override;

 protected:
  CudaExecutorBase(ExecutorHost& host, device::cuda::CudaDevice& device, CUstream stream)
      : host_(host), device_(device), stream_(stream) {}

  // `submit` between two events on the stream, with the L2 flush before (B7) and the SM clock
  // read around (C3); waits for the end event. Call under ScopedInternalWork.
  template <typename Submit>
  StatusOr<device::PassTiming> Timed(Submit submit) {
    const device::cuda::CudaDriver& d = device_.driver();
    if (host_.flush_l2()) GPUPROF_RETURN_IF_ERROR(device_.FlushL2(stream_));
    GPUPROF_ASSIGN_OR_RETURN(const auto events, device_.PassEvents());
    const std::uint32_t clock_before = device_.SmClockKhz();
    Status status = d.Check("cuEventRecord", d.EventRecord(events[0], stream_));
    if (status.ok()) status = submit();
    if (status.ok()) status = d.Check("cuEventRecord", d.EventRecord(events[1], stream_));
    if (status.ok()) status = d.Check("cuEventSynchronize", d.EventSynchronize(events[1]));
    float ms = 0;
    if (status.ok()) status = d.Check("cuEventElapsedTime", d.EventElapsedTime(&ms, events[0], events[1]));
    GPUPROF_RETURN_IF_ERROR(status);
    device::PassTiming timing;
    timing.duration_ns = static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
    timing.sm_clock_before_khz = clock_before;
    timing.sm_clock_after_khz = device_.SmClockKhz();
    return timing;
  }

  ExecutorHost& host_;
  device::cuda::CudaDevice& device_;
  const CUstream stream_;
};

}  // namespace gpuprof::cupti
