#include "session/session.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/errno_text.h"
#include "base/logging.h"
#include "base/synchronized.h"
#include "base/thread_priority.h"
#include "db/lost_records.h"
#include "db/output_layout.h"
#include "db/profile_writer.h"

namespace gpuprof::session {
namespace {

// At most this many ranges open at once per session: a program that opens ranges and never ends
// them must not grow the table without bound.
constexpr std::size_t kMaxOpenRanges = std::size_t{1} << 20;
// Output directories are named to the millisecond; two sessions (a parent and its fork child, two
// ranks sharing a worker name) starting in the same millisecond would get the same name, and the
// writer removes a stale ".partial" of that name. Start moves its timestamp on until both names
// are free.
constexpr int kMaxLayoutAttempts = 1000;

std::uint32_t CurrentTid() noexcept { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

// Range ids are unique in this copy of the library for the life of the process, so an id from an
// earlier session is "not found", never another range.
std::atomic<std::uint64_t> g_next_range_id{1};

std::string LocalHostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// Wakes the flusher. Notify runs on producer threads (through the collector's on_flush) and must
// not block: it sets a flag and signals without the mutex, so a wake-up can be missed only while
// the flusher is between checking and sleeping, which delays the drain by at most one interval.
struct Wakeup {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> requested{false};
  bool stop = false;  // guarded by mu
  // In a fork child: the parent's Wakeup, leaked but kept reachable (leak checkers stay quiet).
  Wakeup* inherited = nullptr;

  void Notify() noexcept {
    requested.store(true, std::memory_order_release);
    cv.notify_one();
  }
};

// The collector together with the flusher wake-up its on_flush callback reaches. Shared by a
// parent's session and, in a fork child, the child's session, which re-arms the collector and
// points the callback at a fresh Wakeup (the parent's may be mid-wait in a thread that does not
// exist in the child, so it is never touched there; it is leaked).
struct CollectorBox {
  std::atomic<Wakeup*> wakeup{nullptr};
  std::unique_ptr<trace::RecordCollector> collector;

  ~CollectorBox() { delete wakeup.load(std::memory_order_acquire); }
};

struct OpenRange {
  std::int64_t start_ns = 0;
  std::uint32_t tid = 0;
  std::string message;
  std::string domain = "default";
  bool device = false;
  std::optional<std::uint32_t> stream;  // the device records' id of its stream
};

}  // namespace

Status AppendResultLine(const std::string& result_file, std::string_view kind, std::string_view text) {
  std::string line = std::string(kind) + " " + db::EscapeResultText(text) + "\n";  // one line, always
  int fd = ::open(result_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return FailedPreconditionError("cannot open the result file " + result_file + ": " +
                                   base::ErrnoText(errno));
  }
  ssize_t written = 0;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const int write_errno = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) {
    return DataLossError("cannot append to the result file " + result_file + ": " +
                         (written < 0 ? base::ErrnoText(write_errno) : std::string("short write")));
  }
  return OkStatus();
}

namespace {

StatusOr<std::string> Absolute(const std::string& path, std::string_view what) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec)
    return InvalidArgumentError("cannot resolve the " + std::string(what) + " " + path + ": " + ec.message());
  return absolute.lexically_normal().string();
}

}  // namespace

class Session::Impl {
 public:
  Impl(SessionConfig config, std::uint32_t pid) : config_(std::move(config)), pid_(pid) {}

  ~Impl() {
    // Stop joined the flusher; a failed Start may have left it running.
    StopFlusher();
  }

  Status Start(std::shared_ptr<CollectorBox> box, DeviceCollectorFactory factory) {
    box_ = std::move(box);
    std::unique_ptr<DeviceCollector> device;
    if (factory && config_.device) {
      StatusOr<std::unique_ptr<DeviceCollector>> made = factory(config_);
      if (!made.ok()) {
        GPUPROF_LOG(kWarning) << "device collection is off for this run (pid " << pid_
                              << "): " << made.status().message();
      } else {
        device = std::move(made).value();
      }
    }

    trace::RunInfo run;
    run.hostname = LocalHostname();
    run.pid = pid_;
    run.rank = config_.rank;
    run.device = config_.device_id;
    run.world_size = config_.world_size;
    run.start_ns = base::EpochNowNs();
    run.config_json = config_.ToJson();
    if (device) run.devices = device->Devices();
    GPUPROF_RETURN_IF_ERROR(PickFreeLayout(run));

    run_ = run;
    db::WriterOptions writer_options;
    writer_options.out_dir = config_.output_dir;
    writer_options.worker_name = config_.worker_name;
    writer_options.run = run;
    StatusOr<std::unique_ptr<db::ProfileWriter>> writer = db::ProfileWriter::Create(writer_options);
    if (!writer.ok()) {
      return writer.status().WithContext("starting the profile of pid " + std::to_string(pid_) + " in " +
                                         config_.output_dir);
    }
    writer_ = std::move(writer).value();
    partial_path_ = writer_->layout().partial_path;
    db_path_ = writer_->layout().db_path;
    // So that `gpuprof run` reports this file, and no other run's, should the process end first.
    if (!config_.result_file.empty()) {
      if (Status noted = AppendResultLine(config_.result_file, db::kResultLinePartial, partial_path_);
          !noted.ok()) {
        GPUPROF_LOG(kWarning) << noted.message() << "; gpuprof run will not name " << partial_path_
                              << " should this process end before finalizing it";
      }
    }

    if (config_.progress && config_.root_pid != 0 && !config_.result_file.empty()) {
      progress_path_ = db::RunProgressPath(config_.result_file, pid_);
    }

    state_.store(State::kRunning, std::memory_order_release);
    accepting_.store(true, std::memory_order_release);
    try {
      flusher_ = std::thread([this] { FlusherLoop(); });
    } catch (const std::system_error& e) {
      accepting_.store(false, std::memory_order_release);
      state_.store(State::kStopped, std::memory_order_release);
      return InternalError("cannot start the flusher thread for " + partial_path_ + ": " + e.what());
    }

    if (device) {
      DeviceCollectorHooks hooks;
      hooks.sink = [this](trace::Record&& record) { return Append(std::move(record)); };
      hooks.on_teardown = [this] {
        GPUPROF_LOG(kInfo) << "device teardown: stopping the session of pid " << pid_;
        // Never waits for a Stop in progress elsewhere: that Stop may be waiting for this very
        // callback to return (DeviceCollector::Stop waits for callbacks in flight).
        if (Status stopped = Stop(/*wait=*/false); !stopped.ok()) {
          GPUPROF_LOG(kWarning) << "stopping at device teardown: " << stopped.message();
        }
      };
      std::lock_guard<std::recursive_mutex> lock(device_mu_);
      if (Status started = device->Start(std::move(hooks)); !started.ok()) {
        GPUPROF_LOG(kWarning) << "device collection is off for this run (pid " << pid_
                              << "): " << started.message() << "; the application runs without GPU data";
      } else {
        device_ = std::move(device);
        device_present_.store(true, std::memory_order_release);
      }
    }
    GPUPROF_LOG(kInfo) << "profiling pid " << pid_ << " into " << partial_path_
                       << (device_ ? " (device activity on)" : " (host records only)");
    return OkStatus();
  }

  // `wait`: whether a call that finds another thread stopping waits for it (and returns its
  // result) or returns at once.
  Status Stop(bool wait = true) {
    {
      std::unique_lock<std::mutex> lock(lifecycle_mu_);
      const State state = state_.load(std::memory_order_acquire);
      if (state == State::kStopped) return stop_status_;
      if (state == State::kStopping) {
        if (!wait || stopping_thread_ == std::this_thread::get_id())
          return OkStatus();  // re-entered from a hook
        stopped_cv_.wait(lock, [&] { return state_.load(std::memory_order_acquire) == State::kStopped; });
        return stop_status_;
      }
      state_.store(State::kStopping, std::memory_order_release);
      stopping_thread_ = std::this_thread::get_id();
    }
    Status status = DoStop();
    {
      std::lock_guard<std::mutex> lock(lifecycle_mu_);
      stop_status_ = status;
      state_.store(State::kStopped, std::memory_order_release);
    }
    stopped_cv_.notify_all();
    return status;
  }

  Status Flush() {
    if (!running())
      return FailedPreconditionError("the session of pid " + std::to_string(pid_) + " is not running");
    {
      std::lock_guard<std::recursive_mutex> lock(device_mu_);
      if (device_ && running()) device_->Flush();
    }
    DrainToWriter();
    return OkStatus();
  }

  Status WindowBegin(const std::string& out_dir) {
    GPUPROF_RETURN_IF_ERROR(Flush());  // what came before the window stays out of it
    DiscardEndedWindow();
    db::WriterOptions options;
    options.out_dir = out_dir;
    options.worker_name = config_.worker_name;
    options.run = run_;
    options.run.start_ns = base::EpochNowNs();
    std::lock_guard<std::mutex> lock(drain_mu_);
    if (writer_closed_)
      return FailedPreconditionError("the session of pid " + std::to_string(pid_) + " is stopping");
    if (window_ != nullptr) {
      return FailedPreconditionError("a window DB is already being written for the session of pid " +
                                     std::to_string(pid_) + "; end it first");
    }
    GPUPROF_ASSIGN_OR_RETURN(window_, db::ProfileWriter::Create(options));
    return OkStatus();
  }

  Status WindowEnd() {
    Status flushed = Flush();
    std::unique_ptr<db::ProfileWriter> window;
    {
      std::lock_guard<std::mutex> lock(drain_mu_);
      window = std::move(window_);
    }
    if (window == nullptr) {
      return FailedPreconditionError("no window DB is being written for the session of pid " +
                                     std::to_string(pid_));
    }
    if (!flushed.ok()) {
      window->Discard();
      return flushed;
    }
    std::lock_guard<std::mutex> lock(window_mu_);
    if (ended_window_ != nullptr) ended_window_->Discard();
    ended_window_ = std::move(window);
    ended_window_path_.clear();
    window_end_ns_ = base::EpochNowNs();
    return OkStatus();
  }

  StatusOr<std::string> WindowDb() {
    std::lock_guard<std::mutex> lock(window_mu_);
    if (!ended_window_path_.empty()) return ended_window_path_;
    if (ended_window_ == nullptr) {
      return FailedPreconditionError("no window DB has ended for the session of pid " + std::to_string(pid_));
    }
    std::unique_ptr<db::ProfileWriter> window = std::move(ended_window_);
    GPUPROF_ASSIGN_OR_RETURN(ended_window_path_, window->Finalize(window_end_ns_));
    return ended_window_path_;
  }

  void DiscardEndedWindow() {
    std::lock_guard<std::mutex> lock(window_mu_);
    if (ended_window_ != nullptr) ended_window_->Discard();
    ended_window_.reset();
    ended_window_path_.clear();
  }

  // Accepted until Stop's final drain begins, so that what the device collector delivers while
  // Stop flushes it still reaches the DB.
  bool Append(trace::Record&& record) noexcept {
    if (!accepting_.load(std::memory_order_acquire)) {
      late_records_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    return box_->collector->Append(std::move(record));
  }

  Status Mark(std::string_view message, std::string_view domain) {
    if (!running()) return NotRunning();
    trace::Mark mark;
    mark.type = trace::Mark::Type::kMarkerEx;  // msprof's eventType 3, what mstx_sum reads
    mark.start_ns = base::EpochNowNs();
    mark.end_ns = mark.start_ns;
    mark.pid = pid_;
    mark.tid = CurrentTid();
    mark.message = std::string(message);
    mark.domain = domain.empty() ? "default" : std::string(domain);
    if (!Append(std::move(mark))) return Dropped("marker");
    return OkStatus();
  }

  StatusOr<std::uint64_t> RangeStart(std::string_view message, const Session::RangeOptions& options) {
    if (!running()) return NotRunning();
    OpenRange range{base::EpochNowNs(),
                    CurrentTid(),
                    std::string(message),
                    options.domain.empty() ? "default" : std::string(options.domain),
                    options.device || options.stream.has_value(),
                    std::nullopt};
    if (options.stream.has_value()) range.stream = StreamId(*options.stream);
    const std::uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
    auto ranges = ranges_.wlock();
    if (ranges->size() >= kMaxOpenRanges) {
      return ResourceExhaustedError(std::to_string(ranges->size()) +
                                    " ranges are open in this session (the limit); end some first");
    }
    ranges->emplace(id, std::move(range));
    return id;
  }

  Status RangeEnd(std::uint64_t id) {
    if (!running()) return NotRunning();
    const std::int64_t end_ns = base::EpochNowNs();
    OpenRange range;
    {
      auto ranges = ranges_.wlock();
      auto it = ranges->find(id);
      if (it == ranges->end()) {
        return NotFoundError("no open range with id " + std::to_string(id) + " (" +
                             std::to_string(ranges->size()) + " open in the session of pid " +
                             std::to_string(pid_) + ")");
      }
      range = std::move(it->second);
      ranges->erase(it);
    }
    if (!Append(RangeRecord(id, std::move(range), end_ns, CurrentTid()))) return Dropped("range");
    return OkStatus();
  }

  State state() const noexcept { return state_.load(std::memory_order_acquire); }
  bool running() const noexcept { return state() == State::kRunning; }
  const SessionConfig& config() const noexcept { return config_; }
  std::uint32_t pid() const noexcept { return pid_; }
  const std::string& db_path() const noexcept { return db_path_; }
  const std::string& partial_path() const noexcept { return partial_path_; }
  bool finalized() const noexcept { return finalized_.load(std::memory_order_acquire); }
  bool has_device_collector() const noexcept { return device_present_.load(std::memory_order_acquire); }
  // The device records' id of a cudaStream_t; nullopt (said once) when the collector cannot tell.
  std::optional<std::uint32_t> StreamId(std::uint64_t stream) {
    std::optional<std::uint32_t> id;
    bool collecting = false;
    {
      std::lock_guard<std::recursive_mutex> lock(device_mu_);
      collecting = device_ != nullptr;
      if (collecting) id = device_->StreamId(stream);
    }
    if (!id.has_value() && !stream_unknown_said_.exchange(true)) {
      GPUPROF_LOG(kWarning) << "an mstx range linked to stream " << stream << " is linked to every stream "
                            << "its thread launches on: "
                            << (collecting ? "the device tracing cannot name that stream"
                                           : "no device activity is collected");
    }
    return id;
  }
  DeviceCollector::CorrelationFunctions DeviceCorrelation() {
    std::lock_guard<std::recursive_mutex> lock(device_mu_);
    return device_ != nullptr ? device_->Correlation() : DeviceCollector::CorrelationFunctions{};
  }
  Status ConfigureReplay(const ReplaySettings& settings) {
    std::lock_guard<std::recursive_mutex> lock(device_mu_);
    if (device_ == nullptr) {
      return FailedPreconditionError(
          "the session collects no device activity (no CUDA in this process, or "
          "device collection off): there is no kernel to replay");
    }
    return device_->ConfigureReplay(settings);
  }
  void ReplayStepBoundary() {
    // Called outside device_mu_: the step's range is replayed inside the call, and a flush must not
    // wait for that. The collector lives as long as the session (device_ is set once, at Start) and
    // its boundary is thread-safe.
    DeviceCollector* device = nullptr;
    {
      std::lock_guard<std::recursive_mutex> lock(device_mu_);
      device = device_.get();
    }
    if (device != nullptr) device->ReplayStepBoundary();
  }
  // The records lost before the writer, per source, for the DB (db/lost_records.h): the device
  // collector's, the session buffer's and those that came after the capture ended.
  std::vector<std::pair<std::string, std::uint64_t>> LostRecords() {
    std::vector<std::pair<std::string, std::uint64_t>> lost;
    {
      std::lock_guard<std::recursive_mutex> lock(device_mu_);
      if (device_) lost = device_->LostRecords();
    }
    lost.emplace_back(db::kLostSessionBuffer, box_->collector->dropped());
    lost.emplace_back(db::kLostAfterStop, late_records_.load(std::memory_order_relaxed));
    return lost;
  }
  std::uint64_t dropped_records() const noexcept {
    std::uint64_t n = box_ != nullptr ? box_->collector->dropped() : 0;
    n += late_records_.load(std::memory_order_relaxed);
    if (writer_ != nullptr) n += writer_->stats().dropped_records;
    return n;
  }

  const std::shared_ptr<CollectorBox>& box() const noexcept { return box_; }
  // True in a fork child of the process that made this session.
  bool ForkedAway() const noexcept { return static_cast<std::uint32_t>(getpid()) != pid_; }

 private:
  Status NotRunning() const {
    return FailedPreconditionError("the session of pid " + std::to_string(pid_) +
                                   (state() == State::kStopping ? " is stopping" : " has stopped"));
  }
  Status Dropped(std::string_view what) const {
    return ResourceExhaustedError(std::string(what) + " dropped: the session's buffer of " +
                                  std::to_string(box_->collector->options().max_buffered_records) +
                                  " records is full or the session is stopping (" +
                                  std::to_string(box_->collector->dropped()) + " dropped so far)");
  }

  trace::Mark RangeRecord(std::uint64_t id, OpenRange range, std::int64_t end_ns,
                          std::uint32_t end_tid) const {
    trace::Mark mark;
    mark.type = trace::Mark::Type::kStartEnd;
    mark.start_ns = range.start_ns;
    mark.end_ns = end_ns > range.start_ns ? end_ns : range.start_ns;
    mark.pid = pid_;
    mark.tid = range.tid;
    mark.end_tid = end_tid;
    mark.range_id = id;
    mark.message = std::move(range.message);
    mark.domain = std::move(range.domain);
    mark.device = range.device;
    mark.stream = range.stream;
    return mark;
  }

  // Picks run.start_ns so that neither the final nor the .partial name of the DB exists yet.
  Status PickFreeLayout(trace::RunInfo& run) const {
    for (int attempt = 0; attempt < kMaxLayoutAttempts; ++attempt) {
      db::OutputLayout layout = db::MakeOutputLayout(config_.output_dir, config_.worker_name, run.hostname,
                                                     run.pid, run.start_ns, run.rank);
      std::error_code ec;
      if (!std::filesystem::exists(layout.db_path, ec) && !std::filesystem::exists(layout.partial_path, ec)) {
        return OkStatus();
      }
      run.start_ns += 1'000'000;  // the next millisecond: the directory name's resolution
    }
    return AlreadyExistsError("no free profile name under " + config_.output_dir + " for pid " +
                              std::to_string(run.pid) + " after " + std::to_string(kMaxLayoutAttempts) +
                              " attempts");
  }

  void FlusherLoop() noexcept {
    base::LowerThisThreadsPriority();  // the profiled program's threads come first
    Wakeup* wakeup = box_->wakeup.load(std::memory_order_acquire);
    std::unique_lock<std::mutex> lock(wakeup->mu);
    while (!wakeup->stop) {
      wakeup->cv.wait_for(lock, config_.flush_interval,
                          [&] { return wakeup->stop || wakeup->requested.load(std::memory_order_acquire); });
      if (wakeup->stop) break;
      wakeup->requested.store(false, std::memory_order_relaxed);
      lock.unlock();
      DrainToWriter();
      lock.lock();
    }
  }

  void StopFlusher() {
    if (!flusher_.joinable()) return;
    Wakeup* wakeup = box_->wakeup.load(std::memory_order_acquire);
    {
      std::lock_guard<std::mutex> lock(wakeup->mu);
      wakeup->stop = true;
    }
    wakeup->cv.notify_all();
    flusher_.join();
  }

  // Moves everything buffered to the writer. Serialized, so the writer receives each thread's
  // records in order; a no-op once the writer is finalizing.
  void DrainToWriter() noexcept {
    std::lock_guard<std::mutex> lock(drain_mu_);
    if (writer_closed_) return;
    try {
      for (std::vector<trace::Record>& chunk : box_->collector->DrainChunks()) {
        if (progress_path_.has_value()) CountForProgress(chunk);
        if (window_ != nullptr) window_->Submit(std::vector<trace::Record>(chunk));
        writer_->Submit(std::move(chunk));
      }
    } catch (const std::exception& e) {  // bad_alloc while swapping chunks out
      if (!warned_drain_.exchange(true)) {
        GPUPROF_LOG(kWarning) << "cannot drain records to " << partial_path_ << ": " << e.what()
                              << "; they are retried at the next flush";
      }
    }
    if (progress_path_.has_value()) MaybeWriteProgress();
  }

  // What `gpuprof run`'s live line shows (db::RunProgress). Under drain_mu_.
  void CountForProgress(const std::vector<trace::Record>& chunk) noexcept {
    for (const trace::Record& record : chunk) {
      if (const auto* call = std::get_if<trace::ApiCall>(&record)) {
        progress_.launches += call->launches_device_work ? 1 : 0;
      } else if (const auto* task = std::get_if<trace::DeviceTask>(&record)) {
        progress_.kernels += task->kind == trace::TaskKind::kKernel ? 1 : 0;
      } else if (std::holds_alternative<trace::TorchOp>(record)) {
        ++progress_.ops;
      } else if (const auto* replay = std::get_if<trace::ReplayResult>(&record)) {
        ++(replay->record.replayed ? progress_.replayed : progress_.declined);
      }
    }
  }

  // Replaces the progress file when the counts changed, at most every kProgressInterval. A file
  // that cannot be written turns the progress off for this process (one info line: it is cosmetic).
  void MaybeWriteProgress() noexcept {
    const auto now = std::chrono::steady_clock::now();
    if (progress_ == progress_written_ || now - progress_written_at_ < kProgressInterval) return;
    progress_written_at_ = now;
    progress_written_ = progress_;
    const std::string text = db::FormatRunProgress(progress_);
    const std::string temp = *progress_path_ + ".tmp";
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (fd >= 0) ok = ::close(fd) == 0 && ok;
    ok = ok && ::rename(temp.c_str(), progress_path_->c_str()) == 0;
    if (!ok) {
      GPUPROF_LOG(kInfo) << "cannot write " << *progress_path_ << " (" << base::ErrnoText(errno)
                         << "); gpuprof run shows no progress of pid " << pid_;
      ::unlink(temp.c_str());
      progress_path_.reset();
    }
  }

  Status DoStop() {
    {
      std::lock_guard<std::recursive_mutex> lock(device_mu_);
      if (device_) {
        device_->Flush();
        device_->Stop();
        if (run_.devices.empty()) {
          late_devices_ = device_->DevicesAtStop();
          GPUPROF_LOG(kDebug) << "NPU_INFO: none known at the start; " << late_devices_.size()
                              << " device(s) at the stop";
        }
      }
    }
    StopFlusher();
    // Ranges still open end where the capture ends, as the device collector does with NVTX ranges.
    const std::int64_t end_ns = base::EpochNowNs();
    std::unordered_map<std::uint64_t, OpenRange> open;
    open.swap(*ranges_.wlock());
    const std::uint32_t tid = CurrentTid();
    for (auto& [id, range] : open) {
      static_cast<void>(box_->collector->Append(RangeRecord(id, std::move(range), end_ns, tid)));
    }
    accepting_.store(false, std::memory_order_release);
    DrainToWriter();
    {
      std::lock_guard<std::mutex> lock(drain_mu_);
      writer_closed_ = true;
      if (window_ != nullptr) window_->Discard();  // a window still open at the end is not asked for
      window_.reset();
      if (progress_path_.has_value()) {  // the live line says the DB is being written, at once
        progress_.finalizing = 1;
        progress_written_at_ = {};
        MaybeWriteProgress();
      }
    }
    if (std::uint64_t dropped = box_->collector->dropped(); dropped > 0) {
      GPUPROF_LOG(kWarning) << dropped << " records were dropped before reaching " << partial_path_
                            << " (buffer cap of " << box_->collector->options().max_buffered_records
                            << " records reached, or out of memory); the profile is missing them";
    }
    DiscardEndedWindow();
    if (!late_devices_.empty()) writer_->SetDevices(std::move(late_devices_));
    writer_->SetLostRecords(LostRecords());
    StatusOr<std::string> path = writer_->Finalize(end_ns);
    if (!path.ok()) {
      Status failed = path.status().WithContext("finalizing the profile of pid " + std::to_string(pid_));
      if (!config_.result_file.empty()) {  // so that `gpuprof run` says why, not just that it is unfinished
        AppendResultLine(config_.result_file, db::kResultLineUnfinalized,
                         "pid " + std::to_string(pid_) + ": " + failed.message())
            .IgnoreError();
      }
      return failed;
    }
    finalized_.store(true, std::memory_order_release);
    const db::WriterStats stats = writer_->stats();
    GPUPROF_LOG(kInfo) << "profile written: " << db_path_ << " (" << stats.records << " records, "
                       << stats.bytes << " bytes)";
    if (!config_.result_file.empty()) {
      GPUPROF_RETURN_IF_ERROR(AppendResultLine(config_.result_file, db::kResultLineDb, db_path_)
                                  .WithContext("the profile " + db_path_ + " is complete but"));
    }
    return OkStatus();
  }

  SessionConfig config_;
  const std::uint32_t pid_;
  std::shared_ptr<CollectorBox> box_;
  std::unique_ptr<db::ProfileWriter> writer_;
  std::string partial_path_;
  std::string db_path_;  // the name Finalize gives the file (fixed at Start)
  std::atomic<bool> finalized_{false};

  // Device control calls are serialized (the CUPTI subscriber's are not thread-safe), and may
  // re-enter through the teardown hook on the same thread.
  std::recursive_mutex device_mu_;
  std::atomic<bool> stream_unknown_said_{false};
  std::unique_ptr<DeviceCollector> device_;
  std::atomic<bool> device_present_{false};

  std::thread flusher_;
  std::mutex drain_mu_;
  bool writer_closed_ = false;                 // guarded by drain_mu_
  std::unique_ptr<db::ProfileWriter> window_;  // guarded by drain_mu_: WindowBegin to WindowEnd
  trace::RunInfo run_;                         // the session's, for a window's writer
  // NPU_INFO's devices when they were known only at the stop (DeviceCollector::DevicesAtStop).
  std::vector<std::pair<std::int32_t, std::string>> late_devices_;
  std::mutex window_mu_;  // guards the ended window: WindowEnd to WindowDb
  std::unique_ptr<db::ProfileWriter> ended_window_;
  std::string ended_window_path_;  // finalized: WindowDb gives it again
  std::int64_t window_end_ns_ = 0;
  // Under `gpuprof run`: the progress file (db::RunProgressPath) and the counts; guarded by drain_mu_.
  static constexpr std::chrono::milliseconds kProgressInterval{500};
  std::optional<std::string> progress_path_;
  db::RunProgress progress_;
  db::RunProgress progress_written_;
  std::chrono::steady_clock::time_point progress_written_at_{};
  std::atomic<bool> warned_drain_{false};

  std::atomic<State> state_{State::kStopped};
  std::atomic<bool> accepting_{false};  // Append takes records (see Append)
  std::mutex lifecycle_mu_;
  std::condition_variable stopped_cv_;
  std::thread::id stopping_thread_;  // guarded by lifecycle_mu_
  Status stop_status_;               // guarded by lifecycle_mu_

  base::Synchronized<std::unordered_map<std::uint64_t, OpenRange>, std::mutex> ranges_;
  std::atomic<std::uint64_t> late_records_{0};

  friend class Session;
};

namespace {

Status ResolvePaths(SessionConfig& config) {
  GPUPROF_RETURN_IF_ERROR(ValidateConfig(config));
  GPUPROF_ASSIGN_OR_RETURN(config.output_dir, Absolute(config.output_dir, "output directory"));
  if (!config.result_file.empty()) {
    GPUPROF_ASSIGN_OR_RETURN(config.result_file, Absolute(config.result_file, "result file"));
  }
  return OkStatus();
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  if (impl_ == nullptr) return;
  if (impl_->ForkedAway()) {
    // The parent's threads, writer and .partial file are not ours: touch nothing, free nothing.
    static_cast<void>(impl_.release());
    return;
  }
  impl_->Stop().IgnoreError();
}

StatusOr<std::unique_ptr<Session>> Session::Start(SessionConfig config, SessionOptions options) {
  GPUPROF_RETURN_IF_ERROR(ResolvePaths(config));
  if (config.log_level) base::SetLogLevel(*config.log_level);

  auto box = std::make_shared<CollectorBox>();
  box->wakeup.store(new Wakeup, std::memory_order_release);
  trace::CollectorOptions collector_options = std::move(options.collector);
  collector_options.on_flush = [raw = box.get()]() {
    if (Wakeup* wakeup = raw->wakeup.load(std::memory_order_acquire)) wakeup->Notify();
  };
  GPUPROF_RETURN_IF_ERROR(
      trace::RecordCollector::ValidateOptions(collector_options).WithContext("session collector options"));
  box->collector = std::make_unique<trace::RecordCollector>(std::move(collector_options));

  auto impl = std::make_unique<Impl>(std::move(config), static_cast<std::uint32_t>(getpid()));
  GPUPROF_RETURN_IF_ERROR(impl->Start(std::move(box), std::move(options.device_factory)));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

StatusOr<std::unique_ptr<Session>> Session::StartInForkChild(Session& parent) {
  const auto pid = static_cast<std::uint32_t>(getpid());
  SessionConfig config = parent.impl_->config();
  // A worker name chosen for the parent would name the child's run directory the same: keep the
  // child's apart by its pid.
  if (!config.worker_name.empty()) config.worker_name += "_" + std::to_string(pid);
  config.started_by = "fork";
  config.json_members.emplace_back("parent_pid", std::to_string(parent.impl_->pid()));

  std::shared_ptr<CollectorBox> box = parent.impl_->box();
  GPUPROF_RETURN_IF_ERROR(box->collector->ResetAfterFork().WithContext(
      "re-arming the collector in fork child " + std::to_string(pid)));
  // The parent's Wakeup is leaked, not deleted: a parent thread may have been waiting on it.
  auto* wakeup = new Wakeup;
  wakeup->inherited = box->wakeup.load(std::memory_order_acquire);
  box->wakeup.store(wakeup, std::memory_order_release);

  auto impl = std::make_unique<Impl>(std::move(config), pid);
  GPUPROF_RETURN_IF_ERROR(impl->Start(std::move(box), /*factory=*/nullptr));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Status Session::Stop() { return impl_->Stop(); }
Status Session::Flush() { return impl_->Flush(); }
Status Session::WindowBegin(const std::string& out_dir) { return impl_->WindowBegin(out_dir); }
Status Session::WindowEnd() { return impl_->WindowEnd(); }
StatusOr<std::string> Session::WindowDb() { return impl_->WindowDb(); }
bool Session::Append(trace::Record&& record) noexcept { return impl_->Append(std::move(record)); }
Status Session::Mark(std::string_view message, std::string_view domain) {
  return impl_->Mark(message, domain);
}
StatusOr<std::uint64_t> Session::RangeStart(std::string_view message, const RangeOptions& options) {
  return impl_->RangeStart(message, options);
}
Status Session::RangeEnd(std::uint64_t range_id) { return impl_->RangeEnd(range_id); }
Session::State Session::state() const noexcept { return impl_->state(); }
const SessionConfig& Session::config() const noexcept { return impl_->config(); }
std::uint32_t Session::pid() const noexcept { return impl_->pid(); }
const std::string& Session::db_path() const noexcept { return impl_->db_path(); }
const std::string& Session::partial_path() const noexcept { return impl_->partial_path(); }
bool Session::finalized() const noexcept { return impl_->finalized(); }
bool Session::has_device_collector() const noexcept { return impl_->has_device_collector(); }
DeviceCollector::CorrelationFunctions Session::DeviceCorrelation() { return impl_->DeviceCorrelation(); }

std::uint64_t NewRangeId() noexcept { return g_next_range_id.fetch_add(1, std::memory_order_relaxed); }
Status Session::ConfigureReplay(const ReplaySettings& settings) { return impl_->ConfigureReplay(settings); }
void Session::ReplayStepBoundary() { impl_->ReplayStepBoundary(); }
std::uint64_t Session::dropped_records() const noexcept { return impl_->dropped_records(); }
std::size_t Session::buffered_records() const { return impl_->box()->collector->buffered(); }

}  // namespace gpuprof::session
