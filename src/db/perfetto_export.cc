#include "db/perfetto_export.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "base/errno_text.h"
#include "base/json.h"
#include "db/db_constants.h"
#include "db/output_file.h"
#include "db/task_op_link.h"
#include "db/thread_names.h"
#include "db/trace_args.h"

namespace gpuprof::db {
namespace {

using base::ErrnoText;

constexpr std::int64_t kNsPerSecond = 1'000'000'000;

// Synthetic ids. Linux pids and tids stay below 2^22, so these never collide with real ones.
constexpr std::uint32_t kSyntheticPidBase = 1u << 24;
constexpr std::uint32_t kGcTid = 0x7fff0001u;
constexpr std::uint32_t kReplayTid = 0x7fff0002u;
// A string from the DB longer than this is cut in the trace (a multi-megabyte op name repeated in
// every event made traces of gigabytes); the DB keeps it whole.
constexpr std::size_t kMaxTraceStringBytes = 2048;

void AppendInt(std::string* out, std::int64_t value) {
  char text[24];
  auto result = std::to_chars(text, text + sizeof(text), value);
  out->append(text, result.ptr);
}

void AppendUint(std::string* out, std::uint64_t value) {
  char text[24];
  auto result = std::to_chars(text, text + sizeof(text), value);
  out->append(text, result.ptr);
}

// One trace event, written field by field into the buffer. Keys are literals and need no escaping.
// Strings cut to kMaxTraceStringBytes, for the export's note.
struct CutStrings {
  std::uint64_t events = 0;
  std::set<std::size_t> distinct;  // hashes of the whole strings
  std::size_t longest_bytes = 0;
};

class Event {
 public:
  Event(std::string* out, bool* first_event, std::int64_t time_base_ns, CutStrings* cut = nullptr)
      : out_(out), base_(time_base_ns), cut_(cut) {
    out_->append(*first_event ? "\n{" : ",\n{");
    *first_event = false;
  }
  ~Event() { out_->push_back('}'); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  Event& Str(std::string_view key, std::string_view value) {
    Key(key);
    if (value.size() <= kMaxTraceStringBytes) {
      base::AppendJsonString(out_, value);
      return *this;
    }
    std::size_t cut = kMaxTraceStringBytes;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0U) == 0x80U) --cut;  // a code point
    if (cut_ != nullptr) {
      ++cut_->events;
      cut_->distinct.insert(std::hash<std::string_view>{}(value));
      cut_->longest_bytes = std::max(cut_->longest_bytes, value.size());
    }
    base::AppendJsonString(out_, std::string(value.substr(0, cut)) + "... [cut from " +
                                     std::to_string(value.size()) + " bytes]");
    return *this;
  }
  // A value already in JSON (an array of Input Dims).
  Event& Json(std::string_view key, std::string_view json) {
    Key(key);
    out_->append(json);
    return *this;
  }
  Event& Int(std::string_view key, std::int64_t value) {
    Key(key);
    AppendInt(out_, value);
    return *this;
  }
  Event& Uint(std::string_view key, std::uint64_t value) {
    Key(key);
    AppendUint(out_, value);
    return *this;
  }
  Event& Ts(std::int64_t ns) {
    Key("ts");
    AppendMicros(out_, ns - base_);
    return *this;
  }
  Event& Dur(std::int64_t ns) {
    Key("dur");
    AppendMicros(out_, std::max<std::int64_t>(0, ns));
    return *this;
  }
  Event& BeginArgs() { return BeginObject("args"); }
  Event& EndArgs() { return EndObject(); }
  // An object member (args, or one nested in args: "args":{"metrics":{...}}), closed by EndObject.
  Event& BeginObject(std::string_view key) {
    Key(key);
    out_->push_back('{');
    first_field_ = true;
    return *this;
  }
  Event& EndObject() {
    out_->push_back('}');
    first_field_ = false;
    return *this;
  }
  // A number under a key from the DB (escaped); JSON has no NaN or infinity: those become null.
  Event& Double(std::string_view key_text, double value) {
    if (!first_field_) out_->push_back(',');
    first_field_ = false;
    base::AppendJsonString(out_, key_text);
    out_->push_back(':');
    if (!std::isfinite(value)) {
      out_->append("null");
      return *this;
    }
    char text[32];
    auto result = std::to_chars(text, text + sizeof(text), value);
    out_->append(text, result.ptr);
    return *this;
  }

 private:
  void Key(std::string_view key) {
    if (!first_field_) out_->push_back(',');
    first_field_ = false;
    out_->push_back('"');
    out_->append(key);
    out_->append("\":");
  }

  std::string* out_;
  std::int64_t base_;
  CutStrings* cut_;
  bool first_field_ = true;
};

std::string HexId(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// ---- Processes and threads seen while streaming; named by metadata events at the end ----------

struct DbContext {
  std::size_t index = 0;
  std::string label;  // "rank 0" or the file name
  std::string host_name;
  std::map<std::int64_t, std::string> device_names;  // NPU_INFO
  ThreadNames thread_names;                          // META_DATA gpuprof_thread_names
  std::string thread_names_problem;                  // why they could not be read ("": none)
};

class Tracks {
 public:
  std::uint32_t HostPid(const DbContext& db, std::int64_t real_pid) {
    auto key = std::make_pair(db.index, real_pid);
    auto it = host_pids_.find(key);
    if (it != host_pids_.end()) return it->second;
    std::uint32_t pid = 0;
    const bool plausible = real_pid > 0 && real_pid < static_cast<std::int64_t>(kSyntheticPidBase);
    if (plausible && used_pids_.count(static_cast<std::uint32_t>(real_pid)) == 0) {
      pid = static_cast<std::uint32_t>(real_pid);
    } else {
      pid = kSyntheticPidBase + next_synthetic_++;  // another rank's process had this pid
    }
    used_pids_.insert(pid);
    host_pids_.emplace(key, pid);
    std::string name = db.label + " pid " + std::to_string(real_pid);
    if (!db.host_name.empty()) name += " (" + db.host_name + ")";
    processes_.push_back({pid, std::move(name), SortIndex(db, 0)});
    if (!db.thread_names.empty()) thread_names_.emplace(pid, db.thread_names);
    return pid;
  }

  std::uint32_t DevicePid(const DbContext& db, std::int64_t device) {
    auto key = std::make_pair(db.index, device);
    auto it = device_pids_.find(key);
    if (it != device_pids_.end()) return it->second;
    std::uint32_t pid = kSyntheticPidBase + next_synthetic_++;
    used_pids_.insert(pid);
    device_pids_.emplace(key, pid);
    std::string name = db.label + " device " + std::to_string(device);
    auto named = db.device_names.find(device);
    if (named != db.device_names.end() && !named->second.empty()) name += " (" + named->second + ")";
    processes_.push_back({pid, std::move(name), SortIndex(db, 1)});
    return pid;
  }

  void Thread(std::uint32_t pid, std::uint32_t tid, std::string_view kind) {
    if (last_thread_ == std::make_pair(pid, tid)) return;
    last_thread_ = {pid, tid};
    auto [it, inserted] = threads_.try_emplace({pid, tid});
    if (!inserted) return;
    if (kind == "stream") {
      it->second = {"stream " + std::to_string(tid), static_cast<std::int64_t>(tid)};
    } else if (tid == kGcTid) {
      it->second = {"Python GC", std::int64_t{1} << 40};
    } else if (tid == kReplayTid) {
      it->second = {"gpuprof replay", std::int64_t{1} << 41};
    } else {
      it->second = {"thread " + std::to_string(tid), static_cast<std::int64_t>(tid)};
    }
  }

  // `pid` is a Python process: the Python package recorded its torch ops or Python functions.
  void MarkPython(std::uint32_t pid) { python_pids_.insert(pid); }

  void EmitMetadata(std::string* out, bool* first_event) {
    // A Python process's main thread (tid == pid) is the one Python names "MainThread"; torch's
    // own threads (autograd) have no Python name and keep their number.
    for (const auto& [key, pid] : host_pids_) {
      if (python_pids_.count(pid) == 0 || key.second <= 0) continue;
      auto main = threads_.find({pid, static_cast<std::uint32_t>(key.second)});
      if (main != threads_.end()) main->second.name = "MainThread";
    }
    // The names the program gave its threads (Python's threading names), where recorded.
    for (const auto& [pid, names] : thread_names_) {
      for (auto it = threads_.lower_bound({pid, 0}); it != threads_.end() && it->first.first == pid; ++it) {
        auto named = names.find(it->first.second);
        if (named != names.end() && !named->second.empty()) it->second.name = named->second;
      }
    }
    for (const Process& process : processes_) {
      {
        Event event(out, first_event, 0);
        event.Str("ph", "M")
            .Str("name", "process_name")
            .Uint("pid", process.pid)
            .BeginArgs()
            .Str("name", process.name)
            .EndArgs();
      }
      Event event(out, first_event, 0);
      event.Str("ph", "M")
          .Str("name", "process_sort_index")
          .Uint("pid", process.pid)
          .BeginArgs()
          .Int("sort_index", process.sort_index)
          .EndArgs();
    }
    for (const auto& [key, thread] : threads_) {
      {
        Event event(out, first_event, 0);
        event.Str("ph", "M")
            .Str("name", "thread_name")
            .Uint("pid", key.first)
            .Uint("tid", key.second)
            .BeginArgs()
            .Str("name", thread.name)
            .EndArgs();
      }
      Event event(out, first_event, 0);
      event.Str("ph", "M")
          .Str("name", "thread_sort_index")
          .Uint("pid", key.first)
          .Uint("tid", key.second)
          .BeginArgs()
          .Int("sort_index", thread.sort_index)
          .EndArgs();
    }
  }

 private:
  struct Process {
    std::uint32_t pid;
    std::string name;
    std::int64_t sort_index;
  };
  struct ThreadInfo {
    std::string name;
    std::int64_t sort_index = 0;
  };
  static std::int64_t SortIndex(const DbContext& db, int kind) {
    return static_cast<std::int64_t>(db.index) * 2 + kind;
  }

  std::map<std::pair<std::size_t, std::int64_t>, std::uint32_t> host_pids_;
  std::map<std::pair<std::size_t, std::int64_t>, std::uint32_t> device_pids_;
  std::set<std::uint32_t> used_pids_;
  std::uint32_t next_synthetic_ = 0;
  std::vector<Process> processes_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, ThreadInfo> threads_;
  std::map<std::uint32_t, ThreadNames> thread_names_;  // per host pid, from its DB
  std::pair<std::uint32_t, std::uint32_t> last_thread_{0, 0};
  std::set<std::uint32_t> python_pids_;
};

std::int64_t PidOf(std::int64_t global_tid) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(global_tid) >> 32);
}
std::uint32_t TidOf(std::int64_t global_tid) {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(global_tid) & 0xffffffffu);
}

// ---- SQL helpers -------------------------------------------------------------------------------

// The columns of each table, read once, so optional columns become NULL in the SELECT list
// instead of failing the statement on a DB from another writer version.
class Schema {
 public:
  static StatusOr<Schema> Load(const ProfileReader& reader, const std::vector<std::string_view>& tables) {
    Schema schema;
    for (std::string_view table : tables) {
      GPUPROF_ASSIGN_OR_RETURN(std::vector<ColumnInfo> columns, reader.Columns(table));
      std::set<std::string> names;
      std::size_t keys = 0;
      bool id_is_key = false;
      for (ColumnInfo& column : columns) {
        keys += column.primary_key ? 1 : 0;
        id_is_key = id_is_key || (column.primary_key && column.name == "id");
        names.insert(std::move(column.name));
      }
      if (table == "STRING_IDS") schema.unique_string_ids_ = keys == 1 && id_is_key;
      if (!names.empty()) schema.tables_.emplace(std::string(table), std::move(names));
    }
    schema.has_strings_ = schema.Has("STRING_IDS", "value");
    return schema;
  }

  bool HasTable(std::string_view table) const { return tables_.count(std::string(table)) > 0; }
  bool Has(std::string_view table, std::string_view column) const {
    auto it = tables_.find(std::string(table));
    return it != tables_.end() && it->second.count(std::string(column)) > 0;
  }
  bool HasAll(std::string_view table, const std::vector<std::string_view>& columns) const {
    return std::all_of(columns.begin(), columns.end(), [&](std::string_view c) { return Has(table, c); });
  }
  // "alias.column", or "NULL" when the table lacks it.
  std::string Col(std::string_view table, std::string_view alias, std::string_view column) const {
    return Has(table, column) ? std::string(alias) + "." + std::string(column) : "NULL";
  }
  bool has_strings() const noexcept { return has_strings_; }
  // STRING_IDS.id is its primary key (as the format declares it), so no id has two rows.
  bool unique_string_ids() const noexcept { return unique_string_ids_; }

 private:
  std::map<std::string, std::set<std::string>> tables_;
  bool has_strings_ = false;
  bool unique_string_ids_ = false;
};

// A STRING_IDS lookup for `id_expr` as a LEFT JOIN aliased `alias`: {select expression, join}.
std::pair<std::string, std::string> StringJoin(const Schema& schema, const std::string& id_expr,
                                               const std::string& alias) {
  if (id_expr == "NULL") return {"NULL", ""};
  if (!schema.has_strings()) return {"CAST(" + id_expr + " AS TEXT)", ""};
  // A STRING_IDS without its primary key may hold an id twice; joined as it is, every repeat
  // multiplied the rows (an op's name, shapes and dtypes each k times: k^3 events). Each id then
  // resolves once, to its smallest value (`gpuprof check` names the repeated ids).
  const std::string strings = schema.unique_string_ids()
                                  ? "STRING_IDS"
                                  : "(SELECT id, MIN(value) AS value FROM STRING_IDS GROUP BY id)";
  return {alias + ".value", " LEFT JOIN " + strings + " " + alias + " ON " + alias + ".id = " + id_expr};
}

// ---- A replayed launch's hardware counters, as slice args ----------------------------------------

// Looks up one launch's GPUPROF_REPLAY_METRIC rows (through GpuprofReplayMetricIndex) and its
// counterStatus, for the slices of that launch: what is read per slice is one launch's metrics,
// so memory stays bounded. A DB without the table or the column (written before hardware
// counters) adds nothing.
class ReplayCounters {
 public:
  Status Prepare(const ProfileReader& reader, const Schema& schema) {
    *this = {};
    if (!schema.Has("GPUPROF_REPLAY_KERNEL", "id")) return OkStatus();
    if (schema.HasAll("GPUPROF_REPLAY_METRIC", {"kernelId", "name", "unit", "value"})) {
      auto [name, name_join] = StringJoin(schema, "m.name", "mn");
      auto [unit, unit_join] = StringJoin(schema, "m.unit", "mu");
      GPUPROF_ASSIGN_OR_RETURN(
          metrics_, reader.Prepare("SELECT " + name + ", " + unit + ", m.value FROM GPUPROF_REPLAY_METRIC m" +
                                   name_join + unit_join + " WHERE m.kernelId = ?1 ORDER BY m.rowid"));
      has_metrics_ = true;
    }
    if (schema.Has("GPUPROF_REPLAY_KERNEL", "counterStatus")) {
      GPUPROF_ASSIGN_OR_RETURN(
          status_, reader.Prepare("SELECT counterStatus FROM GPUPROF_REPLAY_KERNEL WHERE id = ?1 AND "
                                  "counterStatus IS NOT NULL AND counterStatus != ''"));
      has_status_ = true;
    }
    return OkStatus();
  }

  // An SQL condition on GPUPROF_REPLAY_KERNEL's columns: the launches with something to add; ""
  // when no launch can have any.
  std::string LaunchFilter() const {
    std::string filter;
    if (has_metrics_) filter = "id IN (SELECT kernelId FROM GPUPROF_REPLAY_METRIC)";
    if (has_status_) {
      filter +=
          (filter.empty() ? "" : " OR ") + std::string("(counterStatus IS NOT NULL AND counterStatus != '')");
    }
    return filter;
  }

  // Adds "counter status" (when set) and "metrics": {"<name> (<unit>)": value, ...} (when any) to
  // the args being written.
  Status AppendArgs(std::int64_t kernel_id, Event* event) {
    if (has_status_) {
      status_.Reset();
      status_.BindInt(1, kernel_id);
      GPUPROF_ASSIGN_OR_RETURN(bool row, status_.Step());
      if (row) event->Str("counter status", status_.Text(0));
    }
    if (!has_metrics_) return OkStatus();
    metrics_.Reset();
    metrics_.BindInt(1, kernel_id);
    bool any = false;
    std::string key;
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, metrics_.Step());
      if (!row) break;
      if (metrics_.IsNull(2)) continue;  // a NaN the writer was given
      if (!any) event->BeginObject("metrics");
      any = true;
      key.assign(metrics_.IsNull(0) ? std::string_view("[unnamed metric]") : metrics_.Text(0));
      if (!metrics_.IsNull(1) && !metrics_.Text(1).empty()) {
        key.append(" (");
        key.append(metrics_.Text(1));
        key.append(")");
      }
      event->Double(key, metrics_.Double(2));
    }
    if (any) event->EndObject();
    return OkStatus();
  }

 private:
  Query metrics_;
  Query status_;
  bool has_metrics_ = false;
  bool has_status_ = false;
};

// ---- The exporter --------------------------------------------------------------------------------

class Exporter {
 public:
  Exporter(OutputFile* file, std::int64_t time_base_ns, ExportSummary* summary, base::Progress* progress)
      : file_(file), out_(file->buffer()), base_(time_base_ns), summary_(summary), progress_(progress) {}

  Status ExportDb(const ProfileReader& reader, DbContext& db) {
    GPUPROF_ASSIGN_OR_RETURN(
        Schema schema,
        Schema::Load(reader,
                     {"STRING_IDS", "PYTORCH_API", "CANN_API", "TASK", "COMPUTE_TASK_INFO", "MEMCPY_INFO",
                      "ENUM_MEMCPY_OPERATION", "CONNECTION_IDS", "MEMORY_RECORD", "MSTX_EVENTS", "GC_RECORD",
                      "GPUPROF_REPLAY_KERNEL", "GPUPROF_REPLAY_PASS", "GPUPROF_REPLAY_METRIC"}));
    GPUPROF_RETURN_IF_ERROR(counters_.Prepare(reader, schema));
    // Each part is a stage of the progress shown, counted in rows read.
    auto stage = [&](std::string_view part) {
      base::Progress::StageOf(progress_, db.label + ": " + std::string(part));
    };
    stage("ops (PYTORCH_API)");
    GPUPROF_RETURN_IF_ERROR(ExportOps(reader, schema, db));
    stage("API calls (CANN_API)");
    GPUPROF_RETURN_IF_ERROR(ExportApiCalls(reader, schema, db));
    stage("device tasks (TASK)");
    GPUPROF_RETURN_IF_ERROR(ExportTasks(reader, schema, db));
    stage("launch flows");
    GPUPROF_RETURN_IF_ERROR(ExportTaskFlows(reader, schema, db));
    stage("forward/backward flows");
    GPUPROF_RETURN_IF_ERROR(ExportOpFlows(reader, schema, db));
    stage("memory (MEMORY_RECORD)");
    GPUPROF_RETURN_IF_ERROR(ExportMemory(reader, schema, db));
    stage("marks (MSTX_EVENTS)");
    GPUPROF_RETURN_IF_ERROR(ExportMstx(reader, schema, db));
    stage("GC pauses (GC_RECORD)");
    GPUPROF_RETURN_IF_ERROR(ExportGc(reader, schema, db));
    stage("replay results");
    GPUPROF_RETURN_IF_ERROR(ExportReplay(reader, schema, db));
    counters_ = {};  // its statements belong to this DB's reader
    return OkStatus();
  }

  void Finish() {
    tracks_.EmitMetadata(out_, &first_event_);
    if (cut_.events > 0) {
      summary_->notes.push_back(std::to_string(cut_.distinct.size()) + " string(s) longer than " +
                                std::to_string(kMaxTraceStringBytes) + " bytes (the longest " +
                                std::to_string(cut_.longest_bytes) + ") were cut in " +
                                std::to_string(cut_.events) + " event(s); the DB holds them whole");
    }
  }
  bool* first_event() noexcept { return &first_event_; }

 private:
  Event NewEvent() { return {out_, &first_event_, base_, &cut_}; }

  bool Require(const Schema& schema, const DbContext& db, std::string_view table,
               const std::vector<std::string_view>& columns) {
    if (schema.HasAll(table, columns)) return true;
    summary_->notes.push_back(db.label + ": " + std::string(table) +
                              (schema.HasTable(table) ? " lacks columns this export reads" : " is absent") +
                              "; not exported");
    return false;
  }

  // Runs `sql`, calling `row(query)` per row (which may return a Status that stops the stream) and
  // flushing the buffer as it fills.
  template <typename RowFn>
  Status Stream(const ProfileReader& reader, const std::string& sql, RowFn row) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool has_row, query.Step());
      if (!has_row) break;
      base::Progress::AdvanceOf(progress_, 1);
      if constexpr (std::is_same_v<decltype(row(query)), Status>) {
        GPUPROF_RETURN_IF_ERROR(row(query));
      } else {
        row(query);
      }
      GPUPROF_RETURN_IF_ERROR(file_->MaybeFlush());
    }
    summary_->sqlite_steps +=
        static_cast<std::uint32_t>(sqlite3_stmt_status(query.get(), SQLITE_STMTSTATUS_VM_STEP, /*reset=*/0));
    return OkStatus();
  }

  Status ExportOps(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!Require(schema, db, "PYTORCH_API", {"startNs", "endNs", "globalTid", "name"})) return OkStatus();
    auto [name, name_join] = StringJoin(schema, "p.name", "n");
    auto [shapes, shapes_join] = StringJoin(schema, schema.Col("PYTORCH_API", "p", "inputShapes"), "sh");
    auto [dtypes, dtypes_join] = StringJoin(schema, schema.Col("PYTORCH_API", "p", "inputDtypes"), "dt");
    const std::string sql = "SELECT p.startNs, p.endNs, p.globalTid, " + name + ", " +
                            schema.Col("PYTORCH_API", "p", "type") + ", " +
                            schema.Col("PYTORCH_API", "p", "sequenceNumber") + ", " +
                            schema.Col("PYTORCH_API", "p", "fwdThreadId") + ", " + shapes + ", " + dtypes +
                            " FROM PYTORCH_API p" + name_join + shapes_join + dtypes_join;
    return Stream(reader, sql, [&](const Query& q) {
      const std::int64_t global_tid = q.Int(2);
      const std::uint32_t pid = tracks_.HostPid(db, PidOf(global_tid));
      const std::uint32_t tid = TidOf(global_tid);
      tracks_.Thread(pid, tid, "thread");
      // Torch ops and Python functions come from the Python package; an mstx row (50004) may come
      // from a C++ program's NVTX mark.
      if (q.Int(4) == 50001 || q.Int(4) == 50003) tracks_.MarkPython(pid);
      std::string_view category = "cpu_op";
      switch (q.Int(4)) {
        case 50002: category = "queue"; break;
        case 50003: category = "python_function"; break;
        case 50004: category = "mstx_op"; break;
        default: break;
      }
      Event event = NewEvent();
      event.Str("ph", "X").Str("cat", category).Str("name", q.IsNull(3) ? "[unnamed op]" : q.Text(3));
      event.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
      event.BeginArgs();
      if (!q.IsNull(5)) event.Int("Sequence number", q.Int(5));
      if (!q.IsNull(6)) event.Int("Fwd thread id", q.Int(6));
      // As torch's Chrome trace has them: "Input Dims": [[64, 10], [10, 512]], "Input type":
      // ["float", "float"]; a text too long for the trace, or not dims, stays text (then cut).
      if (!q.IsNull(7) && !q.Text(7).empty()) {
        std::optional<std::string> dims;
        if (q.Text(7).size() <= kMaxTraceStringBytes) dims = InputDimsJson(q.Text(7));
        if (dims.has_value()) {
          event.Json("Input Dims", *dims);
        } else {
          event.Str("Input Dims", q.Text(7));
        }
      }
      if (!q.IsNull(8) && !q.Text(8).empty()) {
        if (q.Text(8).size() <= kMaxTraceStringBytes) {
          event.Json("Input type", InputTypesJson(q.Text(8)));
        } else {
          event.Str("Input type", q.Text(8));
        }
      }
      event.EndArgs();
      ++summary_->slices;
    });
  }

  Status ExportApiCalls(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!Require(schema, db, "CANN_API", {"startNs", "endNs", "globalTid", "name"})) return OkStatus();
    auto [name, name_join] = StringJoin(schema, "a.name", "n");
    const std::string type = schema.Col("CANN_API", "a", "type");
    // CANN_API `node` rows duplicate the runtime call's span: left out.
    const std::string sql =
        "SELECT a.startNs, a.endNs, a.globalTid, " + name + ", " +
        schema.Col("CANN_API", "a", "connectionId") + " FROM CANN_API a" + name_join +
        (type == "NULL" ? ""
                        : " WHERE " + type + " IS NULL OR " + type + " != " + std::to_string(kApiTypeNode));
    return Stream(reader, sql, [&](const Query& q) {
      const std::int64_t global_tid = q.Int(2);
      const std::uint32_t pid = tracks_.HostPid(db, PidOf(global_tid));
      const std::uint32_t tid = TidOf(global_tid);
      tracks_.Thread(pid, tid, "thread");
      Event event = NewEvent();
      event.Str("ph", "X").Str("cat", "cuda_runtime").Str("name", q.IsNull(3) ? "[unnamed API]" : q.Text(3));
      event.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
      event.BeginArgs();
      if (!q.IsNull(4)) event.Int("correlation", q.Int(4));
      event.EndArgs();
      ++summary_->slices;
    });
  }

  Status ExportTasks(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!Require(schema, db, "TASK", {"startNs", "endNs", "deviceId", "streamId", "globalTaskId"}))
      return OkStatus();
    auto [task_type, type_join] = StringJoin(schema, schema.Col("TASK", "t", "taskType"), "tt");
    std::string select = "SELECT t.startNs, t.endNs, t.deviceId, t.streamId, " +
                         schema.Col("TASK", "t", "connectionId") + ", " + task_type;
    std::string from = " FROM TASK t" + type_join;
    if (schema.HasAll("COMPUTE_TASK_INFO", {"globalTaskId", "name"})) {
      auto [kernel, kernel_join] = StringJoin(schema, "c.name", "kn");
      // gpuprof stores gridDim/blockDim as STRING_IDS of "x,y,z" (docs/db_gpuprof_tables.md);
      // a value that is no string id is shown as it is.
      const std::string grid = schema.Col("COMPUTE_TASK_INFO", "c", "gridDim");
      const std::string block = schema.Col("COMPUTE_TASK_INFO", "c", "blockDim");
      auto [grid_text, grid_join] = StringJoin(schema, grid, "gd");
      auto [block_text, block_join] = StringJoin(schema, block, "bd");
      select += ", " + kernel + ", COALESCE(" + grid_text + ", " + grid + "), COALESCE(" + block_text + ", " +
                block + "), " + schema.Col("COMPUTE_TASK_INFO", "c", "blockNum");
      from += " LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId" + kernel_join + grid_join +
              block_join;
    } else {
      select += ", NULL, NULL, NULL, NULL";
    }
    if (schema.HasAll("MEMCPY_INFO", {"globalTaskId", "size", "memcpyOperation"})) {
      // MEMCPY_INFO has no index on globalTaskId; SQLite builds a transient one for this join.
      select += ", m.size, ";
      if (schema.HasAll("ENUM_MEMCPY_OPERATION", {"id", "name"})) {
        select += "COALESCE(e.name, CAST(m.memcpyOperation AS TEXT))";
        from +=
            " LEFT JOIN MEMCPY_INFO m ON m.globalTaskId = t.globalTaskId"
            " LEFT JOIN ENUM_MEMCPY_OPERATION e ON e.id = m.memcpyOperation";
      } else {
        select += "CAST(m.memcpyOperation AS TEXT)";
        from += " LEFT JOIN MEMCPY_INFO m ON m.globalTaskId = t.globalTaskId";
      }
    } else {
      select += ", NULL, NULL";
    }
    // The replayed launch (pass 1 is the application's own execution) whose counters go into the
    // kernel's args: one id per connectionId, so no task row is repeated.
    const std::string counter_filter = counters_.LaunchFilter();
    if (!counter_filter.empty() && schema.Has("GPUPROF_REPLAY_KERNEL", "connectionId") &&
        schema.Has("TASK", "connectionId")) {
      select += ", rk.rid";
      from +=
          " LEFT JOIN (SELECT connectionId AS cid, MIN(id) AS rid FROM GPUPROF_REPLAY_KERNEL WHERE "
          "connectionId IS NOT NULL AND replayed != 0 AND (" +
          counter_filter + ") GROUP BY connectionId) rk ON rk.cid = t.connectionId";
    } else {
      select += ", NULL";
    }
    return Stream(reader, select + from, [&](const Query& q) -> Status {
      const std::uint32_t pid = tracks_.DevicePid(db, q.Int(2));
      const auto stream = static_cast<std::uint32_t>(q.Int(3));
      tracks_.Thread(pid, stream, "stream");
      const std::string_view type = q.Text(5);
      std::string_view category = "device_task";
      std::string name;
      if (!q.IsNull(6)) {
        category = "kernel";
        name = q.Text(6);
      } else {
        if (type.rfind("MEMCPY", 0) == 0) category = "gpu_memcpy";
        if (type.rfind("MEMSET", 0) == 0) category = "gpu_memset";
        name = type.empty() ? "[device task]" : std::string(type);
        if (!q.IsNull(11)) name += " (" + std::string(q.Text(11)) + ")";
      }
      Event event = NewEvent();
      event.Str("ph", "X").Str("cat", category).Str("name", name);
      event.Uint("pid", pid).Uint("tid", stream).Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
      event.BeginArgs().Int("device", q.Int(2)).Int("stream", q.Int(3));
      if (!q.IsNull(4)) event.Int("correlation", q.Int(4));
      if (!q.IsNull(7)) event.Str("grid", q.Text(7));
      if (!q.IsNull(8)) event.Str("block", q.Text(8));
      if (!q.IsNull(9)) event.Int("blocks", q.Int(9));
      if (!q.IsNull(10)) event.Int("bytes", q.Int(10));
      if (!q.IsNull(6) && !q.IsNull(12)) GPUPROF_RETURN_IF_ERROR(counters_.AppendArgs(q.Int(12), &event));
      event.EndArgs();
      ++summary_->slices;
      return OkStatus();
    });
  }

  // A flow: "s" on the source slice's track at its start, "f" bound to the enclosing slice on the
  // target track at the target's start. Both come from one row, so every start has its finish.
  void Flow(std::string_view category, std::uint32_t from_pid, std::uint32_t from_tid, std::int64_t from_ns,
            std::uint32_t to_pid, std::uint32_t to_tid, std::int64_t to_ns) {
    const std::uint64_t id = ++next_flow_id_;
    {
      Event start = NewEvent();
      start.Str("ph", "s").Uint("id", id).Str("cat", category).Str("name", category);
      start.Uint("pid", from_pid).Uint("tid", from_tid).Ts(from_ns);
    }
    Event finish = NewEvent();
    finish.Str("ph", "f").Str("bp", "e").Uint("id", id).Str("cat", category).Str("name", category);
    finish.Uint("pid", to_pid).Uint("tid", to_tid).Ts(to_ns);
    ++summary_->flows;
  }

  Status ExportTaskFlows(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!schema.HasAll("CONNECTION_IDS", {"id", "connectionId"}) ||
        !schema.HasAll("PYTORCH_API", {"startNs", "globalTid", "name", "connectionId"}) ||
        !schema.HasAll("TASK", {"startNs", "deviceId", "streamId", "connectionId"})) {
      return OkStatus();
    }
    // One flow per task, from the op that launched it (task_op_link.h: linear on a DB without an
    // index on the link columns).
    const std::string sql = "SELECT l.op_start, l.op_tid, t.startNs, t.deviceId, t.streamId FROM " +
                            TaskOpLinkFrom() + " ORDER BY l.cid, t.startNs, t.rowid";
    return Stream(reader, sql, [&](const Query& q) {
      const std::uint32_t from_pid = tracks_.HostPid(db, PidOf(q.Int(1)));
      const std::uint32_t to_pid = tracks_.DevicePid(db, q.Int(3));
      const auto stream = static_cast<std::uint32_t>(q.Int(4));
      tracks_.Thread(to_pid, stream, "stream");
      Flow("ac2g", from_pid, TidOf(q.Int(1)), q.Int(0), to_pid, stream, q.Int(2));
    });
  }

  Status ExportOpFlows(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!schema.HasAll("CONNECTION_IDS", {"id", "connectionId"}) ||
        !schema.HasAll("PYTORCH_API", {"startNs", "globalTid", "connectionId", "name"})) {
      return OkStatus();
    }
    // fwd/bwd and task-queue pairs: connectionIds shared by more than one op; the lowest index is
    // the first op, the highest the second (msprof-analyze's QUEYR_FWD_BWD_FLOW). One op row per
    // index (the first written, grouped once), so repeated rows give one flow, not their product.
    auto [first_name, first_join] = StringJoin(schema, "a.name", "an");
    const std::string sql =
        "WITH first_op AS MATERIALIZED (SELECT connectionId AS id, MIN(rowid) AS row FROM PYTORCH_API "
        "GROUP BY connectionId) "
        "SELECT a.startNs, a.globalTid, b.startNs, b.globalTid, " +
        first_name +
        " FROM (SELECT connectionId AS cid, MIN(id) AS first_id, MAX(id) AS last_id FROM CONNECTION_IDS "
        "GROUP BY connectionId HAVING COUNT(DISTINCT id) > 1) g "
        "JOIN first_op oa ON oa.id = g.first_id JOIN PYTORCH_API a ON a.rowid = oa.row "
        "JOIN first_op ob ON ob.id = g.last_id JOIN PYTORCH_API b ON b.rowid = ob.row" +
        first_join + " ORDER BY g.cid";
    return Stream(reader, sql, [&](const Query& q) {
      std::string_view first = q.Text(4);
      const bool queue = first.rfind("Enqueue", 0) == 0 || first.rfind("Dequeue", 0) == 0;
      std::int64_t a_ns = q.Int(0), b_ns = q.Int(2);
      std::int64_t a_tid = q.Int(1), b_tid = q.Int(3);
      if (b_ns < a_ns) {
        std::swap(a_ns, b_ns);
        std::swap(a_tid, b_tid);
      }
      const std::uint32_t a_pid = tracks_.HostPid(db, PidOf(a_tid));
      const std::uint32_t b_pid = tracks_.HostPid(db, PidOf(b_tid));
      tracks_.Thread(a_pid, TidOf(a_tid), "thread");
      tracks_.Thread(b_pid, TidOf(b_tid), "thread");
      Flow(queue ? "async_task_queue" : "fwdbwd", a_pid, TidOf(a_tid), a_ns, b_pid, TidOf(b_tid), b_ns);
    });
  }

  Status ExportMemory(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!Require(schema, db, "MEMORY_RECORD", {"timestamp", "deviceId", "totalAllocated", "totalReserved"})) {
      return OkStatus();
    }
    auto [component, component_join] =
        StringJoin(schema, schema.Col("MEMORY_RECORD", "m", "component"), "cn");
    const std::string sql =
        "SELECT m.timestamp, m.deviceId, " + component + ", m.totalAllocated, m.totalReserved, " +
        schema.Col("MEMORY_RECORD", "m", "totalActive") + " FROM MEMORY_RECORD m" + component_join;
    std::string name;
    return Stream(reader, sql, [&](const Query& q) {
      const std::uint32_t pid = tracks_.DevicePid(db, q.Int(1));
      name.assign("Memory ");
      name.append(q.IsNull(2) ? std::string_view("allocator") : q.Text(2));
      Event event = NewEvent();
      event.Str("ph", "C").Str("cat", "memory").Str("name", name).Uint("pid", pid).Ts(q.Int(0));
      event.BeginArgs().Int("allocated", q.Int(3)).Int("reserved", q.Int(4));
      if (!q.IsNull(5)) event.Int("active", q.Int(5));
      event.EndArgs();
      ++summary_->counters;
    });
  }

  Status ExportMstx(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!Require(schema, db, "MSTX_EVENTS", {"startNs", "endNs", "eventType", "message", "globalTid"})) {
      return OkStatus();
    }
    auto [message, message_join] = StringJoin(schema, "e.message", "mn");
    auto [domain, domain_join] = StringJoin(schema, schema.Col("MSTX_EVENTS", "e", "domainId"), "dn");
    const std::string sql = "SELECT e.startNs, e.endNs, e.eventType, " + message + ", e.globalTid, " +
                            schema.Col("MSTX_EVENTS", "e", "endGlobalTid") + ", " + domain + ", " +
                            schema.Col("MSTX_EVENTS", "e", "rangeId") + " FROM MSTX_EVENTS e" + message_join +
                            domain_join;
    return Stream(reader, sql, [&](const Query& q) {
      const std::int64_t global_tid = q.Int(4);
      const std::uint32_t pid = tracks_.HostPid(db, PidOf(global_tid));
      const std::uint32_t tid = TidOf(global_tid);
      tracks_.Thread(pid, tid, "thread");
      const std::string_view name = q.IsNull(3) ? std::string_view("[mark]") : q.Text(3);
      const std::int64_t type = q.Int(2);
      if (type == 0 || type == 3) {  // marker, marker_ex
        Event event = NewEvent();
        event.Str("ph", "i").Str("s", "t").Str("cat", "mstx").Str("name", name);
        event.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0));
        event.BeginArgs();
        if (!q.IsNull(6)) event.Str("domain", q.Text(6));
        event.EndArgs();
        ++summary_->instants;
        return;
      }
      // push/pop and start/end ranges: async slices, so ranges that end on another thread or
      // overlap the thread's ops without nesting still draw correctly.
      const std::string id = HexId(++next_async_id_);
      {
        Event begin = NewEvent();
        begin.Str("ph", "b").Str("cat", "mstx").Str("name", name).Str("id", id);
        begin.Uint("pid", pid).Uint("tid", tid).Ts(q.Int(0));
        begin.BeginArgs();
        if (!q.IsNull(6)) begin.Str("domain", q.Text(6));
        if (!q.IsNull(7)) begin.Int("range id", q.Int(7));
        begin.EndArgs();
      }
      const std::uint32_t end_tid = q.IsNull(5) ? tid : TidOf(q.Int(5));
      Event end = NewEvent();
      end.Str("ph", "e").Str("cat", "mstx").Str("name", name).Str("id", id);
      end.Uint("pid", pid).Uint("tid", end_tid).Ts(std::max(q.Int(1), q.Int(0)));
      ++summary_->async_ranges;
    });
  }

  Status ExportGc(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!Require(schema, db, "GC_RECORD", {"startNs", "endNs", "globalTid"})) return OkStatus();
    return Stream(reader, "SELECT startNs, endNs, globalTid FROM GC_RECORD", [&](const Query& q) {
      const std::uint32_t pid = tracks_.HostPid(db, PidOf(q.Int(2)));
      tracks_.Thread(pid, kGcTid, "gc");
      Event event = NewEvent();
      event.Str("ph", "X").Str("cat", "gc").Str("name", "GC").Uint("pid", pid).Uint("tid", kGcTid);
      event.Ts(q.Int(0)).Dur(q.Int(1) - q.Int(0));
      ++summary_->slices;
    });
  }

  Status ExportReplay(const ProfileReader& reader, const Schema& schema, DbContext& db) {
    if (!schema.HasTable("GPUPROF_REPLAY_KERNEL")) return OkStatus();  // a run without replay
    if (!Require(schema, db, "GPUPROF_REPLAY_KERNEL", {"id", "deviceId", "name", "replayed"}))
      return OkStatus();
    auto [kernel, kernel_join] = StringJoin(schema, "k.name", "kn");
    if (schema.HasAll("GPUPROF_REPLAY_PASS", {"kernelId", "pass", "startNs", "durationNs"})) {
      const std::string sql =
          "SELECT p.startNs, p.durationNs, p.pass, k.deviceId, " + kernel + ", " +
          schema.Col("GPUPROF_REPLAY_PASS", "p", "bytesRestored") + ", " +
          schema.Col("GPUPROF_REPLAY_PASS", "p", "dirtyChunks") + ", " +
          schema.Col("GPUPROF_REPLAY_PASS", "p", "outputHash") + ", " +
          schema.Col("GPUPROF_REPLAY_KERNEL", "k", "launchIndex") + ", " +
          schema.Col("GPUPROF_REPLAY_PASS", "p", "matchesPass1") +
          ", k.id FROM GPUPROF_REPLAY_PASS p JOIN GPUPROF_REPLAY_KERNEL k ON k.id = p.kernelId" + kernel_join;
      auto pass_slice = [&](const Query& q) -> Status {
        const std::uint32_t pid = tracks_.DevicePid(db, q.Int(3));
        tracks_.Thread(pid, kReplayTid, "replay");
        std::string name(q.Text(4));
        name += " [pass " + std::to_string(q.Int(2)) + "]";
        Event event = NewEvent();
        event.Str("ph", "X")
            .Str("cat", "gpuprof_replay")
            .Str("name", name)
            .Uint("pid", pid)
            .Uint("tid", kReplayTid);
        event.Ts(q.Int(0)).Dur(q.Int(1));
        event.BeginArgs().Int("pass", q.Int(2));
        if (!q.IsNull(8)) event.Int("launch", q.Int(8));
        if (!q.IsNull(5)) event.Int("bytes restored", q.Int(5));
        if (!q.IsNull(6)) event.Int("dirty chunks", q.Int(6));
        if (!q.IsNull(7)) event.Str("output hash", HexId(static_cast<std::uint64_t>(q.Int(7))));
        if (!q.IsNull(9)) event.Str("matches pass 1", q.Int(9) != 0 ? "yes" : "no");
        // The launch's counters on its first pass too: a launch whose kernel slice is not in TASK
        // (no correlation id) still shows them.
        if (q.Int(2) == 1) GPUPROF_RETURN_IF_ERROR(counters_.AppendArgs(q.Int(10), &event));
        event.EndArgs();
        ++summary_->slices;
        return OkStatus();
      };
      GPUPROF_RETURN_IF_ERROR(Stream(reader, sql, pass_slice));
    } else if (schema.HasTable("GPUPROF_REPLAY_PASS")) {
      summary_->notes.push_back(db.label +
                                ": GPUPROF_REPLAY_PASS lacks columns this export reads; passes not exported");
    }
    if (schema.HasAll("GPUPROF_REPLAY_KERNEL", {"timestampNs", "declineReason"})) {
      const std::string sql = "SELECT k.timestampNs, k.deviceId, " + kernel + ", k.declineReason, " +
                              schema.Col("GPUPROF_REPLAY_KERNEL", "k", "declineDetail") +
                              " FROM GPUPROF_REPLAY_KERNEL k" + kernel_join + " WHERE k.replayed = 0";
      GPUPROF_RETURN_IF_ERROR(Stream(reader, sql, [&](const Query& q) {
        const std::uint32_t pid = tracks_.DevicePid(db, q.Int(1));
        tracks_.Thread(pid, kReplayTid, "replay");
        std::string name(q.Text(2));
        name += " declined: ";
        name += q.IsNull(3) ? std::string_view("unknown") : q.Text(3);
        Event event = NewEvent();
        event.Str("ph", "i").Str("s", "t").Str("cat", "gpuprof_replay").Str("name", name);
        event.Uint("pid", pid).Uint("tid", kReplayTid).Ts(q.Int(0));
        event.BeginArgs();
        if (!q.IsNull(4) && !q.Text(4).empty()) event.Str("detail", q.Text(4));
        event.EndArgs();
        ++summary_->instants;
      }));
    }
    return OkStatus();
  }

  OutputFile* file_;
  std::string* out_;
  std::int64_t base_;
  ExportSummary* summary_;
  base::Progress* progress_;  // null: nobody watches
  Tracks tracks_;
  ReplayCounters counters_;
  bool first_event_ = true;
  std::uint64_t next_flow_id_ = 0;
  CutStrings cut_;
  std::uint64_t next_async_id_ = 0;
};

// The earliest session start (or, without SESSION_TIME_INFO, the earliest op or task), floored to
// a whole second. 0 when a DB has no times at all.
StatusOr<std::optional<std::int64_t>> EarliestTime(const ProfileReader& reader) {
  std::optional<std::int64_t> earliest;
  auto consider = [&](std::string_view table, std::string_view sql) -> Status {
    if (!reader.HasTable(table)) return OkStatus();
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && !query.IsNull(0) && query.Int(0) > 0)
      earliest = std::min(earliest.value_or(query.Int(0)), query.Int(0));
    return OkStatus();
  };
  GPUPROF_ASSIGN_OR_RETURN(bool session, reader.HasColumns("SESSION_TIME_INFO", {"startTimeNs"}));
  if (session)
    GPUPROF_RETURN_IF_ERROR(consider("SESSION_TIME_INFO", "SELECT MIN(startTimeNs) FROM SESSION_TIME_INFO"));
  if (!earliest.has_value()) {
    // TASK's index (startNs, globalTaskId) makes its MIN a lookup; PYTORCH_API is one scan.
    GPUPROF_ASSIGN_OR_RETURN(bool task, reader.HasColumns("TASK", {"startNs"}));
    if (task) GPUPROF_RETURN_IF_ERROR(consider("TASK", "SELECT MIN(startNs) FROM TASK"));
    GPUPROF_ASSIGN_OR_RETURN(bool ops, reader.HasColumns("PYTORCH_API", {"startNs"}));
    if (ops)
      GPUPROF_RETURN_IF_ERROR(
          consider("PYTORCH_API", "SELECT MIN(CAST(startNs AS INTEGER)) FROM PYTORCH_API"));
  }
  return earliest;
}

StatusOr<DbContext> LoadContext(const ProfileReader& reader, const ProfileDbFile& file, std::size_t index) {
  DbContext db;
  db.index = index;
  std::optional<std::int64_t> rank;
  GPUPROF_ASSIGN_OR_RETURN(bool has_rank, reader.HasColumns("RANK_DEVICE_MAP", {"rankId"}));
  if (has_rank) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && !query.IsNull(0) && query.Int(0) >= 0) rank = query.Int(0);
  }
  if (!rank.has_value() && file.rank.has_value()) rank = *file.rank;
  db.label = rank.has_value() ? "rank " + std::to_string(*rank) : "db " + std::to_string(index);
  GPUPROF_ASSIGN_OR_RETURN(bool has_host, reader.HasColumns("HOST_INFO", {"hostName"}));
  if (has_host) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT hostName FROM HOST_INFO LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) db.host_name = std::string(query.Text(0));
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_npu, reader.HasColumns("NPU_INFO", {"id", "name"}));
  if (has_npu) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT id, name FROM NPU_INFO"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      db.device_names.emplace(query.Int(0), std::string(query.Text(1)));
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_meta, reader.HasColumns("META_DATA", {"name", "value"}));
  if (has_meta) {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT value FROM META_DATA WHERE name = ?1 LIMIT 1"));
    query.BindText(1, kMetaThreadNames);
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && !query.IsNull(0)) {
      StatusOr<ThreadNames> names = DecodeThreadNames(query.Text(0));
      if (names.ok()) {
        db.thread_names = std::move(names).value();
      } else {
        db.thread_names_problem = names.status().message();
      }
    }
  }
  return db;
}

}  // namespace

std::vector<std::string_view> ExportFormats() { return {kPerfettoFormat}; }

void AppendMicros(std::string* out, std::int64_t ns) {
  auto magnitude = static_cast<std::uint64_t>(ns);
  if (ns < 0) {
    out->push_back('-');
    magnitude = ~magnitude + 1;  // two's complement negation, defined for INT64_MIN too
  }
  AppendUint(out, magnitude / 1000);
  const auto fraction = static_cast<unsigned>(magnitude % 1000);
  out->push_back('.');
  out->push_back(static_cast<char>('0' + fraction / 100));
  out->push_back(static_cast<char>('0' + fraction / 10 % 10));
  out->push_back(static_cast<char>('0' + fraction % 10));
}

StatusOr<ExportSummary> ExportPerfettoTrace(const std::vector<ProfileDbFile>& dbs,
                                            const std::string& output_path, base::Progress* progress) {
  if (dbs.empty()) return InvalidArgumentError("export: no profile database given");
  if (output_path.empty()) return InvalidArgumentError("export: no output path given (-o trace.json)");

  for (const ProfileDbFile& file : dbs) {
    std::error_code ec;
    if (std::filesystem::equivalent(file.path, output_path, ec)) {
      return InvalidArgumentError("export: the output " + output_path + " is the input database " +
                                  file.path + "; choose another -o");
    }
  }
  // What -o names is checked first (a directory or a dangling link is refused before any work); every
  // DB is opened (and so validated) before the output is created.
  GPUPROF_RETURN_IF_ERROR(OutputFile::ClassifyOutput(output_path, "trace.json").status());
  std::vector<std::unique_ptr<ProfileReader>> readers;
  std::optional<std::int64_t> earliest;
  for (const ProfileDbFile& file : dbs) {
    GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(file.path));
    GPUPROF_ASSIGN_OR_RETURN(std::optional<std::int64_t> first, EarliestTime(*reader));
    if (first.has_value()) earliest = std::min(earliest.value_or(*first), *first);
    readers.push_back(std::move(reader));
  }

  ExportSummary summary;
  summary.dbs = dbs.size();
  const std::int64_t value = earliest.value_or(0);
  summary.time_base_ns = value - ((value % kNsPerSecond) + kNsPerSecond) % kNsPerSecond;

  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Create(output_path, "trace.json"));
  std::string* out = file->buffer();
  // displayTimeUnit is a display hint only (ts and dur stay microseconds, as in catapult and
  // current trace processors); first, because older trace processors ignore it after the events.
  out->append(R"({"displayTimeUnit":"ns","otherData":{"producer":"gpuprof export","gpuprof_time_base_ns":)");
  AppendInt(out, summary.time_base_ns);
  out->append(",\"ts_unit\":\"microseconds since gpuprof_time_base_ns (Unix epoch ns)\"},\"traceEvents\":[");

  Exporter exporter(file.get(), summary.time_base_ns, &summary, progress);
  for (std::size_t i = 0; i < readers.size(); ++i) {
    GPUPROF_ASSIGN_OR_RETURN(DbContext db, LoadContext(*readers[i], dbs[i], i));
    if (!db.thread_names_problem.empty()) {
      summary.notes.push_back(db.label + ": " + db.thread_names_problem + "; threads keep their numbers");
    }
    GPUPROF_RETURN_IF_ERROR(exporter.ExportDb(*readers[i], db));
  }
  exporter.Finish();
  out->append("\n]}\n");
  GPUPROF_ASSIGN_OR_RETURN(summary.bytes, file->Commit());
  return summary;
}

}  // namespace gpuprof::db
