// A file that must not outlive an interrupted command: the temporary file `gpuprof export` and
// `gpuprof report` write before renaming it over their output (db/output_file.h). An export
// stopped by Ctrl-C or `kill` left its full-size "<output>.tmp.<pid>" behind.
//
// Once InstallInterruptCleanup has run (the CLI calls it for the commands that write such files;
// a library loaded into an application never does), SIGINT, SIGTERM and SIGHUP remove the file
// registered with RemoveOnInterrupt, then end the process as the signal would have (the shell
// sees 128 + the signal). A signal the process ignores (nohup) stays ignored.
//
// Thread-safety: the registration is one slot, set and cleared by the thread that owns the file;
// the handler reads it with async-signal-safe calls only (unlink, raise).
#pragma once

#include <string>

namespace gpuprof::base {

void InstallInterruptCleanup();

// Registers `path` as the file to remove, replacing any earlier one. A path longer than the slot
// (4096 bytes, PATH_MAX) is not registered.
void RemoveOnInterrupt(const std::string& path);

// open(2) of a file this process creates (`flags` with O_CREAT | O_EXCL), registered as above when
// it succeeds. The three signals are blocked in this thread meanwhile: delivered on the return from
// open(), before any registration could run, one left the new file behind.
// Returns the descriptor, or -1 with errno set by open.
int CreateRemovedOnInterrupt(const std::string& path, int flags, unsigned mode);

// Forgets the registered file (it was renamed into place, or removed).
void ForgetOnInterrupt();

}  // namespace gpuprof::base
