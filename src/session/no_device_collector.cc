// The device collector factory of a build without CUDA: none. The Session records host-side data
// only (C API marks and ranges, and later torch and Python records).
#include "session/process.h"

namespace gpuprof::session {

DeviceCollectorFactory DefaultDeviceCollectorFactory() { return {}; }

StatusOr<std::vector<replay::MetricInfo>> QueryDeviceMetrics(int /*device*/, std::string_view /*chip*/) {
  return UnavailableError(
      "hardware counters need the CUDA build of gpuprof (libgpuprof.so built with GPUPROF_ENABLE_CUDA) and "
      "libcupti; this libgpuprof.so was built without CUDA");
}

}  // namespace gpuprof::session
