// Session: one profiling run of this process, from Start to the finalized DB.
//
//   GPUPROF_ASSIGN_OR_RETURN(SessionConfig config, ConfigFromEnvironment(ProcessEnvironment()));
//   GPUPROF_ASSIGN_OR_RETURN(auto session, Session::Start(config, {.device_factory = factory}));
//   session->Mark("warm-up done");            // any thread
//   session->Append(trace::TorchOp{...});      // any thread (torch hooks, Python)
//   GPUPROF_RETURN_IF_ERROR(session->Stop());  // flush, drain, finalize; db_path() names the DB
//
// What it owns. Start makes, in this order: the RecordCollector (per-thread buffers every producer
// appends to), the ProfileWriter (the ".partial" DB under <output_dir>/<worker>_<ts>_ascend_pt/,
// RunInfo with hostname, pid, rank, start time and the configuration JSON), a flusher thread that
// drains the collector into the writer every flush_interval and whenever a thread's buffer
// crosses the collector's flush threshold, and last the device collector, when a factory makes
// one (none in CPU-only builds or processes; a collector that cannot start is reported in one
// warning line and the session runs without device data). Stop undoes it in reverse: device
// flush and stop, flusher stop, a final drain, Finalize, and one "db <path>" line appended to
// the result file. A device collector's teardown hook stops the session the same way.
//
// Thread-safety. Append, Mark, RangeStart, RangeEnd, Flush and the accessors may be called from
// any thread at any time, concurrently with each other and with Stop; records that arrive after
// Stop's final drain are dropped and counted. Stop may be called from several threads: the first
// does the work, the others wait for it and return its result; a call that re-enters Stop from
// inside it (a device teardown hook) returns at once.
//
// Lifetime. The destructor stops a running session. In a fork() child, a Session inherited from
// the parent must not be stopped or destroyed (its threads do not exist there and its .partial
// file is the parent's): the process layer leaks it, and the destructor, should it run there
// anyway, leaks everything it owns instead of touching it. StartInForkChild makes the child's
// own session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpuprof/status.h"
#include "session/config.h"
#include "session/device_collector.h"
#include "trace/records.h"
#include "trace/trace_buffer.h"

namespace gpuprof::session {

struct SessionOptions {
  // Makes the device collector; empty: none.
  DeviceCollectorFactory device_factory;
  // Buffer cap and chunking. `flush_threshold` (records undrained on one thread) wakes the
  // flusher early; `on_flush` is the Session's own and is ignored here.
  trace::CollectorOptions collector = DefaultCollectorOptions();

  static trace::CollectorOptions DefaultCollectorOptions() {
    trace::CollectorOptions options;
    options.flush_threshold = 16 * 1024;
    return options;
  }
};

class Session {
 public:
  enum class State : std::uint8_t { kRunning, kStopping, kStopped };

  // Validates the configuration (InvalidArgument), makes the output directory and the .partial
  // DB (FailedPrecondition / AlreadyExists / the writer's error, naming the path), and starts
  // collecting. Relative paths in the configuration are made absolute here, against the working
  // directory at Start, so a program that changes directory later still finds its DB.
  static StatusOr<std::unique_ptr<Session>> Start(SessionConfig config, SessionOptions options = {});

  // In a fork() child, on the thread that called fork() and before any other thread starts (a
  // pthread_atfork child handler): starts the child's own session with the parent's
  // configuration under the child's pid, re-arming the parent's collector for it
  // (RecordCollector::ResetAfterFork). The parent's writer, threads and device collector are left
  // untouched; `parent` must then be leaked, never stopped or destroyed, in the child. The child
  // has no device collector (CUDA cannot be used in the child of a process that initialized it).
  static StatusOr<std::unique_ptr<Session>> StartInForkChild(Session& parent);

  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Stops collecting and finalizes the DB; idempotent (later calls return the first result).
  // Errors name the file: the writer's Finalize error, or the result file that could not be
  // appended to (the DB itself is then complete: db_path() names it).
  Status Stop();

  // Hands every record collected so far (device activity included) to the writer.
  // FailedPrecondition when the session is not running.
  Status Flush();

  // A window DB beside the session's (issue 39: a gpuprof.profile inside `gpuprof run` reads its
  // own steps back at once, while the session's DB is written at exit). From WindowBegin to
  // WindowEnd every record handed to the session's writer is also copied to a second writer under
  // `out_dir`; both flush first, so the window holds what was collected between the two calls.
  // Nothing is copied outside a window. The ended window is finalized only when WindowDb asks
  // (once; later calls give the same path), so a window nobody reads costs no Finalize: the next
  // WindowBegin or Stop discards it. One window at a time: FailedPrecondition when one is open
  // (Begin), none is (End), none ended (WindowDb), or the session is not running; the window
  // writer's own error otherwise. The session's DB is not touched.
  Status WindowBegin(const std::string& out_dir);
  Status WindowEnd();
  StatusOr<std::string> WindowDb();

  // Appends a record (pid/tid fields are the caller's). False when it was dropped: over the
  // buffer cap, or Stop's final drain has begun (records arriving while Stop flushes the device
  // collector are still taken).
  bool Append(trace::Record&& record) noexcept;

  // An instant marker / a start-end range on the calling thread (MSTX_EVENTS) in `domain`.
  // FailedPrecondition when not running; ResourceExhausted when the record was dropped or, for
  // RangeStart, when 1M ranges are open; NotFound for an id that is not open.
  struct RangeOptions {
    std::string_view domain = "default";
    // Device-linked (trace::Mark::device): its device time is that of the device work the calling
    // thread launches until it ends, on `stream` (a cudaStream_t) when given. A stream the device
    // collector cannot name links the range to every stream, said once in the log.
    bool device = false;
    std::optional<std::uint64_t> stream;
  };
  Status Mark(std::string_view message, std::string_view domain = "default");
  StatusOr<std::uint64_t> RangeStart(std::string_view message, const RangeOptions& options);
  StatusOr<std::uint64_t> RangeStart(std::string_view message) { return RangeStart(message, RangeOptions{}); }
  Status RangeEnd(std::uint64_t range_id);

  State state() const noexcept;
  bool running() const noexcept { return state() == State::kRunning; }
  // The resolved configuration (absolute paths).
  const SessionConfig& config() const noexcept;
  std::uint32_t pid() const noexcept;
  // The DB's final path, and the name it has while being written.
  const std::string& db_path() const noexcept;
  const std::string& partial_path() const noexcept;
  // Whether the final DB exists (Stop succeeded at least as far as Finalize).
  bool finalized() const noexcept;
  bool has_device_collector() const noexcept;
  // The device collector's op-tagging functions (DeviceCollector::Correlation); null ones when
  // there is no device collector or it cannot tag.
  DeviceCollector::CorrelationFunctions DeviceCorrelation();
  // Kernel replay chosen by the program (DeviceCollector::ConfigureReplay); FailedPrecondition
  // when the session collects no device activity.
  Status ConfigureReplay(const ReplaySettings& settings);
  // One training step ended (DeviceCollector::ReplayStepBoundary); nothing without a device collector.
  void ReplayStepBoundary();
  // Records the collector refused (cap, fork child, not running), and records the writer dropped.
  std::uint64_t dropped_records() const noexcept;
  // Records appended and not yet handed to the writer. Takes each producer thread's buffer lock in
  // turn: for diagnostics and tests, not for a hot path.
  std::size_t buffered_records() const;

 private:
  class Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A fresh MSTX range id, unique in the process (the ids gpuprof_range_start hands out too).
std::uint64_t NewRangeId() noexcept;

// Appends "<kind> <text>" (db::kResultLine*) to the result file `gpuprof run` reads, with one
// write() on an O_APPEND descriptor, so lines of processes sharing the file never interleave.
Status AppendResultLine(const std::string& result_file, std::string_view kind, std::string_view text);

}  // namespace gpuprof::session
