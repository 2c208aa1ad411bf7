#include "session/signal_finalizer.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/errno_text.h"
#include "base/logging.h"

namespace gpuprof::session {
namespace {

constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Globals: the handler can reach nothing else.
std::atomic<int> g_write_fd{-1};
std::atomic<bool> g_signalled{false};
std::array<bool, kSignals.size()> g_installed{};
SignalFinalizer::Finalize g_finalize = nullptr;
int g_read_fd = -1;
bool g_done = false;  // Install ran in this process
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "used from a signal handler");

// Async-signal-safe: write, sigaction and raise only.
void OnSignal(int signal_number) {
  const int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0 && g_signalled.exchange(true)) {
    // A repeat while the watcher finalizes: `timeout`, Slurm and a process-group kill signal every
    // process of the job while `gpuprof run` forwards one more, so a second SIGTERM is the common
    // case, not an impatient user. Ending now would leave only the .partial file; the watcher
    // ends the process with the first signal once the DB is written (SIGKILL still ends it now).
    return;
  }
  if (fd < 0) {
    // No watcher: end now, as the default would have.
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(signal_number, &fallback, nullptr);
    raise(signal_number);
    return;
  }
  const auto byte = static_cast<unsigned char>(signal_number);
  const int saved_errno = errno;
  if (write(fd, &byte, 1) != 1) {
    errno = saved_errno;
    g_signalled.store(false);
    g_write_fd.store(-1);
    OnSignal(signal_number);
    return;
  }
  errno = saved_errno;
}

void RestoreDefault(int signal_number) {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
}

void* Watch(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the signals go to the application's threads
  unsigned char byte = 0;
  ssize_t n;
  do {
    n = read(g_read_fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return nullptr;  // the pipe was closed: nothing to do
  const int signal_number = byte;
  const char* name = strsignal(signal_number);
  GPUPROF_LOG(kWarning) << "pid " << getpid() << " got signal " << signal_number << " ("
                        << (name != nullptr ? name : "?")
                        << "): finalizing the profile, then ending as the signal "
                        << "would";
  if (g_finalize != nullptr) g_finalize();
  RestoreDefault(signal_number);
  kill(getpid(), signal_number);  // process-directed: delivered to a thread that does not block it
  return nullptr;
}

}  // namespace

void SignalFinalizer::Install(Finalize finalize) noexcept {
  if (g_done) return;
  g_done = true;
  g_finalize = finalize;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    GPUPROF_LOG(kWarning) << "a profile ended by SIGTERM, SIGHUP or SIGQUIT is not finalized: pipe: "
                          << base::ErrnoText(errno);
    return;
  }
  g_read_fd = fds[0];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, &Watch, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    close(fds[0]);
    close(fds[1]);
    g_read_fd = -1;
    GPUPROF_LOG(kWarning) << "a profile ended by SIGTERM, SIGHUP or SIGQUIT is not finalized: thread: "
                          << base::ErrnoText(rc);
    return;
  }
  g_write_fd.store(fds[1]);
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) != 0) continue;
    const bool is_default = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
    if (!is_default) continue;  // the application's handler, or ignored: left as it is
    struct sigaction action {};
    action.sa_handler = &OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    g_installed[i] = sigaction(kSignals[i], &action, nullptr) == 0;
  }
}

void SignalFinalizer::ChildAfterFork() noexcept {
  if (!g_done) return;
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    if (!g_installed[i]) continue;
    struct sigaction current {};
    // Only ours: a handler the application set since is its own.
    if (sigaction(kSignals[i], nullptr, &current) == 0 && current.sa_handler == &OnSignal) {
      RestoreDefault(kSignals[i]);
    }
    g_installed[i] = false;
  }
  const int fd = g_write_fd.exchange(-1);
  if (fd >= 0) close(fd);
  if (g_read_fd >= 0) close(g_read_fd);
  g_read_fd = -1;
  g_signalled.store(false);
  g_done = false;
}

}  // namespace gpuprof::session
