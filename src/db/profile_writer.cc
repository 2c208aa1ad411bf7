#include "db/profile_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>

#include "base/clock.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/logging.h"
#include "base/thread_priority.h"
#include "db/db_constants.h"
#include "db/derive.h"
#include "db/profile_writer_internal.h"
#include "db/schema.h"
#include "db/side_file.h"
#include "db/sqlite_util.h"
#include "db/string_table.h"

#ifndef GPUPROF_VERSION_STRING
#define GPUPROF_VERSION_STRING "unknown"
#endif

namespace gpuprof::db {
namespace {

using trace::Record;

std::string ErrnoText(int err) { return std::strerror(err); }

// "ProfilerStep#12" -> 12; -1 when the name is not a profiler step.
std::int64_t ParseStepNumber(std::string_view name) {
  constexpr std::string_view kStep = "ProfilerStep#";
  std::size_t at = name.find(kStep);
  if (at == std::string_view::npos) return -1;
  std::string_view digits = name.substr(at + kStep.size());
  std::int64_t value = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end == digits.data()) return -1;
  return value;
}

// A stable id for this host: the hash of /etc/machine-id, or of the hostname where there is none.
std::string HostUid(const std::string& hostname) {
  std::string source;
  std::ifstream in("/etc/machine-id");
  if (in) std::getline(in, source);
  if (source.empty()) source = hostname;
  return std::to_string(base::HashBytes(source.data(), source.size()));
}

std::string LocalHostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

// fsync(2) of a file or directory by path.
Status SyncPath(const std::string& path, bool directory) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return DataLossError("open " + path + " for fsync: " + ErrnoText(errno));
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return DataLossError("fsync " + path + ": " + ErrnoText(err));
  return OkStatus();
}

// Starts writing `path`'s dirty pages back to disk without waiting for them, so that the fsync
// before the rename has less left to do. Best effort: any failure leaves it all to the fsync.
void StartWriteback(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  static_cast<void>(sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE));
  close(fd);
}

// Writes `text` to `path` complete or not at all (temporary name, fsync, rename).
Status WriteFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + kPartialSuffix;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return FailedPreconditionError("cannot create " + tmp + ": " + ErrnoText(errno));
    out << text;
    out.flush();
    if (!out) return DataLossError("cannot write " + tmp + ": " + ErrnoText(errno));
  }
  GPUPROF_RETURN_IF_ERROR(SyncPath(tmp, /*directory=*/false));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return DataLossError("rename " + tmp + " -> " + path + ": " + ErrnoText(errno));
  }
  return OkStatus();
}

// Durations of Finalize's phases, logged as one debug line (GPUPROF_LOG_LEVEL=debug).
class PhaseLog {
 public:
  void Mark(const char* phase) {
    std::int64_t now = base::MonotonicNowNs();
    line_ << (line_.tellp() > 0 ? ", " : "") << phase << " " << (now - last_) / 1'000'000 << " ms";
    last_ = now;
  }
  std::string str() const { return line_.str(); }

 private:
  std::int64_t last_ = base::MonotonicNowNs();
  std::ostringstream line_;
};

enum class PushResult { kQueued, kFull, kClosed };

// Batches waiting for a consumer thread. Bounded in items; Push never blocks.
template <typename Item>
class WorkQueue {
 public:
  explicit WorkQueue(std::size_t max_items) : max_records_(max_items) {}

  PushResult Push(std::vector<Item>&& batch) {
    std::size_t n = batch.size();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closed_) return PushResult::kClosed;
      if (records_ + n > max_records_) return PushResult::kFull;
      records_ += n;
      batches_.push_back(std::move(batch));
    }
    cv_.notify_one();
    return PushResult::kQueued;
  }

  // Waits for work; moves every queued batch into `out`. False once closed and drained.
  bool PopAll(std::deque<std::vector<Item>>* out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return closed_ || !batches_.empty(); });
    if (batches_.empty()) return false;
    out->swap(batches_);
    records_ = 0;
    return true;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  // A condition variable needs the mutex itself, so this is the one place with a bare mutex; the
  // state it guards is reachable only through the three methods above.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<Item>> batches_;
  std::size_t records_ = 0;
  bool closed_ = false;
  const std::size_t max_records_;
};

struct Dim3Hash {
  std::size_t operator()(const std::array<std::uint32_t, 3>& d) const noexcept {
    // Two multiplicative mixes: a few distinct launch shapes, looked up twice per kernel.
    std::uint64_t h = ((static_cast<std::uint64_t>(d[0]) << 32) | d[1]) * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<std::uint64_t>(d[2]) + (h >> 29)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};

// What Finalize derives from the in-memory indexes (derive.h).
struct Derived {
  Connections connections;
  std::vector<StepRow> steps;
  std::vector<OpMemoryRow> op_memory;
};

// Sentinel for "NULL" in OpIds (no interned id is ever this large).
constexpr std::uint64_t kNullId = ~0ull;

// The interned ids of one PYTORCH_API row that OpSpan does not carry.
struct OpIds {
  std::uint64_t dtypes = kNullId;
  std::uint64_t shapes = kNullId;
  std::uint64_t callchain = kNullId;
};

// STRING_IDS and PYTORCH_CALLCHAINS rows the op lane created and the SQLite thread still has to
// write. The views point into the lane's string arena, which lives as long as the writer.
struct LaneRows {
  std::vector<std::pair<std::uint64_t, std::string_view>> strings;
  std::vector<std::array<std::uint64_t, 3>> callchains;  // (id, stack, stackDepth)
};

// The framework side of the stream (TorchOp -> PYTORCH_API), on a thread of its own beside the
// SQLite thread: interning in the framework id space (which nothing else uses), call chains, and
// the compact indexes the derivations and the deferred PYTORCH_API rows need. It owns no SQLite
// state; the rows it creates are handed over through TakeRows.
//
// Thread-safety: Process runs on the op thread only; TakeRows from any thread; the accessors only
// after the op thread has been joined.
class OpLane {
 public:
  // Throws std::bad_alloc.
  void Process(std::vector<trace::TorchOp>& batch) {
    for (trace::TorchOp& op : batch) Add(op);
    if (!local_.strings.empty() || !local_.callchains.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      Append(std::move(local_), &shared_);
      local_ = {};
    }
  }

  LaneRows TakeRows() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(shared_, {});
  }

  const std::vector<OpSpan>& ops() const { return ops_; }
  const std::vector<OpIds>& op_ids() const { return op_ids_; }
  const std::vector<CollectiveSpan>& collectives() const { return collectives_; }
  bool any_step() const { return any_step_; }
  std::uint64_t overflowed() const { return strings_.overflowed(); }

 private:
  static void Append(LaneRows&& from, LaneRows* to) {
    to->strings.insert(to->strings.end(), from.strings.begin(), from.strings.end());
    to->callchains.insert(to->callchains.end(), from.callchains.begin(), from.callchains.end());
  }

  std::uint64_t Id(std::string_view value) {
    StringTable::Interned interned = strings_.Intern(StringSpace::kFramework, value);
    if (interned.is_new) {
      // The table's own copy: stable for the writer's lifetime, unlike the record's.
      local_.strings.emplace_back(interned.id, interned.value);
    }
    return interned.id;
  }
  std::uint64_t IdOrNull(std::string_view value) { return value.empty() ? kNullId : Id(value); }

  // PYTORCH_CALLCHAINS id of a stack (innermost frame first); identical stacks share one id.
  std::uint64_t CallchainId(const std::vector<std::string>& frames) {
    frame_ids_.clear();
    for (const std::string& frame : frames) frame_ids_.push_back(Id(frame));
    std::string key(reinterpret_cast<const char*>(frame_ids_.data()),
                    frame_ids_.size() * sizeof(std::uint64_t));
    auto [it, inserted] = callchain_ids_.try_emplace(std::move(key), next_callchain_id_);
    if (!inserted) return it->second;
    std::uint64_t chain = next_callchain_id_++;
    for (std::size_t depth = 0; depth < frame_ids_.size(); ++depth) {
      local_.callchains.push_back({chain, frame_ids_[depth], depth});
    }
    return chain;
  }

  void Add(trace::TorchOp& op) {
    OpIds ids;
    std::uint64_t name_id = Id(op.name);
    ids.dtypes = IdOrNull(op.input_dtypes);
    ids.shapes = IdOrNull(op.input_shapes);
    if (!op.call_stack.empty()) ids.callchain = CallchainId(op.call_stack);
    op_ids_.push_back(ids);
    OpSpan& span = ops_.emplace_back();
    span.api_row = ops_.size();  // PYTORCH_API rows are inserted in this order at Finalize
    span.start_ns = op.start_ns;
    span.end_ns = op.end_ns;
    span.pid = op.pid;
    span.tid = op.tid;
    span.sequence_number = op.sequence_number;
    span.fwd_thread_id = op.fwd_thread_id;
    span.name_id = name_id;
    span.step_number = ParseStepNumber(op.name);
    span.correlation_ids = std::move(op.correlation_ids);
    span.external_id = op.external_id;
    span.type = op.type;
    std::optional<CollectiveName> collective = ParseCollectiveName(op.name);
    span.communication = collective.has_value() || IsCommunicationLauncherName(op.name);
    any_step_ = any_step_ || span.step_number >= 0;
    if (collective) {
      CollectiveSpan& c = collectives_.emplace_back();
      c.start_ns = op.start_ns;
      c.end_ns = op.end_ns;
      c.pid = op.pid;
      c.tid = op.tid;
      c.op_name = op.name;
      c.name = *std::move(collective);
      c.count = FirstInputElements(op.input_shapes);
      c.data_type = HcclDataTypeOf(op.input_dtypes);
    }
  }

  StringTable strings_;  // the framework space
  std::unordered_map<std::string, std::uint64_t> callchain_ids_;
  std::vector<std::uint64_t> frame_ids_;  // scratch, reused per stack
  std::uint64_t next_callchain_id_ = 0;
  std::vector<OpSpan> ops_;
  std::vector<OpIds> op_ids_;  // parallel to ops_
  std::vector<CollectiveSpan> collectives_;  // the torch.distributed collectives among the ops
  bool any_step_ = false;      // some op is a ProfilerStep#N
  LaneRows local_;             // rows of the batch being processed (op thread only)

  std::mutex mu_;
  LaneRows shared_;  // guarded by mu_: rows waiting for the SQLite thread
};

// The device and memory id spaces (string_table.h), interned by the SQLite thread and by the
// kernel side thread both, so a kernel name gets one id whichever thread sees it first.
//
// Thread-safety: every member may be called from any thread. Interned::value views stay valid
// (the table's arena never moves a stored string).
class SharedStrings {
 public:
  StringTable::Interned Intern(StringSpace space, std::string_view value) {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.Intern(space, value);
  }
  // Runs `intern(table)` under one lock: many lookups for the price of one lock.
  template <typename F>
  void WithTable(F&& intern) {
    std::lock_guard<std::mutex> lock(mu_);
    intern(table_);
  }
  std::uint64_t overflowed() {
    std::lock_guard<std::mutex> lock(mu_);
    return table_.overflowed();
  }

 private:
  std::mutex mu_;
  StringTable table_;  // guarded by mu_
};

// COMPUTE_TASK_INFO, written on the kernel side thread into its side file (side_file.h): interns
// the kernel names and launch shapes in the shared device space, writes the STRING_IDS rows of the
// strings it saw first and one COMPUTE_TASK_INFO row per kernel. The SQLite thread's share of a
// kernel is then just its TASK row, so the two tables are inserted in parallel. The SQLite thread
// hands over each whole batch once it has written its rows (and moved its TorchOps to the op
// lane), so the records are also freed here rather than on the busier SQLite thread.
//
// Thread-safety: Write and Release run on the side thread only; rows() from any thread.
class KernelSink {
 public:
  explicit KernelSink(SharedStrings& strings) : strings_(strings) {}

  // `batch` is a batch the SQLite thread has written: its device tasks got the global task ids
  // first_task_id, first_task_id + 1, ... in record order; kernel_type_id is the id of "KERNEL".
  // Throws std::bad_alloc.
  Status Write(const Connection& side, std::vector<Record>& batch, std::uint64_t first_task_id,
               std::uint64_t kernel_type_id) {
    if (!compute_task_info_.prepared()) {
      GPUPROF_ASSIGN_OR_RETURN(string_ids_, Statement::Prepare(side, "INSERT INTO STRING_IDS VALUES (?1, ?2)"));
      // inputFormats .. hf32Eligible: not recorded on CUDA.
      GPUPROF_RETURN_IF_ERROR(
          compute_task_info_.Prepare(side, "INSERT INTO COMPUTE_TASK_INFO VALUES ",
                                     "(?,?,?,?,?,?,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,?,?)"));
    }
    // The batch's kernels with their global task ids.
    kernels_.clear();
    std::uint64_t task_id = first_task_id;
    for (Record& record : batch) {
      if (auto* task = std::get_if<trace::DeviceTask>(&record)) {
        if (task->kind == trace::TaskKind::kKernel) kernels_.emplace_back(task, task_id);
        ++task_id;
      }
    }
    std::uint64_t rows = 0;
    constexpr std::size_t kChunk = 256;  // kernels interned per lock
    std::array<std::array<std::uint64_t, 4>, kChunk> ids{};  // name, opType, grid, block
    for (std::size_t begin = 0; begin < kernels_.size(); begin += kChunk) {
      std::size_t end = std::min(kernels_.size(), begin + kChunk);
      new_strings_.clear();
      strings_.WithTable([&](StringTable& table) {
        for (std::size_t i = begin; i < end; ++i) {
          const trace::DeviceTask& k = *kernels_[i].first;
          std::array<std::uint64_t, 4>& row = ids[i - begin];
          row[0] = Id(table, k.name);
          row[1] = k.short_name.empty() || k.short_name == k.name ? row[0] : Id(table, k.short_name);
          row[2] = DimId(table, k.grid);
          row[3] = DimId(table, k.block);
        }
      });
      for (const auto& [id, value] : new_strings_) {
        string_ids_.BindU64(1, id);
        string_ids_.BindStaticText(2, value);
        GPUPROF_RETURN_IF_ERROR(string_ids_.Run());
        ++rows;
      }
      for (std::size_t i = begin; i < end; ++i) {
        const trace::DeviceTask& k = *kernels_[i].first;
        const std::array<std::uint64_t, 4>& row = ids[i - begin];
        BatchInserter& c = compute_task_info_;
        c.SetU64(0, row[0]);
        c.SetU64(1, kernels_[i].second);
        c.SetU64(2, static_cast<std::uint64_t>(k.grid[0]) * k.grid[1] * k.grid[2]);
        c.Set(3, 0);  // mixBlockNum: no mixed cube/vector launches on CUDA
        c.SetU64(4, kernel_type_id);
        c.SetU64(5, row[1]);
        c.SetU64(6, row[2]);
        c.SetU64(7, row[3]);
        GPUPROF_RETURN_IF_ERROR(c.Push());
        ++rows;
      }
    }
    GPUPROF_RETURN_IF_ERROR(compute_task_info_.Flush());
    rows_.fetch_add(rows, std::memory_order_relaxed);
    kernels_.clear();
    batch = {};  // the records are freed here, not on the SQLite thread
    return OkStatus();
  }

  // The statements must be finalized before the side connection can close cleanly.
  void Release() {
    string_ids_ = {};
    compute_task_info_.Release();
  }

  std::uint64_t rows() const noexcept { return rows_.load(std::memory_order_relaxed); }

 private:
  std::uint64_t Id(StringTable& table, std::string_view value) {
    StringTable::Interned interned = table.Intern(StringSpace::kDevice, value);
    if (interned.is_new) new_strings_.emplace_back(interned.id, interned.value);
    return interned.id;
  }

  std::uint64_t DimId(StringTable& table, const std::uint32_t (&dim)[3]) {
    std::array<std::uint32_t, 3> key = {dim[0], dim[1], dim[2]};
    if (auto it = dim_ids_.find(key); it != dim_ids_.end()) return it->second;
    std::string text = std::to_string(dim[0]) + "," + std::to_string(dim[1]) + "," + std::to_string(dim[2]);
    std::uint64_t id = Id(table, text);
    dim_ids_.emplace(key, id);
    return id;
  }

  SharedStrings& strings_;
  Statement string_ids_;
  BatchInserter compute_task_info_;
  std::unordered_map<std::array<std::uint32_t, 3>, std::uint64_t, Dim3Hash> dim_ids_;
  std::vector<std::pair<std::uint64_t, std::string_view>> new_strings_;  // scratch, per chunk
  std::vector<std::pair<const trace::DeviceTask*, std::uint64_t>> kernels_;  // scratch, per batch
  std::atomic<std::uint64_t> rows_{0};
};

// CONNECTION_IDS (§3.4) from the derivation, on the connection side thread.
Status WriteConnectionRows(const Connection& side, const std::vector<ConnectionRow>& rows) {
  BatchInserter insert;
  GPUPROF_RETURN_IF_ERROR(insert.Prepare(side, "INSERT INTO CONNECTION_IDS VALUES ", "(?,?)"));
  for (const ConnectionRow& row : rows) {
    insert.SetU64(0, row.id);
    insert.SetU64(1, row.connection_id);
    GPUPROF_RETURN_IF_ERROR(insert.Push());
  }
  GPUPROF_RETURN_IF_ERROR(insert.Flush());
  insert.Release();
  return OkStatus();
}

// PYTORCH_API rows [begin, end) in api_row order, each with its CONNECTION_IDS index (§3.4) where
// it has one, pushed into `s` (an INSERT INTO PYTORCH_API inserter of any connection). Reads only
// the finished derivation and op lane, so two threads may push two ranges.
Status PushApiRows(BatchInserter& s, const Derived& derived, const OpLane& lane, std::size_t begin,
                   std::size_t end) {
  const std::vector<OpSpan>& ops = lane.ops();
  const std::vector<OpIds>& op_ids = lane.op_ids();
  // api_index is in api_row order too, so one cursor walks it alongside.
  const auto& api_index = derived.connections.api_index;
  std::size_t next_index = 0;
  if (begin < end) {
    next_index = static_cast<std::size_t>(
        std::lower_bound(api_index.begin(), api_index.end(), ops[begin].api_row,
                         [](const std::pair<std::uint64_t, std::uint64_t>& entry, std::uint64_t row) {
                           return entry.first < row;
                         }) -
        api_index.begin());
  }
  auto set_id = [&s](int column, std::uint64_t id) {
    if (id == kNullId) {
      s.SetNull(column);
    } else {
      s.SetU64(column, id);
    }
  };
  for (std::size_t i = begin; i < end; ++i) {
    const OpSpan& op = ops[i];
    const OpIds& ids = op_ids[i];
    s.Set(0, op.start_ns);
    s.Set(1, op.end_ns);
    s.Set(2, GlobalTid(op.pid, op.tid));
    while (next_index < api_index.size() && api_index[next_index].first < op.api_row) ++next_index;
    if (next_index < api_index.size() && api_index[next_index].first == op.api_row) {
      s.SetU64(3, api_index[next_index].second);
    } else {
      s.SetNull(3);
    }
    s.SetU64(4, op.name_id);
    if (op.type == trace::TorchOp::Type::kOp) {
      s.Set(5, op.sequence_number);
      s.SetU64(6, op.fwd_thread_id);
    } else {
      s.SetNull(5);
      s.SetNull(6);
    }
    set_id(7, ids.dtypes);
    set_id(8, ids.shapes);
    set_id(9, ids.callchain);
    s.Set(10, static_cast<std::int64_t>(op.type));
    GPUPROF_RETURN_IF_ERROR(s.Push());
  }
  return OkStatus();
}

constexpr std::string_view kInsertApiHead = "INSERT INTO PYTORCH_API VALUES ";
constexpr std::string_view kInsertApiRow = "(?,?,?,?,?,?,?,?,?,?,?)";

// PYTORCH_API rows [begin, end) on a side thread.
Status WriteApiRows(const Connection& side, const Derived& derived, const OpLane& lane, std::size_t begin,
                    std::size_t end) {
  BatchInserter insert;
  GPUPROF_RETURN_IF_ERROR(insert.Prepare(side, kInsertApiHead, kInsertApiRow));
  GPUPROF_RETURN_IF_ERROR(PushApiRows(insert, derived, lane, begin, end));
  GPUPROF_RETURN_IF_ERROR(insert.Flush());
  insert.Release();
  return OkStatus();
}

// Everything the SQLite thread owns: the connection, the prepared statements, the device and
// memory id spaces, and the device-side indexes the derivations need at Finalize. Touched by one
// thread at a time: the writer thread while it runs, Finalize (or the destructor) after joining it.
// TorchOps only pass through: they are collected for the op lane (TakeLaneBatch).
//
// PYTORCH_API rows are written at Finalize, not while streaming: their connectionId is known only
// once every launch has been seen, and inserting the finished row is much cheaper than inserting
// it with NULL and updating it later. Until then an op lives in the lane's indexes.
class RowSink {
 public:
  // rows() starts at the enum and META_DATA rows Create already wrote on this connection.
  RowSink(Connection conn, std::size_t batch_rows, SharedStrings& strings)
      : conn_(std::move(conn)),
        batch_rows_(batch_rows),
        rows_(static_cast<std::uint64_t>(sqlite3_total_changes64(conn_.get()))),
        strings_(strings) {}

  Status Prepare() {
    GPUPROF_ASSIGN_OR_RETURN(string_ids_,
                             Statement::Prepare(conn_, "INSERT INTO STRING_IDS VALUES (?1, ?2)"));
    GPUPROF_ASSIGN_OR_RETURN(
        replay_kernel_, Statement::Prepare(conn_,
                                           "INSERT INTO GPUPROF_REPLAY_KERNEL VALUES (?1, ?2, ?3, ?4, "
                                           "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"));
    GPUPROF_RETURN_IF_ERROR(
        pytorch_api_.Prepare(conn_, kInsertApiHead, kInsertApiRow));
    GPUPROF_RETURN_IF_ERROR(callchains_.Prepare(conn_, "INSERT INTO PYTORCH_CALLCHAINS VALUES ", "(?,?,?)"));
    // OR IGNORE: a repeated correlation id (a collector bug) must not stop the whole profile; it
    // is counted and reported once at Finalize.
    GPUPROF_RETURN_IF_ERROR(
        cann_api_.Prepare(conn_, "INSERT OR IGNORE INTO CANN_API VALUES ", "(?,?,?,?,?,?)"));
    // modelId: no model (DB_INVALID_VALUE).
    GPUPROF_RETURN_IF_ERROR(
        task_.Prepare(conn_, "INSERT INTO TASK VALUES ", "(?,?,?,?,?,?,?,?,?,?,4294967295)"));
    GPUPROF_RETURN_IF_ERROR(memcpy_info_.Prepare(conn_, "INSERT INTO MEMCPY_INFO VALUES ", "(?,?,?)"));
    GPUPROF_RETURN_IF_ERROR(gc_record_.Prepare(conn_, "INSERT INTO GC_RECORD VALUES ", "(?,?,?)"));
    GPUPROF_RETURN_IF_ERROR(mstx_.Prepare(conn_, "INSERT INTO MSTX_EVENTS VALUES ", "(?,?,?,?,?,?,?,?,?,?)"));
    GPUPROF_RETURN_IF_ERROR(
        replay_pass_.Prepare(conn_, "INSERT INTO GPUPROF_REPLAY_PASS VALUES ", "(?,?,?,?,?,?,?,?,?,?,?)"));
    GPUPROF_RETURN_IF_ERROR(
        memory_record_.Prepare(conn_, "INSERT INTO MEMORY_RECORD VALUES ", "(?,?,?,?,?,?,?)"));
    GPUPROF_RETURN_IF_ERROR(
        op_memory_.Prepare(conn_, "INSERT INTO OP_MEMORY VALUES ", "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    return OkStatus();
  }

  Status Begin() {
    rows_in_txn_ = 0;
    return conn_.Exec("BEGIN");
  }
  // Writes every buffered row, then commits.
  Status Commit() {
    for (BatchInserter* inserter : Inserters()) GPUPROF_RETURN_IF_ERROR(inserter->Flush());
    return conn_.Exec("COMMIT");
  }

  // One record; commits and reopens the transaction every batch_rows rows.
  Status Write(Record& record) {
    GPUPROF_RETURN_IF_ERROR(std::visit([this](auto& r) { return WriteRecord(r); }, record));
    return MaybeCommit();
  }

  // Pure computation over the in-memory indexes. STEP_TIME and OP_MEMORY are derived on a second
  // thread while CONNECTION_IDS is derived on this one (each walks all ops; they share nothing
  // but read-only inputs). Throws std::bad_alloc.
  Derived Derive(const OpLane& lane) const {
    Derived out;
    const std::vector<OpSpan>& ops = lane.ops();
    auto side = [this, &out, &lane, &ops] {
      if (lane.any_step()) out.steps = DeriveSteps(ops);
      if (!alloc_events_.empty()) out.op_memory = DeriveOpMemory(alloc_events_, ops);
    };
    std::exception_ptr side_error;
    std::thread helper;
    try {
      helper = std::thread([&side, &side_error]() noexcept {
        try {
          side();
        } catch (...) {
          side_error = std::current_exception();
        }
      });
    } catch (const std::system_error&) {
      side();  // no second thread: one after the other
    }
    try {
      out.connections = DeriveConnections(ops, launches_, external_launches_);
      if (out.connections.tagged_links + out.connections.contained_links > 0) {
        GPUPROF_LOG(kInfo) << "CONNECTION_IDS: " << out.connections.tagged_links
                           << " device launch(es) linked to their op by external correlation, "
                           << out.connections.contained_links << " by time on the launching thread";
      }
    } catch (...) {
      if (helper.joinable()) helper.join();
      throw;
    }
    if (helper.joinable()) helper.join();
    if (side_error) std::rethrow_exception(side_error);
    return out;
  }

  // MEMORY_RECORD is written in time order; sort before Derive reads the events.
  void SortAllocatorEvents() {
    std::stable_sort(
        alloc_events_.begin(), alloc_events_.end(),
        [](const trace::AllocatorEvent& a, const trace::AllocatorEvent& b) { return a.time_ns < b.time_ns; });
  }

  // The first `api_rows` PYTORCH_API rows (PushApiRows), the derived tables but CONNECTION_IDS
  // (WriteConnectionRows) and the per-run tables (inside the caller's transaction).
  Status WriteCollectives(const std::vector<CollectiveSpan>& collectives, const std::vector<OpSpan>& ops,
                          const Connections& connections, const trace::RunInfo& run);
  Status WriteFinal(const Derived& derived, const OpLane& lane, std::size_t api_rows, const trace::RunInfo& run,
                    std::int64_t end_ns);

  // The op lane's new STRING_IDS and PYTORCH_CALLCHAINS rows.
  Status WriteLaneRows(const LaneRows& rows) {
    for (const auto& [id, value] : rows.strings) {
      string_ids_.BindU64(1, id);
      string_ids_.BindStaticText(2, value);
      GPUPROF_RETURN_IF_ERROR(string_ids_.Run());
      ++rows_;
      ++rows_in_txn_;
    }
    for (const auto& row : rows.callchains) {
      for (int c = 0; c < 3; ++c) callchains_.SetU64(c, row[static_cast<std::size_t>(c)]);
      GPUPROF_RETURN_IF_ERROR(Pushed(callchains_));
    }
    return OkStatus();
  }

  // TorchOps seen since the last call, for the op lane.
  std::vector<trace::TorchOp> TakeLaneBatch() { return std::exchange(lane_batch_, {}); }
  // The global task id the next device task gets, and the STRING_IDS id of "KERNEL" (once a
  // kernel has been written), for KernelSink.
  std::uint64_t next_global_task_id() const noexcept { return next_global_task_id_; }
  std::uint64_t kernel_type_id() const noexcept {
    return task_type_ids_[static_cast<std::size_t>(trace::TaskKind::kKernel)];
  }

  Connection& connection() { return conn_; }
  // The statements must be finalized before the connection can close cleanly.
  void ReleaseStatements() {
    string_ids_ = {};
    replay_kernel_ = {};
    for (BatchInserter* inserter : Inserters()) inserter->Release();
  }

  std::uint64_t rows() const noexcept { return rows_ - cann_api_.ignored(); }
  std::uint64_t duplicate_connection_ids() const noexcept { return cann_api_.ignored(); }
  std::uint64_t string_overflows() const { return strings_.overflowed(); }
  // Commits when the transaction has reached batch_rows rows.
  Status MaybeCommit() {
    if (rows_in_txn_ < batch_rows_) return OkStatus();
    GPUPROF_RETURN_IF_ERROR(Commit());
    return Begin();
  }

 private:
  std::array<BatchInserter*, 10> Inserters() {
    return {&pytorch_api_, &callchains_, &cann_api_,   &task_,          &memcpy_info_,
            &gc_record_,   &mstx_,       &replay_pass_, &memory_record_, &op_memory_};
  }

  Status Pushed(BatchInserter& inserter) {
    ++rows_;
    ++rows_in_txn_;
    return inserter.Push();
  }

  // The id of `value`, writing its STRING_IDS row on first sight. Empty -> kInvalidStringId.
  StatusOr<std::uint64_t> Id(StringSpace space, std::string_view value) {
    StringTable::Interned interned = strings_.Intern(space, value);
    if (interned.is_new) {
      string_ids_.BindU64(1, interned.id);
      string_ids_.BindStaticText(2, value);
      GPUPROF_RETURN_IF_ERROR(string_ids_.Run());
      ++rows_;
      ++rows_in_txn_;
    }
    return interned.id;
  }

  Status WriteRecord(trace::ExternalCorrelation& link) {
    external_launches_[link.external_id].push_back(link.correlation_id);
    return OkStatus();
  }

  Status WriteRecord(trace::TorchOp& op) {
    lane_batch_.push_back(std::move(op));
    return OkStatus();
  }

  Status WriteCannApi(std::int64_t start, std::int64_t end, std::int64_t type, std::int64_t global_tid,
                      std::uint64_t connection_id, std::uint64_t name_id) {
    BatchInserter& s = cann_api_;
    s.Set(0, start);
    s.Set(1, end);
    s.Set(2, type);
    s.Set(3, global_tid);
    s.SetU64(4, connection_id);
    s.SetU64(5, name_id);
    return Pushed(s);
  }

  Status WriteRecord(trace::ApiCall& call) {
    std::int64_t global_tid = GlobalTid(call.pid, call.tid);
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t name_id, Id(StringSpace::kDevice, call.name));
    GPUPROF_RETURN_IF_ERROR(WriteCannApi(call.start_ns, call.end_ns, kApiTypeRuntime, global_tid,
                                         call.correlation_id + kRuntimeConnectionOffset, name_id));
    if (call.launches_device_work) {
      if (launch_name_id_ == kInvalidStringId) {
        GPUPROF_ASSIGN_OR_RETURN(launch_name_id_, Id(StringSpace::kDevice, "launch"));
      }
      GPUPROF_RETURN_IF_ERROR(WriteCannApi(call.start_ns, call.end_ns, kApiTypeNode, global_tid,
                                           call.correlation_id, launch_name_id_));
      launches_.push_back(LaunchSpan{call.start_ns, call.end_ns, call.tid, call.correlation_id});
    }
    return OkStatus();
  }

  StatusOr<std::uint64_t> TaskTypeId(trace::TaskKind kind) {
    auto index = static_cast<std::size_t>(kind);
    if (task_type_ids_[index] == kInvalidStringId) {
      // cluster_time_summary keys on MEMCPY_ASYNC (DB_SPEC §7).
      constexpr std::string_view kNames[] = {"KERNEL", "MEMCPY_ASYNC", "MEMSET"};
      GPUPROF_ASSIGN_OR_RETURN(task_type_ids_[index], Id(StringSpace::kDevice, kNames[index]));
    }
    return task_type_ids_[index];
  }

  Status WriteRecord(trace::DeviceTask& task) {
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t type_id, TaskTypeId(task.kind));
    std::uint64_t global_task_id = next_global_task_id_++;
    BatchInserter& s = task_;
    s.Set(0, task.start_ns);
    s.Set(1, task.end_ns);
    s.Set(2, task.device);
    s.SetU64(3, task.correlation_id);
    s.SetU64(4, global_task_id);
    s.Set(5, task.pid);
    s.SetU64(6, type_id);
    s.Set(7, task.context);
    s.Set(8, task.stream);
    s.SetU64(9, global_task_id);  // taskId: CUDA has no per-stream hardware task id
    GPUPROF_RETURN_IF_ERROR(Pushed(s));

    switch (task.kind) {
      case trace::TaskKind::kKernel: return OkStatus();  // COMPUTE_TASK_INFO: KernelSink
      case trace::TaskKind::kMemcpy: {
        BatchInserter& m = memcpy_info_;
        m.SetU64(0, global_task_id);
        m.SetU64(1, task.bytes);
        m.Set(2, task.memcpy_operation);
        return Pushed(m);
      }
      case trace::TaskKind::kMemset: return OkStatus();
    }
    return OkStatus();
  }

  Status WriteRecord(trace::AllocatorEvent& event) {
    // MEMORY_RECORD is written sorted by time at Finalize, from the same list OP_MEMORY needs.
    alloc_events_.push_back(std::move(event));
    return OkStatus();
  }

  Status WriteRecord(trace::GcEvent& gc) {
    BatchInserter& s = gc_record_;
    s.Set(0, gc.start_ns);
    s.Set(1, gc.end_ns);
    s.Set(2, GlobalTid(gc.pid, gc.pid));  // torch_npu records the pid in both halves (§3.10)
    return Pushed(s);
  }

  Status WriteRecord(trace::Mark& mark) {
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t message_id, Id(StringSpace::kDevice, mark.message));
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t domain_id,
                             Id(StringSpace::kDevice, mark.domain.empty() ? "default" : mark.domain));
    BatchInserter& s = mstx_;
    s.Set(0, mark.start_ns);
    s.Set(1, mark.end_ns);
    s.Set(2, static_cast<std::int64_t>(mark.type));
    s.SetU64(3, mark.range_id);
    s.SetU64(4, kInvalidStringId);  // category: not recorded
    s.SetU64(5, message_id);
    s.Set(6, GlobalTid(mark.pid, mark.tid));
    s.Set(7, GlobalTid(mark.pid, mark.end_tid != 0 ? mark.end_tid : mark.tid));
    s.SetU64(8, domain_id);
    s.SetU64(9, mark.correlation_id.value_or(kInvalidStringId));  // host-only: DB_INVALID_VALUE
    return Pushed(s);
  }

  Status WriteRecord(trace::ReplayResult& result) {
    const replay::ReplayRecord& r = result.record;
    std::uint64_t kernel_id = next_replay_id_++;
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t name_id, Id(StringSpace::kDevice, r.kernel_name));
    Statement& k = replay_kernel_;
    k.BindU64(1, kernel_id);
    k.BindInt(2, result.time_ns);
    k.BindInt(3, GlobalTid(result.pid, result.tid));
    k.BindInt(4, r.device);
    k.BindU64(5, name_id);
    if (result.correlation_id != 0) {
      k.BindU64(6, result.correlation_id);
    } else {
      k.BindNull(6);
    }
    k.BindU64(7, r.launch_index);
    k.BindInt(8, r.replayed ? 1 : 0);
    if (r.decline_reason == replay::DeclineReason::kNone) {
      k.BindNull(9);
    } else {
      k.BindStaticText(9, replay::DeclineReasonName(r.decline_reason));
    }
    if (r.decline_detail.empty()) {
      k.BindNull(10);
    } else {
      k.BindStaticText(10, r.decline_detail);
    }
    k.BindStaticText(11, replay::RestoreModeName(r.restore_mode));
    k.BindInt(12, static_cast<std::int64_t>(r.passes.size()));
    k.BindInt(13, r.deterministic ? 1 : 0);
    k.BindU64(14, r.snapshot_regions);
    k.BindU64(15, r.snapshot_bytes);
    k.BindU64(16, r.snapshot_ns);
    k.BindU64(17, r.untracked_writable_bytes);
    k.BindU64(18, r.snapshot_device_bytes);
    GPUPROF_RETURN_IF_ERROR(k.Run());
    ++rows_;
    ++rows_in_txn_;

    BatchInserter& p = replay_pass_;
    for (const replay::PassRecord& pass : r.passes) {
      bool mismatched = std::find(r.mismatched_passes.begin(), r.mismatched_passes.end(), pass.pass) !=
                        r.mismatched_passes.end();
      p.SetU64(0, kernel_id);
      p.Set(1, pass.pass);
      p.Set(2, pass.start_ns);
      p.SetU64(3, pass.duration_ns);
      p.Set(4, pass.sm_clock_before_khz);
      p.Set(5, pass.sm_clock_after_khz);
      p.SetU64(6, pass.bytes_restored);
      p.SetU64(7, pass.regions_restored);
      p.SetU64(8, pass.dirty_chunks);
      if (pass.output_hash == 0) {
        p.SetNull(9);  // not computed
        p.SetNull(10);
      } else {
        p.SetU64(9, pass.output_hash);  // two's complement of the u64 (docs/db_gpuprof_tables.md)
        p.Set(10, mismatched ? 0 : 1);
      }
      GPUPROF_RETURN_IF_ERROR(Pushed(p));
    }
    return OkStatus();
  }

  Connection conn_;
  const std::size_t batch_rows_;
  std::size_t rows_in_txn_ = 0;
  std::uint64_t rows_ = 0;

  Statement string_ids_, replay_kernel_;  // rows with text: one at a time
  BatchInserter pytorch_api_, callchains_, cann_api_, task_, memcpy_info_, gc_record_, mstx_, replay_pass_,
      memory_record_, op_memory_;

  SharedStrings& strings_;  // device and memory spaces, shared with the kernel side thread
  std::uint64_t launch_name_id_ = kInvalidStringId;
  std::uint64_t task_type_ids_[3] = {kInvalidStringId, kInvalidStringId, kInvalidStringId};
  std::uint64_t next_global_task_id_ = 0;
  std::uint64_t next_replay_id_ = 0;

  std::vector<trace::TorchOp> lane_batch_;  // TorchOps on their way to the op lane
  // Device-side indexes for the derivations (derive.h).
  std::vector<LaunchSpan> launches_;
  // CUPTI external id -> correlation ids of the launches made under it (trace::ExternalCorrelation).
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> external_launches_;
  std::vector<trace::AllocatorEvent> alloc_events_;
};

// DB_SPEC §7: each collective is a CANN_API `communication` row (type 5500) and a COMMUNICATION_OP
// row with the same connectionId (kCommunicationConnectionBase + its index in start order). The
// opName "<backend>_<type>_<n>" counts collectives in issue order, which every rank of a group
// shares, so the same collective has the same name in every rank's DB. groupName is the default
// group's: the work ops do not say which group they ran on (docs/db_gpuprof_tables.md). A
// collective that launched device work (NCCL) takes its tasks' device time, and each task gets a
// COMMUNICATION_TASK_INFO row naming the op (opId).
Status RowSink::WriteCollectives(const std::vector<CollectiveSpan>& collectives, const std::vector<OpSpan>& ops,
                                 const Connections& connections, const trace::RunInfo& run) {
  if (collectives.empty()) return OkStatus();
  std::vector<CollectiveSpan> order(collectives.begin(), collectives.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const CollectiveSpan& a, const CollectiveSpan& b) { return a.start_ns < b.start_ns; });

  // The device tasks of each collective, from TASK through the launches' correlation ids.
  struct DeviceTask {
    std::uint64_t global_task_id;
    std::int64_t task_type;
    std::int64_t start_ns;
    std::int64_t end_ns;
  };
  std::vector<std::vector<DeviceTask>> tasks(order.size());
  const std::vector<std::pair<std::size_t, std::uint64_t>> launches = CollectiveLaunches(order, ops, connections);
  if (!launches.empty()) {
    GPUPROF_RETURN_IF_ERROR(conn_.Exec("CREATE TEMP TABLE gpuprof_collective_launch (collective INTEGER, correlation INTEGER)"));
    {
      GPUPROF_ASSIGN_OR_RETURN(Statement link,
                               Statement::Prepare(conn_, "INSERT INTO temp.gpuprof_collective_launch VALUES (?1, ?2)"));
      for (const auto& [collective, correlation] : launches) {
        link.BindU64(1, collective);
        link.BindU64(2, correlation);
        GPUPROF_RETURN_IF_ERROR(link.Run());
      }
      GPUPROF_ASSIGN_OR_RETURN(
          Statement query,
          Statement::Prepare(conn_, "SELECT l.collective, t.globalTaskId, t.taskType, t.startNs, t.endNs FROM "
                                    "temp.gpuprof_collective_launch l JOIN main.TASK t ON t.connectionId = "
                                    "l.correlation ORDER BY l.collective, t.startNs"));
      int rc = SQLITE_ROW;
      while ((rc = sqlite3_step(query.get())) == SQLITE_ROW) {
        sqlite3_stmt* row = query.get();
        const auto collective = static_cast<std::size_t>(sqlite3_column_int64(row, 0));
        if (collective < tasks.size()) {
          tasks[collective].push_back({static_cast<std::uint64_t>(sqlite3_column_int64(row, 1)),
                                       sqlite3_column_int64(row, 2), sqlite3_column_int64(row, 3),
                                       sqlite3_column_int64(row, 4)});
        }
      }
      if (rc != SQLITE_DONE) return conn_.Error("reading the collectives' device tasks", rc);
    }
    GPUPROF_RETURN_IF_ERROR(conn_.Exec("DROP TABLE temp.gpuprof_collective_launch"));
  }

  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t group_id, Id(StringSpace::kDevice, kDefaultGroupName));
  GPUPROF_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(conn_, "INSERT INTO COMMUNICATION_OP VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                                "?12, ?13, ?14)"));
  GPUPROF_ASSIGN_OR_RETURN(
      Statement task_info,
      Statement::Prepare(conn_, "INSERT INTO COMMUNICATION_TASK_INFO (name, globalTaskId, taskType, groupName, "
                                "dataType, opId) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  for (std::size_t i = 0; i < order.size(); ++i) {
    const CollectiveSpan& c = order[i];
    const std::uint64_t connection_id = kCommunicationConnectionBase + i;
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t op_name_id,
                             Id(StringSpace::kDevice, c.name.backend + "_" + c.name.op_type + "_" + std::to_string(i)));
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t type_id, Id(StringSpace::kDevice, c.name.op_type));
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t api_name_id, Id(StringSpace::kDevice, c.op_name));
    // The CANN_API row is the host call; COMMUNICATION_OP is the communication: on the device when
    // the collective launched tasks there.
    std::int64_t start_ns = c.start_ns;
    std::int64_t end_ns = c.end_ns;
    if (!tasks[i].empty()) {
      start_ns = tasks[i].front().start_ns;
      end_ns = start_ns;
      for (const DeviceTask& task : tasks[i]) end_ns = std::max(end_ns, task.end_ns);
    }
    GPUPROF_RETURN_IF_ERROR(WriteCannApi(c.start_ns, c.end_ns, kApiTypeCommunication, GlobalTid(c.pid, c.tid),
                                         connection_id, api_name_id));
    insert.BindU64(1, op_name_id);
    insert.BindInt(2, start_ns);
    insert.BindInt(3, end_ns);
    insert.BindU64(4, connection_id);
    insert.BindU64(5, group_id);
    insert.BindU64(6, i);
    insert.BindInt(7, 0);  // relay
    insert.BindInt(8, 0);  // retry
    insert.BindU64(9, c.data_type);
    insert.BindNull(10);  // algType: NCCL and gloo do not report the algorithm
    insert.BindOptional(11, c.count);
    insert.BindU64(12, type_id);
    if (run.device >= 0) {
      insert.BindInt(13, run.device);
    } else {
      insert.BindNull(13);
    }
    if (run.world_size > 0) {
      insert.BindInt(14, run.world_size);
    } else {
      insert.BindNull(14);
    }
    GPUPROF_RETURN_IF_ERROR(insert.Run());
    ++rows_;
    for (const DeviceTask& task : tasks[i]) {
      task_info.BindU64(1, api_name_id);
      task_info.BindU64(2, task.global_task_id);
      task_info.BindInt(3, task.task_type);
      task_info.BindU64(4, group_id);
      task_info.BindU64(5, c.data_type);
      task_info.BindU64(6, i);
      GPUPROF_RETURN_IF_ERROR(task_info.Run());
      ++rows_;
    }
  }
  return OkStatus();
}

Status RowSink::WriteFinal(const Derived& derived, const OpLane& lane, std::size_t api_rows,
                           const trace::RunInfo& run, std::int64_t end_ns) {
  GPUPROF_RETURN_IF_ERROR(PushApiRows(pytorch_api_, derived, lane, 0, api_rows));
  rows_ += api_rows;
  rows_in_txn_ += api_rows;

  // STEP_TIME (§3.9): integer ids. Rare rows: a one-row statement is fine.
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement insert,
                             Statement::Prepare(conn_, "INSERT INTO STEP_TIME VALUES (?1, ?2, ?3)"));
    for (const StepRow& step : derived.steps) {
      insert.BindInt(1, step.id);
      insert.BindInt(2, step.start_ns);
      insert.BindInt(3, step.end_ns);
      GPUPROF_RETURN_IF_ERROR(insert.Run());
      ++rows_;
    }
  }

  // MEMORY_RECORD (§3.6), sorted by time (SortAllocatorEvents), then OP_MEMORY (§3.7).
  for (const trace::AllocatorEvent& event : alloc_events_) {
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t component_id, Id(StringSpace::kMemory, event.component));
    BatchInserter& m = memory_record_;
    m.SetU64(0, component_id);
    m.Set(1, event.time_ns);
    m.SetU64(2, event.total_allocated);
    m.SetU64(3, event.total_reserved);
    m.SetOptional(4, event.total_active);
    m.SetU64(5, event.stream_ptr);
    m.Set(6, event.device);
    GPUPROF_RETURN_IF_ERROR(Pushed(m));
  }
  for (const OpMemoryRow& row : derived.op_memory) {
    BatchInserter& o = op_memory_;
    o.SetU64(0, row.name_id);
    o.SetU64(1, row.size);
    o.Set(2, row.allocation_time);
    o.SetOptional(3, row.release_time);
    o.SetOptional(4, row.active_release_time);
    o.SetOptional(5, row.duration);
    o.SetOptional(6, row.active_duration);
    o.SetU64(7, row.allocation_total_allocated);
    o.SetU64(8, row.allocation_total_reserved);
    o.SetOptional(9, row.allocation_total_active);
    o.SetOptional(10, row.release_total_allocated);
    o.SetOptional(11, row.release_total_reserved);
    o.SetOptional(12, row.release_total_active);
    o.SetU64(13, row.stream_ptr);
    o.Set(14, row.device);
    GPUPROF_RETURN_IF_ERROR(Pushed(o));
  }
  GPUPROF_RETURN_IF_ERROR(WriteCollectives(lane.collectives(), lane.ops(), derived.connections, run));
  for (BatchInserter* inserter : Inserters()) GPUPROF_RETURN_IF_ERROR(inserter->Flush());

  // Per-run tables. RANK_DEVICE_MAP: exactly one row (msprof-analyze CROSS JOINs it, §3.8).
  auto run_one = [this](Statement& s) -> Status {
    GPUPROF_RETURN_IF_ERROR(s.Run());
    ++rows_;
    return OkStatus();
  };
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s,
                             Statement::Prepare(conn_, "INSERT INTO RANK_DEVICE_MAP VALUES (?1, ?2)"));
    s.BindInt(1, run.rank < 0 ? -1 : run.rank);
    s.BindInt(2, run.device < 0 ? -1 : run.device);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s,
                             Statement::Prepare(conn_, "INSERT INTO SESSION_TIME_INFO VALUES (?1, ?2)"));
    s.BindInt(1, run.start_ns);
    s.BindInt(2, end_ns);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(conn_, "INSERT INTO NPU_INFO VALUES (?1, ?2)"));
    for (const auto& [id, name] : run.devices) {
      s.BindInt(1, id);
      s.BindStaticText(2, name);
      GPUPROF_RETURN_IF_ERROR(run_one(s));
    }
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(conn_, "INSERT INTO HOST_INFO VALUES (?1, ?2)"));
    std::string uid = HostUid(run.hostname);
    s.BindStaticText(1, uid);
    s.BindStaticText(2, run.hostname);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement s, Statement::Prepare(conn_, "INSERT INTO META_DATA VALUES (?1, ?2)"));
    s.BindStaticText(1, kMetaGpuprofVersion);
    s.BindStaticText(2, GPUPROF_VERSION_STRING);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
    s.BindStaticText(1, kMetaGpuprofConfig);
    s.BindStaticText(2, run.config_json);
    GPUPROF_RETURN_IF_ERROR(run_one(s));
  }
  return OkStatus();
}

std::string ProfilerInfoJson(const trace::RunInfo& run, const OutputLayout& layout, std::int64_t end_ns) {
  // The configuration is embedded as given when it is a JSON object, else as a JSON string.
  std::string_view config = run.config_json;
  std::size_t first = config.find_first_not_of(" \t\r\n");
  std::string config_value = config.empty() || first == std::string_view::npos ? "{}"
                             : config[first] == '{'                            ? std::string(config)
                                                                               : base::JsonQuote(config);
  std::ostringstream out;
  out << "{\n"
      << "  \"config\": " << config_value << ",\n"
      << "  \"rank_id\": " << run.rank << ",\n"
      << "  \"device_id\": " << run.device << ",\n"
      << "  \"host_name\": " << base::JsonQuote(run.hostname) << ",\n"
      << "  \"pid\": " << run.pid << ",\n"
      << "  \"start_ns\": " << run.start_ns << ",\n"
      << "  \"end_ns\": " << end_ns << ",\n"
      << "  \"db\": "
      << base::JsonQuote(std::filesystem::path(layout.db_path).lexically_relative(layout.run_dir).string())
      << ",\n"
      << "  \"gpuprof_version\": " << base::JsonQuote(GPUPROF_VERSION_STRING) << "\n"
      << "}\n";
  return out.str();
}

// Three consumer threads: the SQLite thread (Run) takes every submitted batch, writes the
// device-side rows and passes TorchOps on to the op thread (RunLane), which interns and indexes
// them in parallel, and kernels on to the kernel side thread (KernelSink, in a side file). Finalize
// joins them, merges the kernel side file while it derives, writes PYTORCH_API on the calling
// thread while a second side file takes CONNECTION_IDS, merges that one and renames the file.
class ProfileWriterImpl final : public ProfileWriter {
 public:
  ProfileWriterImpl(WriterOptions options, OutputLayout layout, Connection conn, std::size_t max_queued)
      : options_(std::move(options)),
        layout_(std::move(layout)),
        sink_(std::move(conn), options_.batch_rows, device_strings_),
        kernel_sink_(device_strings_),
        queue_(max_queued),
        lane_queue_(std::numeric_limits<std::size_t>::max()) {}

  ~ProfileWriterImpl() override {
    if (finalized_) return;
    StopThreads();
    if (sink_.connection().is_open()) {
      if (!failed_.load()) {  // keep what was streamed readable
        sink_.WriteLaneRows(lane_.TakeRows()).IgnoreError();
        sink_.Commit().IgnoreError();
        if (FinishKernelSide().ok()) kernel_side_->MergeInto(sink_.connection()).IgnoreError();
      }
      StopSideFiles();
      sink_.ReleaseStatements();
      sink_.connection().Close().IgnoreError();
    }
    GPUPROF_LOG(kWarning) << "profile writer destroyed before Finalize; the incomplete profile stays at "
                          << layout_.partial_path;
  }

  // Create's cleanup when Start failed: nothing worth keeping, not even a .partial file.
  void Abandon() {
    finalized_ = true;
    StopThreads();
    StopSideFiles();
    sink_.ReleaseStatements();
    sink_.connection().Close().IgnoreError();
    unlink(layout_.partial_path.c_str());
  }

  // Runs on the creating thread, before any Submit.
  Status Start() {
    GPUPROF_RETURN_IF_ERROR(sink_.Prepare());
    // All side files now, while creating them is cheap (at Finalize the first file creation
    // after the bulk of the writing stalled for ~0.1 s). The two used only at Finalize idle until then.
    GPUPROF_ASSIGN_OR_RETURN(kernel_side_, SideFile::Create(sink_.connection(), KernelSidePath(layout_),
                                                            {"COMPUTE_TASK_INFO", "STRING_IDS"}));
    GPUPROF_ASSIGN_OR_RETURN(connection_side_, SideFile::Create(sink_.connection(), ConnectionSidePath(layout_),
                                                                {"CONNECTION_IDS"}));
    GPUPROF_ASSIGN_OR_RETURN(api_side_,
                             SideFile::Create(sink_.connection(), ApiSidePath(layout_), {"PYTORCH_API"}));
    GPUPROF_RETURN_IF_ERROR(sink_.Begin());
    try {
      lane_thread_ = std::thread([this] { RunLane(); });
      thread_ = std::thread([this] { Run(); });
    } catch (const std::system_error& e) {
      return UnavailableError(std::string("cannot start the writer threads: ") + e.what());
    }
    return OkStatus();
  }

  void Submit(std::vector<trace::Record> records) override {
    if (records.empty()) return;
    std::size_t n = records.size();
    PushResult result =
        failed_.load(std::memory_order_relaxed) ? PushResult::kClosed : queue_.Push(std::move(records));
    if (result == PushResult::kQueued) return;
    dropped_.fetch_add(n, std::memory_order_relaxed);
    if (!warned_drop_.exchange(true)) {
      GPUPROF_LOG(kWarning) << "profile writer for " << layout_.db_path << " is dropping records ("
                            << (result == PushResult::kFull ? "queue full" : "writer stopped")
                            << "); the count is in the writer's stats";
    }
  }

  StatusOr<std::string> Finalize(std::int64_t end_ns) override {
    if (finalized_) return FailedPreconditionError("Finalize called twice for " + layout_.db_path);
    finalized_ = true;
    PhaseLog phases;
    StopThreads();
    phases.Mark("drain");
    Status status = FinishFile(end_ns == 0 ? base::EpochNowNs() : end_ns, phases);
    GPUPROF_LOG(kDebug) << "finalize " << layout_.db_path << ": " << phases.str();
    if (!status.ok()) {
      sink_.ReleaseStatements();
      sink_.connection().Close().IgnoreError();
      std::error_code ec;
      if (std::filesystem::exists(layout_.db_path, ec)) {
        GPUPROF_LOG(kWarning) << "profile written to " << layout_.db_path << " but " << status.message();
      } else {
        GPUPROF_LOG(kWarning) << "profile not finalized; the incomplete profile stays at "
                              << layout_.partial_path << ": " << status.message();
      }
      return status;
    }
    return layout_.db_path;
  }

  const OutputLayout& layout() const override { return layout_; }

  WriterStats stats() const override {
    WriterStats s;
    s.records = written_records_.load(std::memory_order_relaxed);
    s.rows = rows_.load(std::memory_order_relaxed);
    s.dropped_records = dropped_.load(std::memory_order_relaxed);
    s.bytes = bytes_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // The SQLite thread closes the op thread's queue when it ends (Run), so joining in this order
  // drains both.
  void StopThreads() {
    queue_.Close();
    if (thread_.joinable()) thread_.join();
    lane_queue_.Close();
    if (lane_thread_.joinable()) lane_thread_.join();
  }

  // The SQLite thread: drains the queue until it is closed and empty.
  void Run() noexcept {
    base::LowerThisThreadsPriority();  // the profiled program's threads come first
    std::deque<std::vector<Record>> batches;
    while (queue_.PopAll(&batches)) {
      for (std::vector<Record>& batch : batches) {
        if (failed_.load(std::memory_order_relaxed)) {
          dropped_.fetch_add(batch.size(), std::memory_order_relaxed);
          continue;
        }
        std::uint64_t done = 0;
        Status status;
        const std::uint64_t first_task_id = sink_.next_global_task_id();
        try {
          for (Record& record : batch) {
            status = sink_.Write(record);
            if (!status.ok()) break;
            ++done;
          }
          if (status.ok()) status = HandOverOps();
          if (status.ok()) HandOverToKernelSide(std::move(batch), first_task_id);
        } catch (const std::exception& e) {  // bad_alloc while growing an index
          status = ResourceExhaustedError(std::string("profile writer out of memory: ") + e.what());
        }
        written_records_.fetch_add(done, std::memory_order_relaxed);
        rows_.store(sink_.rows() + kernel_sink_.rows(), std::memory_order_relaxed);
        if (!status.ok()) Fail(std::move(status), batch.size() - done);
      }
      batches.clear();
    }
    lane_queue_.Close();
  }

  // Passes this batch's TorchOps to the op thread and writes the STRING_IDS / PYTORCH_CALLCHAINS
  // rows it has produced meanwhile (its strings are few: op names, shapes, frames).
  Status HandOverOps() {
    std::vector<trace::TorchOp> ops = sink_.TakeLaneBatch();
    if (!ops.empty()) lane_queue_.Push(std::move(ops));
    GPUPROF_RETURN_IF_ERROR(sink_.WriteLaneRows(lane_.TakeRows()));
    return sink_.MaybeCommit();
  }

  // A written batch goes on to the kernel side thread: its kernels' COMPUTE_TASK_INFO rows, and
  // freeing the records.
  void HandOverToKernelSide(std::vector<Record>&& batch, std::uint64_t first_task_id) {
    kernel_side_->Post([this, batch = std::move(batch), first_task_id,
                        type_id = sink_.kernel_type_id()](const Connection& side) mutable {
      return kernel_sink_.Write(side, batch, first_task_id, type_id);
    });
  }

  // The op thread.
  void RunLane() noexcept {
    base::LowerThisThreadsPriority();
    std::deque<std::vector<trace::TorchOp>> batches;
    while (lane_queue_.PopAll(&batches)) {
      for (std::vector<trace::TorchOp>& batch : batches) {
        if (failed_.load(std::memory_order_relaxed)) continue;
        try {
          lane_.Process(batch);
        } catch (const std::exception& e) {  // bad_alloc
          Fail(ResourceExhaustedError(std::string("profile writer out of memory: ") + e.what()),
               batch.size());
        }
      }
      batches.clear();
    }
  }

  void Fail(Status status, std::uint64_t lost) {
    dropped_.fetch_add(lost, std::memory_order_relaxed);
    GPUPROF_LOG(kError) << "profile writer stopped: " << status.message();
    std::lock_guard<std::mutex> lock(error_mu_);
    if (error_.ok()) error_ = std::move(status);  // the first error wins
    failed_.store(true);
  }

  Status FinishFile(std::int64_t end_ns, PhaseLog& phases) {
    if (failed_.load()) {
      std::lock_guard<std::mutex> lock(error_mu_);
      return error_;
    }
    Connection& conn = sink_.connection();
    GPUPROF_RETURN_IF_ERROR(sink_.WriteLaneRows(lane_.TakeRows()));
    GPUPROF_RETURN_IF_ERROR(sink_.Commit());
    GPUPROF_RETURN_IF_ERROR(FinishKernelSide());
    phases.Mark("commit");
    // The side files' threads read `derived`: they are joined (Finish, or StopSideFiles on the
    // way out) before it goes.
    Derived derived;
    struct JoinSideFiles {
      ProfileWriterImpl* writer;
      ~JoinSideFiles() { writer->StopSideFiles(); }
    } join_side_files{this};

    // The kernel side file is merged while the tables are derived (the main connection is idle
    // meanwhile; the derivation touches no SQLite). As soon as they are derived, CONNECTION_IDS
    // and the second part of PYTORCH_API go into their side files, the merge perhaps still running;
    // then the first part of PYTORCH_API and the rest into the main file.
    sink_.SortAllocatorEvents();
    Status merged;
    std::int64_t merge_ms = -1;
    std::thread merger;
    try {
      merger = std::thread([this, &merged, &conn, &merge_ms] {
        std::int64_t start = base::MonotonicNowNs();
        merged = kernel_side_->MergeInto(conn);
        merge_ms = (base::MonotonicNowNs() - start) / 1'000'000;
        if (merged.ok()) StartWriteback(layout_.partial_path);
      });
    } catch (const std::system_error&) {
      merged = kernel_side_->MergeInto(conn);  // no second thread: one after the other
    }
    Status derive_status;
    std::int64_t derive_start = base::MonotonicNowNs();
    try {
      derived = sink_.Derive(lane_);
    } catch (const std::exception& e) {  // bad_alloc
      derive_status = ResourceExhaustedError("deriving tables for " + layout_.partial_path + ": " + e.what());
    }
    std::int64_t derive_ms = (base::MonotonicNowNs() - derive_start) / 1'000'000;
    const std::size_t api_rows = lane_.ops().size();
    const std::size_t api_main_rows = api_rows * kApiMainShare / 100;
    if (derive_status.ok()) {
      connection_side_->Post([&derived](const Connection& side) {
        return WriteConnectionRows(side, derived.connections.rows);
      });
      api_side_->Post([this, &derived, api_main_rows, api_rows](const Connection& side) {
        return WriteApiRows(side, derived, lane_, api_main_rows, api_rows);
      });
    }
    if (merger.joinable()) merger.join();
    GPUPROF_LOG(kDebug) << "derive " << derive_ms << " ms beside the kernel merge " << merge_ms << " ms";
    GPUPROF_RETURN_IF_ERROR(derive_status);
    GPUPROF_RETURN_IF_ERROR(merged);
    kernel_side_.reset();
    phases.Mark("derive and merge kernels");

    Status final_status = sink_.Begin();
    if (final_status.ok()) final_status = sink_.WriteFinal(derived, lane_, api_main_rows, options_.run, end_ns);
    if (final_status.ok()) final_status = sink_.Commit();
    Status api_status = api_side_->Finish();
    Status connection_status = connection_side_->Finish();
    GPUPROF_RETURN_IF_ERROR(final_status);
    GPUPROF_RETURN_IF_ERROR(api_status);
    GPUPROF_RETURN_IF_ERROR(connection_status);
    phases.Mark("final rows");
    // The rest of PYTORCH_API after the main file's part: the transfer appends in order.
    GPUPROF_RETURN_IF_ERROR(api_side_->MergeInto(conn));
    GPUPROF_RETURN_IF_ERROR(connection_side_->MergeInto(conn));
    phases.Mark("merge connections");
    rows_.store(sink_.rows() + kernel_sink_.rows() + derived.connections.rows.size() + (api_rows - api_main_rows),
                std::memory_order_relaxed);
    if (sink_.duplicate_connection_ids() > 0) {
      GPUPROF_LOG(kWarning) << sink_.duplicate_connection_ids()
                            << " CANN_API rows with a repeated correlation id were skipped in "
                            << layout_.db_path;
    }
    if (std::uint64_t overflowed = sink_.string_overflows() + lane_.overflowed(); overflowed > 0) {
      GPUPROF_LOG(kWarning) << overflowed << " strings exceeded their STRING_IDS id space in "
                            << layout_.db_path << " and were written as 4294967295";
    }
    sink_.ReleaseStatements();
    GPUPROF_RETURN_IF_ERROR(conn.Close());
    phases.Mark("close");
    // Only a complete, durable file gets the final name: fsync the data, rename, fsync the directory
    // so the rename itself survives a crash.
    GPUPROF_RETURN_IF_ERROR(SyncPath(layout_.partial_path, /*directory=*/false));
    if (std::rename(layout_.partial_path.c_str(), layout_.db_path.c_str()) != 0) {
      return DataLossError("rename " + layout_.partial_path + " -> " + layout_.db_path + ": " +
                           ErrnoText(errno));
    }
    GPUPROF_RETURN_IF_ERROR(SyncPath(layout_.output_dir, /*directory=*/true));
    phases.Mark("fsync and rename");
    std::error_code ec;
    auto size = std::filesystem::file_size(layout_.db_path, ec);
    if (!ec) bytes_.store(size, std::memory_order_relaxed);
    return WriteFileAtomically(layout_.info_json_path, ProfilerInfoJson(options_.run, layout_, end_ns));
  }

  // Stops the side files' threads and deletes their files (merged or not).
  void StopSideFiles() {
    kernel_side_.reset();
    connection_side_.reset();
    api_side_.reset();
  }

  // The kernel side thread's last job releases its statements, so its connection closes cleanly.
  Status FinishKernelSide() {
    kernel_side_->Post([this](const Connection&) {
      kernel_sink_.Release();
      return OkStatus();
    });
    return kernel_side_->Finish();
  }

  static std::string KernelSidePath(const OutputLayout& layout) { return layout.partial_path + "-kernels"; }
  static std::string ConnectionSidePath(const OutputLayout& layout) {
    return layout.partial_path + "-connections";
  }
  static std::string ApiSidePath(const OutputLayout& layout) { return layout.partial_path + "-api"; }

  // Percent of the PYTORCH_API rows Finalize writes into the main file; the rest go into a side
  // file meanwhile (the main connection first merges the kernel side file).
  static constexpr std::size_t kApiMainShare = 50;

  const WriterOptions options_;
  const OutputLayout layout_;
  SharedStrings device_strings_;  // the SQLite thread's and the kernel side thread's
  RowSink sink_;  // SQLite thread, then Finalize
  KernelSink kernel_sink_;  // kernel side thread
  // Created by Start, merged and deleted by Finalize (deleted unmerged by StopSideFiles).
  std::unique_ptr<SideFile> kernel_side_;      // COMPUTE_TASK_INFO and its STRING_IDS, while streaming
  std::unique_ptr<SideFile> connection_side_;  // CONNECTION_IDS, at Finalize
  std::unique_ptr<SideFile> api_side_;         // the second part of PYTORCH_API, at Finalize
  OpLane lane_;   // op thread, then Finalize
  WorkQueue<Record> queue_;
  WorkQueue<trace::TorchOp> lane_queue_;  // unbounded: fed only by the SQLite thread from queue_
  std::thread thread_;
  std::thread lane_thread_;
  bool finalized_ = false;  // Create/Finalize/destructor thread only

  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  Status error_;  // guarded by error_mu_; the first failure of either thread
  std::atomic<bool> warned_drop_{false};
  std::atomic<std::uint64_t> written_records_{0};
  std::atomic<std::uint64_t> rows_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> bytes_{0};
};


}  // namespace

namespace internal {

StatusOr<std::unique_ptr<ProfileWriter>> CreateProfileWriter(const WriterOptions& options,
                                                             std::size_t max_queued_records) {
  if (options.out_dir.empty()) return InvalidArgumentError("profile writer: out_dir is empty");
  if (options.batch_rows == 0) return InvalidArgumentError("profile writer: batch_rows must be > 0");
  if (max_queued_records == 0) return InvalidArgumentError("profile writer: the queue limit must be > 0");

  WriterOptions opts = options;
  if (opts.run.hostname.empty()) opts.run.hostname = LocalHostname();
  if (opts.run.pid == 0) opts.run.pid = static_cast<std::uint32_t>(getpid());
  if (opts.run.start_ns == 0) opts.run.start_ns = base::EpochNowNs();
  OutputLayout layout = MakeOutputLayout(opts.out_dir, opts.worker_name, opts.run.hostname, opts.run.pid,
                                         opts.run.start_ns, opts.run.rank);

  std::error_code ec;
  std::filesystem::create_directories(layout.output_dir, ec);
  if (ec) {
    return FailedPreconditionError("cannot create profile directory " + layout.output_dir + ": " +
                                   ec.message());
  }
  if (std::filesystem::exists(layout.db_path, ec)) {
    return AlreadyExistsError("profile " + layout.db_path + " already exists; not overwriting it");
  }
  // A stale .partial of the same name is an earlier run that died: start over.
  if (unlink(layout.partial_path.c_str()) != 0 && errno != ENOENT) {
    return FailedPreconditionError("cannot remove stale " + layout.partial_path + ": " + ErrnoText(errno));
  }

  GPUPROF_ASSIGN_OR_RETURN(Connection conn, Connection::OpenForWrite(layout.partial_path));
  Status status = conn.Exec(kBulkWritePragmas);
  if (status.ok()) status = conn.Exec("BEGIN");
  if (status.ok()) status = CreateSchema(conn);
  // Indexes before the rows, not after: see schema.h (measured: TaskIndex kept up to date while
  // tasks stream in, nearly in start order, costs a third of sorting it at Finalize).
  if (status.ok()) status = CreateIndexes(conn);
  if (status.ok()) status = conn.Exec("COMMIT");
  if (!status.ok()) {
    conn.Close().IgnoreError();
    unlink(layout.partial_path.c_str());  // nothing worth keeping: not even the schema is complete
    return status.WithContext("creating profile " + layout.partial_path);
  }

  auto writer = std::make_unique<ProfileWriterImpl>(std::move(opts), std::move(layout), std::move(conn),
                                                    max_queued_records);
  if (Status started = writer->Start(); !started.ok()) {
    writer->Abandon();
    return started.WithContext("starting the writer for " + writer->layout().partial_path);
  }
  return std::unique_ptr<ProfileWriter>(std::move(writer));
}

}  // namespace internal

StatusOr<std::unique_ptr<ProfileWriter>> ProfileWriter::Create(const WriterOptions& options) {
  return internal::CreateProfileWriter(options, internal::kDefaultMaxQueuedRecords);
}

}  // namespace gpuprof::db
