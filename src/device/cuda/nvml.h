// NVML (libnvidia-ml.so.1, part of the driver), dlopened once per process and initialized; the one
// place gpuprof loads it (SmClock reads clocks through it, cupti/'s clock adapter locks them). The
// toolkit on the development machine ships no nvml.h, so the few types and codes used are spelled
// here as nvml.h declares them: nvmlReturn_t is an int, nvmlDevice_t an opaque pointer.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <string>

namespace gpuprof::device::cuda::nvml {

inline constexpr int kSuccess = 0;            // NVML_SUCCESS
inline constexpr int kErrorNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED
inline constexpr int kErrorNoPermission = 4;  // NVML_ERROR_NO_PERMISSION
inline constexpr int kClockSm = 1;            // NVML_CLOCK_SM
inline constexpr int kClockMemory = 2;        // NVML_CLOCK_MEM

// The symbol `name` of the initialized library, or nullptr (no NVML, nvmlInit_v2 failed, or the
// driver's NVML lacks it). The library is never closed: NVML stays initialized for the process.
void* Symbol(const char* name) noexcept;

// The nvmlDevice_t of the GPU at `pci_bus_id` (as cuDeviceGetPCIBusId writes it), or nullptr. By
// PCI bus id, so NVML's enumeration order and CUDA_VISIBLE_DEVICES cannot mix devices up.
void* DeviceByPciBusId(const std::string& pci_bus_id) noexcept;

// NVML's text for `code` (nvmlErrorString), or "NVML error <code>".
std::string ErrorString(int code);

}  // namespace gpuprof::device::cuda::nvml
