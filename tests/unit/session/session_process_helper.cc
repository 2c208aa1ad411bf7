// A program that drives libgpuprof.so the way applications do, one scenario per run, for
// process_test.cc: what happens at exit, across fork(), and with two copies of the library in one
// process can only be observed from outside the process.
//
//   session_process_helper <scenario> <libgpuprof.so> [<copy of libgpuprof.so>]
//
// The library is dlopened, never linked, so the same program can load two copies. Exit status 0
// means every in-process expectation held; otherwise stderr says which did not. The parent's
// stdout carries "child <pid>" for the fork scenarios.
#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpuprof/gpuprof_c.h"

namespace {

// The allocator of gcc 12's AddressSanitizer/ThreadSanitizer runtime takes no lock around fork():
// a child that allocates while another parent thread held an allocator lock at the fork blocks
// forever (seen in about one run in three of fork-busy). glibc's malloc is fork-safe, so only
// sanitized builds let the parent's threads go idle before forking.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocatorIsNotForkSafe = true;
#else
constexpr bool kSanitizerAllocatorIsNotForkSafe = false;
#endif

struct Api {
  const char* name = "";
  decltype(&gpuprof_start) start = nullptr;
  decltype(&gpuprof_stop) stop = nullptr;
  decltype(&gpuprof_mark) mark = nullptr;
  decltype(&gpuprof_range_start) range_start = nullptr;
  decltype(&gpuprof_range_end) range_end = nullptr;
  decltype(&gpuprof_last_error) last_error = nullptr;
  decltype(&gpuprof_active_session_v1) active = nullptr;
  decltype(&gpuprof_record_gc_event_v1) record_gc = nullptr;
  decltype(&gpuprof_get_device_correlation_v1) device_correlation = nullptr;
  decltype(&gpuprof_configure_replay_v1) configure_replay = nullptr;
  decltype(&gpuprof_replay_step_boundary_v1) step_boundary = nullptr;
};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "helper (pid %d): FAILED: %s\n", static_cast<int>(getpid()), what.c_str());
  std::fflush(stderr);
  std::_Exit(10);
}

template <typename T>
T Symbol(void* handle, const char* name) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) Fail(std::string("dlsym ") + name + ": " + dlerror());
  return reinterpret_cast<T>(symbol);
}

Api Load(const char* path, int mode) {
  void* handle = dlopen(path, RTLD_NOW | mode);
  if (handle == nullptr) Fail(std::string("dlopen ") + path + ": " + dlerror());
  Api api;
  api.name = path;
  api.start = Symbol<decltype(api.start)>(handle, "gpuprof_start");
  api.stop = Symbol<decltype(api.stop)>(handle, "gpuprof_stop");
  api.mark = Symbol<decltype(api.mark)>(handle, "gpuprof_mark");
  api.range_start = Symbol<decltype(api.range_start)>(handle, "gpuprof_range_start");
  api.range_end = Symbol<decltype(api.range_end)>(handle, "gpuprof_range_end");
  api.last_error = Symbol<decltype(api.last_error)>(handle, "gpuprof_last_error");
  api.active = Symbol<decltype(api.active)>(handle, "gpuprof_active_session_v1");
  api.record_gc = Symbol<decltype(api.record_gc)>(handle, "gpuprof_record_gc_event_v1");
  api.device_correlation =
      Symbol<decltype(api.device_correlation)>(handle, "gpuprof_get_device_correlation_v1");
  api.configure_replay = Symbol<decltype(api.configure_replay)>(handle, "gpuprof_configure_replay_v1");
  api.step_boundary = Symbol<decltype(api.step_boundary)>(handle, "gpuprof_replay_step_boundary_v1");
  return api;
}

void Expect(const Api& api, int got, int want, const std::string& call) {
  if (got != want) {
    Fail(call + " via " + api.name + " returned " + std::to_string(got) + ", expected " +
         std::to_string(want) + ": " + api.last_error());
  }
}

void ExpectTrue(bool condition, const std::string& what) {
  if (!condition) Fail(what);
}

// A program ended by signal N (GPUPROF_TEST_SIGNAL) while it records: it marks, sends itself the
// signal and waits; gpuprof finalizes the profile and the signal then ends it.
int EndedBySignal(const char* lib) {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // SIGQUIT's default dumps core
  const char* number = std::getenv("GPUPROF_TEST_SIGNAL");
  if (number == nullptr) Fail("GPUPROF_TEST_SIGNAL is not set");
  Api a = Load(lib, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  Expect(a, a.mark("before signal"), GPUPROF_OK, "mark");
  kill(getpid(), std::atoi(number));
  for (int i = 0; i < 3000; ++i) usleep(10'000);  // 30 s at most
  Fail("still running 30 s after the signal");
}

volatile sig_atomic_t g_handled = 0;
void OnTerm(int) { g_handled = 1; }

// A program with its own SIGTERM handler, installed before the session starts: it runs, and the
// program ends as it chooses (exit(0), so the exit handler finalizes).
int HandlesSignal(const char* lib) {
  struct sigaction action {};
  action.sa_handler = &OnTerm;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  Api a = Load(lib, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  kill(getpid(), SIGTERM);
  for (int i = 0; i < 3000 && g_handled == 0; ++i) usleep(10'000);
  ExpectTrue(g_handled == 1, "the program's own SIGTERM handler did not run");
  Expect(a, a.mark("after its handler"), GPUPROF_OK, "mark");
  std::exit(0);
}

int ExitWithoutStop(const char* lib) {
  Api a = Load(lib, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  Expect(a, a.mark("before exit"), GPUPROF_OK, "mark");
  std::exit(0);  // the library's exit handler finalizes
}

// A parent that keeps marking on a second thread while it forks; the child marks and leaves
// through exit(), so its exit handlers run.
int Fork(const char* lib) {
  const bool follow = std::getenv("GPUPROF_FOLLOW_CHILDREN") != nullptr &&
                      std::strcmp(std::getenv("GPUPROF_FOLLOW_CHILDREN"), "1") == 0;
  Api a = Load(lib, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  Expect(a, a.mark("parent-before"), GPUPROF_OK, "mark");
  gpuprof_gc_event_v1 gc{};
  gc.size = sizeof(gc);
  gc.start_ns = 1'700'000'000'000'000'000;
  gc.end_ns = gc.start_ns + 7;
  Expect(a, a.record_gc(&gc), GPUPROF_OK, "parent record_gc");  // framework records carry a cached pid
  std::uint64_t open_range = 0;
  Expect(a, a.range_start("parent-range", &open_range), GPUPROF_OK, "range_start");
  std::atomic<bool> busy{true};
  std::atomic<bool> paused{false};
  std::atomic<bool> idle{false};
  std::thread background([&] {
    while (busy.load()) {
      if (paused.load()) {
        idle = true;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      if (a.mark("parent-bg") != GPUPROF_OK) Fail(std::string("background mark: ") + a.last_error());
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (kSanitizerAllocatorIsNotForkSafe) {
    // Let the marking thread, the flusher and the writer go idle first (see the constant).
    paused = true;
    while (!idle.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  const pid_t child = fork();
  if (child < 0) Fail("fork");
  if (child == 0) {
    const int want = follow ? GPUPROF_OK : GPUPROF_ERROR_FORK_CHILD;
    for (int i = 1; i <= 3; ++i)
      Expect(a, a.mark(("child-" + std::to_string(i)).c_str()), want, "child mark");
    Expect(a, a.record_gc(&gc), want, "child record_gc");
    // A range the parent opened is not the child's to end.
    Expect(a, a.range_end(open_range), follow ? GPUPROF_ERROR_RANGE_NOT_FOUND : GPUPROF_ERROR_FORK_CHILD,
           "child range_end");
    if (!follow) {
      ExpectTrue(std::strstr(a.last_error(), "is a fork child of profiled pid") != nullptr,
                 std::string("child error line: ") + a.last_error());
      ExpectTrue(a.active() == nullptr, "the child publishes no session");
    } else {
      ExpectTrue(a.active() != nullptr, "the child publishes its own session");
    }
    std::exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) Fail("waitpid");
  busy = false;
  background.join();
  ExpectTrue(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (see its line above)");
  Expect(a, a.range_end(open_range), GPUPROF_OK, "range_end");
  Expect(a, a.mark("parent-after"), GPUPROF_OK, "mark");
  Expect(a, a.stop(), GPUPROF_OK, "stop");
  std::printf("child %d\n", static_cast<int>(child));
  return 0;
}

// Regression: a fork taken while the parent's DB writer is inside SQLite (holding one of its
// process-wide mutexes) left the mutex held in the child, whose own DB then never opened (about 1
// fork in 20 hung). Three threads keep the writer busy; every follow-children child must create,
// write and finalize its DB and exit within the deadline.
int ForkBusy(const char* lib) {
  Api a = Load(lib, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  std::atomic<bool> busy{true};
  std::vector<std::thread> producers;
  for (int t = 0; t < 3; ++t) {
    producers.emplace_back([&] {
      std::string message = "busy-" + std::string(100, 'x');
      for (unsigned i = 0; busy.load(); ++i) {
        message[5] = static_cast<char>('a' + i % 26);  // distinct strings keep the writer interning
        a.mark(message.c_str());  // may be dropped when the writer's queue is full: not checked
      }
    });
  }
  constexpr int kForks = 30;
  for (int i = 0; i < kForks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const pid_t child = fork();
    if (child < 0) Fail("fork");
    if (child == 0) {
      if (a.mark("child") != GPUPROF_OK) std::_Exit(3);
      std::exit(0);
    }
    int status = 0;
    pid_t done = 0;
    for (int waited_ms = 0; (done = waitpid(child, &status, WNOHANG)) == 0; waited_ms += 10) {
      if (waited_ms > 30'000) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        Fail("fork child " + std::to_string(child) + " (fork " + std::to_string(i) + ") hung");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ExpectTrue(done == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "fork child " + std::to_string(child) + " failed");
  }
  busy = false;
  for (std::thread& producer : producers) producer.join();
  Expect(a, a.stop(), GPUPROF_OK, "stop");
  return 0;
}

int TwoCopies(const char* lib, const char* copy) {
  Api a = Load(lib, RTLD_GLOBAL);
  Api b = Load(copy, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  ExpectTrue(a.active() != nullptr, "the first copy owns the session");
  Expect(b, b.start(nullptr), GPUPROF_OK, "start");
  ExpectTrue(b.active() == nullptr, "the second copy attached instead of starting its own");
  Expect(b, b.mark("via-b"), GPUPROF_OK, "mark");
  Expect(a, a.mark("via-a"), GPUPROF_OK, "mark");
  // A framework record through the attached copy reaches the owner's session (forwarded).
  gpuprof_gc_event_v1 gc{};
  gc.size = sizeof(gc);
  gc.start_ns = 1'700'000'000'000'000'000;
  gc.end_ns = gc.start_ns + 42;
  Expect(b, b.record_gc(&gc), GPUPROF_OK, "record_gc_event");
  // Device correlation and replay configuration are asked of the owner: its session (no device
  // collection here) answers, not the attached copy.
  gpuprof_device_correlation_v1 correlation{};
  Expect(b, b.device_correlation(&correlation), GPUPROF_ERROR_NOT_STARTED, "get_device_correlation");
  ExpectTrue(std::strstr(b.last_error(), "collects no device activity") != nullptr,
             std::string("owner's answer: ") + b.last_error());
  gpuprof_replay_config_v1 replay{};
  replay.size = sizeof(replay);
  replay.passes = 3;
  Expect(b, b.configure_replay(&replay), GPUPROF_ERROR_NOT_STARTED, "configure_replay");
  ExpectTrue(std::strstr(b.last_error(), "no kernel to replay") != nullptr,
             std::string("owner's answer: ") + b.last_error());
  // A training step's end reaches the owner's session (which, with no device collector, does nothing).
  Expect(b, b.step_boundary(), GPUPROF_OK, "replay_step_boundary");
  std::uint64_t range = 0;
  Expect(b, b.range_start("range-via-b", &range), GPUPROF_OK, "range_start");
  Expect(a, a.range_end(range), GPUPROF_OK, "range_end");  // one session: one id space
  Expect(b, b.range_end(range), GPUPROF_ERROR_RANGE_NOT_FOUND, "range_end again");
  ExpectTrue(std::strstr(b.last_error(), "gpuprof_range_end(range_id=") != nullptr &&
                 std::strstr(b.last_error(), "no open range with id") != nullptr,
             std::string("forwarded error line: ") + b.last_error());
  Expect(b, b.stop(), GPUPROF_OK, "stop");
  ExpectTrue(a.active() != nullptr, "stopping the attached copy leaves the session running");
  Expect(a, a.mark("after-b-stopped"), GPUPROF_OK, "mark");
  Expect(a, a.stop(), GPUPROF_OK, "stop");
  ExpectTrue(a.active() == nullptr, "stopped");
  Expect(b, b.mark("late"), GPUPROF_ERROR_NOT_STARTED, "mark after stop");
  return 0;
}

// The copy that owns the session was loaded RTLD_LOCAL (as a Python extension's dependency is):
// the global lookup cannot see it, the scan of loaded objects must.
int LocalCopyFirst(const char* lib, const char* copy) {
  Api local = Load(copy, RTLD_LOCAL);
  Expect(local, local.start(nullptr), GPUPROF_OK, "start");
  Api global = Load(lib, RTLD_GLOBAL);
  Expect(global, global.start(nullptr), GPUPROF_OK, "start");
  ExpectTrue(global.active() == nullptr, "the global copy attached to the local copy's session");
  Expect(global, global.mark("via-global"), GPUPROF_OK, "mark");
  Expect(local, local.mark("via-local"), GPUPROF_OK, "mark");
  Expect(global, global.stop(), GPUPROF_OK, "stop");
  Expect(local, local.stop(), GPUPROF_OK, "stop");
  return 0;
}

// `copy` is a first-release library (older_copy_stub.cc) owning the session: the current library
// attaches to it, forwards what the old table has, and says what it cannot forward.
int OlderCopy(const char* lib, const char* copy) {
  void* old = dlopen(copy, RTLD_NOW | RTLD_GLOBAL);
  if (old == nullptr) Fail(std::string("dlopen ") + copy + ": " + dlerror());
  auto marks = Symbol<const char* (*)()>(old, "older_copy_marks");
  auto starts = Symbol<int (*)()>(old, "older_copy_starts");
  Api a = Load(lib, RTLD_GLOBAL);
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  ExpectTrue(a.active() == nullptr && starts() == 1, "the current copy attached to the older one's session");
  Expect(a, a.mark("via-new"), GPUPROF_OK, "mark");
  ExpectTrue(std::string(marks()) == "via-new;", std::string("forwarded marks: ") + marks());
  gpuprof_gc_event_v1 gc{};
  gc.size = sizeof(gc);
  gc.start_ns = 1'700'000'000'000'000'000;
  gc.end_ns = gc.start_ns + 1;
  Expect(a, a.record_gc(&gc), GPUPROF_ERROR_INTERNAL, "record_gc_event");
  ExpectTrue(std::strstr(a.last_error(), "older copy") != nullptr, std::string("reason: ") + a.last_error());
  gpuprof_device_correlation_v1 correlation{};
  Expect(a, a.device_correlation(&correlation), GPUPROF_ERROR_NOT_STARTED, "get_device_correlation");
  ExpectTrue(std::strstr(a.last_error(), "older copy") != nullptr, std::string("reason: ") + a.last_error());
  gpuprof_replay_config_v1 replay{};
  replay.size = sizeof(replay);
  replay.passes = 3;
  Expect(a, a.configure_replay(&replay), GPUPROF_ERROR_NOT_STARTED, "configure_replay");
  ExpectTrue(std::strstr(a.last_error(), "older copy") != nullptr, std::string("reason: ") + a.last_error());
  Expect(a, a.step_boundary(), GPUPROF_ERROR_INTERNAL, "replay_step_boundary");
  ExpectTrue(std::strstr(a.last_error(), "older copy of libgpuprof.so that has no range replay") != nullptr,
             std::string("reason: ") + a.last_error());
  Expect(a, a.stop(), GPUPROF_OK, "stop");
  ExpectTrue(starts() == 0, "the stop was forwarded");
  return 0;
}

int TwoCopiesExit(const char* lib, const char* copy) {
  Api a = Load(lib, RTLD_GLOBAL);
  Api b = Load(copy, RTLD_GLOBAL);
  Expect(b, b.start(nullptr), GPUPROF_OK, "start");
  Expect(a, a.start(nullptr), GPUPROF_OK, "start");
  Expect(a, a.mark("via-a"), GPUPROF_OK, "mark");
  Expect(b, b.mark("via-b"), GPUPROF_OK, "mark");
  std::exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <scenario> <libgpuprof.so> [<copy>]\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  const char* lib = argv[2];
  const char* copy = argc > 3 ? argv[3] : nullptr;
  if (scenario == "exit-without-stop") return ExitWithoutStop(lib);
  if (scenario == "ended-by-signal") return EndedBySignal(lib);
  if (scenario == "handles-signal") return HandlesSignal(lib);
  if (scenario == "fork") return Fork(lib);
  if (scenario == "fork-busy") return ForkBusy(lib);
  if (copy == nullptr) Fail("scenario " + scenario + " needs a copy of the library");
  if (scenario == "two-copies") return TwoCopies(lib, copy);
  if (scenario == "local-copy-first") return LocalCopyFirst(lib, copy);
  if (scenario == "two-copies-exit") return TwoCopiesExit(lib, copy);
  if (scenario == "older-copy") return OlderCopy(lib, copy);
  Fail("unknown scenario " + scenario);
}
