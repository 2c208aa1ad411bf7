#include "gpuprof/replay.h"

namespace gpuprof::replay {

std::string_view RestoreModeName(RestoreMode mode) noexcept {
  switch (mode) {
    case RestoreMode::kAuto: return "auto";
    case RestoreMode::kFull: return "full";
  }
  return "unknown";
}

bool ParseRestoreMode(std::string_view text, RestoreMode* out) noexcept {
  if (text == "auto") {
    *out = RestoreMode::kAuto;
    return true;
  }
  if (text == "full") {
    *out = RestoreMode::kFull;
    return true;
  }
  return false;
}

std::string_view DeclineReasonName(DeclineReason reason) noexcept {
  switch (reason) {
    case DeclineReason::kNone: return "none";
    case DeclineReason::kIncompleteSnapshot: return "incomplete-snapshot";
    case DeclineReason::kGraphLaunch: return "graph-launch";
    case DeclineReason::kStreamCapture: return "stream-capture";
    case DeclineReason::kMultiDispatch: return "multi-dispatch";
    case DeclineReason::kUntrackedWritableMemory: return "untracked-writable-memory";
    case DeclineReason::kCollectiveKernel: return "collective-kernel";
    case DeclineReason::kDrainTimeout: return "drain-timeout";
    case DeclineReason::kSideEffects: return "side-effects";
    case DeclineReason::kFinalizing: return "finalizing";
    case DeclineReason::kRestoreFailed: return "restore-failed";
    case DeclineReason::kLaunchFailed: return "launch-failed";
  }
  return "unknown";
}

}  // namespace gpuprof::replay
