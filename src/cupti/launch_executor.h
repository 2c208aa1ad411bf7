// CudaLaunchExecutor: one intercepted kernel launch (cuLaunchKernel, cuLaunchKernelEx,
// cuLaunchCooperativeKernel and their per-thread-stream forms). Passes are copies of the launch
// (same function, arguments and stream) submitted on the application's stream under
// ScopedInternalWork; the application's own launch runs after the callback returns.
#pragma once

#include <cupti.h>

#include <functional>
#include <optional>
#include <string>

#include "cupti/recorded_launch.h"
#include "cupti/replay_executor.h"

namespace gpuprof::cupti {

// launch__* metrics (issue 19): `function`'s attributes and the occupancy API's answer for `shape`'s
// block size and dynamic shared memory on device `ordinal`, with the device's limits.
StatusOr<device::LaunchShape> DescribeKernel(const device::cuda::CudaDriver& driver, CUfunction function,
                                             device::LaunchShape shape, int ordinal);

class CudaLaunchExecutor final : public CudaExecutorBase {
 public:
  // `launch` submits one copy of the application's launch; `shape` carries its grid, block and
  // dynamic shared memory (DescribeLaunch adds the rest). `function` may be null (nothing to describe).
  CudaLaunchExecutor(ExecutorHost& host, device::cuda::CudaDevice& device, CUfunction function,
                     CUstream stream, std::function<CUresult()> launch, const device::LaunchShape& shape)
      : CudaExecutorBase(host, device, stream),
        function_(function),
        launch_(std::move(launch)),
        shape_(shape) {}

  // launch__* metrics (issue 19): the function's attributes and the occupancy API's answer for
  // this block size and dynamic shared memory, read in the launch's context (current here).
  StatusOr<device::LaunchShape> DescribeLaunch() override;
  Status PrepareForSnapshot() override { return host_.PrepareFunction(device_, function_); }
  StatusOr<device::PassTiming> RunPass(int pass) override;
  Status RunCounterPass(int pass) override;
  // Range replay (W3): the launch copied from `call` (set_range_call); an error naming why it
  // cannot be copied (a cooperative launch, ...) declines the range.
  StatusOr<std::shared_ptr<const device::RecordedLaunch>> RecordForRange() override;

  // The application's call as the callback reported it, for RecordForRange; `name` as the DB
  // stores it.
  void set_range_call(const LaunchCall& call, std::string name) {
    range_call_ = call;
    range_name_ = std::move(name);
  }

 private:
  const CUfunction function_;
  const std::function<CUresult()> launch_;
  const device::LaunchShape shape_;
  std::optional<LaunchCall> range_call_;
  std::string range_name_;
};

}  // namespace gpuprof::cupti
