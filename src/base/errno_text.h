// ErrnoText: the message of an errno value ("No such file or directory"), for the Status
// messages that name a failed system call ("cannot open <path>: <ErrnoText(errno)>").
//
// strerror_r, not strerror: the writer's threads, the session's flusher and the CLI may all
// format errors at once, and strerror may share one buffer between threads. Header-only, so any
// component (including the separately built PyTorch hooks) can use it without linking base.
//
// Thread-safety: safe from any thread. Not async-signal-safe (it allocates the string): read
// errno into a variable in a signal handler or after fork, and format it later.
#pragma once

#include <string.h>  // strerror_r: POSIX (int) or GNU (char*) flavour, whichever the libc offers

#include <string>

namespace gpuprof::base {
namespace errno_text_internal {

// The GNU strerror_r returns the message (which may or may not be in `buffer`); the POSIX one
// returns 0 and fills `buffer`, or fails for a number it does not know.
inline std::string FromStrerror(const char* message, const char* /*buffer*/, int /*err*/) { return message; }
inline std::string FromStrerror(int result, const char* buffer, int err) {
  return result == 0 ? std::string(buffer) : "Unknown error " + std::to_string(err);
}

}  // namespace errno_text_internal

inline std::string ErrnoText(int err) {
  char buffer[256] = {};
  return errno_text_internal::FromStrerror(strerror_r(err, buffer, sizeof(buffer)), buffer, err);
}

}  // namespace gpuprof::base
