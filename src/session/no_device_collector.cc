// The device collector factory of a build without CUDA: none. The Session records host-side data
// only (C API marks and ranges, and later torch and Python records).
#include "session/process.h"

namespace gpuprof::session {

DeviceCollectorFactory DefaultDeviceCollectorFactory() { return {}; }

}  // namespace gpuprof::session
