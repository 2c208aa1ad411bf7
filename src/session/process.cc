#include "session/process.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "base/json.h"
#include "base/logging.h"
#include "base/settings.h"
#include "db/sqlite_fork_guard.h"
#include "replay/controller.h"
#include "replay/metric_catalog.h"
#include "session/config.h"
#include "session/exec_finalizer.h"
#include "session/signal_finalizer.h"

namespace gpuprof::session {
namespace {

constexpr const char* kActiveSessionSymbol = "gpuprof_active_session_v1";

// The reason of the last failed table call on this thread, for the other copy that made it
// (gpuprof_session_v1::last_error). Without the call's name: the calling copy adds its own.
thread_local std::string t_table_reason;

int TableResult(CallResult result) noexcept {
  try {
    t_table_reason = std::move(result.message);
  } catch (...) {
    t_table_reason.clear();
  }
  return result.code;
}

template <typename Fn>
int TableCall(Fn&& fn) noexcept {
  try {
    return TableResult(fn());
  } catch (const std::exception& e) {
    return TableResult({GPUPROF_ERROR_INTERNAL, std::string("internal error: ") + e.what()});
  } catch (...) {
    return TableResult({GPUPROF_ERROR_INTERNAL, "internal error"});
  }
}

int TableAcquire() noexcept {
  return TableCall([] { return ProcessSession::Get().Acquire(); });
}
int TableRelease() noexcept {
  return TableCall([] { return ProcessSession::Get().Stop(); });
}
int TableFlush() noexcept {
  return TableCall([] { return ProcessSession::Get().Flush(); });
}
int TableMark(const char* message) noexcept {
  return TableCall([&] { return ProcessSession::Get().Mark(message); });
}
int TableRangeStart(const char* message, std::uint64_t* range_id) noexcept {
  return TableCall([&] { return ProcessSession::Get().RangeStart(message, range_id); });
}
int TableMarkV1(const gpuprof_mstx_v1* mark) noexcept {
  return TableCall([&] { return ProcessSession::Get().MarkV1(*mark); });
}
int TableRangeStartV1(const gpuprof_mstx_v1* range, std::uint64_t* range_id) noexcept {
  return TableCall([&] { return ProcessSession::Get().RangeStartV1(*range, range_id); });
}
int TableRangeEnd(std::uint64_t range_id) noexcept {
  return TableCall([&] { return ProcessSession::Get().RangeEnd(range_id); });
}
int TableWindowBegin(const char* out_dir) noexcept {
  return TableCall([&] { return ProcessSession::Get().WindowBegin(out_dir); });
}
int TableWindowEnd() noexcept {
  return TableCall([] { return ProcessSession::Get().WindowEnd(); });
}
int TableWindowDb(char* path, std::size_t path_size) noexcept {
  return TableCall([&] { return ProcessSession::Get().WindowDb(path, path_size); });
}
const char* TableLastError() noexcept { return t_table_reason.c_str(); }
int TableRecordTorchOp(const gpuprof_torch_op_v1* op) noexcept {
  return TableCall([&] { return ProcessSession::Get().RecordTorchOp(*op); });
}
int TableRecordAllocatorEvent(const gpuprof_allocator_event_v1* event) noexcept {
  return TableCall([&] { return ProcessSession::Get().RecordAllocatorEvent(*event); });
}
int TableRecordGcEvent(const gpuprof_gc_event_v1* event) noexcept {
  return TableCall([&] { return ProcessSession::Get().RecordGcEvent(*event); });
}
int TableGetDeviceCorrelation(gpuprof_device_correlation_v1* out) noexcept {
  return TableCall([&] { return ProcessSession::Get().DeviceCorrelation(out); });
}
int TableConfigureReplay(const gpuprof_replay_config_v1* config) noexcept {
  return TableCall([&] { return ProcessSession::Get().ConfigureReplay(*config); });
}
int TableConfigureReplaySettings(const char* const* keys, const char* const* values,
                                 std::size_t count) noexcept {
  return TableCall([&] { return ProcessSession::Get().ConfigureReplaySettings(keys, values, count); });
}
int TableReplayStepBoundary() noexcept {
  return TableCall([] { return ProcessSession::Get().ReplayStepBoundary(); });
}
int TableRecordRange(const gpuprof_range_v1* range) noexcept {
  return TableCall([&] { return ProcessSession::Get().RecordRange(*range); });
}

int TableNameThread(std::uint64_t tid, const char* name) noexcept {
  return TableCall([&] { return ProcessSession::Get().NameThread(static_cast<std::uint32_t>(tid), name); });
}

gpuprof_session_v1 MakeTable() {
  gpuprof_session_v1 table{};
  table.size = sizeof(gpuprof_session_v1);
  table.pid = static_cast<std::uint32_t>(getpid());
  table.acquire = &TableAcquire;
  table.release = &TableRelease;
  table.flush = &TableFlush;
  table.mark = &TableMark;
  table.range_start = &TableRangeStart;
  table.range_end = &TableRangeEnd;
  table.last_error = &TableLastError;
  table.record_torch_op = &TableRecordTorchOp;
  table.record_allocator_event = &TableRecordAllocatorEvent;
  table.record_gc_event = &TableRecordGcEvent;
  table.get_device_correlation = &TableGetDeviceCorrelation;
  table.configure_replay = &TableConfigureReplay;
  table.record_range = &TableRecordRange;
  table.window_begin = &TableWindowBegin;
  table.window_end = &TableWindowEnd;
  table.window_db = &TableWindowDb;
  table.name_thread = &TableNameThread;
  table.configure_replay_settings = &TableConfigureReplaySettings;
  table.replay_step_boundary = &TableReplayStepBoundary;
  table.mark_v1 = &TableMarkV1;
  table.range_start_v1 = &TableRangeStartV1;
  return table;
}

// The table other copies read. Its pid is refreshed in a fork child (ChildAfterFork).
gpuprof_session_v1 g_table = MakeTable();

// Start and Stop errors are about the output (directory, disk, result file) unless they say
// otherwise.
CallResult FromLifecycleStatus(const Status& status) {
  if (status.ok()) return {};
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return {GPUPROF_ERROR_INVALID_CONFIG, status.message()};
    case StatusCode::kInternal: return {GPUPROF_ERROR_INTERNAL, status.message()};
    default: return {GPUPROF_ERROR_OUTPUT, status.message()};
  }
}

const gpuprof_session_v1* CallActive(void* symbol) {
  if (symbol == nullptr) return nullptr;
  auto fn = reinterpret_cast<const gpuprof_session_v1* (*)()>(symbol);
  const gpuprof_session_v1* table = fn();
  if (table == nullptr || table == &g_table) return nullptr;
  // The first release's fields at least; the entries appended since are checked one by one (Has).
  constexpr std::size_t kFirstReleaseSize =
      offsetof(gpuprof_session_v1, last_error) + sizeof(&gpuprof_last_error);
  if (table->size < kFirstReleaseSize || table->pid != static_cast<std::uint32_t>(getpid())) return nullptr;
  return table;
}

int CollectObjectName(struct dl_phdr_info* info, std::size_t /*size*/, void* data) {
  auto* names = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
    try {
      names->emplace_back(info->dlpi_name);
    } catch (...) {
      return 1;  // out of memory: stop the walk with what we have
    }
  }
  return 0;
}

std::string ObjectOf(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "another copy of libgpuprof.so";
}

void OnExit() { ProcessSession::Get().StopAtExit(); }
void OnFinalizingSignal() noexcept { ProcessSession::Get().StopOnSignal(); }
// exec ends the program as a signal would, without exit handlers: the same stop (hooks included).
void OnExec() noexcept { ProcessSession::Get().StopOnSignal(); }

// gpuprof_add_signal_stop_hook_v1's hooks: a fixed table, read by the signal watcher thread.
constexpr std::size_t kMaxSignalStopHooks = 8;
std::array<std::atomic<void (*)()>, kMaxSignalStopHooks> g_signal_stop_hooks{};
void OnPrepareFork() { ProcessSession::Get().PrepareFork(); }
void OnParentAfterFork() { ProcessSession::Get().ParentAfterFork(); }
void OnChildAfterFork() { ProcessSession::Get().ChildAfterFork(); }

}  // namespace

CallResult Forwarded(const gpuprof_session_v1* table, int code) {
  if (code == GPUPROF_OK) return {};
  const char* reason = table->last_error != nullptr ? table->last_error() : nullptr;
  return {code, reason != nullptr && *reason != '\0' ? std::string(reason)
                                                     : std::string("failed in the owning copy")};
}

ProcessSession& ProcessSession::Get() {
  // Never destroyed: the exit handler, fork handlers and other copies reach it until the end.
  static ProcessSession* instance = new ProcessSession();
  return *instance;
}

const gpuprof_session_v1* ProcessSession::ActiveTable() const noexcept {
  return published_.load(std::memory_order_acquire) ? &g_table : nullptr;
}

std::shared_ptr<Session> ProcessSession::current() { return state_.wlock()->session; }

CallResult ProcessSession::NotStarted(const State& state) const {
  if (state.fork_parent_pid != 0) {
    return {GPUPROF_ERROR_FORK_CHILD,
            "pid " + std::to_string(getpid()) + " is a fork child of profiled pid " +
                std::to_string(state.fork_parent_pid) +
                "; children are profiled only with GPUPROF_FOLLOW_CHILDREN=1 (or their own gpuprof_start)"};
  }
  return {GPUPROF_ERROR_NOT_STARTED, "no gpuprof session is running in pid " + std::to_string(getpid())};
}

// Another copy's running session: first the copy the global scope resolves the symbol to, then
// every loaded object (a copy loaded RTLD_LOCAL, e.g. by a Python extension, is only found so).
const gpuprof_session_v1* ProcessSession::FindOtherCopy() const {
  if (const gpuprof_session_v1* table = CallActive(dlsym(RTLD_DEFAULT, kActiveSessionSymbol))) return table;
  std::vector<std::string> names;
  dl_iterate_phdr(&CollectObjectName, &names);  // dlopen is not called under the loader's lock
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    const gpuprof_session_v1* table = CallActive(dlsym(handle, kActiveSessionSymbol));
    dlclose(handle);
    if (table != nullptr) return table;
  }
  return nullptr;
}

void ProcessSession::RegisterProcessHooks() {
  // SIGTERM and its kind would end the process without the exit handler: finalize first. Again in
  // a fork child that starts a session of its own (the child took the parent's back).
  SignalFinalizer::Install(&OnFinalizingSignal);
  ExecFinalizer::Install(&OnExec);  // exec, too, would leave the DB unfinished
  if (hooks_registered_) return;
  hooks_registered_ = true;
  db::SqliteForkGuard::Init();
  // After the first Session::Start: the RecordCollector has registered its own fork handler by
  // then, and child handlers run in registration order, so the collector knows it is in a child
  // before ChildAfterFork re-arms it.
  if (std::atexit(&OnExit) != 0) {
    GPUPROF_LOG(kWarning) << "atexit failed: the session of pid " << getpid()
                          << " is finalized only by gpuprof_stop";
  }
  if (int rc = pthread_atfork(&OnPrepareFork, &OnParentAfterFork, &OnChildAfterFork); rc != 0) {
    GPUPROF_LOG(kWarning) << "pthread_atfork failed (error " << rc << "): a fork child of pid " << getpid()
                          << " would inherit the session; do not profile programs that fork";
  }
}

CallResult ProcessSession::Start(const char* config_json, std::string_view started_by) {
  StatusOr<SessionConfig> config = ConfigFromEnvironment(ProcessEnvironment());
  if (config.ok() && config_json != nullptr) {
    if (Status applied = ApplyJsonConfig(config_json, "config json", *config); !applied.ok())
      config = applied;
  }
  if (!config.ok()) return {GPUPROF_ERROR_INVALID_CONFIG, config.status().message()};
  config->started_by = std::string(started_by);
  const auto self = static_cast<std::uint32_t>(getpid());
  if (started_by == "injection" && config->root_pid != 0 && config->root_pid != self &&
      !config->follow_children) {
    // An exec'd descendant of the process `gpuprof run` started (the driver injects every process
    // that inherits CUDA_INJECTION64_PATH): profiled only when following children.
    GPUPROF_LOG(kInfo) << "pid " << self << " is a descendant of the profiled process " << config->root_pid
                       << "; it is not profiled (gpuprof run --follow-children profiles it)";
    return {};
  }

  std::lock_guard<OwnedMutex> lifecycle(lifecycle_);
  const gpuprof_session_v1* attached = nullptr;
  {
    auto state = state_.wlock();
    if (state->session != nullptr && state->session->running()) {
      ++state->starts;
      if (config_json != nullptr) {
        GPUPROF_LOG(kWarning) << "gpuprof_start: joined the session already running in pid " << getpid()
                              << " (" << state->session->partial_path()
                              << "); the configuration given is not applied";
      }
      return {};
    }
    attached = state->attached;
  }
  if (attached != nullptr) {
    if (attached->acquire() == GPUPROF_OK) {
      ++state_.wlock()->starts;
      return {};
    }
    auto state = state_.wlock();  // that session ended: look again
    state->attached = nullptr;
    state->starts = 0;
  }
  if (const gpuprof_session_v1* other = FindOtherCopy(); other != nullptr && other->acquire() == GPUPROF_OK) {
    {
      auto state = state_.wlock();
      state->attached = other;
      state->starts = 1;
      state->fork_parent_pid = 0;
    }
    GPUPROF_LOG(kInfo) << "attached to the gpuprof session run by "
                       << ObjectOf(reinterpret_cast<const void*>(other->mark)) << " in pid " << getpid();
    if (config_json != nullptr) {
      GPUPROF_LOG(kWarning) << "gpuprof_start: joined the session another copy of gpuprof runs in pid "
                            << getpid() << "; the configuration given is not applied";
    }
    return {};
  }

  const auto pid = static_cast<std::uint32_t>(getpid());
  {
    auto state = state_.wlock();
    state->abandoned.reserve(state->abandoned.size() + 1);  // ChildAfterFork must not allocate for it
  }
  SessionOptions options;
  options.device_factory = DefaultDeviceCollectorFactory();
  StatusOr<std::unique_ptr<Session>> made = Session::Start(*std::move(config), std::move(options));
  if (static_cast<std::uint32_t>(getpid()) != pid) {
    // Something forked from inside our start (a driver helper): this is the child, and the
    // session just made writes the parent's file. Leave it alone.
    if (made.ok()) static_cast<void>(made->release());
    return {GPUPROF_ERROR_FORK_CHILD, "pid " + std::to_string(getpid()) + " was forked while pid " +
                                          std::to_string(pid) + " was starting its session"};
  }
  if (!made.ok()) return FromLifecycleStatus(made.status());  // the C layer logs it
  std::shared_ptr<Session> previous;  // one a device teardown stopped: released outside the lock
  {
    auto state = state_.wlock();
    previous = std::move(state->session);
    state->session = std::shared_ptr<Session>(std::move(made).value());
    state->starts = 1;
    state->attached = nullptr;
    state->fork_parent_pid = 0;
  }
  published_.store(true, std::memory_order_release);
  RegisterProcessHooks();
  return {};
}

CallResult ProcessSession::Acquire() {
  auto state = state_.wlock();
  if (state->session == nullptr || !state->session->running()) return NotStarted(*state);
  ++state->starts;
  return {};
}

CallResult ProcessSession::Stop() {
  std::lock_guard<OwnedMutex> lifecycle(lifecycle_);
  std::shared_ptr<Session> session;
  const gpuprof_session_v1* attached = nullptr;
  {
    auto state = state_.wlock();
    if (state->attached != nullptr) {
      attached = state->attached;
      if (--state->starts <= 0) {
        state->attached = nullptr;
        state->starts = 0;
      }
    } else if (state->session == nullptr) {
      return NotStarted(*state);
    } else if (state->session->running() && --state->starts > 0) {
      GPUPROF_LOG(kDebug) << "gpuprof_stop: the session of pid " << getpid() << " continues ("
                          << state->starts << " starts not yet stopped)";
      return {};
    } else {
      session = std::move(state->session);
      state->starts = 0;
    }
  }
  if (attached != nullptr) return Forwarded(attached, attached->release());
  published_.store(false, std::memory_order_release);
  Status status = session->Stop();
  if (!status.ok()) {
    GPUPROF_LOG(kWarning) << "gpuprof_stop: " << status.message();
    return FromLifecycleStatus(status);
  }
  return {};
}

CallResult ProcessSession::AddSignalStopHook(void (*hook)()) {
  if (hook == nullptr) return {GPUPROF_ERROR_INVALID_ARGUMENT, "hook is NULL"};
  for (std::atomic<void (*)()>& slot : g_signal_stop_hooks) {
    void (*empty)() = nullptr;
    if (slot.load() == hook || slot.compare_exchange_strong(empty, hook)) return {};
  }
  return {GPUPROF_ERROR_INVALID_ARGUMENT,
          "already " + std::to_string(kMaxSignalStopHooks) + " signal stop hooks registered"};
}

void ProcessSession::StopOnSignal() noexcept {
  for (std::atomic<void (*)()>& slot : g_signal_stop_hooks) {
    if (void (*hook)() = slot.load(); hook != nullptr) hook();
  }
  StopAtExit();
}

void ProcessSession::StopAtExit() noexcept {
  try {
    std::lock_guard<OwnedMutex> lifecycle(lifecycle_);
    std::shared_ptr<Session> session;
    {
      auto state = state_.wlock();
      state->attached = nullptr;  // the owning copy's own exit handler stops that session
      state->starts = 0;
      session = std::move(state->session);
    }
    published_.store(false, std::memory_order_release);
    if (session == nullptr) return;
    if (Status status = session->Stop(); !status.ok()) {
      GPUPROF_LOG(kWarning) << "at exit: " << status.message();
    }
  } catch (...) {
    // Nothing may escape into exit(): the profile stays .partial.
  }
}

void ProcessSession::PrepareFork() noexcept {
  const bool take_lifecycle = !lifecycle_.HeldByMe();
  if (take_lifecycle) lifecycle_.lock();
  fork_holds_lifecycle_ = take_lifecycle;  // written only with lifecycle_ held by this thread
  fork_state_lock_.emplace(state_.wlock());
  // Last: the writer threads may need SQLite's mutexes until here.
  db::SqliteForkGuard::Acquire();
}

void ProcessSession::ReleaseForkLocks() noexcept {
  const bool release_lifecycle = fork_holds_lifecycle_;  // still ours to read: lifecycle_ is held
  {
    // Disengage the optional before the state lock is released, so a concurrent fork's
    // PrepareFork that takes the lock next finds it empty.
    base::Synchronized<State, std::mutex>::WriteLocked held = std::move(*fork_state_lock_);
    fork_state_lock_.reset();
  }
  if (release_lifecycle) lifecycle_.unlock();
}

void ProcessSession::ParentAfterFork() noexcept {
  db::SqliteForkGuard::Release();
  ReleaseForkLocks();
}

// Runs in the child, on the thread that called fork(), before fork() returns there: the only
// thread. The parent's session is kept but never touched again (its writer, threads and .partial
// file are the parent's).
void ProcessSession::ChildAfterFork() noexcept {
  db::SqliteForkGuard::Release();  // before the child's own session opens its DB
  SignalFinalizer::ChildAfterFork();
  g_table.pid = static_cast<std::uint32_t>(getpid());
  published_.store(false, std::memory_order_release);
  State& state = **fork_state_lock_;
  try {
    if (state.session != nullptr) {
      std::shared_ptr<Session> parent = std::move(state.session);
      const bool follow = parent->running() && parent->config().follow_children;
      state.abandoned.push_back(parent);  // capacity reserved at Start: does not allocate
      state.fork_parent_pid = parent->pid();
      if (follow) {
        StatusOr<std::unique_ptr<Session>> child = Session::StartInForkChild(*parent);
        if (child.ok()) {
          state.session = std::shared_ptr<Session>(std::move(child).value());
          state.fork_parent_pid = 0;
          state.abandoned.reserve(state.abandoned.size() + 1);  // for this child's own children
          published_.store(true, std::memory_order_release);
          SignalFinalizer::Install(&OnFinalizingSignal);
          ExecFinalizer::Install(&OnExec);
        } else {
          GPUPROF_LOG(kWarning) << "fork child " << getpid() << " of profiled pid " << parent->pid()
                                << " is not profiled: " << child.status().message();
        }
      } else {
        GPUPROF_LOG(kDebug) << "fork child " << getpid() << " of profiled pid " << parent->pid()
                            << " is not profiled (follow_children is off)";
      }
      if (state.session == nullptr) state.starts = 0;
    }
  } catch (...) {
    // Out of memory in the child: it runs on unprofiled.
    state.starts = 0;
  }
  ReleaseForkLocks();
}

std::string MetricsJson(const std::vector<replay::MetricInfo>& metrics) {
  std::string out = "[";
  for (const replay::MetricInfo& metric : metrics) {
    if (out.size() > 1) out += ",\n ";
    out += "{\"name\": " + base::JsonQuote(metric.name) + ", \"unit\": " + base::JsonQuote(metric.unit) +
           ", \"description\": " + base::JsonQuote(metric.description) + "}";
  }
  return out + "]";
}

}  // namespace gpuprof::session
