// What a driver-API call means to a recording range (REPLAY_SPEC W1, W3, W5): a copy or memset to
// record, an event record or wait, a delimiter, or something the range cannot repeat. Pure
// functions of the callback's id and parameters (no driver calls), so that every form is tested
// without a GPU; CudaReplayHook (range_hook.cc) acts on the answer.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cupti/recorded_launch.h"
#include "device/device.h"

namespace gpuprof::cupti {

struct RangeCall {
  enum class Kind : std::uint8_t {
    kNone,      // not a call ranges care about
    kTransfer,  // `transfer` (its `device` is left for the caller: the call's context's device)
    kEvent,     // `event` (its `device` likewise)
    kDecline,   // the range cannot repeat it: `detail` says why (DeclineReason::kNotRecordable)
    kProfilerStart,
    kProfilerStop,
  };
  Kind kind = Kind::kNone;
  device::TransferArgs transfer;
  device::EventArgs event;
  std::string detail;
};

// The legacy default stream as a StreamId: a synchronous copy or memset runs on it (the
// per-thread-default-stream forms on CU_STREAM_PER_THREAD).
inline constexpr device::StreamId kLegacyStream = 0;

// Classifies the driver call `cbid` with CUPTI's `params` (CUpti_CallbackData::functionParams).
RangeCall ClassifyRangeCall(CUpti_CallbackId cbid, const void* params);

// The grid, block and dynamic shared memory of a launch's parameters.
template <typename Params>
device::LaunchShape ShapeOf(const Params& p) {
  device::LaunchShape shape;
  shape.grid[0] = p.gridDimX;
  shape.grid[1] = p.gridDimY;
  shape.grid[2] = p.gridDimZ;
  shape.block[0] = p.blockDimX;
  shape.block[1] = p.blockDimY;
  shape.block[2] = p.blockDimZ;
  shape.dynamic_shared_bytes = p.sharedMemBytes;
  return shape;
}

// The kernel launch `cbid` (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their
// per-thread-stream forms) as a LaunchCall; its `function` is the launched handle, which the
// caller replaces by the one resolved in the launch's context. nullopt for any other call.
std::optional<LaunchCall> LaunchCallOf(CUpti_CallbackId cbid, const void* params);

}  // namespace gpuprof::cupti
