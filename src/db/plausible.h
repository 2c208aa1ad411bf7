// What the read side counts as a real reading, as SQL conditions: `gpuprof stats`, `report` and the
// step split of cluster_stats leave other rows out (and say how many), `gpuprof check` names them.
// One copy, so that a row `stats` leaves out never shows in a page or a cluster table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "db/db_constants.h"

namespace gpuprof::db {

// Rows within an hour of a sound session span still count (a step or op that ran across its edge).
inline constexpr std::int64_t kSessionSlackNs = std::int64_t{3600} * 1'000'000'000;

// The spans that count: integer times (or integer text, as torch_npu declares them), not negative,
// end >= start, below 2^62 ns and, when the session's span is sound, within an hour of it. Other
// rows are impossible (a damaged or hand-edited DB); sums over them overflow and percentages pass
// the session.
inline std::string PlausibleSpanSql(const std::string& start, const std::string& end,
                                    std::optional<std::int64_t> session_start_ns,
                                    std::optional<std::int64_t> session_end_ns) {
  std::int64_t lo = 0;
  std::int64_t hi = kMaxPlausibleTimeNs;
  if (session_start_ns.has_value() && session_end_ns.has_value() && *session_start_ns >= 0 &&
      *session_start_ns <= *session_end_ns && *session_end_ns <= kMaxPlausibleTimeNs) {
    lo = std::max<std::int64_t>(0, *session_start_ns - kSessionSlackNs);
    hi = std::min(kMaxPlausibleTimeNs, *session_end_ns + kSessionSlackNs);
  }
  const std::string s = "CAST(" + start + " AS INTEGER)";
  const std::string e = "CAST(" + end + " AS INTEGER)";
  return "(typeof(" + start + ") IN ('integer', 'text') AND typeof(" + end + ") IN ('integer', 'text') AND " +
         s + " >= " + std::to_string(lo) + " AND " + e + " <= " + std::to_string(hi) + " AND " + e +
         " >= " + s + ")";
}

// MEMORY_RECORD rows whose allocator figures are bytes a device can hold: totalAllocated and
// totalReserved integers in [0, 1 PiB], totalActive too or NULL (a writer without it); a table
// without the totalActive column: `with_active` false.
inline std::string PlausibleMemorySql(bool with_active = true) {
  const std::string limit = std::to_string(kMaxPlausibleBytes);
  std::string sql = "(";
  for (const char* column : {"totalAllocated", "totalReserved"}) {
    sql +=
        std::string("typeof(") + column + ") = 'integer' AND " + column + " BETWEEN 0 AND " + limit + " AND ";
  }
  if (!with_active) return sql + "1)";
  return sql + "(totalActive IS NULL OR (typeof(totalActive) = 'integer' AND totalActive BETWEEN 0 AND " +
         limit + ")))";
}

}  // namespace gpuprof::db
