#include "cli/run_application.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/errno_text.h"
#include "cli/exit_codes.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace gpuprof::cli {
namespace {

constexpr const char* kRootPidEnv = "GPUPROF_ROOT_PID";

// The application's pid, for the signal handler, which can reach nothing but globals. Set by the
// thread that forks while the forwarded signals are blocked, cleared after the application is
// reaped.
std::atomic<pid_t> g_child_pid{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "read from a signal handler");

// Async-signal-safe: kill, getpgid and getpgrp only.
void ForwardSignal(int signal_number, siginfo_t* info, void* /*context*/) {
  const pid_t child = g_child_pid.load(std::memory_order_relaxed);
  if (child <= 0) return;
  // A signal from the terminal (Ctrl-C, Ctrl-\, hangup) went to the whole foreground process
  // group, the application included when it is still in ours: forwarding it would deliver it
  // twice, and a second SIGINT can cut short the application's cleanup and gpuprof's flush.
  // Signals sent to gpuprof alone (kill, timeout, a batch scheduler) are forwarded.
  if (info != nullptr && info->si_code == SI_KERNEL && getpgid(child) == getpgrp()) return;
  kill(child, signal_number);
}

}  // namespace

SignalForwarding::SignalForwarding() {
  sigemptyset(&forwarded_);
  for (int sig : kSignals) sigaddset(&forwarded_, sig);
  sigprocmask(SIG_BLOCK, &forwarded_, &old_mask_);
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    sigaction(kSignals[i], nullptr, &old_actions_[i]);
    if (old_actions_[i].sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_sigaction = ForwardSignal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(kSignals[i], &action, nullptr);
  }
}

SignalForwarding::~SignalForwarding() {
  RestoreDispositions();
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

void SignalForwarding::RestoreInChild() const noexcept {
  RestoreDispositions();
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

void SignalForwarding::Unblock() const noexcept { sigprocmask(SIG_UNBLOCK, &forwarded_, nullptr); }

void SignalForwarding::RestoreDispositions() const noexcept {
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    sigaction(kSignals[i], &old_actions_[i], nullptr);
  }
}

void ChildEnvironment::Set(std::string name, std::string value) {
  for (auto& [existing, text] : overrides_) {
    if (existing == name) {
      text = std::move(value);
      return;
    }
  }
  overrides_.emplace_back(std::move(name), std::move(value));
}

bool ChildEnvironment::Has(std::string_view name) const {
  return std::any_of(overrides_.begin(), overrides_.end(), [&](const auto& o) { return o.first == name; });
}

void ChildEnvironment::Build() {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool replaced = name == kRootPidEnv || std::any_of(overrides_.begin(), overrides_.end(),
                                                       [&](const auto& o) { return o.first == name; });
    if (!replaced) entries_.emplace_back(text);
  }
  for (const auto& [name, value] : overrides_) entries_.push_back(name + "=" + value);
  entries_.push_back(std::string(kRootPidEnv) + "=" + std::string(kPidDigits, '\0'));
  root_pid_index_ = entries_.size() - 1;
  pointers_.clear();
  for (std::string& entry : entries_) pointers_.push_back(entry.data());
  pointers_.push_back(nullptr);
}

void ChildEnvironment::FillRootPid(pid_t pid) noexcept {
  char* out = entries_[root_pid_index_].data() + std::strlen(kRootPidEnv) + 1;
  char digits[kPidDigits];
  std::size_t n = 0;
  auto value = static_cast<unsigned long>(pid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && n < kPidDigits - 1);
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
}

StatusOr<Started> StartApplication(std::vector<std::string> argv_strings, ChildEnvironment& env,
                                   const SignalForwarding& signals) {
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    int err = errno;
    return InternalError("cannot create a pipe to start the application: " + base::ErrnoText(err));
  }
  std::fflush(nullptr);  // so the child does not inherit and repeat buffered output
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    return InternalError("cannot fork to start the application: " + base::ErrnoText(err));
  }
  if (pid == 0) {
    // The child: async-signal-safe calls only until exec.
    close(fds[0]);
    signals.RestoreInChild();
    env.FillRootPid(getpid());
    execvpe(argv[0], argv.data(), env.envp());
    int err = errno;
    if (write(fds[1], &err, sizeof(err)) < 0) {
      // Nothing to do: the parent then sees a bare exit status 127.
    }
    _exit(kExitNotFound);
  }
  g_child_pid.store(pid, std::memory_order_relaxed);
  signals.Unblock();
  close(fds[1]);
  Started started;
  started.pid = pid;
  int err = 0;
  ssize_t n = 0;
  do {
    n = read(fds[0], &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof(err))) started.exec_errno = err;
  return started;
}

int ShellExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

void ClearApplicationPid() noexcept { g_child_pid.store(0, std::memory_order_relaxed); }

std::string SignalName(int sig) {
  const char* text = strsignal(sig);
  return "signal " + std::to_string(sig) + (text != nullptr ? std::string(" (") + text + ")" : "");
}

}  // namespace gpuprof::cli
