#include "base/interrupt_cleanup.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace gpuprof::base {
namespace {

constexpr std::size_t kMaxPathBytes = 4096;
char g_path[kMaxPathBytes + 1];
std::atomic<bool> g_armed{false};
static_assert(std::atomic<bool>::is_always_lock_free, "read from a signal handler");

void OnInterrupt(int signal_number) {
  if (g_armed.load(std::memory_order_acquire)) ::unlink(g_path);
  // SA_RESETHAND has put back the default action, and the signal stays blocked while this runs:
  // raised again, it ends the process on return, as it would have without the handler.
  ::raise(signal_number);
}

}  // namespace

void InstallInterruptCleanup() {
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = static_cast<int>(SA_RESETHAND);  // an unsigned constant in glibc
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction previous {};
    if (::sigaction(signal_number, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    ::sigaction(signal_number, &action, nullptr);
  }
}

void RemoveOnInterrupt(const std::string& path) {
  g_armed.store(false, std::memory_order_release);
  if (path.empty() || path.size() > kMaxPathBytes) return;
  std::memcpy(g_path, path.c_str(), path.size() + 1);
  g_armed.store(true, std::memory_order_release);
}

int CreateRemovedOnInterrupt(const std::string& path, int flags, unsigned mode) {
  sigset_t interrupts;
  sigset_t before;
  sigemptyset(&interrupts);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&interrupts, signal_number);
  pthread_sigmask(SIG_BLOCK, &interrupts, &before);
  const int fd = ::open(path.c_str(), flags, static_cast<mode_t>(mode));
  const int error = errno;
  if (fd >= 0) RemoveOnInterrupt(path);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);  // a signal that came meanwhile is handled here
  errno = error;
  return fd;
}

void ForgetOnInterrupt() { g_armed.store(false, std::memory_order_release); }

}  // namespace gpuprof::base
