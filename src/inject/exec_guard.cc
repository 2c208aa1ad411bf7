// libgpuprof_exec_guard.so: what `gpuprof run` puts in LD_PRELOAD, so that a profiled program that
// calls exec (os.execv at the end of a script, a C program's execve) keeps the profile it
// recorded: exec replaces the process without exit handlers, which would leave only the .partial
// DB. It defines the exec family; each call first lets libgpuprof.so finalize the session (the
// hook it registered, inject/exec_guard.h), then calls the C library's function. A preloaded
// library comes first in the global scope, so the program's calls, and Python's, reach these.
//
// Nothing else: until libgpuprof.so registers (a process that is never profiled), each function
// only forwards. No allocation, no lock and no dlsym on the exec path (the C library's functions
// are looked up when the guard is loaded): exec is called in fork and vfork children, where only
// async-signal-safe work is allowed. A vfork child shares the parent's memory, hook included, but
// has its own pid, so the pid check keeps it from finalizing the parent's session.
#include "inject/exec_guard.h"

#include <alloca.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstddef>

extern "C" {
__attribute__((visibility("default"))) void gpuprof_exec_guard_register_v1(
    gpuprof::inject::ExecHook hook) noexcept;
__attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]);
__attribute__((visibility("default"))) int execv(const char* path, char* const argv[]);
__attribute__((visibility("default"))) int execvp(const char* file, char* const argv[]);
__attribute__((visibility("default"))) int execvpe(const char* file, char* const argv[], char* const envp[]);
__attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...);
__attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...);
__attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...);
__attribute__((visibility("default"))) int fexecve(int fd, char* const argv[], char* const envp[]);
__attribute__((visibility("default"))) int execveat(int dirfd, const char* path, char* const argv[],
                                                    char* const envp[], int flags);
}

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace {

using Execve = int (*)(const char*, char* const[], char* const[]);
using Execvpe = int (*)(const char*, char* const[], char* const[]);
using Fexecve = int (*)(int, char* const[], char* const[]);
using Execveat = int (*)(int, const char*, char* const[], char* const[], int);

std::atomic<gpuprof::inject::ExecHook> g_hook{nullptr};
std::atomic<pid_t> g_pid{0};
Execve g_execve = nullptr;
Execvpe g_execvpe = nullptr;
Fexecve g_fexecve = nullptr;
Execveat g_execveat = nullptr;

__attribute__((constructor)) void FindTheCLibrarysFunctions() {
  g_execve = reinterpret_cast<Execve>(dlsym(RTLD_NEXT, "execve"));
  g_execvpe = reinterpret_cast<Execvpe>(dlsym(RTLD_NEXT, "execvpe"));
  g_fexecve = reinterpret_cast<Fexecve>(dlsym(RTLD_NEXT, "fexecve"));
  g_execveat = reinterpret_cast<Execveat>(dlsym(RTLD_NEXT, "execveat"));
}

gpuprof::inject::ExecHook OurHook() noexcept {
  gpuprof::inject::ExecHook hook = g_hook.load(std::memory_order_acquire);
  return hook != nullptr && g_pid.load(std::memory_order_relaxed) == getpid() ? hook : nullptr;
}

// Calls `exec` between the hook's two phases; errno is the exec's when it returns.
template <typename Exec>
int Guarded(Exec exec) {
  gpuprof::inject::ExecHook hook = OurHook();
  if (hook != nullptr) {
    const int saved = errno;
    hook(gpuprof::inject::kExecHookBefore, 0);
    errno = saved;
  }
  const int rc = exec();
  if (hook != nullptr) {
    const int error = errno;
    hook(gpuprof::inject::kExecHookFailed, error);
    errno = error;
  }
  return rc;
}

int Missing() {
  errno = ENOSYS;
  return -1;
}

}  // namespace

void gpuprof_exec_guard_register_v1(gpuprof::inject::ExecHook hook) noexcept {
  g_pid.store(getpid(), std::memory_order_relaxed);
  g_hook.store(hook, std::memory_order_release);
}

int execve(const char* path, char* const argv[], char* const envp[]) {
  if (g_execve == nullptr) return Missing();
  return Guarded([&] { return g_execve(path, argv, envp); });
}

int execv(const char* path, char* const argv[]) { return execve(path, argv, environ); }

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (g_execvpe == nullptr) return Missing();
  return Guarded([&] { return g_execvpe(file, argv, envp); });
}

int execvp(const char* file, char* const argv[]) { return execvpe(file, argv, environ); }

int fexecve(int fd, char* const argv[], char* const envp[]) {
  if (g_fexecve == nullptr) return Missing();
  return Guarded([&] { return g_fexecve(fd, argv, envp); });
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  if (g_execveat == nullptr) return Missing();
  return Guarded([&] { return g_execveat(dirfd, path, argv, envp, flags); });
}

// The execl family: the arguments collected into an argv on the stack, as the C library does.
// `args` starts after `arg`; it is left after the terminating null pointer.
std::size_t CountArgs(va_list* args) {
  va_list copy;
  va_copy(copy, *args);
  std::size_t count = 1;
  while (va_arg(copy, const char*) != nullptr) ++count;
  va_end(copy);
  return count;
}

void FillArgs(const char* arg, va_list* args, char** argv, std::size_t count) {
  argv[0] = const_cast<char*>(arg);
  for (std::size_t i = 1; i <= count; ++i) argv[i] = va_arg(*args, char*);  // argv[count]: the null
}

int execl(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const std::size_t count = CountArgs(&args);
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  FillArgs(arg, &args, argv, count);
  va_end(args);
  return execve(path, argv, environ);
}

int execlp(const char* file, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const std::size_t count = CountArgs(&args);
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  FillArgs(arg, &args, argv, count);
  va_end(args);
  return execvpe(file, argv, environ);
}

int execle(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const std::size_t count = CountArgs(&args);
  auto** argv = static_cast<char**>(alloca((count + 1) * sizeof(char*)));
  FillArgs(arg, &args, argv, count);
  char** envp = va_arg(args, char**);
  va_end(args);
  return execve(path, argv, envp);
}
