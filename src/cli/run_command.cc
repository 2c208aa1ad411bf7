#include "cli/run_command.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>
#include <system_error>
#include <utility>

#include "base/errno_text.h"
#include "base/settings.h"
#include "base/utf8.h"
#include "cli/cli11.h"
#include "cli/db_commands.h"
#include "cli/did_you_mean.h"
#include "cli/exit_codes.h"
#include "cli/help_formatter.h"
#include "cli/live_line.h"
#include "cli/query_metrics.h"
#include "cli/report.h"
#include "cli/result_file.h"
#include "cli/sanitizer_runtime.h"
#include "cli/setting_options.h"
#include "db/output_layout.h"
#include "db/profile_reader.h"
#include "db/stats.h"
#include "gpuprof/status.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace gpuprof::cli {
namespace {

namespace fs = std::filesystem;

// What `gpuprof replay`'s --from-script leaves to the program (and so excludes on the command line).
constexpr std::array<base::SettingId, 13> kReplaySelection = {base::SettingId::kReplayPasses,
                                                              base::SettingId::kReplayKernel,
                                                              base::SettingId::kReplaySkip,
                                                              base::SettingId::kReplayCount,
                                                              base::SettingId::kReplayCacheControl,
                                                              base::SettingId::kReplayRestore,
                                                              base::SettingId::kReplayStrict,
                                                              base::SettingId::kReplayPrintfKernels,
                                                              base::SettingId::kReplayMallocKernels,
                                                              base::SettingId::kReplayWithLiveArrays,
                                                              base::SettingId::kReplayMetrics,
                                                              base::SettingId::kReplaySection,
                                                              base::SettingId::kReplaySet};
constexpr const char* kInjectLibraryName = "libgpuprof_inject.so";
constexpr const char* kSessionLibraryName = "libgpuprof.so";
constexpr const char* kInjectLibraryEnv = "GPUPROF_INJECT_LIBRARY";
// Preloaded so that a program that calls exec finalizes its profile first (src/inject/exec_guard.cc).
constexpr const char* kExecGuardLibraryName = "libgpuprof_exec_guard.so";
constexpr const char* kRootPidEnv = "GPUPROF_ROOT_PID";
constexpr const char* kNvtxInjectionEnv = "NVTX_INJECTION64_PATH";
// What the NVTX loader looks up in the library NVTX_INJECTION64_PATH names.
constexpr const char* kNvtxEntryPoint = "InitializeInjectionNvtx2";

// Rows per table in the summary: enough to see where time goes; `gpuprof stats` shows more.
constexpr std::size_t kSummaryRows = 5;
constexpr std::size_t kMaxNameChars = 100;

constexpr std::array<int, 4> kForwardedSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

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

// Blocks the forwarded signals and routes them to ForwardSignal for the lifetime of the object;
// signals the caller ignored stay ignored (and so stay ignored in the application, as a shell
// would leave them). The destructor restores the dispositions and the mask.
class SignalForwarding {
 public:
  SignalForwarding() {
    sigemptyset(&forwarded_);
    for (int sig : kForwardedSignals) sigaddset(&forwarded_, sig);
    sigprocmask(SIG_BLOCK, &forwarded_, &old_mask_);
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
      sigaction(kForwardedSignals[i], nullptr, &old_actions_[i]);
      if (old_actions_[i].sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_sigaction = ForwardSignal;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&action.sa_mask);
      sigaction(kForwardedSignals[i], &action, nullptr);
    }
  }
  ~SignalForwarding() {
    RestoreDispositions();
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

  // In the forked child before exec: the caller's dispositions and mask (async-signal-safe).
  void RestoreInChild() const noexcept {
    RestoreDispositions();
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  // In gpuprof once the child's pid is published: signals that arrived meanwhile are delivered.
  void Unblock() const noexcept { sigprocmask(SIG_UNBLOCK, &forwarded_, nullptr); }

 private:
  void RestoreDispositions() const noexcept {
    for (std::size_t i = 0; i < kForwardedSignals.size(); ++i) {
      sigaction(kForwardedSignals[i], &old_actions_[i], nullptr);
    }
  }

  sigset_t forwarded_{};
  sigset_t old_mask_{};
  std::array<struct sigaction, kForwardedSignals.size()> old_actions_{};
};

// The directory of the running gpuprof executable.
StatusOr<fs::path> ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return InternalError("cannot find gpuprof's own path (/proc/self/exe): " + ec.message());
  return exe.parent_path();
}

bool IsReadableFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), R_OK) == 0;
}

// GPUPROF_INJECT_LIBRARY, else <exe dir>/../lib/, else <exe dir>/lib/ (an installed tree and the
// build tree both put gpuprof in bin/ beside lib/).
StatusOr<std::string> ResolveInjectLibrary() {
  if (const char* from_env = std::getenv(kInjectLibraryEnv); from_env != nullptr && *from_env != '\0') {
    fs::path path(from_env);
    if (!IsReadableFile(path)) {
      std::error_code ec;
      std::string why = fs::exists(path, ec) ? "is not a readable file" : "does not exist";
      return NotFoundError(std::string(kInjectLibraryEnv) + "=" + from_env +
                           " names the injection library, but " + path.string() + " " + why + "; point " +
                           kInjectLibraryEnv + " at a built " + kInjectLibraryName +
                           ", or unset it to use the one beside gpuprof");
    }
    return fs::absolute(path).lexically_normal().string();
  }
  GPUPROF_ASSIGN_OR_RETURN(fs::path exe_dir, ExecutableDir());
  const fs::path candidates[] = {(exe_dir / ".." / "lib" / kInjectLibraryName).lexically_normal(),
                                 (exe_dir / "lib" / kInjectLibraryName).lexically_normal()};
  std::string tried;
  for (const fs::path& candidate : candidates) {
    if (IsReadableFile(candidate)) return candidate.string();
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  return NotFoundError(std::string("cannot find gpuprof's CUDA injection library ") + kInjectLibraryName +
                       " (tried " + tried +
                       "); build it with GPUPROF_ENABLE_CUDA=ON (e.g. `cmake --preset gpu && cmake --build "
                       "--preset gpu`), or set " +
                       kInjectLibraryEnv + " to its path");
}

// The folder holding the gpuprof Python package (its gpuprof/__init__.py): $GPUPROF_PYTHON_DIR,
// else the installed tree's (<prefix>/bin/gpuprof, <prefix>/GPUPROF_INSTALL_PYTHONDIR; see
// cmake/GpuprofInstall.cmake), else python/ of the checkout the executable was built in
// (build/<preset>/bin/gpuprof). All relative to the executable, so a moved tree works too. Empty
// when there is none.
std::string FindPythonPackageDir() {
  std::vector<fs::path> candidates;
  if (const char* from_env = std::getenv("GPUPROF_PYTHON_DIR"); from_env != nullptr && *from_env != '\0') {
    candidates.emplace_back(from_env);
  }
  if (StatusOr<fs::path> exe_dir = ExecutableDir(); exe_dir.ok()) {
#ifdef GPUPROF_INSTALL_PYTHONDIR
    candidates.push_back(*exe_dir / ".." / GPUPROF_INSTALL_PYTHONDIR);
#endif
    candidates.push_back(*exe_dir / ".." / ".." / ".." / "python");
    candidates.push_back(*exe_dir / ".." / "python");
  }
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(candidate / "gpuprof" / "__init__.py", ec)) {
      return fs::absolute(candidate, ec).lexically_normal().string();
    }
  }
  return {};
}

// True when `library` exports the NVTX injection entry point. Probed with dlopen(RTLD_LAZY |
// RTLD_LOCAL) and closed again: the injection library links no CUDA and starts nothing when
// loaded (InitializeInjection is what starts it), so the probe is cheap and has no effect.
bool ExportsNvtxEntryPoint(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  const bool found = dlsym(handle, kNvtxEntryPoint) != nullptr;
  dlclose(handle);
  return found;
}

// --exec-guard / --no-exec-guard, else GPUPROF_EXEC_GUARD in gpuprof's environment, else on.
StatusOr<bool> ExecGuardWanted(const SettingOptions& settings) {
  const base::SettingSpec& spec = base::Spec(base::SettingId::kExecGuard);
  if (settings.given(spec.id)) return settings.value(spec.id) == "1";
  const std::string variable(spec.env);
  const char* text = std::getenv(variable.c_str());
  if (text == nullptr || *text == '\0') return spec.default_value == "1";
  GPUPROF_ASSIGN_OR_RETURN(std::string canonical, base::ParseSettingText(spec, text, variable));
  return canonical == "1";
}

// The LD_PRELOAD that adds the exec guard beside `inject_library` for the application `app`, or
// empty to leave LD_PRELOAD as it is: when there is no guard, when its path cannot go into
// LD_PRELOAD, and when a sanitizer runtime must come first (one info line on `report` says so:
// AddressSanitizer exits at start when a preloaded library comes before its runtime).
std::string ExecGuardPreload(const std::string& inject_library, const std::string& app,
                             std::ostream& report) {
  const fs::path guard = fs::path(inject_library).parent_path() / kExecGuardLibraryName;
  if (!IsReadableFile(guard) || guard.string().find_first_of(": ") != std::string::npos) {
    return {};  // LD_PRELOAD splits at ':' and ' '
  }
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string user_preload = existing != nullptr ? existing : "";
  std::string runtime = SanitizerInPreload(user_preload);
  if (runtime.empty()) {
    // execvpe's own default when PATH is unset.
    const char* path = std::getenv("PATH");
    const std::string executable = ResolveLikeExecvp(app, path != nullptr ? path : "/bin:/usr/bin");
    if (!executable.empty())
      runtime = SanitizerRuntimeOf(executable, path != nullptr ? path : "/bin:/usr/bin");
  }
  if (!runtime.empty()) {
    report << "gpuprof: " << base::PrintableText(app) << " runs with a sanitizer ("
           << base::PrintableText(runtime)
           << "), whose runtime must be the first library loaded: the exec guard is off (a process that "
              "calls exec leaves its DB unfinished)\n";
    return {};
  }
  // After the user's own (a sanitizer's runtime must stay first).
  return user_preload.empty() ? guard.string() : user_preload + ":" + guard.string();
}

constexpr std::string_view kResultDirPrefix = "gpuprof-run-";

// Removes the result directories ("gpuprof-run-<pid>-XXXXXX", ours by uid) of gpuprof processes
// that no longer exist: a gpuprof killed with SIGKILL cannot remove its own. A directory whose pid
// is alive, or that is not ours, is left alone.
void RemoveStaleResultDirs(const std::string& tmp) {
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kResultDirPrefix, 0) != 0) continue;
    const std::string rest = name.substr(kResultDirPrefix.size());
    const std::size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    pid_t pid = 0;
    auto [ptr, parse_ec] = std::from_chars(rest.data(), rest.data() + dash, pid);
    if (parse_ec != std::errc() || ptr != rest.data() + dash || pid <= 0) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid())
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask): kept
    std::error_code remove_ec;
    fs::remove_all(it->path(), remove_ec);
  }
}

// A private temporary directory holding the result file, removed with the object. Its name carries
// this process's pid, so that a later run can remove it should this one be killed (SIGKILL).
class ResultDir {
 public:
  static StatusOr<std::unique_ptr<ResultDir>> Create() {
    const char* tmp_env = std::getenv("TMPDIR");
    const std::string tmp = tmp_env != nullptr && *tmp_env != '\0' ? tmp_env : "/tmp";
    RemoveStaleResultDirs(tmp);
    std::string pattern = tmp + "/" + std::string(kResultDirPrefix) + std::to_string(::getpid()) + "-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      int err = errno;
      return InternalError("cannot create a temporary directory " + pattern + ": " + base::ErrnoText(err) +
                           "; set TMPDIR to a writable directory");
    }
    auto dir = std::unique_ptr<ResultDir>(new ResultDir(pattern));
    // Created empty so that "no lines" and "no file" mean the same: nothing was finalized.
    std::ofstream touch(dir->result_file());
    if (!touch) return InternalError("cannot create " + dir->result_file());
    return dir;
  }
  ~ResultDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ResultDir(const ResultDir&) = delete;
  ResultDir& operator=(const ResultDir&) = delete;

  std::string result_file() const { return dir_ + "/results"; }

 private:
  explicit ResultDir(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// What the live line of `run` shows: the counts of this run's processes (their progress files
// beside the result file, db::RunProgressPath), summed.
std::string RunProgressText(const std::string& result_file, bool replay) {
  const fs::path file(result_file);
  const std::string prefix = file.filename().string() + std::string(db::kRunProgressInfix);
  db::RunProgress total;
  std::size_t processes = 0;
  std::error_code ec;
  for (fs::directory_iterator it(file.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0 || name.find('.', prefix.size()) != std::string::npos) {
      continue;  // not a progress file (or its temporary)
    }
    std::ifstream in(it->path());
    std::string text;
    db::RunProgress one;
    if (std::getline(in, text) && !in.eof() && db::ParseRunProgress(text + "\n", &one)) {
      total += one;
      ++processes;
    }
  }
  if (processes == 0) return "running, nothing recorded yet";
  std::string text = GroupedNumber(total.launches) + " launches, " + GroupedNumber(total.kernels) +
                     " kernels, " + GroupedNumber(total.ops) + " ops";
  if (replay) {
    text += ", " + GroupedNumber(total.replayed) + " replayed";
    if (total.declined > 0) text += " (" + GroupedNumber(total.declined) + " declined)";
  }
  if (processes > 1) text += " in " + std::to_string(processes) + " processes";
  if (total.finalizing > 0) {
    text += processes > 1 ? "; " + std::to_string(total.finalizing) + " of them writing their DB"
                          : "; writing the DB";
  }
  return text;
}

// ---- The summary --------------------------------------------------------------------------------

std::string Ms(std::int64_t ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(ns) / 1e6);
  return text;
}

std::string Percent(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// `path` as one shell word to paste: '...' when it is printable, else bash's $'...' with the
// control characters as escapes (a newline in -o or in the worker name must not break the line).
std::string ShellWord(std::string_view path) {
  std::string quoted;
  for (char c : path) {
    if (c == '\\' || c == '\'') quoted.push_back('\\');
    quoted.push_back(c);
  }
  const std::string printable = base::PrintableText(quoted);
  if (printable == quoted) {
    std::string word = "'";
    for (char c : path) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return word + "'";
  }
  return "$'" + printable + "'";
}

std::string ShortName(std::string_view raw) {
  std::string name = base::PrintableText(raw);
  if (name.size() <= kMaxNameChars) return name;
  std::size_t cut = kMaxNameChars;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0u) == 0x80u) --cut;
  return name.substr(0, cut) + "...";
}

void PrintKernels(std::ostream& report, const db::ProfileStats& stats) {
  using Align = TextTable::Align;
  if (stats.top_kernels.empty()) {
    report << "  Kernels: none" << (stats.kernels_absent.empty() ? "" : " (" + stats.kernels_absent + ")")
           << "\n";
  } else {
    report << "  Top kernels by total time (" << stats.kernel_calls << " launches of " << stats.kernel_names
           << " kernels, " << Ms(stats.kernel_total_ns) << " ms on the device)\n";
    TextTable table({{"calls", Align::kRight},
                     {"total ms", Align::kRight},
                     {"avg µs", Align::kRight},
                     {"%", Align::kRight},
                     {"name", Align::kLeft}});
    for (const db::KernelStat& kernel : stats.top_kernels) {
      table.AddRow({std::to_string(kernel.calls), Ms(kernel.total_ns),
                    FormatMicros(static_cast<double>(kernel.total_ns) / static_cast<double>(kernel.calls)),
                    Percent(kernel.total_ns, stats.kernel_total_ns), ShortName(kernel.name)});
    }
    table.Print(report, "    ");
  }
  if (!stats.task_types.empty()) {
    report << "  Device tasks:";
    bool first = true;
    for (const db::TaskTypeStat& type : stats.task_types) {
      report << (first ? " " : ", ") << type.count << " " << ShortName(type.type) << " (" << Ms(type.total_ns)
             << " ms)";
      first = false;
    }
    report << "\n";
  }
}

void PrintApi(std::ostream& report, const db::ApiSummary& api) {
  using Align = TextTable::Align;
  if (api.top.empty()) {
    report << "  CUDA API: none (" << api.absent << ")\n";
    return;
  }
  report << "  CUDA API: " << api.calls << " calls of " << api.names << " functions, " << Ms(api.total_ns)
         << " ms in total; top by time:\n";
  TextTable table({{"calls", Align::kRight},
                   {"total ms", Align::kRight},
                   {"avg µs", Align::kRight},
                   {"%", Align::kRight},
                   {"name", Align::kLeft}});
  for (const db::ApiStat& stat : api.top) {
    table.AddRow({std::to_string(stat.calls), Ms(stat.total_ns),
                  FormatMicros(static_cast<double>(stat.total_ns) / static_cast<double>(stat.calls)),
                  Percent(stat.total_ns, api.total_ns), ShortName(stat.name)});
  }
  table.Print(report, "    ");
}

// One DB: its path, then its top kernels, device tasks and API time. A DB that cannot be read is
// reported and skipped; it does not change the exit status, which is the application's.
void PrintDbSummary(std::ostream& report, const std::string& path) {
  report << "gpuprof: profile DB: " << base::PrintableText(path) << "\n";
  StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(path);
  if (!reader.ok()) {
    report << "gpuprof: warning: cannot summarize it: " << reader.status().message() << "\n";
    return;
  }
  StatusOr<db::ProfileStats> stats = db::ComputeStats(**reader, db::StatsOptions{kSummaryRows});
  if (!stats.ok()) {
    report << "gpuprof: warning: cannot summarize it: " << stats.status().message() << "\n";
    return;
  }
  PrintKernels(report, *stats);
  StatusOr<db::ApiSummary> api = db::ComputeApiSummary(**reader, kSummaryRows);
  if (!api.ok()) {
    report << "gpuprof: warning: cannot read its CUDA API rows: " << api.status().message() << "\n";
  } else {
    PrintApi(report, *api);
  }
  report << "  More: gpuprof stats " << ShellWord(path) << " (or export, check)\n";
}

void PrintReplaySummary(std::ostream& report, const std::string& path) {
  StatusOr<std::unique_ptr<db::ProfileReader>> reader = db::ProfileReader::Open(path);
  if (!reader.ok()) return;
  db::StatsOptions options;
  options.top = 50;
  StatusOr<db::ProfileStats> stats = db::ComputeStats(**reader, options);
  if (!stats.ok()) {
    report << "gpuprof: warning: cannot read the replay results: " << stats.status().message() << "\n";
    return;
  }
  PrintReplayStats(report, *stats);
}

std::string SignalName(int sig) {
  const char* text = strsignal(sig);
  return "signal " + std::to_string(sig) + (text != nullptr ? std::string(" (") + text + ")" : "");
}

// ---- Starting the application ------------------------------------------------------------------

// NAME=VALUE entries for the application: the caller's environment with gpuprof's variables set.
class ChildEnvironment {
 public:
  // A later Set of the same name replaces the earlier one (the output directory is set from the
  // settings, then made absolute): an environment with two entries of one name reads differently
  // in getenv (the first) and in a shell (the last).
  void Set(std::string name, std::string value) {
    for (auto& [existing, text] : overrides_) {
      if (existing == name) {
        text = std::move(value);
        return;
      }
    }
    overrides_.emplace_back(std::move(name), std::move(value));
  }

  // Builds the entries. GPUPROF_ROOT_PID gets a slot that FillRootPid writes in the child, where
  // nothing may allocate.
  void Build() {
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

  // Async-signal-safe: writes `pid` into the slot Build reserved.
  void FillRootPid(pid_t pid) noexcept {
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

  bool Has(std::string_view name) const {
    return std::any_of(overrides_.begin(), overrides_.end(), [&](const auto& o) { return o.first == name; });
  }

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
// fork and the pid being published).
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

// The exit status to report for a waitpid status, shell style.
int ShellExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

int Fail(std::ostream& report, const Status& status) {
  report << "gpuprof: error: " << status.message() << "\n";
  return kExitFailure;
}

constexpr const char* kRunDescription =
    "Run an application under gpuprof: profile its CUDA work (kernels, copies, memsets, runtime API calls, "
    "NVTX ranges) into a profile DB, then print where each DB is and a short summary";

constexpr const char* kRunUsage =
    "Usage: gpuprof run [-o DIR] [--follow-children] [--no-record-shapes] [--no-profile-memory]\n"
    "                   [--with-stack] [--with-modules] [--cuda-trace LIST] [--] APP [ARGS...]";
constexpr const char* kReplayUsage =
    "Usage: gpuprof replay [-k NAME|regex:PATTERN] [-s N] [-c N] [OPTIONS] [--] APP [ARGS...]\n"
    "       gpuprof replay --from-script [OPTIONS] -- python3 SCRIPT [ARGS...]";

constexpr const char* kRunFooter =
    R"(APP and everything after it belong to the application, even arguments that look like gpuprof's
flags; `--` ends gpuprof's flags explicitly. APP is looked up in PATH like a shell does.

How it works: gpuprof sets CUDA_INJECTION64_PATH to libgpuprof_inject.so, so the CUDA driver loads
gpuprof into the application when the application initializes CUDA; the application needs no change
(a PyTorch script need not import gpuprof). The library is taken from $GPUPROF_INJECT_LIBRARY, else
<dir of gpuprof>/../lib/, else <dir of gpuprof>/lib/. Each profiled process writes
  DIR/<host>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler[_<rank>].db
and when the application ends gpuprof prints each DB's path with its top kernels, device tasks and
CUDA API time (`gpuprof stats`, `export` and `check` read the DB further). When no DB was written it
says why in one line: usually that the application never initialized CUDA (a CPU-only run).

PyTorch scripts: when the script imports torch, the gpuprof Python package (installed beside
gpuprof, python/ of its checkout, or $GPUPROF_PYTHON_DIR) also records its ops, input shapes
(--no-record-shapes: off), allocator events (--no-profile-memory: off), Python call stacks
(--with-stack: on) and steps, on the CPU too: each optimizer.step() ends a step unless the script
calls gpuprof.profile's step() itself; a script's own gpuprof.profile joins the run's DB.

Child processes: without --follow-children only the process gpuprof started is profiled (a child
that uses CUDA runs unprofiled); with it, every descendant that uses CUDA writes its own DB, named
by its own pid. A CUDA context never survives fork(): a child must initialize CUDA itself.

Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to gpuprof are forwarded to the application (a
Ctrl-C typed at the terminal reaches the application directly and is not sent twice). gpuprof waits
for the application, so its DB is finalized before the summary is printed.

Environment: GPUPROF_LOG_LEVEL (the session's log level) and GPUPROF_WORKER_NAME (replaces
<host>_<pid> in the run directory's name) pass through to the application; gpuprof sets
CUDA_INJECTION64_PATH, GPUPROF_OUTPUT_DIR, GPUPROF_RESULT_FILE, GPUPROF_FOLLOW_CHILDREN and
GPUPROF_ROOT_PID, GPUPROF_CUDA_TRACE (with --cuda-trace), NVTX_INJECTION64_PATH (to the
injection library, when that library provides InitializeInjectionNvtx2 and the variable is not
already set), and LD_PRELOAD: the user's, then libgpuprof_exec_guard.so, so that a process that
calls exec finalizes its DB first (--no-exec-guard or GPUPROF_EXEC_GUARD=0: not added; left out by
itself, with one line, when APP or LD_PRELOAD has a sanitizer runtime, which must be loaded first).

CUDA API calls: by default (--cuda-trace launches,nvtx) gpuprof records, of both APIs, only the
calls that launch, copy, set, allocate, free or wait (the CANN_API rows of every kernel, copy and
memset stay), through its own callbacks; --cuda-trace runtime,driver,nvtx records every call as a
CUPTI activity record, at a higher cost; with none of runtime, driver and launches the CUDA calls
are missing from CANN_API, and PyTorch ops reach their kernels only through per-op external ids.

Output: gpuprof's own lines go to stderr; the application's stdout and stderr are untouched.

Exit status: the application's; 128+N if signal N killed it; 127 if APP was not found and 126 if it
could not be executed (as in a shell); 1 if gpuprof could not set the run up; 2 for usage errors.

Example: gpuprof run -o prof -- python3 examples/train_plain.py --steps 5
)";

constexpr const char* kReplayDescription =
    "Run an application with kernel replay: selected kernel launches run N passes on identical inputs "
    "(device memory snapshotted before the first and restored before each later pass; the application "
    "sees one ordinary run), timed per pass, checked for determinism; results go to the profile DB";
constexpr const char* kReplayFooter = R"(
Selection (as Nsight Compute's): -k NAME matches the kernel's function name exactly (demangled, e.g.
'gemm_kernel', or mangled); -k regex:PATTERN searches the name with a regular expression; -s N lets
the first N matching launches run unreplayed; -c N replays at most N launches. Without -k every
kernel launch is replayed (slow for a large program: pick kernels).

Each pass flushes the L2 cache first (--cache-control all, Nsight Compute's default) unless
--cache-control none. --restore auto writes back only the chunks a pass changed; full writes
everything back. Snapshots are kept in device memory while --device-reserve MiB stay free (then
pinned host memory, then pageable); the DB's snapshotDeviceBytes says where they went. --strict
declines launches while host-mapped, managed or IPC memory is live (writes to it cannot be undone).

Kernels that use device printf are replayed, and what they print repeats once per pass (one
warning per kernel says so; --no-replay-printf-kernels declines them). Kernels that use device
malloc/free, and every launch while CUDA arrays exist (their writes cannot be undone), are declined
unless --replay-malloc-kernels or --replay-with-live-arrays.

Declined launches (launches into a capturing stream, the side effects above, a device that does
not drain) run once, unreplayed; the reason is in the DB and in one warning line.

CUDA graphs (torch.compile mode="reduce-overhead", torch.cuda.CUDAGraph, cudaGraphLaunch) run once,
unreplayed, unless --graph-replay asks: graph replays a selected graph launch as one unit (the
graph's duration and each kernel node's, per pass); node runs its nodes one at a time and replays
each kernel node that -k selects in place, with the inputs it has inside the graph. -k selects a
graph launch when one of its kernel nodes matches; -s and -c count graph launches. A graph with
host, memory-allocation or conditional nodes is replayed whole instead of node by node (the DB's
graphFallback says why). The application's graphs are relaunched as usual afterwards.

Hardware counters (Nsight Compute's names; docs/metrics.md): --metrics LIST, --section LIST and
--set basic|full choose metrics, collected over extra counter passes after the timed passes (each
pass on the same restored inputs); the DB keeps them per launch. The launch__* metrics (grid, block,
registers, shared memory, theoretical occupancy) come from the launch and need no pass. Nothing is
collected by default. Counters need profiling permission (root, or the driver's
RmProfilingAdminOnly=0); without it the launches are still replayed and timed, and the reason is
recorded. --query-metrics lists the names (--chip GH100 for a chip, --json for JSON) and runs no
application. --clock-control base locks SM and memory clocks to base for the passes (root only;
otherwise a warning and the clocks as they are); the default none never changes them.

--from-script leaves the choice to the program: nothing is replayed until it calls
gpuprof.profile(kernel_replay=gpuprof.KernelReplay(passes=..., kernel=...)), and only while that
profile records (python/README.md).

Example: gpuprof replay --passes 5 -k regex:gemm -c 3 -- python3 examples/train_plain.py --steps 5
         gpuprof replay --graph-replay node -- python3 examples/infer_compiled.py
         gpuprof replay --from-script -- \
             python3 examples/train_profiled.py --replay-kernel regex:gemm
         gpuprof replay -k regex:gemm -c 1 --section SpeedOfLight,Occupancy -- ./app
         gpuprof replay --query-metrics --chip GH100
)";

}  // namespace

RunCommand::RunCommand(CLI::App& app, bool replay) : replay_(replay) {
  using base::SettingId;
  run_ = app.add_subcommand(replay_ ? "replay" : "run", replay_ ? kReplayDescription : kRunDescription);
  // Parsing stops at the application: its arguments are never gpuprof's, whatever they look like.
  run_->prefix_command();
  settings_ = std::make_unique<SettingOptions>(*run_, replay_ ? base::kReplayCommand : base::kRunCommand);
  if (replay_) {
    CLI::Option* from_script = settings_->option(SettingId::kReplayFromScript);
    for (SettingId id : kReplaySelection) from_script->excludes(settings_->option(id));
    CLI::Option* query =
        run_->add_flag("--query-metrics", query_metrics_,
                       "List the metrics --metrics can name (the launch metrics, and the counter "
                       "metrics the GPU offers, through libgpuprof.so and CUPTI), then exit; "
                       "runs no application");
    run_->add_option("--chip", chip_,
                     "With --query-metrics: list the counter metrics of this chip (e.g. GH100) instead of a "
                     "device's")
        ->type_name("CHIP")
        ->needs(query);
    run_->add_option("--query-device", query_device_,
                     "With --query-metrics: the CUDA device whose counter metrics to list (default: 0)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("N")
        ->needs(query);
    run_->add_flag("--json", json_, "With --query-metrics: print one JSON object instead of tables")
        ->needs(query);
    run_->add_flag(
            "--csv", csv_,
            "After the run, print each replayed launch's metric values as CSV, as `gpuprof stats --csv "
            "DIR` does (rank,kernelId,kernel,launchIndex,metric,unit,value,passes), on stderr with gpuprof's "
            "other lines (stdout stays the application's)")
        ->excludes(query);
  }
  run_->footer(replay_ ? kReplayFooter : kRunFooter);
  if (auto help = std::dynamic_pointer_cast<HelpFormatter>(app.get_formatter())) {
    help->SetUsage(run_, replay_ ? kReplayUsage : kRunUsage);
  }
}

RunCommand::~RunCommand() = default;

int RunCommand::SplitArguments(int argc, char** argv) {
  // gpuprof's own flags (--help, --version) take no value, so the first other argument is the
  // subcommand.
  int i = 1;
  while (i < argc && argv[i][0] == '-') ++i;
  if (i >= argc || std::string_view(argv[i]) != name()) return argc;
  for (int j = i + 1; j < argc; ++j) {
    if (std::string_view(argv[j]) != "--") continue;
    separator_ = true;
    after_separator_.assign(argv + j + 1, argv + argc);
    return j;
  }
  return argc;
}

std::vector<std::string> RunCommand::ApplicationArguments() const {
  std::vector<std::string> app = run_->remaining();
  if (separator_) {
    // A `--` after the application's first argument is the application's own.
    if (!app.empty()) app.emplace_back("--");
    app.insert(app.end(), after_separator_.begin(), after_separator_.end());
  }
  return app;
}

bool RunCommand::parsed() const { return run_->parsed(); }

int RunCommand::QueryMetrics(std::ostream& report) const {
  QueryMetricsOptions options;
  options.device = query_device_;
  options.chip = chip_;
  options.json = json_;
  StatusOr<std::vector<replay::MetricInfo>> counters = UnavailableError("");
  // libgpuprof.so sits beside the injection library (<build or install>/lib).
  if (StatusOr<std::string> inject = ResolveInjectLibrary(); inject.ok()) {
    options.library = (fs::path(*inject).parent_path() / kSessionLibraryName).string();
    counters = QueryCounterMetrics(options);
  } else {
    counters = inject.status();
  }
  PrintMetrics(std::cout, options, counters);
  if (!counters.ok()) {
    report << "gpuprof: error: no counter metrics listed: " << counters.status().message() << "\n";
    return kExitFailure;
  }
  return 0;
}

int RunCommand::Run(std::ostream& report) const {
  using base::SettingId;
  if (replay_ && query_metrics_) return QueryMetrics(report);
  const std::vector<std::string> app_argv = ApplicationArguments();
  if (app_argv.empty()) {
    report << "gpuprof: error: no application given: gpuprof " << name() << " [flags] [--] APP [ARGS...]\n"
           << "run 'gpuprof " << name() << " --help' for the accepted flags and values\n";
    return kExitUsage;
  }
  // An unknown flag before the application ends parsing like the application would: say so rather
  // than try to run it.
  if (const std::string& first = app_argv.front();
      first.size() > 1 && first[0] == '-' && (!separator_ || !run_->remaining().empty())) {
    const std::string closest = ClosestWord(first.substr(0, first.find('=')), OptionNames(*run_));
    report << "gpuprof: error: " << first << " is not a flag of gpuprof " << name()
           << (closest.empty() ? "" : " (did you mean '" + closest + "'?)")
           << "; put the application after `--` if its name starts with '-'\n"
           << "run 'gpuprof " << name() << " --help' for the accepted flags and values\n";
    return kExitUsage;
  }

  StatusOr<std::string> inject_library = ResolveInjectLibrary();
  if (!inject_library.ok()) return Fail(report, inject_library.status());

  std::error_code ec;
  fs::path out_dir = fs::absolute(fs::path(settings_->value(SettingId::kOutputDir)), ec).lexically_normal();
  if (!ec) fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    return Fail(report, InternalError("cannot create the output directory " + out_dir.string() + ": " +
                                      (ec ? ec.message() : "a file of that name exists") +
                                      "; choose another with -o DIR"));
  }
  // DB paths are absolute even if the application changes directory.
  std::string out_dir_text = out_dir.string();
  while (out_dir_text.size() > 1 && out_dir_text.back() == '/') out_dir_text.pop_back();

  StatusOr<std::unique_ptr<ResultDir>> result_dir = ResultDir::Create();
  if (!result_dir.ok()) return Fail(report, result_dir.status());
  const std::string result_file = (*result_dir)->result_file();

  const bool from_script = replay_ && settings_->value(SettingId::kReplayFromScript) == "1";
  ChildEnvironment env;
  env.Set("CUDA_INJECTION64_PATH", *inject_library);
  // Every declared setting this command offers (base/settings.h); --from-script leaves the selection
  // to the program, so none is handed on.
  for (auto& [variable, value] : settings_->Environment(
           from_script ? std::vector<SettingId>(kReplaySelection.begin(), kReplaySelection.end())
                       : std::vector<SettingId>{})) {
    env.Set(std::move(variable), std::move(value));
  }
  env.Set(std::string(base::Spec(SettingId::kOutputDir).env), out_dir_text);  // absolute
  env.Set(std::string(base::Spec(SettingId::kResultFile).env), result_file);
  // A Python application that imports torch is profiled by the gpuprof package too (its ops,
  // memory and steps), through the sitecustomize in gpuprof/_autoload.
  if (std::string python_dir = FindPythonPackageDir(); !python_dir.empty()) {
    std::string path = python_dir + "/gpuprof/_autoload:" + python_dir;
    if (const char* existing = std::getenv("PYTHONPATH"); existing != nullptr && *existing != '\0') {
      path += std::string(":") + existing;
    }
    env.Set("PYTHONPATH", path);
    env.Set("GPUPROF_PYTHON_AUTORUN", "1");
    env.Set("GPUPROF_LIB_DIR", fs::path(*inject_library).parent_path().string());
  }
  if (replay_) {
    env.Set(std::string(base::Spec(SettingId::kReplay).env), "1");
    // One line per replayed launch is the progress report (info level), unless the user chose.
    const std::string level_env(base::Spec(SettingId::kLogLevel).env);
    if (const char* level = std::getenv(level_env.c_str()); level == nullptr || *level == '\0') {
      env.Set(level_env, "info");
    }
  }
  if (from_script) {
    report
        << "gpuprof: replay armed; the program chooses what to replay (gpuprof.profile(kernel_replay=...)); "
           "one line per replayed launch follows\n";
  } else if (replay_) {
    const std::string kernel = settings_->value(SettingId::kReplayKernel);
    const std::string count = settings_->value(SettingId::kReplayCount);
    report << "gpuprof: replaying " << (kernel.empty() ? std::string("every kernel") : "'" + kernel + "'")
           << ", " << settings_->value(SettingId::kReplayPasses) << " passes per launch"
           << (count != "0" ? ", at most " + count + " launches" : "")
           << "; one line per replayed launch follows\n";
  }
  // exec replaces the program without its exit handlers: the guard beside the injection library
  // lets the session finalize first (an install without it just goes without). The application
  // learns whether it is there (recorded in the DB).
  StatusOr<bool> exec_guard_wanted = ExecGuardWanted(*settings_);
  if (!exec_guard_wanted.ok()) {
    report << "gpuprof: error: " << exec_guard_wanted.status().message() << "\n";
    return kExitUsage;
  }
  std::string preload = *exec_guard_wanted ? ExecGuardPreload(*inject_library, app_argv.front(), report) : "";
  if (!preload.empty()) env.Set("LD_PRELOAD", std::move(preload));
  env.Set(std::string(base::Spec(SettingId::kExecGuard).env), env.Has("LD_PRELOAD") ? "1" : "0");
  // NVTX ranges reach a profiler only through the library NVTX_INJECTION64_PATH names. When the
  // injection library provides that entry point, name it (it forwards to the CUPTI the session
  // loads, so it works even when the application calls NVTX before initializing CUDA); otherwise
  // the session sets the variable itself when CUDA initializes. The user's own choice wins.
  if (const char* nvtx = std::getenv(kNvtxInjectionEnv);
      (nvtx == nullptr || *nvtx == '\0') && ExportsNvtxEntryPoint(*inject_library)) {
    env.Set(kNvtxInjectionEnv, *inject_library);
  }
  // The live line (--progress): the application's output scrolls above it. Without one, the
  // processes write no progress files.
  const bool show_progress = LiveLine::Wanted(settings_->value(SettingId::kProgress), STDERR_FILENO);
  if (!show_progress) env.Set(std::string(base::Spec(SettingId::kProgress).env), "off");
  env.Build();

  int wait_status = 0;
  // Held to the end, not just while the application runs: `timeout`, Slurm and group kills send
  // more than one signal, and one that arrives once the application has ended would otherwise
  // kill gpuprof mid-summary and replace the application's exit status with gpuprof's own death.
  SignalForwarding signals;
  {
    StatusOr<Started> started = StartApplication(app_argv, env, signals);
    if (!started.ok()) return Fail(report, started.status());
    pid_t pid = started->pid;
    LiveLine progress(STDERR_FILENO, show_progress, LinePlace::kBottomRow, std::string("gpuprof ") + name(),
                      [&] { return RunProgressText(result_file, replay_); });
    while (waitpid(pid, &wait_status, 0) < 0) {
      if (errno != EINTR) {
        int err = errno;
        g_child_pid.store(0, std::memory_order_relaxed);
        progress.Stop();
        return Fail(report, InternalError("waiting for the application (pid " + std::to_string(pid) +
                                          ") failed: " + base::ErrnoText(err)));
      }
    }
    g_child_pid.store(0, std::memory_order_relaxed);
    progress.Stop();
    if (started->exec_errno != 0) {
      report << "gpuprof: error: cannot run '" << app_argv.front()
             << "': " << base::ErrnoText(started->exec_errno) << "\n";
      return started->exec_errno == ENOENT ? kExitNotFound : kExitCannotExecute;
    }
  }
  const int exit_code = ShellExitCode(wait_status);

  if (WIFSIGNALED(wait_status)) {
    report << "gpuprof: the application was killed by " << SignalName(WTERMSIG(wait_status)) << "\n";
  } else if (exit_code != 0) {
    report << "gpuprof: the application exited with status " << exit_code << "\n";
  }

  std::vector<std::string> dbs = ReadResultLines(result_file, db::kResultLineDb);
  for (const std::string& db_path : dbs) {
    PrintDbSummary(report, db_path);
    if (replay_) PrintReplaySummary(report, db_path);
  }
  if (csv_ && !dbs.empty()) {
    // The replayed launches' metric values, as `gpuprof stats --csv OUT` prints them.
    RunStatsCsv(out_dir_text, report, report);
  }
  if (dbs.size() > 1) {
    report << "gpuprof: " << dbs.size() << " profile DBs written under " << base::PrintableText(out_dir_text)
           << "\n"
           << "  All of them (for the ranks of one job, first the step times per rank, the slowest rank and "
              "compute / communication / idle): gpuprof stats "
           << ShellWord(out_dir_text) << "\n";
  }

  std::vector<std::string> partial = UnfinishedDbs(result_file);
  std::vector<std::string> failed_starts = ReadResultLines(result_file, db::kResultLineFailed);
  std::vector<std::string> unfinalized = ReadResultLines(result_file, db::kResultLineUnfinalized);
  if (dbs.empty() && !unfinalized.empty()) {
    report << "gpuprof: no profile DB was finalized: "
           << base::PrintableText(WhyNotFinalized(unfinalized.front(), result_file))
           << (unfinalized.size() > 1 ? " (and " + std::to_string(unfinalized.size() - 1) + " more)" : "")
           << "\n";
  } else if (dbs.empty()) {
    if (!partial.empty()) {
      report
          << "gpuprof: no profile DB was finalized: " << base::PrintableText(partial.front())
          << (partial.size() > 1 ? " (and " + std::to_string(partial.size() - 1) + " more)" : "")
          << " was left unfinished, because a profiled process ended before gpuprof could finish writing it"
          << (WIFSIGNALED(wait_status) ? " (" + SignalName(WTERMSIG(wait_status)) + ")" : "") << "\n";
    } else if (WIFSIGNALED(wait_status)) {
      report << "gpuprof: no profile DB was written: the application was killed by "
             << SignalName(WTERMSIG(wait_status)) << " before any DB was finalized\n";
    } else if (!failed_starts.empty()) {
      // Each process said why (its warning is above); the last line repeats the first reason.
      report << "gpuprof: no profile was recorded: profiling could not start in "
             << base::PrintableText(failed_starts.front())
             << (failed_starts.size() > 1 ? " (and " + std::to_string(failed_starts.size() - 1) + " more)"
                                          : "")
             << "; the application ran unprofiled\n";
    } else if (exit_code != 0) {
      report << "gpuprof: no profile was recorded: the application exited with status " << exit_code
             << " before any profile started (it initialized no CUDA and started no gpuprof.profile)\n";
    } else {
      report
          << "gpuprof: no CUDA activity was collected: the application did not initialize CUDA (a CPU-only "
             "run?)\n";
    }
  } else if (!partial.empty()) {
    report << "gpuprof: note: " << partial.size()
           << " unfinished DB(s) from processes that ended early: " << base::PrintableText(partial.front())
           << (partial.size() > 1 ? ", ..." : "") << "\n";
  }
  return exit_code;
}

}  // namespace gpuprof::cli
