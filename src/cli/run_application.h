// How `gpuprof run` starts the application and stays out of its way: the environment it hands the
// application (ChildEnvironment), fork + execvpe with the exec error reported by the parent
// (StartApplication), and the signals sent to gpuprof forwarded to the application for as long as
// run lives (SignalForwarding).
//
// One application per gpuprof process: the signal handler reaches its pid through a global, set by
// StartApplication and cleared by ClearApplicationPid once it is reaped.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::cli {

// Blocks the forwarded signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and routes them to the
// application for the lifetime of the object; signals the caller ignored stay ignored (and so stay
// ignored in the application, as a shell would leave them). The destructor restores the
// dispositions and the mask.
class SignalForwarding {
 public:
  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

  SignalForwarding();
  ~SignalForwarding();
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // In the forked child before exec: the caller's dispositions and mask (async-signal-safe).
  void RestoreInChild() const noexcept;
  // In gpuprof once the child's pid is published: signals that arrived meanwhile are delivered.
  void Unblock() const noexcept;

 private:
  void RestoreDispositions() const noexcept;

  sigset_t forwarded_{};
  sigset_t old_mask_{};
  std::array<struct sigaction, kSignals.size()> old_actions_{};
};

// NAME=VALUE entries for the application: the caller's environment with gpuprof's variables set.
class ChildEnvironment {
 public:
  // A later Set of the same name replaces the earlier one (the output directory is set from the
  // settings, then made absolute): an environment with two entries of one name reads differently
  // in getenv (the first) and in a shell (the last).
  void Set(std::string name, std::string value);
  bool Has(std::string_view name) const;

  // Builds the entries. GPUPROF_ROOT_PID gets a slot that FillRootPid writes in the child, where
  // nothing may allocate.
  void Build();

  // Async-signal-safe: writes `pid` into the slot Build reserved.
  void FillRootPid(pid_t pid) noexcept;

  char** envp() noexcept { return pointers_.data(); }

 private:
  static constexpr std::size_t kPidDigits = 24;
  std::vector<std::pair<std::string, std::string>> overrides_;
  std::vector<std::string> entries_;
  std::vector<char*> pointers_;
  std::size_t root_pid_index_ = 0;
};

struct Started {
  pid_t pid = -1;
  int exec_errno = 0;  // non-zero: the application could not be started
};

// fork + execvpe. The exec error comes back through a close-on-exec pipe, so the caller, not the
// child, reports it. Signals are routed by `signals` (created before, so none is lost between
// fork and the pid being published). `env` must be built.
StatusOr<Started> StartApplication(std::vector<std::string> argv_strings, ChildEnvironment& env,
                                   const SignalForwarding& signals);

// Once the application is reaped (or waiting for it failed): signals are no longer forwarded.
void ClearApplicationPid() noexcept;

// The exit status to report for a waitpid status, shell style.
int ShellExitCode(int status);

// "signal N (Name)".
std::string SignalName(int sig);

}  // namespace gpuprof::cli
