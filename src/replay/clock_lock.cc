#include "replay/clock_lock.h"

#include <utility>

#include "base/logging.h"

namespace gpuprof::replay {
namespace {

// NVML lets only root (admin) lock clocks; the API restriction `nvidia-smi -acp UNRESTRICTED`
// opens the application clocks, not the locked clocks these calls set.
std::string NoPermissionFix(int device, std::uint32_t sm_mhz, std::uint32_t memory_mhz) {
  const std::string gpu = std::to_string(device);
  const std::string sm = sm_mhz != 0 ? std::to_string(sm_mhz) : "BASE";
  const std::string memory = memory_mhz != 0 ? std::to_string(memory_mhz) : "BASE";
  return "NVML lets only root lock clocks: run gpuprof as root, or have an administrator lock them for the "
         "run (sudo nvidia-smi -i " +
         gpu + " --lock-gpu-clocks=" + sm + "," + sm + " --lock-memory-clocks=" + memory + "," + memory +
         "; afterwards --reset-gpu-clocks --reset-memory-clocks) and use --clock-control none";
}

std::string Why(const ClockCallResult& result) {
  switch (result.code) {
    case ClockCallCode::kOk: return "ok";
    case ClockCallCode::kNoPermission:
      return "not permitted" + (result.message.empty() ? "" : " (" + result.message + ")");
    case ClockCallCode::kNotSupported:
      return "not supported on this GPU" + (result.message.empty() ? "" : " (" + result.message + ")");
    case ClockCallCode::kError: return result.message.empty() ? std::string("failed") : result.message;
  }
  return "failed";
}

}  // namespace

ClockLock::ClockLock(ClockApi* api, int device, ClockControl control) : api_(api), device_(device) {
  if (control != ClockControl::kBase) return;  // C3: by default the clocks are never touched
  const std::string prefix = "--clock-control base: GPU " + std::to_string(device) + ": ";
  const std::string unchanged = "; the passes run at the clocks as they are";
  if (api_ == nullptr) {
    Warn(prefix +
         "NVML is not available in this process (the CUDA build of gpuprof and libnvidia-ml.so.1 are "
         "needed)" +
         unchanged);
    return;
  }
  if (ClockCallResult base = api_->BaseClocks(device, &sm_mhz_, &memory_mhz_); !base.ok() || sm_mhz_ == 0) {
    Warn(prefix + "cannot read the base clocks: " + (base.ok() ? "NVML reported 0 MHz" : Why(base)) +
         unchanged);
    return;
  }
  if (ClockCallResult sm = api_->LockSmClocks(device, sm_mhz_, sm_mhz_); !sm.ok()) {
    Warn(prefix + "cannot lock the SM clock at " + std::to_string(sm_mhz_) + " MHz: " + Why(sm) + unchanged +
         (sm.code == ClockCallCode::kNoPermission ? ". " + NoPermissionFix(device, sm_mhz_, memory_mhz_)
                                                  : ""));
    return;
  }
  sm_locked_ = true;
  if (ClockCallResult memory = api_->LockMemoryClocks(device, memory_mhz_, memory_mhz_); !memory.ok()) {
    // All or nothing: a locked SM clock beside a free memory clock is neither base nor as it was.
    Release();
    Warn(prefix + "cannot lock the memory clock at " + std::to_string(memory_mhz_) + " MHz: " + Why(memory) +
         "; the SM clock was reset too" + unchanged +
         (memory.code == ClockCallCode::kNoPermission ? ". " + NoPermissionFix(device, sm_mhz_, memory_mhz_)
                                                      : ""));
    return;
  }
  memory_locked_ = true;
  GPUPROF_LOG(kDebug) << "GPU " << device << ": SM clock locked at " << sm_mhz_ << " MHz, memory clock at "
                      << memory_mhz_ << " MHz for the replay passes (--clock-control base)";
}

ClockLock::~ClockLock() { Release(); }

void ClockLock::Release() {
  if (memory_locked_) {
    memory_locked_ = false;
    if (ClockCallResult reset = api_->ResetMemoryClocks(device_); !reset.ok()) {
      GPUPROF_LOG(kWarning) << "GPU " << device_ << ": cannot reset the locked memory clock: " << Why(reset)
                            << "; reset it with: sudo nvidia-smi -i " << device_ << " --reset-memory-clocks";
    }
  }
  if (sm_locked_) {
    sm_locked_ = false;
    if (ClockCallResult reset = api_->ResetSmClocks(device_); !reset.ok()) {
      GPUPROF_LOG(kWarning) << "GPU " << device_ << ": cannot reset the locked SM clock: " << Why(reset)
                            << "; reset it with: sudo nvidia-smi -i " << device_ << " --reset-gpu-clocks";
    }
  }
}

void ClockLock::Warn(std::string text) {
  warning_ = std::move(text);
  GPUPROF_LOG(kWarning) << warning_;
}

}  // namespace gpuprof::replay
