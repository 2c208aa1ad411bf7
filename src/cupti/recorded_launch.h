// CudaRecordedLaunch: one kernel launch of a recording range (REPLAY_SPEC W3), copied at the
// application's call so that CudaDevice::ReissueRange can submit it again after the application
// has reused its argument buffers: the function, grid, block, dynamic shared memory, the launch
// attributes of cuLaunchKernelEx and a deep copy of the argument bytes.
//
// The arguments come either as kernelParams (one pointer per parameter; the driver's
// cuFuncGetParamInfo gives each parameter's offset and size) or as `extra`'s
// CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE buffer. Whatever cannot be copied faithfully (a cooperative
// launch, an attribute that names an event, an unknown `extra` key, a driver without
// cuFuncGetParamInfo) is an error naming why: the range is then declined.
//
// Thread-safety: immutable once recorded; Issue may be called from any thread.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/cuda/cuda_driver.h"
#include "device/cuda/cuda_recorded_launch.h"
#include "gpuprof/status.h"

namespace gpuprof::cupti {

// The application's launch as its callback reports it.
struct LaunchCall {
  CUfunction function = nullptr;  // resolved in the launch's context (not a CUkernel)
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  void** kernel_params = nullptr;
  void** extra = nullptr;
  const CUlaunchAttribute* attributes = nullptr;  // cuLaunchKernelEx
  unsigned attribute_count = 0;
  bool cooperative = false;
  std::uint64_t correlation_id = 0;  // the application's call, as CUPTI numbered it
};

// cuFuncGetParamInfo's shape: parameter `index`'s offset and size; CUDA_ERROR_INVALID_VALUE past
// the last parameter.
using ParamInfoFn = std::function<CUresult(std::size_t index, std::size_t* offset, std::size_t* size)>;
// The launch's full shape for launch__* metrics (DescribeKernel), asked only when they are.
using ShapeFn = std::function<StatusOr<device::LaunchShape>()>;

class CudaRecordedLaunch final : public device::cuda::CudaIssuableLaunch {
 public:
  // Copies `call` (see above); `param_info` is null when the driver lacks cuFuncGetParamInfo.
  static StatusOr<std::shared_ptr<const CudaRecordedLaunch>> Record(const device::cuda::CudaDriver& driver,
                                                                    const LaunchCall& call, std::string name,
                                                                    const ParamInfoFn& param_info,
                                                                    ShapeFn describe = {});

  const std::string& kernel_name() const noexcept override { return name_; }
  // Pass 1's duration is CUPTI's kernel record of this call (the DB takes it at its finalize).
  std::uint64_t application_launch_id() const noexcept override { return call_.correlation_id; }
  StatusOr<device::LaunchShape> shape() const override {
    return describe_ ? describe_() : UnimplementedError("the launch's shape was not recorded");
  }
  CUresult Issue(CUstream stream) const override;

  // The copied argument bytes, laid out as the kernel's parameter buffer (tests).
  const std::vector<std::uint8_t>& argument_bytes() const noexcept { return arguments_; }
  // Each parameter's place in argument_bytes(); empty for the `extra` form.
  const std::vector<void*>& parameter_pointers() const noexcept { return parameters_; }

 private:
  CudaRecordedLaunch(const device::cuda::CudaDriver& driver, const LaunchCall& call, std::string name)
      : driver_(driver), call_(call), name_(std::move(name)) {}
  Status CopyParameters(const LaunchCall& call, const ParamInfoFn& param_info);
  Status CopyExtra(void** extra);
  Status CopyAttributes(const LaunchCall& call);

  const device::cuda::CudaDriver& driver_;
  LaunchCall call_;  // shape and function; its pointers are replaced by the copies below
  const std::string name_;
  ShapeFn describe_;
  std::vector<std::uint8_t> arguments_;
  std::vector<void*> parameters_;  // into arguments_ (kernelParams form)
  std::size_t extra_size_ = 0;     // the `extra` form's buffer size
  std::vector<CUlaunchAttribute> attributes_;
};

}  // namespace gpuprof::cupti
