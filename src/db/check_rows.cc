// check's row steps: ids that must resolve (STRING_IDS, CONNECTION_IDS, kernel launches, replay
// kernels), times, memory figures and the one-row tables; analysis.db's rows against its profile
// (check_internal.h maps check's files).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "db/check_internal.h"
#include "db/db_constants.h"

namespace gpuprof::db::check_internal {
namespace {

// Columns that hold STRING_IDS ids. `empty_ok`: 4294967295 (the format's id for an empty string,
// DB_SPEC §3.1) is legitimate there — an op with no shapes, a mark without a domain, memory no op
// claimed; a name column holding it is reported as unresolved.
struct StringReference {
  const char* table;
  const char* column;
  bool empty_ok;
};
const std::vector<StringReference> kStringReferences = {
    {"PYTORCH_API", "name", false},
    {"PYTORCH_API", "inputShapes", true},
    {"PYTORCH_API", "inputDtypes", true},
    {"TASK", "taskType", false},
    {"COMPUTE_TASK_INFO", "name", false},
    {"COMPUTE_TASK_INFO", "opType", true},
    {"CANN_API", "name", false},
    {"MEMORY_RECORD", "component", false},
    {"MSTX_EVENTS", "message", true},
    {"MSTX_EVENTS", "domainId", true},
    {"OP_MEMORY", "name", true},
    {"PYTORCH_CALLCHAINS", "stack", false},
    {"COMMUNICATION_OP", "opName", false},
    {"COMMUNICATION_OP", "groupName", true},
    {"GPUPROF_REPLAY_KERNEL", "name", false},
    {"GPUPROF_REPLAY_METRIC", "name", false},
    {"GPUPROF_REPLAY_METRIC", "unit", false},  // NULL when the metric has no unit
    {"GPUPROF_REPLAY_GRAPH_NODE", "name", false},
};

}  // namespace

Status Checker::RunAnalysis(const ProfileReader& profile) {
  GPUPROF_RETURN_IF_ERROR(CountTablesAndRows());
  GPUPROF_RETURN_IF_ERROR(CheckSchema());
  if (!report_->problems.empty()) return OkStatus();  // the row checks need the columns
  GPUPROF_ASSIGN_OR_RETURN(bool has_steps, profile.HasColumns("STEP_TIME", {"id"}));
  std::int64_t steps = 0;
  if (has_steps) {
    GPUPROF_ASSIGN_OR_RETURN(steps, profile.QueryInt("SELECT COUNT(*) FROM STEP_TIME"));
  }
  GPUPROF_ASSIGN_OR_RETURN(std::int64_t step_rows, reader_.QueryInt("SELECT COUNT(*) FROM StepTraceTime"));
  if (step_rows != std::max<std::int64_t>(steps, 1)) {
    Problem("StepTraceTime",
            std::to_string(step_rows) + " row(s), expected " +
                (steps > 0 ? "one per STEP_TIME row of the profile (" + std::to_string(steps) + ")"
                           : std::string("one (the profile has no steps)")));
  }
  // computing + communication not overlapped + free is the step; so is stage + bubble.
  GPUPROF_RETURN_IF_ERROR(ReportCount(
      "StepTraceTime",
      "SELECT COUNT(*), MIN(IFNULL(step, 'NULL')) FROM StepTraceTime WHERE computing IS NULL OR "
      "abs(computing + communication_not_overlapped + free - stage - bubble) > 0.01 OR computing < 0 OR "
      "communication_not_overlapped < 0 OR overlapped < 0 OR bubble < 0",
      [](std::int64_t n, const std::string& example) {
        return std::to_string(n) +
               " row(s) whose parts do not add up to the step (computing + communication_not_overlapped + "
               "free != stage + bubble) or are negative (e.g. step " +
               example + ")";
      }));
  GPUPROF_ASSIGN_OR_RETURN(bool has_comm, profile.HasColumns("COMMUNICATION_OP", {"opName"}));
  std::int64_t ops = 0;
  if (has_comm) {
    GPUPROF_ASSIGN_OR_RETURN(ops, profile.QueryInt("SELECT COUNT(*) FROM COMMUNICATION_OP"));
  }
  for (std::string_view table : {"CommAnalyzerTime", "CommAnalyzerBandwidth"}) {
    GPUPROF_ASSIGN_OR_RETURN(std::int64_t rows,
                             reader_.QueryInt("SELECT COUNT(*) FROM " + std::string(table)));
    if (rows != ops) {
      Problem(table, std::to_string(rows) +
                         " row(s), expected one per COMMUNICATION_OP row of the profile (" +
                         std::to_string(ops) + ")");
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(
      std::int64_t totals,
      reader_.QueryInt("SELECT COUNT(*) FROM CommAnalyzerMatrix WHERE hccl_op_name LIKE '%-total'"));
  if (ops > 0 && totals == 0)
    Problem("CommAnalyzerMatrix", "no '-total' row, though the profile has communication");
  return OkStatus();
}

Status Checker::CheckStringIds() {
  GPUPROF_ASSIGN_OR_RETURN(bool usable, Has("STRING_IDS", {"id", "value"}));
  if (!usable) return OkStatus();
  return ReportCount(
      "STRING_IDS",
      "SELECT COUNT(*), MIN(id) FROM (SELECT id FROM STRING_IDS GROUP BY id HAVING COUNT(*) > 1)",
      [](std::int64_t n, const std::string& example) {
        return std::to_string(n) + " id(s) used by more than one row (e.g. " + example + ")";
      });
}

Status Checker::CheckStringReferences() {
  GPUPROF_ASSIGN_OR_RETURN(bool strings, Has("STRING_IDS", {"id"}));
  if (!strings) return OkStatus();
  for (const StringReference& reference : kStringReferences) {
    GPUPROF_ASSIGN_OR_RETURN(bool usable, Has(reference.table, {reference.column}));
    if (!usable) continue;
    const std::string column = Quoted(reference.column);
    std::string where = column + " IS NOT NULL";
    if (reference.empty_ok) where += " AND " + column + " != " + std::to_string(kDbInvalidValue);
    // EXCEPT: one sort of the distinct values instead of a lookup per row.
    const std::string sql = "SELECT COUNT(*), MIN(v) FROM (SELECT " + column + " AS v FROM " +
                            Quoted(reference.table) + " WHERE " + where +
                            " EXCEPT SELECT id FROM STRING_IDS)";
    GPUPROF_RETURN_IF_ERROR(
        ReportCount(reference.table, sql, [&](std::int64_t n, const std::string& example) {
          return std::to_string(n) + " distinct " + reference.column + " value(s) not in STRING_IDS (e.g. " +
                 example + ")";
        }));
  }
  return OkStatus();
}

Status Checker::CheckConnections() {
  GPUPROF_ASSIGN_OR_RETURN(bool ids, Has("CONNECTION_IDS", {"id", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(bool api, Has("PYTORCH_API", {"connectionId"}));
  if (!ids || !api) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(ReportCount(
      "CONNECTION_IDS",
      "SELECT COUNT(*), MIN(v) FROM (SELECT id AS v FROM CONNECTION_IDS EXCEPT SELECT connectionId FROM "
      "PYTORCH_API)",
      [](std::int64_t n, const std::string& example) {
        return std::to_string(n) + " id value(s) that no PYTORCH_API.connectionId references (e.g. " +
               example + ")";
      }));
  GPUPROF_RETURN_IF_ERROR(ReportCount("PYTORCH_API",
                                      "SELECT COUNT(*), MIN(v) FROM (SELECT connectionId AS v FROM "
                                      "PYTORCH_API WHERE connectionId IS NOT NULL "
                                      "EXCEPT SELECT id FROM CONNECTION_IDS)",
                                      [](std::int64_t n, const std::string& example) {
                                        return std::to_string(n) +
                                               " connectionId value(s) with no CONNECTION_IDS row (e.g. " +
                                               example + "); ops without a link must hold NULL";
                                      }));
  return ReportCount("PYTORCH_API",
                     "SELECT COUNT(*), MIN(connectionId) FROM (SELECT connectionId FROM PYTORCH_API WHERE "
                     "connectionId IS NOT NULL GROUP BY connectionId HAVING COUNT(*) > 1)",
                     [](std::int64_t n, const std::string& example) {
                       return std::to_string(n) + " connectionId value(s) shared by several rows (e.g. " +
                              example + "); each API row has its own CONNECTION_IDS index";
                     });
}

Status Checker::CheckKernelLaunches() {
  GPUPROF_ASSIGN_OR_RETURN(bool cann, Has("CANN_API", {"type", "name", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(bool task, Has("TASK", {"connectionId", "globalTaskId"}));
  GPUPROF_ASSIGN_OR_RETURN(bool compute, Has("COMPUTE_TASK_INFO", {"globalTaskId"}));
  GPUPROF_ASSIGN_OR_RETURN(bool strings, Has("STRING_IDS", {"id", "value"}));
  if (!cann || !task || !compute || !strings) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(std::int64_t api_rows, reader_.QueryInt("SELECT EXISTS (SELECT 1 FROM CANN_API)"));
  if (api_rows == 0) return OkStatus();  // no host API collected: nothing to join to
  return ReportCount(
      "TASK",
      "SELECT COUNT(*), MIN(v) FROM (SELECT t.connectionId AS v FROM TASK t JOIN COMPUTE_TASK_INFO c ON "
      "c.globalTaskId = t.globalTaskId EXCEPT SELECT connectionId FROM CANN_API WHERE type = 10000 AND "
      "name IN "
      "(SELECT id FROM STRING_IDS WHERE value = 'launch'))",
      [](std::int64_t n, const std::string& example) {
        return std::to_string(n) + " kernel connectionId value(s) with no CANN_API node/launch row (e.g. " +
               example + ")";
      });
}

Status Checker::CheckTimesAndSingletons() {
  GPUPROF_ASSIGN_OR_RETURN(bool steps, Has("STEP_TIME", {"id"}));
  if (steps) {
    GPUPROF_RETURN_IF_ERROR(ReportCount(
        "STEP_TIME", "SELECT COUNT(*), MIN(typeof(id)) FROM STEP_TIME WHERE typeof(id) != 'integer'",
        [](std::int64_t n, const std::string& type) {
          return std::to_string(n) + " row(s) whose id is stored as " + type +
                 ", not integer (msprof-analyze compares it with an int step id)";
        }));
  }
  for (const char* table :
       {"PYTORCH_API", "TASK", "CANN_API", "STEP_TIME", "GC_RECORD", "COMMUNICATION_OP"}) {
    GPUPROF_ASSIGN_OR_RETURN(bool times, Has(table, {"startNs", "endNs"}));
    if (!times) continue;
    GPUPROF_RETURN_IF_ERROR(ReportCount(
        table, std::string("SELECT COUNT(*), MIN(rowid) FROM ") + table + " WHERE startNs > endNs",
        [](std::int64_t n, const std::string& example) {
          return std::to_string(n) + " row(s) with startNs > endNs (e.g. rowid " + example + ")";
        }));
    const std::string limit = std::to_string(kMaxPlausibleTimeNs);
    GPUPROF_RETURN_IF_ERROR(ReportCount(
        table,
        std::string("SELECT COUNT(*), MIN(rowid) FROM ") + table + " WHERE CAST(startNs AS INTEGER) < 0 OR " +
            "CAST(endNs AS INTEGER) < 0 OR CAST(startNs AS INTEGER) > " + limit +
            " OR CAST(endNs AS INTEGER) > " + limit,
        [](std::int64_t n, const std::string& example) {
          return std::to_string(n) +
                 " row(s) whose startNs or endNs is negative or beyond 2^62 ns (e.g. rowid " + example +
                 "): no clock reading, and sums over them overflow";
        }));
  }
  GPUPROF_ASSIGN_OR_RETURN(bool memory,
                           Has("MEMORY_RECORD", {"totalAllocated", "totalReserved", "totalActive"}));
  if (memory) {
    // NULLs and other types have their own lines (CheckColumnValues); here the integers.
    const std::string range = " NOT BETWEEN 0 AND " + std::to_string(kMaxPlausibleBytes);
    GPUPROF_RETURN_IF_ERROR(
        ReportCount("MEMORY_RECORD",
                    "SELECT COUNT(*), MIN(rowid) FROM MEMORY_RECORD WHERE totalAllocated" + range +
                        " OR totalReserved" + range + " OR totalActive" + range,
                    [](std::int64_t n, const std::string& example) {
                      return std::to_string(n) +
                             " row(s) whose totalAllocated, totalReserved or totalActive is negative or "
                             "above 1 PiB (e.g. "
                             "rowid " +
                             example + "): no allocator's reading";
                    }));
  }
  GPUPROF_ASSIGN_OR_RETURN(bool rank_map, Has("RANK_DEVICE_MAP", {"rankId"}));
  if (rank_map) {
    GPUPROF_ASSIGN_OR_RETURN(std::int64_t rows, reader_.QueryInt("SELECT COUNT(*) FROM RANK_DEVICE_MAP"));
    if (rows != 1) {
      Problem("RANK_DEVICE_MAP",
              "has " + std::to_string(rows) +
                  " rows, expected exactly one (msprof-analyze CROSS JOINs it with its queries)");
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(bool session, Has("SESSION_TIME_INFO", {"startTimeNs", "endTimeNs"}));
  if (session) {
    GPUPROF_ASSIGN_OR_RETURN(
        Query query, reader_.Prepare("SELECT COUNT(*), MIN(startTimeNs), MIN(endTimeNs), "
                                     "SUM(startTimeNs IS NULL OR endTimeNs IS NULL) FROM SESSION_TIME_INFO"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    const std::int64_t rows = row ? query.Int(0) : 0;
    if (rows != 1) {
      Problem("SESSION_TIME_INFO", "has " + std::to_string(rows) + " rows, expected one");
    } else if (query.Int(3) != 0) {
      Problem("SESSION_TIME_INFO", "startTimeNs or endTimeNs is NULL");
    } else if (query.Int(1) > query.Int(2)) {
      Problem("SESSION_TIME_INFO",
              "startTimeNs " + std::to_string(query.Int(1)) + " > endTimeNs " + std::to_string(query.Int(2)));
    }
  }
  return OkStatus();
}

// A GPUPROF_REPLAY_PASS or GPUPROF_REPLAY_METRIC `table` whose kernelId values all have a kernel row.
Status Checker::CheckKernelIds(std::string_view table) {
  GPUPROF_ASSIGN_OR_RETURN(bool usable, Has(table, {"kernelId"}));
  if (!usable) return OkStatus();
  return ReportCount(table,
                     "SELECT COUNT(*), MIN(v) FROM (SELECT kernelId AS v FROM " + Quoted(table) +
                         " EXCEPT SELECT id FROM GPUPROF_REPLAY_KERNEL)",
                     [](std::int64_t n, const std::string& example) {
                       return std::to_string(n) +
                              " kernelId value(s) with no GPUPROF_REPLAY_KERNEL row (e.g. " + example + ")";
                     });
}

// docs/db_gpuprof_tables.md: every pass and metric row belongs to a kernel row, and a kernel
// row's `passes` is its number of pass rows. GPUPROF_REPLAY_METRIC is optional (older DBs).
Status Checker::CheckReplayTables() {
  GPUPROF_ASSIGN_OR_RETURN(bool kernels, Has("GPUPROF_REPLAY_KERNEL", {"id", "passes"}));
  if (!kernels) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(CheckKernelIds("GPUPROF_REPLAY_METRIC"));
  GPUPROF_RETURN_IF_ERROR(CheckKernelIds("GPUPROF_REPLAY_GRAPH_NODE"));
  GPUPROF_ASSIGN_OR_RETURN(bool passes, Has("GPUPROF_REPLAY_PASS", {"kernelId"}));
  if (!passes) return OkStatus();
  GPUPROF_RETURN_IF_ERROR(CheckKernelIds("GPUPROF_REPLAY_PASS"));
  return ReportCount(
      "GPUPROF_REPLAY_KERNEL",
      "SELECT COUNT(*), MIN(k.id) FROM GPUPROF_REPLAY_KERNEL k LEFT JOIN (SELECT kernelId, COUNT(*) AS n "
      "FROM "
      "GPUPROF_REPLAY_PASS GROUP BY kernelId) p ON p.kernelId = k.id WHERE COALESCE(p.n, 0) != k.passes",
      [](std::int64_t n, const std::string& example) {
        return std::to_string(n) +
               " row(s) whose passes differs from their GPUPROF_REPLAY_PASS rows (e.g. id " + example + ")";
      });
}

}  // namespace gpuprof::db::check_internal
