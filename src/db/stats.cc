#include "db/stats.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "db/db_constants.h"
#include "db/device_work.h"
#include "db/plausible.h"
#include "db/string_lookup.h"

namespace gpuprof::db {
namespace {

// a + b, held at the int64 limits instead of wrapping.
std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

constexpr std::string_view kProfilerStepPrefix = "ProfilerStep#";
// The top ops (by self time) whose call stacks stats shows.
constexpr std::size_t kStackOps = 10;
// PYTORCH_API.type of torch ops (ENUM_API_TYPE 'op'); queue and python-trace rows are not ops.
constexpr std::int64_t kApiTypeOp = 50001;

// The spans stats counts (plausible.h): other rows are left out and counted, so that sums stay
// sums and percentages stay below the session (`gpuprof check` names them).
std::string PlausibleSpan(const ProfileStats& stats, const std::string& start, const std::string& end) {
  return PlausibleSpanSql(start, end, stats.session_start_ns, stats.session_end_ns);
}

// Records the note for `rows` rows of `table` left out.
void NoteImplausibleRows(std::string_view table, std::int64_t rows, ProfileStats* stats) {
  if (rows > 0) {
    stats->data_notes.push_back(std::string(table) + ": " + std::to_string(rows) +
                                " row(s) left out: their startNs/endNs are NULL, not integers, negative, "
                                "reversed or far outside the session (`gpuprof check` names them)");
  }
}

// Counts the rows of `table` (`where` selecting the ones stats reads) whose span is not plausible,
// and records the note.
Status NoteImplausibleRows(const ProfileReader& reader, std::string_view table, const std::string& where,
                           ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(std::int64_t rows,
                           reader.QueryInt("SELECT COUNT(*) FROM " + std::string(table) + " WHERE (" + where +
                                           ") AND NOT " + PlausibleSpan(*stats, "startNs", "endNs")));
  NoteImplausibleRows(table, rows, stats);
  return OkStatus();
}

// Why a section has no source: "" when `table` exists with every column the section reads.
StatusOr<std::string> Absence(const ProfileReader& reader, std::string_view table,
                              const std::vector<std::string_view>& columns) {
  if (!reader.HasTable(table)) return "no " + std::string(table) + " table in this DB";
  GPUPROF_ASSIGN_OR_RETURN(bool has_columns, reader.HasColumns(table, columns));
  if (!has_columns) {
    std::string names;
    for (std::string_view column : columns) names += (names.empty() ? "" : ", ") + std::string(column);
    return std::string(table) + " lacks some of the columns " + names +
           " (written by another tool or version; `gpuprof check` lists the differences)";
  }
  return std::string();
}

Status ReadHeader(const ProfileReader& reader, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(std::string rank_absent,
                           Absence(reader, "RANK_DEVICE_MAP", {"rankId", "deviceId"}));
  if (rank_absent.empty()) {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT rankId, deviceId FROM RANK_DEVICE_MAP LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) {
      stats->rank = query.OptionalInt(0);
      stats->device = query.OptionalInt(1);
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(std::string host_absent, Absence(reader, "HOST_INFO", {"hostName"}));
  if (host_absent.empty()) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT hostName FROM HOST_INFO LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) stats->host_name = std::string(query.Text(0));
  }
  GPUPROF_ASSIGN_OR_RETURN(std::string session_absent,
                           Absence(reader, "SESSION_TIME_INFO", {"startTimeNs", "endTimeNs"}));
  if (session_absent.empty()) {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) {
      stats->session_start_ns = query.OptionalInt(0);
      stats->session_end_ns = query.OptionalInt(1);
    }
  }
  return OkStatus();
}

Status ReadOps(const ProfileReader& reader, StringLookup& strings, std::size_t top, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(stats->ops_absent,
                           Absence(reader, "PYTORCH_API", {"globalTid", "startNs", "endNs", "name", "type"}));
  if (!stats->ops_absent.empty()) return OkStatus();
  const std::string torch_ops = "type IS NULL OR type = " + std::to_string(kApiTypeOp);
  GPUPROF_RETURN_IF_ERROR(NoteImplausibleRows(reader, "PYTORCH_API", torch_ops, stats));

  // The sort happens in SQLite (out of core for large tables); the sweep holds one stack.
  // CAST: torch_npu declares startNs/endNs TEXT, and text would sort lexicographically.
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT globalTid, CAST(startNs AS INTEGER) AS s, CAST(endNs AS INTEGER) AS e, name "
                     "FROM PYTORCH_API WHERE (" +
                     torch_ops + ") AND " + PlausibleSpan(*stats, "startNs", "endNs") +
                     " ORDER BY globalTid, s, e DESC"));
  SelfTimeSweep sweep;
  constexpr std::int64_t kNullName = -1;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    sweep.Add(query.Int(0), query.Int(1), query.Int(2), query.OptionalInt(3).value_or(kNullName));
  }
  sweep.Finish();
  if (sweep.totals().empty()) {
    stats->ops_absent = "no torch op was recorded";
    return OkStatus();
  }

  std::map<std::string, OpTotals> by_name;
  for (const auto& [id, totals] : sweep.totals()) {
    std::optional<std::int64_t> name_id;
    if (id != kNullName) name_id = id;
    GPUPROF_ASSIGN_OR_RETURN(std::string name, strings.Get(name_id));
    OpTotals& merged = by_name[OpDisplayName(name)];
    merged.calls += totals.calls;
    merged.total_ns = SaturatingAdd(merged.total_ns, totals.total_ns);
    merged.self_ns = SaturatingAdd(merged.self_ns, totals.self_ns);
    stats->op_calls += totals.calls;
    stats->op_self_sum_ns = SaturatingAdd(stats->op_self_sum_ns, totals.self_ns);
  }
  stats->op_names = by_name.size();
  std::vector<OpStat> all;
  all.reserve(by_name.size());
  for (auto& [name, totals] : by_name) all.push_back({name, totals});

  auto take_top = [top](std::vector<OpStat> ops, auto key) {
    std::size_t n = std::min(top, ops.size());
    std::partial_sort(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(n), ops.end(),
                      [key](const OpStat& a, const OpStat& b) {
                        return std::make_pair(-key(a), a.name) < std::make_pair(-key(b), b.name);
                      });
    ops.resize(n);
    return ops;
  };
  stats->top_ops_by_total = take_top(all, [](const OpStat& op) { return op.totals.total_ns; });
  stats->top_ops_by_self = take_top(std::move(all), [](const OpStat& op) { return op.totals.self_ns; });
  return OkStatus();
}

// A group's row count and span sum, as SQL's COUNT(*) and TOTAL(): the sum in a double, added in
// scan order, then cast to an integer the way SQLite casts (held at the int64 limits).
struct SpanSum {
  std::uint64_t count = 0;
  double total = 0;
  std::int64_t max_ns = std::numeric_limits<std::int64_t>::min();

  void Add(std::int64_t span) {
    ++count;
    total += static_cast<double>(span);
    max_ns = std::max(max_ns, span);
  }
  std::int64_t total_ns() const {
    if (total <= -0x1p63) return std::numeric_limits<std::int64_t>::min();
    if (total >= 0x1p63) return std::numeric_limits<std::int64_t>::max();
    return static_cast<std::int64_t>(total);
  }
};

// The groups by total descending, then by id (NULL first), as `ORDER BY total DESC, id` sorts them.
std::vector<std::pair<std::optional<std::int64_t>, SpanSum>> ByTotal(
    const std::map<std::optional<std::int64_t>, SpanSum>& groups) {
  std::vector<std::pair<std::optional<std::int64_t>, SpanSum>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.total_ns() > b.second.total_ns(); });
  return sorted;
}

// One scan of TASK (with each task's COMPUTE_TASK_INFO row by its primary key), grouped here: SQL's
// GROUP BY sorted millions of rows twice, and counting the left-out rows took a scan of its own.
Status ReadKernels(const ProfileReader& reader, StringLookup& strings, std::size_t top, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(stats->kernels_absent,
                           Absence(reader, "TASK", {"globalTaskId", "startNs", "endNs", "taskType"}));
  if (!stats->kernels_absent.empty()) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const std::string info_absent,
                           Absence(reader, "COMPUTE_TASK_INFO", {"globalTaskId", "name"}));
  const bool with_info = info_absent.empty();
  GPUPROF_ASSIGN_OR_RETURN(const std::string device_work, DeviceWorkTaskSql(reader, "t"));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(
          "SELECT " + PlausibleSpan(*stats, "t.startNs", "t.endNs") + ", t.taskType, t.endNs - t.startNs, " +
          (with_info
               ? "c.globalTaskId IS NOT NULL, c.name, t.rowid FROM TASK t LEFT JOIN COMPUTE_TASK_INFO c "
                 "ON c.globalTaskId = t.globalTaskId"
               : "0, NULL, t.rowid FROM TASK t") +
          " WHERE " + device_work));
  std::int64_t left_out = 0;
  std::map<std::optional<std::int64_t>, SpanSum> types;
  std::map<std::optional<std::int64_t>, SpanSum> kernels;
  std::optional<std::int64_t> previous_task;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    // A task with two kernel rows (a file whose globalTaskId is not its key) comes twice in a row:
    // a kernel each time, a task once.
    const std::int64_t task = query.Int(5);
    const bool again = previous_task == task;
    previous_task = task;
    if (query.Int(0) == 0) {
      left_out += again ? 0 : 1;
      continue;
    }
    const std::int64_t span = query.Int(2);
    if (!again) types[query.OptionalInt(1)].Add(span);
    if (query.Int(3) != 0) kernels[query.OptionalInt(4)].Add(span);
  }
  NoteImplausibleRows("TASK", left_out, stats);
  for (const auto& [type_id, sum] : ByTotal(types)) {
    GPUPROF_ASSIGN_OR_RETURN(std::string type, strings.Get(type_id));
    stats->task_types.push_back({std::move(type), sum.count, sum.total_ns()});
  }

  stats->kernels_absent = info_absent;
  if (!stats->kernels_absent.empty()) return OkStatus();
  for (const auto& [name_id, sum] : ByTotal(kernels)) {
    stats->kernel_calls += sum.count;
    stats->kernel_total_ns = SaturatingAdd(stats->kernel_total_ns, sum.total_ns());
    ++stats->kernel_names;
    if (stats->top_kernels.size() < top) {
      GPUPROF_ASSIGN_OR_RETURN(std::string name, strings.Get(name_id));
      stats->top_kernels.push_back({std::move(name), sum.count, sum.total_ns(), sum.max_ns});
    }
  }
  if (stats->kernel_calls == 0) {
    stats->kernels_absent = stats->task_types.empty() ? "no kernel, copy or memset was recorded on a device"
                                                      : "no task on a device has a kernel name";
  }
  return OkStatus();
}

Status ReadMemory(const ProfileReader& reader, StringLookup& strings, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(stats->memory_absent, Absence(reader, "MEMORY_RECORD",
                                                         {"deviceId", "component", "totalAllocated",
                                                          "totalReserved", "totalActive"}));
  if (!stats->memory_absent.empty()) return OkStatus();
  // A figure no allocator can hold (INT64_MAX bytes showed as "peak reserved 8388608 TiB").
  GPUPROF_ASSIGN_OR_RETURN(
      std::int64_t impossible,
      reader.QueryInt("SELECT COUNT(*) FROM MEMORY_RECORD WHERE NOT " + PlausibleMemorySql()));
  if (impossible > 0) {
    stats->data_notes.push_back("MEMORY_RECORD: " + std::to_string(impossible) +
                                " row(s) left out: their totalAllocated/totalReserved/totalActive are not "
                                "integers, negative or above 1 PiB (`gpuprof check` names them)");
  }
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT deviceId, component, COUNT(*), MAX(totalAllocated), MAX(totalReserved), "
                     "MAX(totalActive) FROM MEMORY_RECORD WHERE " +
                     PlausibleMemorySql() + " GROUP BY deviceId, component ORDER BY deviceId, component"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    MemoryPeak peak;
    peak.device = query.Int(0);
    GPUPROF_ASSIGN_OR_RETURN(peak.component, strings.Get(query.OptionalInt(1)));
    peak.records = static_cast<std::uint64_t>(query.Int(2));
    peak.peak_allocated = query.Int(3);
    peak.peak_reserved = query.Int(4);
    peak.peak_active = query.OptionalInt(5);
    stats->memory.push_back(std::move(peak));
  }
  if (stats->memory.empty()) {
    stats->memory_absent =
        impossible > 0 ? "every allocator record was left out (see the note)" : "no allocator record";
  }
  // The writer's stand-in for "nothing recorded" (one zero row, for msprof-analyze's compare) is no
  // peak of 0 B: say what it means.
  if (stats->memory.size() == 1 && stats->memory[0].records == 1 && stats->memory[0].peak_allocated == 0 &&
      stats->memory[0].peak_reserved == 0 && stats->memory[0].peak_active.value_or(0) == 0) {
    stats->memory.clear();
    stats->memory_absent = "no allocator event was recorded";
  }
  return OkStatus();
}

Status ReadSteps(const ProfileReader& reader, std::size_t top, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(stats->steps_absent, Absence(reader, "STEP_TIME", {"id", "startNs", "endNs"}));
  if (!stats->steps_absent.empty()) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(NoteImplausibleRows(reader, "STEP_TIME", "1", stats));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query, reader.Prepare("SELECT id, startNs, endNs FROM STEP_TIME WHERE " +
                                  PlausibleSpan(*stats, "startNs", "endNs") + " ORDER BY startNs, id"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    StepStat step{query.Int(0), query.Int(1), query.Int(2)};
    std::int64_t duration = step.end_ns - step.start_ns;
    stats->step_min_ns = stats->step_count == 0 ? duration : std::min(stats->step_min_ns, duration);
    stats->step_max_ns = stats->step_count == 0 ? duration : std::max(stats->step_max_ns, duration);
    stats->step_total_ns = SaturatingAdd(stats->step_total_ns, duration);
    ++stats->step_count;
    if (stats->steps.size() < top) stats->steps.push_back(step);
  }
  if (stats->step_count == 0) stats->steps_absent = "no step was recorded";
  return OkStatus();
}

Status ReadGc(const ProfileReader& reader, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(stats->gc_absent, Absence(reader, "GC_RECORD", {"startNs", "endNs"}));
  if (!stats->gc_absent.empty()) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(NoteImplausibleRows(reader, "GC_RECORD", "1", stats));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(
          "SELECT COUNT(*), CAST(TOTAL(endNs - startNs) AS INTEGER), MAX(endNs - startNs) FROM GC_RECORD "
          "WHERE " +
          PlausibleSpan(*stats, "startNs", "endNs")));
  GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
  if (row) {
    stats->gc_count = static_cast<std::uint64_t>(query.Int(0));
    stats->gc_total_ns = query.Int(1);
    stats->gc_max_ns = query.Int(2);
  }
  if (stats->gc_count == 0) stats->gc_absent = "no garbage-collector pause was recorded";
  return OkStatus();
}

Status ReadReplay(const ProfileReader& reader, std::size_t top, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(stats->replay_absent,
                           Absence(reader, "GPUPROF_REPLAY_KERNEL",
                                   {"id", "deviceId", "name", "replayed", "declineReason", "deterministic"}));
  if (!stats->replay_absent.empty()) {
    if (!reader.HasTable("GPUPROF_REPLAY_KERNEL")) {
      stats->replay_absent = "no kernel replay in this run";
    }
    return OkStatus();
  }
  GPUPROF_ASSIGN_OR_RETURN(
      std::string pass_absent,
      Absence(reader, "GPUPROF_REPLAY_PASS", {"kernelId", "pass", "durationNs", "bytesRestored"}));

  // The kernel name is a STRING_IDS id; fall back to the raw value when it does not resolve.
  const bool has_strings = reader.HasStringValues();
  std::string kname = has_strings ? "COALESCE(s.value, CAST(k.name AS TEXT))" : "CAST(k.name AS TEXT)";
  const std::string join = has_strings ? " LEFT JOIN STRING_IDS s ON s.id = k.name" : "";
  // Kernel nodes replayed inside a graph (issue 24) are their own rows, apart from the same
  // kernel launched outside one. A DB written before graph replay has no replayMode.
  GPUPROF_ASSIGN_OR_RETURN(const bool has_mode, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"replayMode"}));
  if (has_mode) kname = "(" + kname + " || CASE WHEN k.replayMode = 'node' THEN ' (graph node)' ELSE '' END)";

  using Key = std::pair<std::string, std::int64_t>;
  std::map<Key, std::size_t> index;  // (kernel, device) -> position in stats->replay
  GPUPROF_ASSIGN_OR_RETURN(
      Query launches,
      reader.Prepare(
          "SELECT kname, dev, COUNT(*) AS n, SUM(nondet) FROM (SELECT " + kname +
          " AS kname, k.deviceId AS dev, (k.deterministic = 0) AS nondet FROM GPUPROF_REPLAY_KERNEL k" +
          join + " WHERE k.replayed != 0) GROUP BY kname, dev ORDER BY n DESC, kname, dev"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, launches.Step());
    if (!row) break;
    ++stats->replay_kernel_groups;
    if (stats->replay.size() >= top) continue;
    ReplayKernelStat stat;
    stat.kernel = std::string(launches.Text(0));
    stat.device = launches.Int(1);
    stat.launches = static_cast<std::uint64_t>(launches.Int(2));
    stat.nondeterministic_launches = static_cast<std::uint64_t>(launches.Int(3));
    index[{stat.kernel, stat.device}] = stats->replay.size();
    stats->replay.push_back(std::move(stat));
  }

  if (pass_absent.empty() && !index.empty()) {
    const std::string passes_sql =
        "SELECT " + kname +
        " AS kname, k.deviceId AS dev, p.durationNs AS d, p.pass AS pass, "
        "p.bytesRestored AS br FROM GPUPROF_REPLAY_PASS p JOIN GPUPROF_REPLAY_KERNEL k "
        "ON k.id = p.kernelId" +
        join + " WHERE k.replayed != 0";
    GPUPROF_ASSIGN_OR_RETURN(
        Query aggregates,
        reader.Prepare(
            "SELECT kname, dev, COUNT(*), MIN(d), MAX(d), AVG(CASE WHEN pass > 1 THEN br END) FROM (" +
            passes_sql + ") GROUP BY kname, dev"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, aggregates.Step());
      if (!row) break;
      auto it = index.find({std::string(aggregates.Text(0)), aggregates.Int(1)});
      if (it == index.end()) continue;
      ReplayKernelStat& stat = stats->replay[it->second];
      stat.passes = static_cast<std::uint64_t>(aggregates.Int(2));
      stat.min_ns = aggregates.Int(3);
      stat.max_ns = aggregates.Int(4);
      stat.restored_bytes_per_pass = aggregates.Double(5);
    }
    // Medians: durations arrive sorted within each group, so the middle one is picked while
    // streaming, knowing each group's size from the aggregate above.
    GPUPROF_ASSIGN_OR_RETURN(Query ordered, reader.Prepare("SELECT kname, dev, d FROM (" + passes_sql +
                                                           ") ORDER BY kname, dev, d"));
    Key current;
    std::uint64_t position = 0;
    std::int64_t lower = 0;
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, ordered.Step());
      if (!row) break;
      Key key{std::string(ordered.Text(0)), ordered.Int(1)};
      if (key != current) {
        current = std::move(key);
        position = 0;
      }
      auto it = index.find(current);
      if (it != index.end()) {
        ReplayKernelStat& stat = stats->replay[it->second];
        const std::uint64_t n = stat.passes;
        const std::int64_t value = ordered.Int(2);
        if (n % 2 == 1 && position == n / 2) stat.median_ns = value;
        if (n % 2 == 0 && n > 0 && position == n / 2 - 1) lower = value;
        if (n % 2 == 0 && n > 0 && position == n / 2) stat.median_ns = lower + (value - lower) / 2;
      }
      ++position;
    }
  }

  GPUPROF_ASSIGN_OR_RETURN(
      Query declines,
      reader.Prepare(
          "SELECT kname, dev, reason, COUNT(*) AS n FROM (SELECT " + kname +
          " AS kname, k.deviceId AS dev, COALESCE(k.declineReason, '') AS reason "
          "FROM GPUPROF_REPLAY_KERNEL k" +
          join + " WHERE k.replayed = 0) GROUP BY kname, dev, reason ORDER BY n DESC, kname, dev, reason"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, declines.Step());
    if (!row) break;
    ++stats->replay_decline_groups;
    if (stats->replay_declines.size() >= top) continue;
    stats->replay_declines.push_back({std::string(declines.Text(0)), declines.Int(1),
                                      std::string(declines.Text(2)),
                                      static_cast<std::uint64_t>(declines.Int(3))});
  }
  if (stats->replay_kernel_groups == 0 && stats->replay_decline_groups == 0) {
    stats->replay_absent = "no launch was selected for replay";
  } else if (!pass_absent.empty() && stats->replay_kernel_groups > 0) {
    stats->replay_absent = "per-pass timing unavailable: " + pass_absent;
  }
  return OkStatus();
}

// A STRING_IDS-resolved text for the id column `column` ("" for NULL; the id as text when it does
// not resolve), as {select expression, join}. `alias` names the join.
std::pair<std::string, std::string> ResolvedName(bool has_strings, const std::string& column,
                                                 const std::string& alias) {
  if (!has_strings) return {"COALESCE(CAST(" + column + " AS TEXT), '')", ""};
  return {"COALESCE(" + alias + ".value, CAST(" + column + " AS TEXT), '')",
          " LEFT JOIN STRING_IDS " + alias + " ON " + alias + ".id = " + column};
}

// The Speed-of-Light inputs: per replayed (kernel, device) group with counters or a counterStatus,
// every metric's mean/min/max over its launches, the pass durations, the first status and the
// clock and cache policies. Each part is one GROUP BY (or a stream sorted by SQLite); what is kept is
// bounded by the groups and their distinct metric names.
Status ReadReplayCounters(const ProfileReader& reader, std::size_t top, ProfileStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(
      bool kernels, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"id", "deviceId", "name", "replayed"}));
  if (!kernels) {
    stats->replay_counters_absent = stats->replay_absent;
    return OkStatus();
  }
  GPUPROF_ASSIGN_OR_RETURN(bool metrics,
                           reader.HasColumns("GPUPROF_REPLAY_METRIC", {"kernelId", "name", "unit", "value"}));
  GPUPROF_ASSIGN_OR_RETURN(bool status, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"counterStatus"}));
  GPUPROF_ASSIGN_OR_RETURN(bool policies,
                           reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"clockControl", "cacheControl"}));
  if (!metrics && !status) {
    stats->replay_counters_absent =
        reader.HasTable("GPUPROF_REPLAY_METRIC")
            ? "GPUPROF_REPLAY_METRIC lacks some of the columns kernelId, name, unit, value"
            : "no GPUPROF_REPLAY_METRIC table (a DB written before hardware counters)";
    return OkStatus();
  }
  const bool has_strings = reader.HasStringValues();
  auto [kname, kjoin] = ResolvedName(has_strings, "k.name", "s");
  const std::string has_metrics =
      metrics ? "EXISTS (SELECT 1 FROM GPUPROF_REPLAY_METRIC m WHERE m.kernelId = k.id)" : "0";
  const std::string has_status = status ? "(k.counterStatus IS NOT NULL AND k.counterStatus != '')" : "0";

  using Key = std::pair<std::string, std::int64_t>;
  std::map<Key, std::size_t> index;  // (kernel, device) -> position in stats->replay_counters
  GPUPROF_ASSIGN_OR_RETURN(
      Query groups,
      reader.Prepare("SELECT kname, dev, COUNT(*) AS n, SUM(hm), SUM(hs) FROM (SELECT " + kname +
                     " AS kname, k.deviceId AS dev, " + has_metrics + " AS hm, " + has_status +
                     " AS hs FROM GPUPROF_REPLAY_KERNEL k" + kjoin +
                     " WHERE k.replayed != 0) GROUP BY kname, dev HAVING SUM(hm) > 0 OR SUM(hs) > 0 "
                     "ORDER BY n DESC, kname, dev"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, groups.Step());
    if (!row) break;
    ++stats->replay_counter_groups;
    if (stats->replay_counters.size() >= top) continue;
    ReplayCounterStat stat;
    stat.kernel = std::string(groups.Text(0));
    stat.device = groups.Int(1);
    stat.launches = static_cast<std::uint64_t>(groups.Int(2));
    stat.launches_with_metrics = static_cast<std::uint64_t>(groups.Int(3));
    stat.launches_without_counters = static_cast<std::uint64_t>(groups.Int(4));
    index[{stat.kernel, stat.device}] = stats->replay_counters.size();
    stats->replay_counters.push_back(std::move(stat));
  }
  if (index.empty()) {
    stats->replay_counters_absent = "no replayed launch has hardware counters (none were asked)";
    return OkStatus();
  }
  auto find = [&](const Query& q) -> ReplayCounterStat* {
    auto it = index.find({std::string(q.Text(0)), q.Int(1)});
    return it == index.end() ? nullptr : &stats->replay_counters[it->second];
  };

  if (metrics) {
    auto [mname, mjoin] = ResolvedName(has_strings, "m.name", "mn");
    auto [munit, ujoin] = ResolvedName(has_strings, "m.unit", "mu");
    GPUPROF_ASSIGN_OR_RETURN(
        Query values,
        reader.Prepare("SELECT kname, dev, mname, munit, COUNT(DISTINCT kid), AVG(v), MIN(v), MAX(v) FROM "
                       "(SELECT " +
                       kname + " AS kname, k.deviceId AS dev, " + mname + " AS mname, " + munit +
                       " AS munit, m.kernelId AS kid, m.value AS v FROM GPUPROF_REPLAY_METRIC m JOIN "
                       "GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId" +
                       kjoin + mjoin + ujoin +
                       " WHERE k.replayed != 0 AND m.value IS NOT NULL) GROUP BY kname, dev, mname, munit "
                       "ORDER BY kname, dev, mname, munit"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, values.Step());
      if (!row) break;
      ReplayCounterStat* stat = find(values);
      if (stat == nullptr) continue;
      stat->metrics.push_back({std::string(values.Text(2)), std::string(values.Text(3)),
                               static_cast<std::uint64_t>(values.Int(4)), values.Double(5), values.Double(6),
                               values.Double(7)});
    }
  }

  GPUPROF_ASSIGN_OR_RETURN(bool passes, reader.HasColumns("GPUPROF_REPLAY_PASS", {"kernelId", "durationNs"}));
  if (passes) {
    GPUPROF_ASSIGN_OR_RETURN(
        Query durations,
        reader.Prepare("SELECT kname, dev, COUNT(*), AVG(d), MIN(d), MAX(d) FROM (SELECT " + kname +
                       " AS kname, k.deviceId AS dev, p.durationNs AS d FROM GPUPROF_REPLAY_PASS p JOIN "
                       "GPUPROF_REPLAY_KERNEL k ON k.id = p.kernelId" +
                       kjoin + " WHERE k.replayed != 0) GROUP BY kname, dev"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, durations.Step());
      if (!row) break;
      ReplayCounterStat* stat = find(durations);
      if (stat == nullptr) continue;
      stat->pass_count = static_cast<std::uint64_t>(durations.Int(2));
      stat->pass_mean_ns = durations.Double(3);
      stat->pass_min_ns = durations.Int(4);
      stat->pass_max_ns = durations.Int(5);
    }
  }

  if (status) {
    // The first launch's status per group: rows arrive by id, so the first seen is kept.
    GPUPROF_ASSIGN_OR_RETURN(
        Query statuses,
        reader.Prepare("SELECT " + kname + ", k.deviceId, k.counterStatus FROM " + "GPUPROF_REPLAY_KERNEL k" +
                       kjoin + " WHERE k.replayed != 0 AND " + has_status + " ORDER BY k.id"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, statuses.Step());
      if (!row) break;
      ReplayCounterStat* stat = find(statuses);
      if (stat != nullptr && stat->counter_status.empty())
        stat->counter_status = std::string(statuses.Text(2));
    }
  }

  if (policies) {
    GPUPROF_ASSIGN_OR_RETURN(Query controls,
                             reader.Prepare("SELECT DISTINCT " + kname +
                                            " AS kname, k.deviceId AS dev, COALESCE(k.clockControl, ''), "
                                            "COALESCE(k.cacheControl, '') FROM GPUPROF_REPLAY_KERNEL k" +
                                            kjoin + " WHERE k.replayed != 0"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, controls.Step());
      if (!row) break;
      ReplayCounterStat* stat = find(controls);
      if (stat == nullptr) continue;
      for (auto [list, column] : {std::pair{&stat->clock_controls, 2}, std::pair{&stat->cache_controls, 3}}) {
        std::string value(controls.Text(column));
        if (!value.empty() && std::find(list->begin(), list->end(), value) == list->end()) {
          list->push_back(std::move(value));
        }
      }
    }
    for (ReplayCounterStat& stat : stats->replay_counters) {
      std::sort(stat.clock_controls.begin(), stat.clock_controls.end());
      std::sort(stat.cache_controls.begin(), stat.cache_controls.end());
    }
  }
  return OkStatus();
}

}  // namespace

const ReplayMetricStat* ReplayCounterStat::Find(std::string_view name) const {
  for (const ReplayMetricStat& metric : metrics) {
    if (metric.name == name) return &metric;
  }
  return nullptr;
}

StatusOr<std::optional<std::int64_t>> DbRank(const ProfileReader& reader) {
  GPUPROF_ASSIGN_OR_RETURN(bool rank_map, reader.HasColumns("RANK_DEVICE_MAP", {"rankId"}));
  if (!rank_map) return std::optional<std::int64_t>();
  GPUPROF_ASSIGN_OR_RETURN(Query rank, reader.Prepare("SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1"));
  GPUPROF_ASSIGN_OR_RETURN(bool has_rank, rank.Step());
  return has_rank ? rank.OptionalInt(0) : std::optional<std::int64_t>();
}

Status ForEachReplayMetric(const ProfileReader& reader,
                           const std::function<void(const ReplayMetricRow&)>& row, std::string* absent) {
  absent->clear();
  GPUPROF_ASSIGN_OR_RETURN(bool metrics,
                           reader.HasColumns("GPUPROF_REPLAY_METRIC", {"kernelId", "name", "unit", "value"}));
  if (!metrics) {
    *absent =
        reader.HasTable("GPUPROF_REPLAY_METRIC")
            ? "GPUPROF_REPLAY_METRIC lacks some of the columns kernelId, name, unit, value"
            : "no GPUPROF_REPLAY_METRIC table (a DB written before hardware counters, or without replay)";
    return OkStatus();
  }
  GPUPROF_ASSIGN_OR_RETURN(bool kernels, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"id", "name"}));
  GPUPROF_ASSIGN_OR_RETURN(bool launch_index, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"launchIndex"}));
  GPUPROF_ASSIGN_OR_RETURN(bool passes, reader.HasColumns("GPUPROF_REPLAY_METRIC", {"passes"}));
  const bool has_strings = reader.HasStringValues();
  auto [kname, kjoin] = ResolvedName(has_strings, "k.name", "s");
  auto [mname, mjoin] = ResolvedName(has_strings, "m.name", "mn");
  auto [munit, ujoin] = ResolvedName(has_strings, "m.unit", "mu");
  std::string sql = "SELECT m.kernelId, " + (kernels ? kname : std::string("''")) + ", " +
                    (kernels && launch_index ? std::string("k.launchIndex") : std::string("NULL")) + ", " +
                    mname + ", " + munit + ", m.value, " + (passes ? "m.passes" : "NULL") +
                    " FROM GPUPROF_REPLAY_METRIC m";
  if (kernels) sql += " LEFT JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId" + kjoin;
  sql += mjoin + ujoin + " ORDER BY m.kernelId, m.rowid";
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
  ReplayMetricRow out;
  GPUPROF_ASSIGN_OR_RETURN(out.rank, DbRank(reader));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool has_row, query.Step());
    if (!has_row) break;
    out.kernel_id = query.Int(0);
    out.kernel = std::string(query.Text(1));
    out.launch_index = query.Int(2);
    out.metric = std::string(query.Text(3));
    out.unit = std::string(query.Text(4));
    out.value = query.IsNull(5) ? std::nullopt : std::optional<double>(query.Double(5));
    out.passes = query.Int(6);
    row(out);
  }
  return OkStatus();
}

// ---- SelfTimeSweep --------------------------------------------------------------------------------

void SelfTimeSweep::Add(std::int64_t thread, std::int64_t start_ns, std::int64_t end_ns, std::int64_t key) {
  if (!thread_.has_value() || *thread_ != thread) {
    Finish();
    thread_ = thread;
  }
  end_ns = std::max(end_ns, start_ns);
  while (!stack_.empty() && stack_.back().end_ns <= start_ns) PopOne();
  if (!stack_.empty()) {
    OpenOp& parent = stack_.back();
    parent.child_ns = SaturatingAdd(parent.child_ns, std::min(end_ns, parent.end_ns) - start_ns);
  }
  stack_.push_back({start_ns, end_ns, 0, key});
}

void SelfTimeSweep::Finish() {
  while (!stack_.empty()) PopOne();
}

void SelfTimeSweep::PopOne() {
  const OpenOp op = stack_.back();
  stack_.pop_back();
  const std::int64_t duration = op.end_ns - op.start_ns;
  OpTotals& totals = totals_[op.key];
  ++totals.calls;
  totals.total_ns = SaturatingAdd(totals.total_ns, duration);
  // Children that overlap each other (bad data) could sum past the parent; clamp at zero.
  totals.self_ns = SaturatingAdd(totals.self_ns, std::max<std::int64_t>(0, duration - op.child_ns));
}

std::string OpDisplayName(std::string_view name) {
  if (name.size() > kProfilerStepPrefix.size() &&
      name.substr(0, kProfilerStepPrefix.size()) == kProfilerStepPrefix) {
    return std::string(kProfilerStepPrefix) + "*";
  }
  return std::string(name);
}

StatusOr<ProfileStats> ComputeStats(const ProfileReader& reader, const StatsOptions& options) {
  ProfileStats stats;
  stats.path = reader.path();
  GPUPROF_ASSIGN_OR_RETURN(StringLookup strings, StringLookup::Create(reader));
  GPUPROF_RETURN_IF_ERROR(ReadHeader(reader, &stats));
  if (reader.HasTable("STRING_IDS") && !reader.HasStringValues()) {
    stats.data_notes.push_back("STRING_IDS has no value column: names show as #<id>");
  }
  auto stage = [&](std::string_view what) { base::Progress::StageOf(options.progress, what); };
  stage("ops (PYTORCH_API)");
  GPUPROF_RETURN_IF_ERROR(ReadOps(reader, strings, options.top, &stats));
  stage("kernels (TASK)");
  GPUPROF_RETURN_IF_ERROR(ReadKernels(reader, strings, options.top, &stats));
  stage("memory (MEMORY_RECORD)");
  GPUPROF_RETURN_IF_ERROR(ReadMemory(reader, strings, &stats));
  stage("steps (STEP_TIME)");
  GPUPROF_RETURN_IF_ERROR(ReadSteps(reader, options.top, &stats));
  stage("GC pauses (GC_RECORD)");
  GPUPROF_RETURN_IF_ERROR(ReadGc(reader, &stats));
  stage("replay results");
  GPUPROF_RETURN_IF_ERROR(ReadReplay(reader, options.top, &stats));
  GPUPROF_RETURN_IF_ERROR(ReadReplayCounters(reader, options.top, &stats));
  stage("call stacks, modules and lost records");
  CollectedOptions collected;
  for (std::size_t i = 0; i < stats.top_ops_by_self.size() && i < kStackOps; ++i) {
    collected.top_ops.push_back(stats.top_ops_by_self[i].name);
  }
  collected.top_modules = options.top;
  collected.session_start_ns = stats.session_start_ns;
  collected.session_end_ns = stats.session_end_ns;
  GPUPROF_ASSIGN_OR_RETURN(stats.collected, ComputeCollected(reader, strings, collected));
  stage("range replay results");
  GPUPROF_ASSIGN_OR_RETURN(
      RangeScanSummary ranges,
      ForEachRangeKernel(reader, RangeScanOptions{options.top},
                         [&](const RangeKernel& kernel) { stats.range_kernels.push_back(kernel); }));
  stats.range_count = ranges.ranges;
  stats.more_ranges = ranges.more;
  stats.ranges_absent = std::move(ranges.absent);
  GPUPROF_ASSIGN_OR_RETURN(bool devices, reader.HasColumns("NPU_INFO", {"id", "name"}));
  if (!stats.range_kernels.empty() && devices) {
    GPUPROF_ASSIGN_OR_RETURN(Query names,
                             reader.Prepare("SELECT id, COALESCE(name, '') FROM NPU_INFO ORDER BY id"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, names.Step());
      if (!row) break;
      stats.device_names.emplace_back(names.Int(0), std::string(names.Text(1)));
    }
  }
  return stats;
}

StatusOr<ApiSummary> ComputeApiSummary(const ProfileReader& reader, std::size_t top) {
  ApiSummary summary;
  GPUPROF_ASSIGN_OR_RETURN(bool has_api, reader.HasColumns("CANN_API", {"startNs", "endNs", "type", "name"}));
  if (!has_api) {
    summary.absent = "the DB has no CANN_API table";
    return summary;
  }
  if (!reader.HasStringValues()) {
    summary.absent = "the DB's STRING_IDS has no value column, so API names cannot be read";
    return summary;
  }
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT s.value, COUNT(*), SUM(a.endNs - a.startNs) AS total FROM CANN_API a "
                     "LEFT JOIN STRING_IDS s ON s.id = a.name WHERE a.type = ?1 "
                     "GROUP BY a.name ORDER BY total DESC, s.value"));
  query.BindInt(1, kApiTypeRuntime);
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    auto calls = static_cast<std::uint64_t>(query.Int(1));
    summary.calls += calls;
    summary.total_ns += query.Int(2);
    ++summary.names;
    if (summary.top.size() < top) summary.top.push_back({std::string(query.Text(0)), calls, query.Int(2)});
  }
  if (summary.calls == 0) summary.absent = "no CUDA runtime API calls were recorded";
  return summary;
}

}  // namespace gpuprof::db
