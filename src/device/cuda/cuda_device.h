// CudaDevice: device.h on one NVIDIA GPU, through the driver API (CudaDriver, loaded at run time).
//
// Works in the device's primary context (retained for the device's lifetime) on a private
// non-blocking stream, so gpuprof's copies never order against the application's streams. Every
// driver call runs under ScopedInternalWork (scoped_internal_work.h): the profile and the
// inventory never see it (C1).
//
// - QueryPointer: cuPointerGetAttributes (range start/size, memory type, managed, ordinal).
// - Backing (B2): device memory while the footprint stays under the free memory minus
//   `device_reserve_bytes`, else pinned host, else pageable host, else ResourceExhausted.
// - HashChunks (B1): the chunk-hash kernel of chunk_kernels.cu on the private stream, only the
//   hashes copied back; where its PTX does not load, the same hash (ChunkHashReference) on the
//   host over pinned staging copies, so hashes never depend on which path ran.
// - CompareChunks (B1): the exact compare kernel against a device-tier backing; one flag per
//   chunk copied back. Host-tier backings: Unimplemented (the snapshot then compares hashes).
// - EnumerateModuleVariables: the module variables registered through RegisterModuleVariables
//   (the replay hook resolves them for every module loaded on the device, R7) and not yet
//   unregistered by the module's unload.
// - Synchronize: cuCtxSynchronize on a helper thread, waited for at most `timeout` (R14).
// - SmClockKhz: NVML's current SM clock (C3), found by the device's PCI bus id.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/cuda/cuda_driver.h"
#include "device/cuda/sm_clock.h"
#include "device/device.h"

namespace gpuprof::device::cuda {

struct CudaDeviceOptions {
  // Device-tier backing is used only while this much device memory stays free (B2).
  std::uint64_t device_reserve_bytes = std::uint64_t{2} << 30;
  std::uint64_t staging_bytes = std::uint64_t{64} << 20;  // pinned staging for host hashing
};

class CudaDevice final : public Device {
 public:
  static StatusOr<std::unique_ptr<CudaDevice>> Create(const CudaDriver& driver, int ordinal,
                                                      CudaDeviceOptions options = {});
  ~CudaDevice() override;

  int ordinal() const noexcept override { return ordinal_; }
  std::string name() const override { return name_; }
  StatusOr<PointerInfo> QueryPointer(DevicePtr ptr) override;
  Status CopyDeviceToHost(void* dst, DevicePtr src, std::uint64_t bytes) override;
  Status CopyHostToDevice(DevicePtr dst, const void* src, std::uint64_t bytes) override;
  Status CopyDeviceToDevice(DevicePtr dst, DevicePtr src, std::uint64_t bytes) override;
  StatusOr<std::unique_ptr<BackingBuffer>> AllocateBacking(std::uint64_t bytes,
                                                           StorageTier preferred) override;
  Status SaveToBacking(BackingBuffer& dst, std::uint64_t dst_offset, DevicePtr src,
                       std::uint64_t bytes) override;
  Status RestoreFromBacking(DevicePtr dst, const BackingBuffer& src, std::uint64_t src_offset,
                            std::uint64_t bytes) override;
  Status HashChunks(DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                    std::span<std::uint64_t> out) override;
  Status CompareChunks(DevicePtr current, const BackingBuffer& saved, std::uint64_t saved_offset,
                       std::uint64_t bytes, std::uint64_t chunk_size, std::span<std::uint8_t> dirty) override;
  StatusOr<std::vector<ModuleVariable>> EnumerateModuleVariables() override;
  Status Synchronize(std::chrono::nanoseconds timeout) override;

  // Adds module variables (deduplicated by address) for EnumerateModuleVariables.
  void RegisterModuleVariables(const std::vector<ModuleVariable>& variables);
  // Forgets the variables of an unloaded module (ModuleVariable::module_id), before its memory goes.
  void UnregisterModule(std::uint64_t module_id);

  // The current SM clock in kHz through NVML (C3); 0 when NVML cannot say.
  std::uint32_t SmClockKhz() const noexcept { return sm_clock_ != nullptr ? sm_clock_->ReadKhz() : 0; }

  // Writes `bytes` of scratch device memory, evicting the L2 cache (B7). Bytes: 2x the L2 size.
  Status FlushL2(CUstream stream);

  CUcontext context() const noexcept { return context_; }
  const CudaDriver& driver() const noexcept { return driver_; }

 private:
  CudaDevice(const CudaDriver& driver, int ordinal, CudaDeviceOptions options);
  Status Init();
  Status Copy(const char* what, CUresult result);
  Status LoadChunkKernels();  // under mu_
  // Device scratch of at least `bytes` for kernel outputs (hashes, dirty flags); under mu_.
  Status EnsureKernelOutput(std::uint64_t bytes);

  const CudaDriver& driver_;
  const int ordinal_;
  const CudaDeviceOptions options_;
  std::string name_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::mutex mu_;  // serializes the private stream and staging
  void* staging_ = nullptr;
  CUfunction hash_kernel_ = nullptr;  // guarded by mu_
  CUfunction compare_kernel_ = nullptr;
  bool chunk_kernels_failed_ = false;
  std::uint64_t hash_grid_limit_ = 1;
  CUdeviceptr hashes_ = 0;  // per-chunk kernel output (hashes or dirty flags), grown as needed
  std::uint64_t hashes_capacity_ = 0;
  CUdeviceptr l2_scratch_ = 0;
  std::uint64_t l2_scratch_bytes_ = 0;
  std::unique_ptr<SmClock> sm_clock_;
  std::mutex variables_mu_;
  std::vector<ModuleVariable> variables_;  // guarded by variables_mu_
};

}  // namespace gpuprof::device::cuda
