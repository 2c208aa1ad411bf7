// Finalizing the profile before exec replaces the process (exec runs no exit handler, so the DB
// would stay .partial and the recording be lost).
//
// Install() registers a hook with libgpuprof_exec_guard.so when that library is loaded (`gpuprof
// run` preloads it; inject/exec_guard.h): before each exec call of the profiled process the hook
// runs `finalize` (the session's stop, as for a finalizing signal) and says so in one line. An exec
// that then fails leaves the old program running with its profile already written: one warning
// says that the rest of the run is not recorded. Without the guard (a program not started by
// `gpuprof run`) nothing is installed.
//
// Thread-safety: Install is called under the process session's lifecycle lock, from each start
// (a fork child that starts its own session registers again, under its own pid). Errors: none.
#pragma once

namespace gpuprof::session {

class ExecFinalizer {
 public:
  using Finalize = void (*)() noexcept;

  static void Install(Finalize finalize) noexcept;
};

}  // namespace gpuprof::session
