// The roofs of the step roofline (`gpuprof report`): a device's peak FP32 and FP16/BF16 tensor
// FLOP/s and its DRAM (and, where published, L2) bandwidth, by the name NPU_INFO records
// (cudaGetDeviceProperties' name), and its SM count. The figures are NVIDIA's datasheet peaks, dense (no
// sparsity), at boost clock: a ceiling the counters are measured against, not a promise. Pure data and
// lookups; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuprof::db {

struct DeviceRoofs {
  std::string model;                     // the datasheet's name, e.g. "H100 SXM"
  double fp32_flops = 0;                 // FLOP/s, CUDA cores
  double tensor_fp16_flops = 0;          // FLOP/s, FP16/BF16 tensor cores, dense
  double dram_bytes_per_s = 0;           // HBM/GDDR
  std::optional<double> l2_bytes_per_s;  // none: not published
  int sm_count = 0;                      // streaming multiprocessors (the findings' tiny-grid rule)
};

// The roofs of the device named `device_name`; none for a device the table does not know (the
// chart then says so and draws the points alone).
std::optional<DeviceRoofs> FindDeviceRoofs(std::string_view device_name);

}  // namespace gpuprof::db
