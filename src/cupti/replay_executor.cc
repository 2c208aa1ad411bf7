#include "cupti/replay_executor.h"

#include "cupti/internal_work.h"

namespace gpuprof::cupti {

Status CudaExecutorBase::PrepareCounterPass() {
  if (!host_.flush_l2()) return OkStatus();
  const device::cuda::CudaDriver& d = device_.driver();
  ScopedInternalWork internal;
  GPUPROF_RETURN_IF_ERROR(device_.FlushL2(stream_));
  return d.Check("cuStreamSynchronize", d.StreamSynchronize(stream_));
}

}  // namespace gpuprof::cupti
