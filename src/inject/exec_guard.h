// The contract between libgpuprof_exec_guard.so (exec_guard.cc) and libgpuprof.so
// (session/exec_finalizer.cc): the guard, preloaded by `gpuprof run`, replaces the exec family and
// calls the hook libgpuprof.so registered before the new program replaces the process.
#pragma once

namespace gpuprof::inject {

// void gpuprof_exec_guard_register_v1(ExecHook hook): the guard calls `hook` only in the process
// that registered it (the pid at registration; a fork child that did not register again is not
// that process), with kExecHookBefore before every exec call and kExecHookFailed, with the exec's
// errno, when the call returns (it failed; the old program goes on).
using ExecHook = void (*)(int phase, int error) noexcept;
inline constexpr const char* kExecGuardRegisterSymbol = "gpuprof_exec_guard_register_v1";
inline constexpr int kExecHookBefore = 0;
inline constexpr int kExecHookFailed = 1;

}  // namespace gpuprof::inject
