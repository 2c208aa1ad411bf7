#include "db/check.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "db/db_constants.h"

namespace gpuprof::db {
namespace {

constexpr std::size_t kMaxColumnLinesPerTable = 6;

// ---- What DB_SPEC.md's DDL says ("Exact DDL"), transcribed here on purpose ----------------------

const std::vector<ExpectedTable> kExpectedTables = {
    // shared / metadata
    {"STRING_IDS", true, "id INTEGER PK, value TEXT"},
    {"META_DATA", true, "name TEXT, value TEXT"},
    {"SESSION_TIME_INFO", true, "startTimeNs INTEGER, endTimeNs INTEGER"},
    {"NPU_INFO", true, "id INTEGER, name TEXT"},
    {"RANK_DEVICE_MAP", true, "rankId INTEGER, deviceId INTEGER"},
    {"HOST_INFO", true, "hostUid TEXT, hostName TEXT"},
    // enums
    {"ENUM_API_TYPE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_MSTX_EVENT_TYPE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_MEMCPY_OPERATION", true, "id INTEGER PK, name TEXT"},
    {"ENUM_HCCL_DATA_TYPE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_HCCL_LINK_TYPE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_HCCL_TRANSPORT_TYPE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_HCCL_RDMA_TYPE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_MODULE", true, "id INTEGER PK, name TEXT"},
    {"ENUM_OVERLAP_ANALYSIS_TYPE", true, "id INTEGER PK, name TEXT"},
    // device side
    {"CANN_API", true,
     "startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, connectionId INTEGER PK, name "
     "INTEGER"},
    {"TASK", true,
     "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, "
     "globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId "
     "INTEGER"},
    {"COMPUTE_TASK_INFO", true,
     "name INTEGER, globalTaskId INTEGER PK, blockNum INTEGER, mixBlockNum INTEGER, taskType INTEGER, "
     "opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER, outputFormats "
     "INTEGER, "
     "outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible "
     "INTEGER, "
     "gridDim INTEGER, blockDim INTEGER"},
    {"COMMUNICATION_OP", true,
     "opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, groupName INTEGER, opId INTEGER "
     "PK, "
     "relay INTEGER, retry INTEGER, dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, "
     "deviceId INTEGER, rankSize INTEGER"},
    {"COMMUNICATION_TASK_INFO", true,
     "name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER, groupName INTEGER, notifyId "
     "INTEGER, "
     "rdmaType INTEGER, srcRank INTEGER, dstRank INTEGER, transportType INTEGER, size INTEGER, dataType "
     "INTEGER, "
     "linkType INTEGER, opId INTEGER, isMaster INTEGER, bandwidth NUMERIC"},
    {"MSTX_EVENTS", true,
     "startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER, message INTEGER, "
     "globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, connectionId INTEGER"},
    {"MEMCPY_INFO", true, "globalTaskId NUMERIC, size NUMERIC, memcpyOperation NUMERIC"},
    // optional device tables (only if collected)
    {"NPU_MEM", false, "type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, deviceId INTEGER"},
    {"TASK_PMU_INFO", false, "globalTaskId INTEGER, name INTEGER, value NUMERIC"},
    {"AICORE_FREQ", false, "deviceId INTEGER, timestampNs NUMERIC, freq INTEGER, dieId NUMERIC"},
    {"OSRT_API", false, "name NUMERIC, globalTid NUMERIC, startNs NUMERIC, endNs NUMERIC"},
    {"OVERLAP_ANALYSIS", false,
     "id INTEGER PK, deviceId INTEGER, startNs NUMERIC, endNs NUMERIC, type INTEGER"},
    // framework side
    {"PYTORCH_API", true,
     "startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, name INTEGER, "
     "sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId "
     "INTEGER, "
     "type INTEGER"},
    {"CONNECTION_IDS", true, "id INTEGER, connectionId INTEGER"},
    {"PYTORCH_CALLCHAINS", true, "id INTEGER, stack INTEGER, stackDepth INTEGER"},
    {"MEMORY_RECORD", true,
     "component INTEGER, timestamp INTEGER, totalAllocated INTEGER, totalReserved INTEGER, totalActive "
     "INTEGER, "
     "streamPtr INTEGER, deviceId INTEGER"},
    {"OP_MEMORY", true,
     "name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER, activeReleaseTime INTEGER, "
     "duration INTEGER, activeDuration INTEGER, allocationTotalAllocated INTEGER, allocationTotalReserved "
     "INTEGER, "
     "allocationTotalActive INTEGER, releaseTotalAllocated INTEGER, releaseTotalReserved INTEGER, "
     "releaseTotalActive INTEGER, streamPtr INTEGER, deviceId INTEGER"},
    {"STEP_TIME", true, "id INTEGER, startNs INTEGER, endNs INTEGER"},
    {"GC_RECORD", true, "startNs INTEGER, endNs INTEGER, globalTid INTEGER"},
    // gpuprof's own tables (docs/db_gpuprof_tables.md): present when the run replayed kernels
    {"GPUPROF_REPLAY_KERNEL", false,
     "id INTEGER PK, timestampNs INTEGER, globalTid INTEGER, deviceId INTEGER, name INTEGER, connectionId "
     "INTEGER, "
     "launchIndex INTEGER, replayed INTEGER, declineReason TEXT, declineDetail TEXT, restoreMode TEXT, "
     "passes INTEGER, deterministic INTEGER, snapshotRegions INTEGER, snapshotBytes INTEGER, snapshotNs "
     "INTEGER, "
     "untrackedWritableBytes INTEGER, snapshotDeviceBytes INTEGER"},
    {"GPUPROF_REPLAY_PASS", false,
     "kernelId INTEGER, pass INTEGER, startNs INTEGER, durationNs INTEGER, smClockBeforeKhz INTEGER, "
     "smClockAfterKhz INTEGER, bytesRestored INTEGER, regionsRestored INTEGER, dirtyChunks INTEGER, "
     "outputHash INTEGER, matchesPass1 INTEGER"},
};

struct ExpectedIndex {
  const char* name;
  const char* table;
  std::vector<std::string_view> columns;
};
const std::vector<ExpectedIndex> kExpectedIndexes = {
    {"TaskIndex", "TASK", {"startNs", "globalTaskId"}},
    {"CommunicationTaskIndex", "COMMUNICATION_TASK_INFO", {"globalTaskId"}},
    {"GpuprofReplayPassIndex", "GPUPROF_REPLAY_PASS", {"kernelId", "pass"}},
};

struct EnumRow {
  std::int64_t id;
  std::string_view name;
};
struct ExpectedEnum {
  const char* table;
  std::vector<EnumRow> rows;  // empty: the table must only be non-empty (values from msprof's code)
};
const std::vector<ExpectedEnum> kExpectedEnums = {
    {"ENUM_API_TYPE",
     {{20000, "acl"},
      {15000, "model"},
      {10000, "node"},
      {5500, "communication"},
      {5000, "runtime"},
      {50001, "op"},
      {50002, "queue"},
      {50003, "trace"},
      {50004, "mstx"}}},
    {"ENUM_MSTX_EVENT_TYPE", {{0, "marker"}, {1, "push/pop"}, {2, "start/end"}, {3, "marker_ex"}}},
    {"ENUM_MEMCPY_OPERATION",
     {{0, "host to host"},
      {1, "host to device"},
      {2, "device to host"},
      {3, "device to device"},
      {4, "managed memory"},
      {5, "addr device to device"},
      {6, "host to device ex"},
      {7, "device to host ex"},
      {65535, "other"}}},
    {"ENUM_OVERLAP_ANALYSIS_TYPE",
     {{0, "COMPUTE"}, {1, "COMMUNICATION"}, {2, "COMM_NOT_OVERLAP_COMP"}, {3, "FREE"}, {65535, "RESERVE"}}},
    {"ENUM_HCCL_DATA_TYPE", {}},
    {"ENUM_HCCL_LINK_TYPE", {}},
    {"ENUM_HCCL_TRANSPORT_TYPE", {}},
    {"ENUM_HCCL_RDMA_TYPE", {}},
    {"ENUM_MODULE", {}},
};

const std::vector<std::pair<std::string_view, std::string_view>> kSchemaVersionRows = {
    {"SCHEMA_VERSION", "1.2.0"},
    {"SCHEMA_VERSION_MAJOR", "1"},
    {"SCHEMA_VERSION_MINOR", "2"},
    {"SCHEMA_VERSION_MICRO", "0"},
};

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
};

struct ParsedColumn {
  std::string name;
  std::string type;
  bool primary_key = false;
  std::string Describe() const { return name + " " + type + (primary_key ? " PRIMARY KEY" : ""); }
};

std::vector<ParsedColumn> ParseColumns(std::string_view spec) {
  std::vector<ParsedColumn> columns;
  std::stringstream stream{std::string(spec)};
  std::string item;
  while (std::getline(stream, item, ',')) {
    std::stringstream words(item);
    ParsedColumn column;
    std::string flag;
    words >> column.name >> column.type >> flag;
    column.primary_key = flag == "PK";
    columns.push_back(std::move(column));
  }
  return columns;
}

std::string Quoted(std::string_view identifier) {
  std::string out = "\"";
  for (char c : identifier) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

bool SameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

class Checker {
 public:
  Checker(const ProfileReader& reader, CheckReport* report) : reader_(reader), report_(report) {}

  Status Run() {
    GPUPROF_RETURN_IF_ERROR(CountTablesAndRows());
    GPUPROF_RETURN_IF_ERROR(CheckSchema());
    GPUPROF_RETURN_IF_ERROR(CheckIndexes());
    GPUPROF_RETURN_IF_ERROR(CheckEnums());
    GPUPROF_RETURN_IF_ERROR(CheckMetaData());
    GPUPROF_RETURN_IF_ERROR(CheckStringIds());
    GPUPROF_RETURN_IF_ERROR(CheckStringReferences());
    GPUPROF_RETURN_IF_ERROR(CheckConnections());
    GPUPROF_RETURN_IF_ERROR(CheckKernelLaunches());
    GPUPROF_RETURN_IF_ERROR(CheckTimesAndSingletons());
    GPUPROF_RETURN_IF_ERROR(CheckReplayTables());
    return OkStatus();
  }

 private:
  void Problem(std::string_view table, std::string problem) {
    report_->problems.push_back({std::string(table), std::move(problem)});
  }

  StatusOr<bool> Has(std::string_view table, const std::vector<std::string_view>& columns) const {
    return reader_.HasColumns(table, columns);
  }

  // Runs a query returning (count, example); reports `message(count, example)` when count > 0.
  template <typename MessageFn>
  Status ReportCount(std::string_view table, const std::string& sql, MessageFn message) {
    GPUPROF_ASSIGN_OR_RETURN(Query query, reader_.Prepare(sql));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row && query.Int(0) > 0) {
      std::string example = query.IsNull(1) ? "?" : std::string(query.Text(1));
      Problem(table, message(query.Int(0), example));
    }
    return OkStatus();
  }

  Status CountTablesAndRows() {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader_.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                                             "NOT LIKE 'sqlite_%' ORDER BY name"));
    std::vector<std::string> tables;
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      tables.emplace_back(query.Text(0));
    }
    report_->tables = tables.size();
    for (const std::string& table : tables) {
      GPUPROF_ASSIGN_OR_RETURN(std::int64_t rows, reader_.QueryInt("SELECT COUNT(*) FROM " + Quoted(table)));
      report_->rows += static_cast<std::uint64_t>(rows);
    }
    return OkStatus();
  }

  Status CheckSchema() {
    for (const ExpectedTable& expected : kExpectedTables) {
      if (!reader_.HasTable(expected.name)) {
        if (expected.required) Problem(expected.name, "table missing (DB_SPEC.md lists it in the exact DDL)");
        continue;
      }
      GPUPROF_ASSIGN_OR_RETURN(std::vector<ColumnInfo> actual, reader_.Columns(expected.name));
      const std::vector<ParsedColumn> wanted = ParseColumns(expected.columns);
      std::size_t lines = 0;
      std::size_t differences = 0;
      for (std::size_t i = 0; i < std::max(actual.size(), wanted.size()); ++i) {
        std::string line;
        if (i >= actual.size()) {
          line = "column " + std::to_string(i + 1) + " missing: expected '" + wanted[i].Describe() + "'";
        } else if (i >= wanted.size()) {
          // Columns appended after the format's are not a problem: MindStudio Insight adds its own
          // to the tables it opens, and every consumer selects the format's columns by name.
          continue;
        } else if (!SameIgnoringCase(actual[i].name, wanted[i].name) ||
                   !SameIgnoringCase(actual[i].declared_type, wanted[i].type) ||
                   actual[i].primary_key != wanted[i].primary_key) {
          ParsedColumn got{actual[i].name, actual[i].declared_type, actual[i].primary_key};
          line = "column " + std::to_string(i + 1) + " is '" + got.Describe() + "', expected '" +
                 wanted[i].Describe() + "'";
        }
        if (line.empty()) continue;
        ++differences;
        if (lines < kMaxColumnLinesPerTable) {
          Problem(expected.name, std::move(line));
          ++lines;
        }
      }
      if (differences > lines) {
        Problem(expected.name, std::to_string(differences - lines) + " more column difference(s)");
      }
    }
    return OkStatus();
  }

  Status CheckIndexes() {
    for (const ExpectedIndex& index : kExpectedIndexes) {
      if (!reader_.HasTable(index.table)) continue;
      GPUPROF_ASSIGN_OR_RETURN(
          Query query,
          reader_.Prepare("SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name = ?1"));
      query.BindText(1, index.name);
      GPUPROF_ASSIGN_OR_RETURN(bool found, query.Step());
      std::string wanted;
      for (std::string_view column : index.columns)
        wanted += (wanted.empty() ? "" : ", ") + std::string(column);
      if (!found) {
        Problem(index.table, std::string("index ") + index.name + " (" + wanted + ") missing");
        continue;
      }
      if (!SameIgnoringCase(query.Text(0), index.table)) {
        Problem(index.table,
                std::string("index ") + index.name + " is on table " + std::string(query.Text(0)));
        continue;
      }
      GPUPROF_ASSIGN_OR_RETURN(Query columns,
                               reader_.Prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno"));
      columns.BindText(1, index.name);
      std::string actual;
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool row, columns.Step());
        if (!row) break;
        actual += (actual.empty() ? "" : ", ") + std::string(columns.Text(0));
      }
      if (actual != wanted) {
        Problem(index.table,
                std::string("index ") + index.name + " is on (" + actual + "), expected (" + wanted + ")");
      }
    }
    return OkStatus();
  }

  Status CheckEnums() {
    for (const ExpectedEnum& expected : kExpectedEnums) {
      GPUPROF_ASSIGN_OR_RETURN(bool usable, Has(expected.table, {"id", "name"}));
      if (!usable) continue;  // reported by CheckSchema
      std::map<std::int64_t, std::string> actual;
      GPUPROF_ASSIGN_OR_RETURN(
          Query query, reader_.Prepare("SELECT id, name FROM " + Quoted(expected.table) + " ORDER BY id"));
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
        if (!row) break;
        actual.emplace(query.Int(0), std::string(query.Text(1)));
      }
      if (expected.rows.empty()) {
        if (actual.empty()) Problem(expected.table, "enum table is empty (msprof's id/name rows expected)");
        continue;
      }
      std::set<std::int64_t> wanted_ids;
      for (const EnumRow& row : expected.rows) {
        wanted_ids.insert(row.id);
        auto it = actual.find(row.id);
        if (it == actual.end()) {
          Problem(expected.table,
                  "missing row (" + std::to_string(row.id) + ", '" + std::string(row.name) + "')");
        } else if (it->second != row.name) {
          Problem(expected.table, "row " + std::to_string(row.id) + " is named '" + it->second +
                                      "', expected '" + std::string(row.name) + "'");
        }
      }
      for (const auto& [id, name] : actual) {
        if (wanted_ids.count(id) == 0) {
          Problem(expected.table, "unexpected row (" + std::to_string(id) + ", '" + name + "')");
        }
      }
    }
    return OkStatus();
  }

  Status CheckMetaData() {
    GPUPROF_ASSIGN_OR_RETURN(bool usable, Has("META_DATA", {"name", "value"}));
    if (!usable) return OkStatus();
    for (const auto& [name, value] : kSchemaVersionRows) {
      GPUPROF_ASSIGN_OR_RETURN(
          Query query,
          reader_.Prepare("SELECT COUNT(*), MIN(value), MAX(value) FROM META_DATA WHERE name = ?1"));
      query.BindText(1, name);
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      const std::int64_t count = row ? query.Int(0) : 0;
      const std::string wanted = "'" + std::string(value) + "'";
      if (count == 0) {
        Problem("META_DATA", "no " + std::string(name) + " row (expected " + wanted + ")");
      } else if (query.Text(1) != query.Text(2)) {
        Problem("META_DATA", std::to_string(count) + " " + std::string(name) + " rows with different values");
      } else if (query.Text(1) != value) {
        Problem("META_DATA",
                std::string(name) + " is '" + std::string(query.Text(1)) + "', expected " + wanted);
      }
    }
    return OkStatus();
  }

  Status CheckStringIds() {
    GPUPROF_ASSIGN_OR_RETURN(bool usable, Has("STRING_IDS", {"id", "value"}));
    if (!usable) return OkStatus();
    return ReportCount(
        "STRING_IDS",
        "SELECT COUNT(*), MIN(id) FROM (SELECT id FROM STRING_IDS GROUP BY id HAVING COUNT(*) > 1)",
        [](std::int64_t n, const std::string& example) {
          return std::to_string(n) + " id(s) used by more than one row (e.g. " + example + ")";
        });
  }

  Status CheckStringReferences() {
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
            return std::to_string(n) + " distinct " + reference.column +
                   " value(s) not in STRING_IDS (e.g. " + example + ")";
          }));
    }
    return OkStatus();
  }

  Status CheckConnections() {
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

  Status CheckKernelLaunches() {
    GPUPROF_ASSIGN_OR_RETURN(bool cann, Has("CANN_API", {"type", "name", "connectionId"}));
    GPUPROF_ASSIGN_OR_RETURN(bool task, Has("TASK", {"connectionId", "globalTaskId"}));
    GPUPROF_ASSIGN_OR_RETURN(bool compute, Has("COMPUTE_TASK_INFO", {"globalTaskId"}));
    GPUPROF_ASSIGN_OR_RETURN(bool strings, Has("STRING_IDS", {"id", "value"}));
    if (!cann || !task || !compute || !strings) return OkStatus();
    GPUPROF_ASSIGN_OR_RETURN(std::int64_t api_rows,
                             reader_.QueryInt("SELECT EXISTS (SELECT 1 FROM CANN_API)"));
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

  Status CheckTimesAndSingletons() {
    GPUPROF_ASSIGN_OR_RETURN(bool steps, Has("STEP_TIME", {"id"}));
    if (steps) {
      GPUPROF_RETURN_IF_ERROR(ReportCount(
          "STEP_TIME", "SELECT COUNT(*), MIN(typeof(id)) FROM STEP_TIME WHERE typeof(id) != 'integer'",
          [](std::int64_t n, const std::string& type) {
            return std::to_string(n) + " row(s) whose id is stored as " + type +
                   ", not integer (msprof-analyze compares it with an int step id)";
          }));
    }
    for (const char* table : {"PYTORCH_API", "TASK"}) {
      GPUPROF_ASSIGN_OR_RETURN(bool times, Has(table, {"startNs", "endNs"}));
      if (!times) continue;
      GPUPROF_RETURN_IF_ERROR(ReportCount(
          table, std::string("SELECT COUNT(*), MIN(rowid) FROM ") + table + " WHERE startNs > endNs",
          [](std::int64_t n, const std::string& example) {
            return std::to_string(n) + " row(s) with startNs > endNs (e.g. rowid " + example + ")";
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
          Query query,
          reader_.Prepare("SELECT COUNT(*), MIN(startTimeNs), MIN(endTimeNs), "
                          "SUM(startTimeNs IS NULL OR endTimeNs IS NULL) FROM SESSION_TIME_INFO"));
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      const std::int64_t rows = row ? query.Int(0) : 0;
      if (rows != 1) {
        Problem("SESSION_TIME_INFO", "has " + std::to_string(rows) + " rows, expected one");
      } else if (query.Int(3) != 0) {
        Problem("SESSION_TIME_INFO", "startTimeNs or endTimeNs is NULL");
      } else if (query.Int(1) > query.Int(2)) {
        Problem("SESSION_TIME_INFO", "startTimeNs " + std::to_string(query.Int(1)) + " > endTimeNs " +
                                         std::to_string(query.Int(2)));
      }
    }
    return OkStatus();
  }

  // docs/db_gpuprof_tables.md: every pass row belongs to a kernel row, and a kernel row's
  // `passes` is its number of pass rows.
  Status CheckReplayTables() {
    GPUPROF_ASSIGN_OR_RETURN(bool kernels, Has("GPUPROF_REPLAY_KERNEL", {"id", "passes"}));
    GPUPROF_ASSIGN_OR_RETURN(bool passes, Has("GPUPROF_REPLAY_PASS", {"kernelId"}));
    if (!kernels || !passes) return OkStatus();
    GPUPROF_RETURN_IF_ERROR(ReportCount(
        "GPUPROF_REPLAY_PASS",
        "SELECT COUNT(*), MIN(v) FROM (SELECT kernelId AS v FROM GPUPROF_REPLAY_PASS EXCEPT SELECT id FROM "
        "GPUPROF_REPLAY_KERNEL)",
        [](std::int64_t n, const std::string& example) {
          return std::to_string(n) + " kernelId value(s) with no GPUPROF_REPLAY_KERNEL row (e.g. " + example +
                 ")";
        }));
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

  const ProfileReader& reader_;
  CheckReport* report_;
};

}  // namespace

const std::vector<ExpectedTable>& ExpectedTables() { return kExpectedTables; }

std::string FormatProblem(const std::string& path, const CheckProblem& problem) {
  return path + ": " + problem.table + ": " + problem.problem;
}

StatusOr<CheckReport> CheckProfileDb(const ProfileReader& reader) {
  CheckReport report;
  report.path = reader.path();
  // A damaged file first: the checks below would fail (or, worse, pass) on garbage. quick_check
  // reads every page once and skips the slow index-content comparison of integrity_check.
  GPUPROF_ASSIGN_OR_RETURN(Query integrity, reader.Prepare("PRAGMA quick_check(5)"));
  std::vector<std::string> damage;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, integrity.Step());
    if (!row) break;
    if (integrity.Text(0) != "ok") damage.emplace_back(integrity.Text(0));
  }
  if (!damage.empty()) {
    // quick_check's first finding, on one line.
    std::string first = damage.front().substr(0, 200);
    std::replace(first.begin(), first.end(), '\n', ' ');
    return DataLossError(reader.path() + " is damaged or truncated (SQLite's quick_check: " + first +
                         (damage.size() > 1 || damage.front().size() > 200 ? " ..." : "") +
                         "); copy it again from the run's output directory, or re-run the profile");
  }
  Checker checker(reader, &report);
  GPUPROF_RETURN_IF_ERROR(checker.Run());
  return report;
}

}  // namespace gpuprof::db
