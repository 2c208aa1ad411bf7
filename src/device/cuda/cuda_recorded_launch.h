// The CUDA backend's view of a recorded launch (device/range.h): CudaDevice::ReissueRange submits
// it on one of its own streams. The launch itself is recorded by the CUPTI layer, which sees the
// application's call (cupti/recorded_launch.h); device/cuda cannot see cupti, so the record issues
// itself through this interface.
#pragma once

#include <cuda.h>

#include "device/range.h"

namespace gpuprof::device::cuda {

class CudaIssuableLaunch : public RecordedLaunch {
 public:
  // Submits the launch once more on `stream`, with the arguments copied at the application's call.
  // The caller has the launch's context current and marks the call as gpuprof's own work.
  virtual CUresult Issue(CUstream stream) const = 0;
};

}  // namespace gpuprof::device::cuda
