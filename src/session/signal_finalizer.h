// Finalizing the profile when the process is ended by a signal whose default action would kill it
// without running exit handlers: SIGTERM, SIGHUP, SIGQUIT, and SIGINT in a program that does not
// handle it (Python does: KeyboardInterrupt, then the exit handler finalizes).
//
// Install() takes each of those four signals whose disposition is still the default: its handler
// only writes the signal number to a pipe (async-signal-safe); a watcher thread, parked on the
// pipe, calls `finalize` (the session's stop, which writes the DB), then restores the default and
// sends the signal again, so the process ends with that signal's usual status. A signal the
// application handles or ignores is left to it, and a handler it installs later replaces this one
// (its own handling, exit handlers included, then applies). Repeats of these signals while the
// profile is being finalized are ignored (timeout, Slurm and group kills send more than one, and
// `gpuprof run` forwards its own); SIGKILL still ends the process at once, leaving the .partial file.
//
// Thread-safety: Install and ChildAfterFork are called under the process session's lifecycle lock
// (Install from the first start, ChildAfterFork from the fork child handler). Errors: none
// reported; if the pipe or the thread cannot be made, nothing is installed and one warning says so.
#pragma once

namespace gpuprof::session {

class SignalFinalizer {
 public:
  using Finalize = void (*)() noexcept;

  // Idempotent: the first call installs.
  static void Install(Finalize finalize) noexcept;

  // In a fork child: the parent's watcher thread is not here and its pipe is shared with the
  // parent, so the handlers are taken back (the signals' defaults again) and the pipe closed in the
  // child; a child that starts its own session installs again.
  static void ChildAfterFork() noexcept;
};

}  // namespace gpuprof::session
