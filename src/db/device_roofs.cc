#include "db/device_roofs.h"

#include <array>

namespace gpuprof::db {
namespace {

struct KnownDevice {
  std::string_view name_part;  // a part of cudaGetDeviceProperties' name that picks the model
  std::string_view model;
  double fp32_tflops;
  double tensor_tflops;
  double dram_tb_per_s;
  int sms;  // streaming multiprocessors
};

// Most specific first: "H100 PCIe" before "H100". Datasheet figures (dense, boost clock); SM counts
// from the same datasheets (what cudaDeviceProp::multiProcessorCount reports on these boards).
constexpr std::array<KnownDevice, 8> kDevices = {{
    {"H200", "H200 SXM", 67, 989.5, 4.8, 132},
    {"H100 NVL", "H100 NVL", 60, 835, 3.9, 132},
    {"H100 PCIe", "H100 PCIe", 51, 756, 2.0, 114},
    {"H100", "H100 SXM", 67, 989.5, 3.35, 132},
    {"A100 80GB PCIe", "A100 80GB PCIe", 19.5, 312, 1.935, 108},
    {"A100-SXM4-80GB", "A100 SXM 80GB", 19.5, 312, 2.039, 108},
    {"A100", "A100 40GB", 19.5, 312, 1.555, 108},
    {"L40S", "L40S", 91.6, 362, 0.864, 142},
}};

}  // namespace

std::optional<DeviceRoofs> FindDeviceRoofs(std::string_view device_name) {
  for (const KnownDevice& device : kDevices) {
    if (device_name.find(device.name_part) == std::string_view::npos) continue;
    DeviceRoofs roofs;
    roofs.model = std::string(device.model);
    roofs.fp32_flops = device.fp32_tflops * 1e12;
    roofs.tensor_fp16_flops = device.tensor_tflops * 1e12;
    roofs.dram_bytes_per_s = device.dram_tb_per_s * 1e12;
    roofs.sm_count = device.sms;
    return roofs;
  }
  return std::nullopt;
}

}  // namespace gpuprof::db
