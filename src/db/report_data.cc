#include "db/report_data.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "base/utf8.h"
#include "db/db_constants.h"
#include "db/device_work.h"
#include "db/plausible.h"
#include "db/schema.h"
#include "db/string_lookup.h"
#include "db/task_op_link.h"

namespace gpuprof::db {
namespace {

// The MEMORY_RECORD rows `gpuprof stats` counts (plausible.h): an impossible figure (INT64_MAX
// bytes) would scale the curve and name a peak no device had.
StatusOr<std::string> PlausibleMemory(const ProfileReader& reader) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_active, reader.HasColumns("MEMORY_RECORD", {"totalActive"}));
  return PlausibleMemorySql(has_active);
}

std::size_t DelayBucket(std::int64_t delay_ns) {
  if (delay_ns < 1000) return 0;
  const auto micros = static_cast<std::uint64_t>(delay_ns / 1000);
  const auto bucket = static_cast<std::size_t>(std::bit_width(micros));  // [2^(b-1), 2^b) µs
  return std::min(bucket, kDelayBuckets - 1);
}

Status ReadConfig(const ProfileReader& reader, ReportDb* report) {
  GPUPROF_ASSIGN_OR_RETURN(bool has, reader.HasColumns("META_DATA", {"name", "value"}));
  if (!has) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(Query query,
                           reader.Prepare("SELECT value FROM META_DATA WHERE name = ?1 LIMIT 1"));
  query.BindText(1, kMetaGpuprofConfig);
  GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
  if (row && !query.IsNull(0)) report->config_json = std::string(query.Text(0));
  return OkStatus();
}

Status ReadMemoryCurves(const ProfileReader& reader, const ReportOptions& options, ReportDb* report) {
  GPUPROF_ASSIGN_OR_RETURN(bool has, reader.HasColumns("MEMORY_RECORD", {"timestamp", "totalAllocated",
                                                                         "totalReserved", "deviceId"}));
  if (!has) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const std::string plausible, PlausibleMemory(reader));
  GPUPROF_ASSIGN_OR_RETURN(Query span,
                           reader.Prepare("SELECT MIN(timestamp), MAX(timestamp) FROM MEMORY_RECORD "
                                          "WHERE timestamp IS NOT NULL AND " +
                                          plausible));
  GPUPROF_ASSIGN_OR_RETURN(bool any, span.Step());
  if (!any || span.IsNull(0)) return OkStatus();
  const std::int64_t first = span.Int(0);
  const std::int64_t last = span.Int(1);
  const std::int64_t buckets = static_cast<std::int64_t>(std::max<std::size_t>(options.memory_buckets, 1));
  const std::int64_t width = std::max<std::int64_t>((last - first) / buckets + 1, 1);
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT IFNULL(deviceId, 0), (timestamp - ?1) / ?2 AS bucket, MAX(totalAllocated), "
                     "MAX(totalReserved) FROM MEMORY_RECORD WHERE timestamp IS NOT NULL AND " +
                     plausible + " GROUP BY 1, 2 ORDER BY 1, 2"));
  query.BindInt(1, first);
  query.BindInt(2, width);
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    const std::int64_t device = query.Int(0);
    if (report->memory.empty() || report->memory.back().device != device) {
      report->memory.push_back(MemoryCurve{device, {}});
    }
    report->memory.back().points.push_back(
        MemoryPoint{first + query.Int(1) * width, query.Int(2), query.Int(3)});
  }
  return OkStatus();
}

// Saturating, as SQLite's integer subtraction turns to a double that reads back clamped.
std::int64_t Difference(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (!__builtin_sub_overflow(a, b, &out)) return out;
  return b < 0 ? INT64_MAX : INT64_MIN;
}

// One row per task linked to an op: the innermost (latest-starting) op of its connection.
Status ReadOpLaunches(const ProfileReader& reader, const ReportOptions& options, ReportDb* report) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_tasks, reader.HasColumns("TASK", {"startNs", "endNs", "connectionId"}));
  if (!has_tasks) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const TaskOpLinks links, TaskOpLinks::Read(reader));
  if (links.empty()) return OkStatus();
  // Grouped by the op's name id, named once per id afterwards (a name lookup per row cost seconds
  // over millions of tasks).
  GPUPROF_ASSIGN_OR_RETURN(const std::string device_work, DeviceWorkTaskSql(reader, ""));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query, reader.Prepare("SELECT connectionId, startNs, endNs FROM TASK WHERE connectionId IS "
                                  "NOT NULL AND startNs IS NOT NULL AND endNs >= startNs AND " +
                                  device_work));
  std::map<std::optional<std::int64_t>, OpLaunchStat> by_id;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    const LinkedOp* op = links.Find(query.Int(0));
    if (op == nullptr) continue;
    base::Progress::AdvanceOf(options.progress, 1);
    OpLaunchStat& stat = by_id[op->name];
    ++stat.tasks;
    stat.task_ns += Difference(query.Int(2), query.Int(1));
    // An op without a start reads as no delay, as SQL's NULL difference read as 0.
    const std::int64_t delay = op->start_ns.has_value() ? Difference(query.Int(1), *op->start_ns) : 0;
    ++report->launch_delay_histogram[DelayBucket(delay)];
    ++report->launch_delays;
  }
  GPUPROF_ASSIGN_OR_RETURN(StringLookup names, StringLookup::Create(reader));
  std::map<std::string, OpLaunchStat> by_op;
  for (auto& [id, stat] : by_id) {
    std::string op = "[unnamed op]";
    if (id.has_value()) {
      GPUPROF_ASSIGN_OR_RETURN(op, names.Get(id));
    }
    OpLaunchStat& merged = by_op[op];  // ids of one text (rare) add up
    merged.tasks += stat.tasks;
    merged.task_ns += stat.task_ns;
  }
  for (auto& [op, stat] : by_op) {
    stat.op = op;
    report->op_launches.push_back(std::move(stat));
  }
  std::sort(report->op_launches.begin(), report->op_launches.end(), [](const auto& a, const auto& b) {
    return a.task_ns != b.task_ns ? a.task_ns > b.task_ns : a.op < b.op;
  });
  if (report->op_launches.size() > options.top) report->op_launches.resize(options.top);
  return OkStatus();
}

StatusOr<std::vector<OpMemoryStat>> OpMemoryRows(const ProfileReader& reader, const std::string& where,
                                                 const std::vector<std::int64_t>& binds, std::size_t top) {
  // The format's invalid id: a block no op allocated (the allocator's own, or before any op).
  const std::string name = "CASE WHEN m.name IS NULL OR m.name = " + std::to_string(kDbInvalidValue) +
                           " THEN '[no op]' ELSE " + StringValueSql(reader, "m.name") + " END";
  GPUPROF_ASSIGN_OR_RETURN(Query query,
                           reader.Prepare("SELECT " + name +
                                          ", COUNT(*), SUM(m.size) AS bytes FROM OP_MEMORY m WHERE "
                                          "m.size > 0" +
                                          where + " GROUP BY m.name ORDER BY bytes DESC LIMIT ?9"));
  for (std::size_t i = 0; i < binds.size(); ++i) query.BindInt(static_cast<int>(i + 1), binds[i]);
  query.BindInt(9, static_cast<std::int64_t>(top));
  std::vector<OpMemoryStat> rows;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    rows.push_back(
        OpMemoryStat{std::string(query.Text(0)), static_cast<std::uint64_t>(query.Int(1)), query.Int(2)});
  }
  return rows;
}

Status ReadOpMemory(const ProfileReader& reader, const ReportOptions& options, ReportDb* report) {
  GPUPROF_ASSIGN_OR_RETURN(bool has, reader.HasColumns("OP_MEMORY", {"name", "size", "allocationTime",
                                                                     "releaseTime", "deviceId"}));
  if (!has) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(report->top_allocating_ops, OpMemoryRows(reader, "", {}, options.top));
  GPUPROF_ASSIGN_OR_RETURN(bool has_records,
                           reader.HasColumns("MEMORY_RECORD", {"timestamp", "totalAllocated", "deviceId"}));
  if (!has_records) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const std::string plausible, PlausibleMemory(reader));
  GPUPROF_ASSIGN_OR_RETURN(Query peak,
                           reader.Prepare("SELECT timestamp, IFNULL(deviceId, 0) FROM MEMORY_RECORD "
                                          "WHERE timestamp IS NOT NULL AND totalAllocated > 0 AND " +
                                          plausible + " ORDER BY totalAllocated DESC, timestamp LIMIT 1"));
  GPUPROF_ASSIGN_OR_RETURN(bool found, peak.Step());
  if (!found) return OkStatus();
  report->peak_time_ns = peak.Int(0);
  report->peak_device = peak.Int(1);
  GPUPROF_ASSIGN_OR_RETURN(
      report->live_at_peak,
      OpMemoryRows(reader,
                   " AND m.allocationTime <= ?1 AND (m.releaseTime IS NULL OR m.releaseTime > ?1) AND "
                   "IFNULL(m.deviceId, 0) = ?2",
                   {*report->peak_time_ns, report->peak_device}, options.top));
  return OkStatus();
}

// The timeline's names by STRING_IDS id, each read once and kept cut to kReportNameBytes. The
// timeline's queries sort ids, not names: sorting an op's 20 MB name with each of its rows held
// gigabytes.
class TimelineNames {
 public:
  static StatusOr<TimelineNames> Create(const ProfileReader& reader) {
    TimelineNames names;
    if (reader.HasStringValues()) {
      GPUPROF_ASSIGN_OR_RETURN(names.query_, reader.Prepare("SELECT value FROM STRING_IDS WHERE id = ?1"));
      names.available_ = true;
    }
    return names;
  }

  // The name (cut) and its whole length; "[unnamed]" for NULL, "#<id>" for an id not in STRING_IDS.
  StatusOr<std::pair<std::string, std::size_t>> Get(const Query& row, int column) {
    if (row.IsNull(column)) return std::pair<std::string, std::size_t>{"[unnamed]", 9};
    const std::int64_t id = row.Int(column);
    auto it = cache_.find(id);
    if (it != cache_.end()) return it->second;
    std::pair<std::string, std::size_t> name{"#" + std::to_string(id), 0};
    if (available_) {
      query_.Reset();
      query_.BindInt(1, id);
      GPUPROF_ASSIGN_OR_RETURN(bool found, query_.Step());
      if (found) name.first = std::string(base::Utf8Prefix(query_.Text(0), kReportNameBytes));
      if (found) name.second = query_.Text(0).size();
    }
    name.second = std::max(name.second, name.first.size());
    return cache_.emplace(id, std::move(name)).first->second;
  }

 private:
  Query query_;
  bool available_ = false;
  std::map<std::int64_t, std::pair<std::string, std::size_t>> cache_;
};

// Rows of `sql` (start, end, lane key, name id) within [start, end) of the step, into `items`.
template <typename LaneFn>
Status ReadItems(const ProfileReader& reader, const std::string& sql, const StepTimeline& step, LaneFn lane,
                 TimelineNames& names, std::vector<TimelineItem>* items) {
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
  query.BindInt(1, step.start_ns);
  query.BindInt(2, step.end_ns);
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    TimelineItem item;
    item.start_ns = std::max(query.Int(0), step.start_ns);
    item.end_ns = std::min(std::max(query.Int(1), query.Int(0)), step.end_ns);
    item.lane = lane(query.Int(2), query.Int(3));
    GPUPROF_ASSIGN_OR_RETURN(std::tie(item.name, item.name_bytes), names.Get(query, 4));
    items->push_back(std::move(item));
  }
  return OkStatus();
}

StatusOr<StepTimeline> ReadStepTimeline(const ProfileReader& reader, const RankStepStats& chosen,
                                        std::string why, const ReportOptions& options) {
  StepTimeline step;
  step.why = std::move(why);
  step.step_id = chosen.id;
  step.start_ns = chosen.start_ns;
  step.end_ns = std::max(chosen.end_ns, chosen.start_ns + 1);
  std::vector<TimelineItem> items;
  GPUPROF_ASSIGN_OR_RETURN(TimelineNames names, TimelineNames::Create(reader));
  GPUPROF_ASSIGN_OR_RETURN(bool has_ops,
                           reader.HasColumns("PYTORCH_API", {"startNs", "endNs", "globalTid", "name"}));
  if (has_ops) {
    // Ops per thread, by start then longest first, so that nesting depth is a stack sweep.
    GPUPROF_RETURN_IF_ERROR(ReadItems(
        reader,
        "SELECT startNs, endNs, globalTid, 0, name FROM PYTORCH_API WHERE endNs > ?1 AND startNs < ?2 ORDER "
        "BY "
        "globalTid, startNs, endNs DESC",
        step, [](std::int64_t tid, std::int64_t) { return "thread " + std::to_string(tid & 0xffffffff); },
        names, &items));
    std::vector<std::int64_t> open_ends;
    std::string lane;
    for (TimelineItem& item : items) {
      if (item.lane != lane) {
        open_ends.clear();
        lane = item.lane;
      }
      while (!open_ends.empty() && open_ends.back() <= item.start_ns) open_ends.pop_back();
      item.depth = static_cast<int>(open_ends.size());
      open_ends.push_back(item.end_ns);
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(
      bool has_tasks,
      reader.HasColumns("TASK", {"startNs", "endNs", "deviceId", "streamId", "globalTaskId", "taskType"}));
  if (has_tasks) {
    GPUPROF_ASSIGN_OR_RETURN(bool has_info, reader.HasColumns("COMPUTE_TASK_INFO", {"name", "globalTaskId"}));
    // The kernel's name where it has a COMPUTE_TASK_INFO row, else the task type.
    const std::string name = has_info ? "COALESCE((SELECT c.name FROM COMPUTE_TASK_INFO c WHERE "
                                        "c.globalTaskId = t.globalTaskId), t.taskType)"
                                      : "t.taskType";
    GPUPROF_ASSIGN_OR_RETURN(const std::string device_work, DeviceWorkTaskSql(reader, "t"));
    GPUPROF_RETURN_IF_ERROR(ReadItems(
        reader,
        "SELECT t.startNs, t.endNs, IFNULL(t.deviceId, 0), IFNULL(t.streamId, 0), " + name +
            " FROM TASK t WHERE t.endNs > ?1 AND t.startNs < ?2 AND " + device_work +
            " ORDER BY t.deviceId, t.streamId, t.startNs",
        step,
        [](std::int64_t device, std::int64_t stream) {
          return "device " + std::to_string(device) + " stream " + std::to_string(stream);
        },
        names, &items));
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_marks, reader.HasColumns("MSTX_EVENTS", {"startNs", "endNs", "message"}));
  if (has_marks) {
    GPUPROF_RETURN_IF_ERROR(ReadItems(
        reader,
        "SELECT startNs, endNs, 0, 0, message FROM MSTX_EVENTS WHERE endNs >= ?1 AND startNs < ?2 ORDER BY "
        "startNs",
        step, [](std::int64_t, std::int64_t) { return std::string("marks"); }, names, &items));
  }
  if (items.size() > options.timeline_items) {
    // The longest bars stay; the rest would be under a pixel at the step's scale anyway.
    std::vector<std::size_t> order(items.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(options.timeline_items),
                     order.end(), [&](std::size_t a, std::size_t b) {
                       return items[a].end_ns - items[a].start_ns > items[b].end_ns - items[b].start_ns;
                     });
    order.resize(options.timeline_items);
    std::sort(order.begin(), order.end());
    std::vector<TimelineItem> kept;
    kept.reserve(order.size());
    for (std::size_t i : order) kept.push_back(std::move(items[i]));
    step.dropped = items.size() - kept.size();
    items = std::move(kept);
  }
  step.items = std::move(items);
  GPUPROF_ASSIGN_OR_RETURN(
      bool has_memory, reader.HasColumns("MEMORY_RECORD", {"timestamp", "totalAllocated", "totalReserved"}));
  if (has_memory) {
    GPUPROF_ASSIGN_OR_RETURN(const std::string plausible, PlausibleMemory(reader));
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT timestamp, totalAllocated, totalReserved FROM "
                                            "MEMORY_RECORD WHERE timestamp >= ?1 AND timestamp < ?2 AND " +
                                            plausible + " ORDER BY timestamp LIMIT 2000"));
    query.BindInt(1, step.start_ns);
    query.BindInt(2, step.end_ns);
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      step.memory.push_back(MemoryPoint{query.Int(0), query.Int(1), query.Int(2)});
    }
  }
  return step;
}

Status ReadStepMemcpy(const ProfileReader& reader, ReportDb* report) {
  report->step_memcpy_ns.assign(report->split.steps.size(), 0);
  GPUPROF_ASSIGN_OR_RETURN(bool has_tasks, reader.HasColumns("TASK", {"startNs", "endNs", "taskType"}));
  if (!has_tasks || !reader.HasStringValues() || report->split.steps.empty()) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(
          "SELECT t.startNs, t.endNs FROM TASK t JOIN STRING_IDS s ON s.id = t.taskType WHERE "
          "(s.value LIKE 'MEMCPY%' OR s.value LIKE 'MEMSET%') AND t.endNs > t.startNs ORDER BY t.startNs"));
  IntervalUnion copies;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    copies.Add(Interval{query.Int(0), query.Int(1)});
  }
  const std::vector<Interval>& merged = copies.merged();
  for (std::size_t i = 0; i < report->split.steps.size(); ++i) {
    const RankStepStats& step = report->split.steps[i];
    std::int64_t total = 0;
    // The copies overlapping [start, end), clipped to it.
    auto it =
        std::lower_bound(merged.begin(), merged.end(), step.start_ns,
                         [](const Interval& interval, std::int64_t at) { return interval.end_ns <= at; });
    for (; it != merged.end() && it->start_ns < step.end_ns; ++it) {
      total += std::min(it->end_ns, step.end_ns) - std::max(it->start_ns, step.start_ns);
    }
    report->step_memcpy_ns[i] = total;
  }
  return OkStatus();
}

// The median step by duration and, when it is another, the slowest.
Status ReadTimelines(const ProfileReader& reader, const ReportOptions& options, ReportDb* report) {
  if (report->split.steps.empty()) return OkStatus();
  std::vector<const RankStepStats*> by_duration;
  for (const RankStepStats& step : report->split.steps) by_duration.push_back(&step);
  std::stable_sort(by_duration.begin(), by_duration.end(),
                   [](const auto* a, const auto* b) { return a->duration_ns < b->duration_ns; });
  const RankStepStats* median = by_duration[(by_duration.size() - 1) / 2];
  const RankStepStats* slowest = by_duration.back();
  GPUPROF_ASSIGN_OR_RETURN(StepTimeline first, ReadStepTimeline(reader, *median, "median", options));
  report->timelines.push_back(std::move(first));
  if (slowest != median) {
    GPUPROF_ASSIGN_OR_RETURN(StepTimeline second, ReadStepTimeline(reader, *slowest, "slowest", options));
    report->timelines.push_back(std::move(second));
  }
  return OkStatus();
}

}  // namespace

StatusOr<ReportDb> ReadReportDb(const ProfileDbFile& file, const ReportOptions& options) {
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(file.path));
  ReportDb report;
  GPUPROF_ASSIGN_OR_RETURN(report.stats, ComputeStats(*reader, StatsOptions{options.top, options.progress}));
  base::Progress::StageOf(options.progress, "the step split");
  GPUPROF_ASSIGN_OR_RETURN(
      report.split, ComputeRankStats(file, WithoutSteps::kWholeRunWithoutSteps, ImpossibleSteps::kLeaveOut));
  base::Progress::StageOf(options.progress, "the findings");
  GPUPROF_ASSIGN_OR_RETURN(
      report.findings,
      ComputeFindings(*reader, report.split, FindingsOptions{.include_warmup = options.include_warmup}));
  GPUPROF_RETURN_IF_ERROR(ReadStepMemcpy(*reader, &report));
  base::Progress::StageOf(options.progress, "the memory curve (MEMORY_RECORD)");
  GPUPROF_RETURN_IF_ERROR(ReadMemoryCurves(*reader, options, &report));
  base::Progress::StageOf(options.progress, "ops and their kernels (CONNECTION_IDS)");
  GPUPROF_RETURN_IF_ERROR(ReadOpLaunches(*reader, options, &report));
  base::Progress::StageOf(options.progress, "allocations per op (OP_MEMORY)");
  GPUPROF_RETURN_IF_ERROR(ReadOpMemory(*reader, options, &report));
  base::Progress::StageOf(options.progress, "the timeline of the median and the slowest step");
  GPUPROF_RETURN_IF_ERROR(ReadTimelines(*reader, options, &report));
  GPUPROF_RETURN_IF_ERROR(ReadConfig(*reader, &report));
  return report;
}

}  // namespace gpuprof::db
