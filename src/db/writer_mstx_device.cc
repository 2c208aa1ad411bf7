// The device side of the device-linked mstx ranges (gpuprof.mstx.range_start(..., stream=s) or
// device=True; trace::Mark::device), written at Finalize once every TASK row is.
//
// What reads it (msprof-analyze v26.1.0): mstx_sum's range query (prof_exports/
// mstx_event_export.py MstxRangeExport) and pp_chart (prof_exports/pp_chart_export.py) join
// MSTX_EVENTS.connectionId = TASK.connectionId and take that one TASK row's startNs and endNs as
// the range's device start and end. torch_npu gets that row from device work its mstx API puts on
// the stream; gpuprof adds no device work: the range's device time is derived from the device
// work (kernels, copies, memsets) whose launch calls its thread made inside the host range, on
// the given stream when there is one, from the first task's start to the last one's end. One TASK
// row of type MSTX_RANGE per range carries that span, with the range's own connectionId
// (4 << 32 + n), the deviceId and streamId of one of its tasks, and no COMPUTE_TASK_INFO row. A
// range whose thread launched nothing inside it (nothing on its stream) gets no row and keeps
// 4294967295, as a host-only range: mstx_sum drops a rank whose range joins no TASK row.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "db/db_constants.h"
#include "db/writer_rows.h"

namespace gpuprof::db::internal {

Status RowSink::WriteDeviceRanges() {
  if (device_ranges_.empty()) return OkStatus();
  // The launches by thread and start, so that each range finds its own with two binary searches.
  struct Launch {
    std::uint32_t tid;
    std::int64_t start_ns;
    std::uint64_t correlation_id;
  };
  std::vector<Launch> launches;
  launches.reserve(launches_.size());
  for (const LaunchSpan& l : launches_) launches.push_back({l.tid, l.start_ns, l.correlation_id});
  const auto key = [](const Launch& l) { return std::tie(l.tid, l.start_ns); };
  std::sort(launches.begin(), launches.end(),
            [&key](const Launch& a, const Launch& b) { return key(a) < key(b); });

  GPUPROF_RETURN_IF_ERROR(
      conn_.Exec("CREATE TEMP TABLE gpuprof_range_launch (corr INTEGER, conn INTEGER, stream INTEGER);"
                 "CREATE TEMP TABLE gpuprof_device_range (conn INTEGER PRIMARY KEY);"));
  {
    GPUPROF_ASSIGN_OR_RETURN(
        Statement link, Statement::Prepare(conn_, "INSERT INTO temp.gpuprof_range_launch VALUES (?1, ?2, ?3)",
                                           Statement::Use::kTransient));
    GPUPROF_ASSIGN_OR_RETURN(Statement range,
                             Statement::Prepare(conn_, "INSERT INTO temp.gpuprof_device_range VALUES (?1)",
                                                Statement::Use::kTransient));
    for (const DeviceRange& r : device_ranges_) {
      range.BindU64(1, r.connection_id);
      GPUPROF_RETURN_IF_ERROR(range.Run());
      auto first = std::lower_bound(launches.begin(), launches.end(), Launch{r.tid, r.start_ns, 0},
                                    [&key](const Launch& a, const Launch& b) { return key(a) < key(b); });
      for (auto it = first; it != launches.end() && it->tid == r.tid && it->start_ns <= r.end_ns; ++it) {
        link.BindU64(1, it->correlation_id);
        link.BindU64(2, r.connection_id);
        link.BindOptional(3, r.stream);
        GPUPROF_RETURN_IF_ERROR(link.Run());
      }
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(const std::uint64_t type_id, Id(StringSpace::kDevice, kMstxRangeTaskType));
  // One pass over TASK (the temp table is looked up by correlation id); the new rows' global task
  // ids follow the largest one written.
  GPUPROF_RETURN_IF_ERROR(conn_.Exec(
      "CREATE INDEX temp.gpuprof_range_launch_corr ON gpuprof_range_launch (corr);"
      "INSERT INTO TASK SELECT s, e, deviceId, conn, base + n, globalPid, " +
      std::to_string(type_id) +
      ", contextId, streamId, base + n, 4294967295 FROM (SELECT MIN(t.startNs) AS s, MAX(t.endNs) AS e, "
      "t.deviceId, l.conn, t.globalPid, t.contextId, t.streamId, ROW_NUMBER() OVER (ORDER BY l.conn) AS n, "
      "(SELECT COALESCE(MAX(globalTaskId), -1) FROM TASK) AS base FROM temp.gpuprof_range_launch l "
      "JOIN TASK t ON t.connectionId = l.corr WHERE l.stream IS NULL OR t.streamId = l.stream "
      "GROUP BY l.conn);"
      "UPDATE MSTX_EVENTS SET connectionId = " +
      std::to_string(kInvalidStringId) +
      " WHERE connectionId IN (SELECT conn FROM temp.gpuprof_device_range) AND connectionId NOT IN "
      "(SELECT connectionId FROM TASK WHERE taskType = " +
      std::to_string(type_id) +
      ");"
      "DROP TABLE temp.gpuprof_range_launch; DROP TABLE temp.gpuprof_device_range;"));
  return OkStatus();
}

}  // namespace gpuprof::db::internal
