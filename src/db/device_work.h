// Which TASK rows are device work, for the read side. Every TASK row is a kernel, copy or memset
// the device ran, except the task of a device-linked mstx range (type kMstxRangeTaskType,
// db_constants.h): the writer adds it to span the device work the range's thread launched, for
// msprof-analyze's mstx_sum, so it covers the device's idle gaps and would count that work twice.
// A reader that means device work (task types, busy and idle time, timelines, exports, per-op and
// per-module device time) keeps only the rows DeviceWorkTaskSql admits. Readers of kernels alone
// (TASK joined to COMPUTE_TASK_INFO) need no filter: the range's task has no kernel row.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "db/db_constants.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// The SQL condition on the TASK row named `alias` ("t"; "" for unqualified columns) that holds for
// device work. The range's task type is looked up in STRING_IDS once, here, so the condition
// compares ids; it is "1" (every row) when the DB has no taskType column, no STRING_IDS or no such
// type. A task with no type is device work.
inline StatusOr<std::string> DeviceWorkTaskSql(const ProfileReader& reader, std::string_view alias) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has_type, reader.HasColumns("TASK", {"taskType"}));
  if (!has_type || !reader.HasStringValues()) return std::string("1");
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT id FROM STRING_IDS WHERE value = ?1"));
  query.BindText(1, kMstxRangeTaskType);
  std::string ids;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(const bool row, query.Step());
    if (!row) break;
    ids += (ids.empty() ? "" : ", ") + std::to_string(query.Int(0));
  }
  if (ids.empty()) return std::string("1");
  const std::string column = (alias.empty() ? std::string() : std::string(alias) + ".") + "taskType";
  return "(" + column + " IS NULL OR " + column + " NOT IN (" + ids + "))";
}

}  // namespace gpuprof::db
