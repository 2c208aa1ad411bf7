// libgpuprof_inject.so: what CUDA_INJECTION64_PATH names. The CUDA driver calls
// InitializeInjection once, from cuInit, before the program's first CUDA work.
//
// It loads libgpuprof.so with RTLD_NOW | RTLD_GLOBAL (global, so that a copy the program or a
// Python extension loads later finds this session and joins it) and calls
// gpuprof_start_from_environment, which starts the process's Session from the variables
// `gpuprof run` set and registers the exit handler that stops it (flush, finalize, result line).
//
// Where libgpuprof.so comes from, first match wins:
//   1. $GPUPROF_LIBRARY (a path; a failure to load it is reported, not worked around);
//   2. libgpuprof.so in this library's own directory (found with dladdr; the build tree keeps
//      both in <build>/lib, and a copied build tree keeps them together);
//   3. "libgpuprof.so" through the loader's default search (LD_LIBRARY_PATH, ld.so.cache).
//
// Nothing here may disturb the application: no exceptions (built with -fno-exceptions), no exit,
// no allocation beyond the loader's. Every failure prints one "[gpuprof]" line (unless
// GPUPROF_LOG_LEVEL=off) and returns success, so cuInit and the program carry on unprofiled. A
// failure inside gpuprof_start_from_environment is reported by libgpuprof.so itself.
#include <dlfcn.h>
#include <strings.h>
#include <unistd.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpuprof/gpuprof_c.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) noexcept;

namespace {

constexpr const char* kLibraryName = "libgpuprof.so";
constexpr const char* kStartSymbol = "gpuprof_start_from_environment";

bool Quiet() noexcept {
  const char* level = std::getenv("GPUPROF_LOG_LEVEL");
  return level != nullptr && (strcasecmp(level, "off") == 0 || strcasecmp(level, "none") == 0);
}

// One line on stderr, written with a single write() so it does not interleave with the
// application's output.
__attribute__((format(printf, 1, 2))) void Say(const char* format, ...) noexcept {
  if (Quiet()) return;
  char line[2048];
  int prefix =
      std::snprintf(line, sizeof(line), "[gpuprof] injection (pid %d): ", static_cast<int>(getpid()));
  if (prefix < 0) return;
  va_list args;
  va_start(args, format);
  int body = std::vsnprintf(line + prefix, sizeof(line) - static_cast<std::size_t>(prefix) - 1, format, args);
  va_end(args);
  if (body < 0) return;
  std::size_t length = std::strlen(line);
  line[length] = '\n';
  ssize_t written = write(STDERR_FILENO, line, length + 1);
  static_cast<void>(written);
}

// "<directory of this library>/libgpuprof.so" into `out`; false when it cannot be determined.
bool BesideThisLibrary(char* out, std::size_t size) noexcept {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&InitializeInjection), &info) == 0 || info.dli_fname == nullptr)
    return false;
  const char* slash = std::strrchr(info.dli_fname, '/');
  if (slash == nullptr) return false;
  const auto directory = static_cast<std::size_t>(slash - info.dli_fname);
  int n = std::snprintf(out, size, "%.*s/%s", static_cast<int>(directory), info.dli_fname, kLibraryName);
  return n > 0 && static_cast<std::size_t>(n) < size;
}

const char* DlError() noexcept {
  const char* error = dlerror();
  return error != nullptr ? error : "unknown error";
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) noexcept {
  // The driver calls this once per process; a second call (another cuInit path) has nothing to add.
  static int called = 0;
  if (__atomic_exchange_n(&called, 1, __ATOMIC_ACQ_REL) != 0) return 1;
  // A process marked as not to be profiled: gpuprof's Python start-up code sets GPUPROF_SKIP_PID to
  // the pid of torchrun's launcher, which trains nothing (its ranks, other pids, are profiled).
  if (const char* skip = std::getenv("GPUPROF_SKIP_PID"); skip != nullptr && skip[0] != '\0') {
    char* end = nullptr;
    const long pid = std::strtol(skip, &end, 10);
    if (end != nullptr && *end == '\0' && pid == static_cast<long>(getpid())) return 1;
  }

  char beside[PATH_MAX];
  const char* path = nullptr;
  const char* origin = nullptr;
  if (const char* configured = std::getenv("GPUPROF_LIBRARY");
      configured != nullptr && configured[0] != '\0') {
    path = configured;
    origin = "GPUPROF_LIBRARY";
  } else if (BesideThisLibrary(beside, sizeof(beside)) && access(beside, F_OK) == 0) {
    path = beside;
    origin = "beside the injection library";
  } else {
    path = kLibraryName;
    origin = "the loader's search path";
  }

  void* library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    Say("cannot load %s (from %s): %s; the application runs without profiling (set GPUPROF_LIBRARY to "
        "libgpuprof.so's path)",
        path, origin, DlError());
    return 1;
  }
  auto start = reinterpret_cast<decltype(&gpuprof_start_from_environment)>(dlsym(library, kStartSymbol));
  if (start == nullptr) {
    Say("%s has no %s (%s): not a gpuprof library of this version; the application runs without profiling",
        path, kStartSymbol, DlError());
    return 1;
  }
  // Its failures (configuration, output directory) are logged by libgpuprof.so, once.
  static_cast<void>(start());
  return 1;
}
