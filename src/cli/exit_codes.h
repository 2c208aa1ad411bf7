// The exit codes every gpuprof command returns (this folder's README.md), defined once so the
// commands cannot drift apart. `run`/`replay` otherwise return the application's own status.
#pragma once

namespace gpuprof::cli {

inline constexpr int kExitOk = 0;
// A failure: bad input, a failed check, results that do not match an unreplayed run.
inline constexpr int kExitFailure = 1;
// A usage error: an unknown flag or a value out of range (the message names the flag).
inline constexpr int kExitUsage = 2;
// What a shell returns for a command it found but could not execute, and for one it did not find.
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

}  // namespace gpuprof::cli
