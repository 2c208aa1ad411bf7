#include "db/report_data.h"

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "db/db_constants.h"
#include "db/schema.h"

namespace gpuprof::db {
namespace {

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
  GPUPROF_ASSIGN_OR_RETURN(Query span,
                           reader.Prepare("SELECT MIN(timestamp), MAX(timestamp) FROM MEMORY_RECORD "
                                          "WHERE timestamp IS NOT NULL"));
  GPUPROF_ASSIGN_OR_RETURN(bool any, span.Step());
  if (!any || span.IsNull(0)) return OkStatus();
  const std::int64_t first = span.Int(0);
  const std::int64_t last = span.Int(1);
  const std::int64_t buckets = static_cast<std::int64_t>(std::max<std::size_t>(options.memory_buckets, 1));
  const std::int64_t width = std::max<std::int64_t>((last - first) / buckets + 1, 1);
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT IFNULL(deviceId, 0), (timestamp - ?1) / ?2 AS bucket, MAX(totalAllocated), "
                     "MAX(totalReserved) FROM MEMORY_RECORD WHERE timestamp IS NOT NULL "
                     "GROUP BY 1, 2 ORDER BY 1, 2"));
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

// One row per task linked to an op: the innermost (latest-starting) op of its connection.
Status ReadOpLaunches(const ProfileReader& reader, const ReportOptions& options, ReportDb* report) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_connections, reader.HasColumns("CONNECTION_IDS", {"id", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(bool has_ops,
                           reader.HasColumns("PYTORCH_API", {"startNs", "name", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(bool has_tasks, reader.HasColumns("TASK", {"startNs", "endNs", "connectionId"}));
  if (!has_connections || !has_ops || !has_tasks) return OkStatus();
  const std::string name =
      reader.HasStringValues()
          ? "IFNULL((SELECT value FROM STRING_IDS WHERE id = l.op_name), '#' || l.op_name)"
          : "'#' || l.op_name";
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(
          "SELECT " + name +
          ", t.startNs - l.op_start, t.endNs - t.startNs FROM (SELECT c.connectionId AS cid, "
          "MAX(p.startNs) AS op_start, p.name AS op_name FROM CONNECTION_IDS c JOIN PYTORCH_API p ON "
          "p.connectionId = c.id GROUP BY c.connectionId) l JOIN TASK t ON t.connectionId = l.cid "
          "WHERE t.startNs IS NOT NULL AND t.endNs >= t.startNs"));
  std::map<std::string, OpLaunchStat> by_op;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    base::Progress::AdvanceOf(options.progress, 1);
    OpLaunchStat& stat =
        by_op[std::string(query.IsNull(0) ? std::string_view("[unnamed op]") : query.Text(0))];
    ++stat.tasks;
    stat.task_ns += query.Int(2);
    ++report->launch_delay_histogram[DelayBucket(query.Int(1))];
    ++report->launch_delays;
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
  const std::string name =
      "CASE WHEN m.name IS NULL OR m.name = " + std::to_string(kDbInvalidValue) + " THEN '[no op]' ELSE " +
      (reader.HasStringValues() ? "IFNULL((SELECT value FROM STRING_IDS WHERE id = m.name), '#' || m.name)"
                                : "'#' || m.name") +
      " END";
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
  GPUPROF_ASSIGN_OR_RETURN(Query peak,
                           reader.Prepare("SELECT timestamp, IFNULL(deviceId, 0) FROM MEMORY_RECORD "
                                          "WHERE timestamp IS NOT NULL AND totalAllocated > 0 "
                                          "ORDER BY totalAllocated DESC, timestamp LIMIT 1"));
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

}  // namespace

StatusOr<ReportDb> ReadReportDb(const ProfileDbFile& file, const ReportOptions& options) {
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(file.path));
  ReportDb report;
  GPUPROF_ASSIGN_OR_RETURN(report.stats, ComputeStats(*reader, StatsOptions{options.top, options.progress}));
  base::Progress::StageOf(options.progress, "the step split");
  GPUPROF_ASSIGN_OR_RETURN(report.split, ComputeRankStats(file, WithoutSteps::kWholeRunWithoutSteps));
  base::Progress::StageOf(options.progress, "the memory curve (MEMORY_RECORD)");
  GPUPROF_RETURN_IF_ERROR(ReadMemoryCurves(*reader, options, &report));
  base::Progress::StageOf(options.progress, "ops and their kernels (CONNECTION_IDS)");
  GPUPROF_RETURN_IF_ERROR(ReadOpLaunches(*reader, options, &report));
  base::Progress::StageOf(options.progress, "allocations per op (OP_MEMORY)");
  GPUPROF_RETURN_IF_ERROR(ReadOpMemory(*reader, options, &report));
  GPUPROF_RETURN_IF_ERROR(ReadConfig(*reader, &report));
  return report;
}

}  // namespace gpuprof::db
