#include "cupti/launch_executor.h"

#include <algorithm>
#include <iterator>

#include "cupti/internal_work.h"

namespace gpuprof::cupti {

using device::cuda::CudaDriver;

StatusOr<device::LaunchShape> CudaLaunchExecutor::DescribeLaunch() {
  if (function_ == nullptr) return FailedPreconditionError("no kernel function to describe (graph launch)");
  return DescribeKernel(device_.driver(), function_, shape_, device_.ordinal());
}

StatusOr<device::LaunchShape> DescribeKernel(const CudaDriver& d, CUfunction function,
                                             device::LaunchShape shape, int ordinal) {
  ScopedInternalWork internal;
  int value = 0;
  GPUPROF_RETURN_IF_ERROR(d.Check("cuFuncGetAttribute(NUM_REGS)",
                                  d.FuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, function)));
  shape.registers_per_thread = static_cast<std::uint32_t>(value);
  GPUPROF_RETURN_IF_ERROR(d.Check("cuFuncGetAttribute(SHARED_SIZE_BYTES)",
                                  d.FuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function)));
  shape.static_shared_bytes = static_cast<std::uint64_t>(value);
  const std::uint64_t threads = static_cast<std::uint64_t>(shape.block[0]) * shape.block[1] * shape.block[2];
  if (threads > 0 && threads <= 1024) {
    GPUPROF_RETURN_IF_ERROR(d.Check(
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        d.OccupancyMaxActiveBlocksPerMultiprocessor(&value, function, static_cast<int>(threads),
                                                    static_cast<size_t>(shape.dynamic_shared_bytes))));
    shape.active_blocks_per_sm = static_cast<std::uint32_t>(value);
  }
  CUdevice dev = 0;
  GPUPROF_RETURN_IF_ERROR(d.Check("cuDeviceGet", d.DeviceGet(&dev, ordinal)));
  GPUPROF_RETURN_IF_ERROR(
      d.Check("cuDeviceGetAttribute(MAX_THREADS_PER_MULTIPROCESSOR)",
              d.DeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev)));
  int warp = 32;
  if (d.DeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev) != CUDA_SUCCESS || warp <= 0) warp = 32;
  shape.max_warps_per_sm = static_cast<std::uint32_t>(value / warp);
  GPUPROF_RETURN_IF_ERROR(
      d.Check("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)",
              d.DeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)));
  shape.sm_count = static_cast<std::uint32_t>(value);
  return shape;
}

StatusOr<device::PassTiming> CudaLaunchExecutor::RunPass(int) {
  const CudaDriver& d = device_.driver();
  ScopedInternalWork internal;
  return Timed([&] { return d.Check("launch (replay pass)", launch_()); });
}

Status CudaLaunchExecutor::RunCounterPass(int) {
  const CudaDriver& d = device_.driver();
  ScopedInternalWork internal;
  GPUPROF_RETURN_IF_ERROR(d.Check("launch (counter pass)", launch_()));
  return d.Check("cuStreamSynchronize", d.StreamSynchronize(stream_));
}

StatusOr<std::shared_ptr<const device::RecordedLaunch>> CudaLaunchExecutor::RecordForRange() {
  if (!range_call_.has_value()) return UnimplementedError("this launch's call was not kept for a range");
  const CudaDriver& d = device_.driver();
  ParamInfoFn param_info;
  if (d.FuncGetParamInfo != nullptr) {
    param_info = [&d, function = range_call_->function](std::size_t index, std::size_t* offset,
                                                        std::size_t* size) {
      ScopedInternalWork internal;
      return d.FuncGetParamInfo(function, index, offset, size);
    };
  }
  device::LaunchShape shape;
  std::copy(std::begin(range_call_->grid), std::end(range_call_->grid), shape.grid);
  std::copy(std::begin(range_call_->block), std::end(range_call_->block), shape.block);
  shape.dynamic_shared_bytes = range_call_->shared_bytes;
  ShapeFn describe = [&d, function = range_call_->function, shape, ordinal = device_.ordinal()] {
    return DescribeKernel(d, function, shape, ordinal);
  };
  GPUPROF_ASSIGN_OR_RETURN(
      std::shared_ptr<const CudaRecordedLaunch> recorded,
      CudaRecordedLaunch::Record(d, *range_call_, range_name_, param_info, std::move(describe)));
  return std::shared_ptr<const device::RecordedLaunch>(std::move(recorded));
}

}  // namespace gpuprof::cupti
