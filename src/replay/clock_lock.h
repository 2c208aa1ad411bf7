// C3: `--clock-control base` locks a GPU's SM and memory clocks to their base values for the
// passes and puts them back afterwards; `--clock-control none` (the default) never touches them.
//
// The lock talks to NVML through ClockApi, an interface with no NVML types, so the policy (lock
// only when asked and permitted, all or nothing, always restore what was locked, warn naming the
// fix) is tested on the host with a fake (tests/unit/replay/clock_lock_test.cc). The NVML adapter
// lives in the CUDA build (cupti/). Nothing here runs on shared GPU machines in tests: their
// clocks must stay as they are.
//
// Thread-safety: a ClockLock is not thread-safe; the controller holds one per device inside the
// device's replay window. A ClockApi's calls for one device never overlap.
#pragma once

#include <cstdint>
#include <string>

#include "gpuprof/replay.h"

namespace gpuprof::replay {

// What an NVML clock call answered.
enum class ClockCallCode : std::uint8_t {
  kOk,
  kNoPermission,  // NVML_ERROR_NO_PERMISSION: changing clocks is root/admin only
  kNotSupported,  // NVML_ERROR_NOT_SUPPORTED
  kError,         // anything else; `message` says what
};

struct ClockCallResult {
  ClockCallCode code = ClockCallCode::kOk;
  std::string message;  // NVML's error string (nvmlErrorString) and the call's name
  bool ok() const noexcept { return code == ClockCallCode::kOk; }
};

// The clock calls of NVML the lock needs, per device index (the adapter maps the index to an
// nvmlDevice_t). Frequencies in MHz.
class ClockApi {
 public:
  virtual ~ClockApi() = default;
  // The base clocks: the default application clocks (nvmlDeviceGetDefaultApplicationsClock for
  // NVML_CLOCK_SM and NVML_CLOCK_MEM).
  virtual ClockCallResult BaseClocks(int device, std::uint32_t* sm_mhz, std::uint32_t* memory_mhz) = 0;
  // nvmlDeviceSetGpuLockedClocks(min, max) / nvmlDeviceSetMemoryLockedClocks(min, max).
  virtual ClockCallResult LockSmClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) = 0;
  virtual ClockCallResult LockMemoryClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) = 0;
  // nvmlDeviceResetGpuLockedClocks / nvmlDeviceResetMemoryLockedClocks.
  virtual ClockCallResult ResetSmClocks(int device) = 0;
  virtual ClockCallResult ResetMemoryClocks(int device) = 0;
};

// Holds a device's SM and memory clocks at base while it lives (RAII); restores them when
// destroyed or released. With kNone, or when locking is not permitted or fails, it holds nothing:
// warning() says why and how to fix it (also logged at warning level; one lock per device and
// session keeps that to one line), and the passes run at
// the clocks as they are. Locking is all or nothing: when the memory clocks cannot be locked
// after the SM clocks were, the SM clocks are reset at once.
class ClockLock {
 public:
  // `api` may be null (no NVML in this build or process): then kBase only warns. `api` must
  // outlive the lock.
  ClockLock(ClockApi* api, int device, ClockControl control);
  ~ClockLock();
  ClockLock(const ClockLock&) = delete;
  ClockLock& operator=(const ClockLock&) = delete;

  // Restores what the lock holds now (idempotent).
  void Release();

  bool locked() const noexcept { return sm_locked_ && memory_locked_; }
  std::uint32_t sm_mhz() const noexcept { return sm_mhz_; }
  std::uint32_t memory_mhz() const noexcept { return memory_mhz_; }
  // Empty unless kBase was asked and the clocks are not (all) locked.
  const std::string& warning() const noexcept { return warning_; }

 private:
  void Warn(std::string text);

  ClockApi* api_;
  int device_;
  bool sm_locked_ = false;
  bool memory_locked_ = false;
  std::uint32_t sm_mhz_ = 0;
  std::uint32_t memory_mhz_ = 0;
  std::string warning_;
};

}  // namespace gpuprof::replay
