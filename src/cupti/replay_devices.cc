#include "cupti/replay_devices.h"

#include <string>

#include "base/logging.h"
#include "cupti/internal_work.h"
#include "device/range.h"

namespace gpuprof::cupti {
namespace {

using device::cuda::CudaDevice;
using device::cuda::CudaDriver;

// The controller's view of device `ordinal`: the CudaDevice is made at the first call that needs
// it, so a process that uses one GPU of eight retains one primary context, not eight.
class LazyCudaDevice final : public device::Device {
 public:
  LazyCudaDevice(ReplayDevices& devices, int ordinal) : devices_(devices), ordinal_(ordinal) {}

  int ordinal() const noexcept override { return ordinal_; }
  std::string name() const override {
    CudaDevice* real = devices_.DeviceAt(ordinal_);
    return real != nullptr ? real->name() : "CUDA device " + std::to_string(ordinal_);
  }
  StatusOr<device::PointerInfo> QueryPointer(device::DevicePtr ptr) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->QueryPointer(ptr);
  }
  Status CopyDeviceToHost(void* dst, device::DevicePtr src, std::uint64_t bytes) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->CopyDeviceToHost(dst, src, bytes);
  }
  Status CopyHostToDevice(device::DevicePtr dst, const void* src, std::uint64_t bytes) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->CopyHostToDevice(dst, src, bytes);
  }
  Status CopyDeviceToDevice(device::DevicePtr dst, device::DevicePtr src, std::uint64_t bytes) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->CopyDeviceToDevice(dst, src, bytes);
  }
  Status HashChunks(device::DevicePtr src, std::uint64_t bytes, std::uint64_t chunk_size,
                    std::span<std::uint64_t> out) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->HashChunks(src, bytes, chunk_size, out);
  }
  std::uint64_t ArenaLimit(device::StorageTier tier) override {
    StatusOr<CudaDevice*> real = Real();
    return real.ok() ? (*real)->ArenaLimit(tier) : 0;
  }
  Status ReserveArena(const device::TierBytes& bytes, std::uint64_t chunk_size) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->ReserveArena(bytes, chunk_size);
  }
  // A device that was never set up holds no arena: these three do not set it up.
  void ReleaseArena() override {
    if (CudaDevice* real = devices_.ExistingDeviceAt(ordinal_); real != nullptr) real->ReleaseArena();
  }
  bool MakeRoomFor(std::uint64_t bytes) override {
    CudaDevice* real = devices_.ExistingDeviceAt(ordinal_);
    return real != nullptr && real->MakeRoomFor(bytes);
  }
  device::ArenaStats arena_stats() override {
    CudaDevice* real = devices_.ExistingDeviceAt(ordinal_);
    return real != nullptr ? real->arena_stats() : device::ArenaStats{};
  }
  StatusOr<device::ChunkOpResult> RunChunkOp(device::ChunkOp op, std::span<const device::ArenaRegion> regions,
                                             std::uint64_t chunk_size,
                                             std::span<std::uint64_t> hashes) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->RunChunkOp(op, regions, chunk_size, hashes);
  }
  StatusOr<std::vector<device::ModuleVariable>> EnumerateModuleVariables() override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->EnumerateModuleVariables();
  }
  Status Synchronize(std::chrono::nanoseconds timeout) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->Synchronize(timeout);
  }
  StatusOr<device::RangePassTiming> ReissueRange(std::span<const device::RangeOp> ops, int pass,
                                                 const device::ReissueOptions& options) override {
    GPUPROF_ASSIGN_OR_RETURN(CudaDevice * real, Real());
    return real->ReissueRange(ops, pass, options);
  }

 private:
  StatusOr<CudaDevice*> Real() const {
    CudaDevice* real = devices_.DeviceAt(ordinal_);
    if (real == nullptr)
      return UnavailableError("CUDA device " + std::to_string(ordinal_) + " could not be set up");
    return real;
  }

  ReplayDevices& devices_;
  const int ordinal_;
};

}  // namespace

std::vector<device::Device*> ReplayDevices::Open(const CudaDriver& driver) {
  driver_ = &driver;
  int count = 0;
  if (driver_->DeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
  devices_.resize(static_cast<std::size_t>(count));
  device_failed_.assign(static_cast<std::size_t>(count), false);
  std::vector<device::Device*> raw;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    proxies_.push_back(std::make_unique<LazyCudaDevice>(*this, ordinal));
    raw.push_back(proxies_.back().get());
  }
  return raw;
}

CudaDevice* ReplayDevices::DeviceAt(int ordinal) noexcept {
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices_.size()) return nullptr;
  const auto index = static_cast<std::size_t>(ordinal);
  std::lock_guard<std::mutex> lock(devices_mu_);
  if (devices_[index] == nullptr && !device_failed_[index]) {
    ScopedInternalWork internal;
    StatusOr<std::unique_ptr<CudaDevice>> made = CudaDevice::Create(*driver_, ordinal, options_);
    if (made.ok()) {
      devices_[index] = std::move(made).value();
    } else {
      device_failed_[index] = true;  // said once; its launches run unreplayed
      GPUPROF_LOG(kWarning) << "replay off on device " << ordinal << ": " << made.status().message();
    }
  }
  return devices_[index].get();
}

CudaDevice* ReplayDevices::ExistingDeviceAt(int ordinal) noexcept {
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices_.size()) return nullptr;
  std::lock_guard<std::mutex> lock(devices_mu_);
  return devices_[static_cast<std::size_t>(ordinal)].get();
}

CudaDevice* ReplayDevices::DeviceOfCurrentContext() noexcept {
  CUdevice device = 0;
  if (driver_ == nullptr || driver_->CtxGetDevice(&device) != CUDA_SUCCESS) return nullptr;
  for (std::size_t ordinal = 0; ordinal < devices_.size(); ++ordinal) {
    CUdevice candidate = 0;
    if (driver_->DeviceGet(&candidate, static_cast<int>(ordinal)) == CUDA_SUCCESS && candidate == device) {
      return DeviceAt(static_cast<int>(ordinal));
    }
  }
  return nullptr;
}

CudaDevice* ReplayDevices::DeviceOf(CUcontext context) noexcept {
  {
    std::shared_lock<std::shared_mutex> lock(contexts_mu_);
    if (auto it = device_by_context_.find(context); it != device_by_context_.end()) return it->second;
  }
  CudaDevice* device = nullptr;
  {
    ScopedInternalWork internal;
    device = DeviceOfCurrentContext();
  }
  try {
    std::unique_lock<std::shared_mutex> lock(contexts_mu_);
    device_by_context_[context] = device;
  } catch (...) {
  }
  return device;
}

void ReplayDevices::UnregisterModule(std::uint32_t module_id) noexcept {
  std::lock_guard<std::mutex> lock(devices_mu_);
  for (const auto& device : devices_) {
    if (device != nullptr) device->UnregisterModule(module_id);
  }
}

}  // namespace gpuprof::cupti
