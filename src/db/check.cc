#include "db/check.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "base/utf8.h"
#include "db/db_constants.h"
#include "db/schema_sql.h"
#include "db/sqlite_util.h"

namespace gpuprof::db {
namespace {

constexpr std::size_t kMaxColumnLinesPerTable = 6;

// ---- What the DDL says: derived from src/db/schema.sql, the one source (schema_sql.h) ------------

struct ExpectedIndex {
  std::string name;
  std::string table;
  std::vector<std::string> columns;
};
struct EnumRow {
  std::int64_t id;
  std::string name;
};
struct ExpectedEnum {
  std::string table;
  std::vector<EnumRow> rows;  // empty: the table must only be non-empty (values from msprof's code)
};

struct Expectations {
  std::vector<ExpectedTable> tables;  // the format's (required), its optional ones, GPUPROF_*
  std::vector<ExpectedIndex> indexes;
  std::vector<ExpectedEnum> enums;
  std::vector<std::pair<std::string, std::string>> schema_version_rows;
};

// Runs the source's DDL and DB_SPEC's fixed rows into an in-memory database and reads back what a
// profile must look like: every table's columns (PRAGMA table_info, so the declared types and
// primary keys are SQLite's reading of the DDL, as for the file checked), the indexes, the exact
// enum rows, the SCHEMA_VERSION rows. msprof's enum rows are left out: those tables need only be
// non-empty.
//
// `parts` are run in order; the tables of `required_part` are required.
StatusOr<Expectations> LoadExpectations(std::initializer_list<SchemaPart> parts, SchemaPart required_part) {
  GPUPROF_ASSIGN_OR_RETURN(Connection ref, Connection::OpenForWrite(":memory:"));
  for (SchemaPart part : parts) GPUPROF_RETURN_IF_ERROR(ref.Exec(SchemaSql(part)));
  const std::vector<std::string_view> required = SchemaSqlTables(required_part);
  Expectations out;
  {
    GPUPROF_ASSIGN_OR_RETURN(
        Statement tables,
        Statement::Prepare(ref, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid",
                           Statement::Use::kTransient));
    GPUPROF_ASSIGN_OR_RETURN(
        Statement columns,
        Statement::Prepare(ref, "SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid",
                           Statement::Use::kTransient));
    Statement rows;  // one enum table's rows
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, tables.Step());
      if (!row) break;
      ExpectedTable& table = out.tables.emplace_back();
      table.name = std::string(tables.Text(0));
      table.required = std::find(required.begin(), required.end(), table.name) != required.end();
      columns.Reset();
      columns.BindText(1, table.name);
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool column, columns.Step());
        if (!column) break;
        table.columns.push_back(
            {std::string(columns.Text(0)), std::string(columns.Text(1)), columns.Int(2) != 0});
      }
      if (table.name.rfind("ENUM_", 0) != 0) continue;
      ExpectedEnum& expected = out.enums.emplace_back();
      expected.table = table.name;
      GPUPROF_ASSIGN_OR_RETURN(rows,
                               Statement::Prepare(ref, "SELECT id, name FROM " + table.name + " ORDER BY id",
                                                  Statement::Use::kTransient));
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool enum_row, rows.Step());
        if (!enum_row) break;
        expected.rows.push_back({rows.Int(0), std::string(rows.Text(1))});
      }
    }
  }
  {
    GPUPROF_ASSIGN_OR_RETURN(
        Statement indexes,
        Statement::Prepare(ref,
                           "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' ORDER BY rowid",
                           Statement::Use::kTransient));
    GPUPROF_ASSIGN_OR_RETURN(Statement columns,
                             Statement::Prepare(ref, "SELECT name FROM pragma_index_info(?1) ORDER BY seqno",
                                                Statement::Use::kTransient));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, indexes.Step());
      if (!row) break;
      ExpectedIndex& index = out.indexes.emplace_back();
      index.name = std::string(indexes.Text(0));
      index.table = std::string(indexes.Text(1));
      columns.Reset();
      columns.BindText(1, index.name);
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool column, columns.Step());
        if (!column) break;
        index.columns.emplace_back(columns.Text(0));
      }
    }
  }
  if (std::find(parts.begin(), parts.end(), SchemaPart::kSpecRows) != parts.end()) {
    GPUPROF_ASSIGN_OR_RETURN(
        Statement meta,
        Statement::Prepare(ref,
                           "SELECT name, value FROM META_DATA WHERE name LIKE 'SCHEMA_VERSION%' "
                           "ORDER BY rowid",
                           Statement::Use::kTransient));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, meta.Step());
      if (!row) break;
      out.schema_version_rows.emplace_back(meta.Text(0), meta.Text(1));
    }
  }
  return out;
}

// Built once per process; the source is constant.
const StatusOr<Expectations>& CachedExpectations() {
  static const StatusOr<Expectations> expectations =
      LoadExpectations({SchemaPart::kFormatTables, SchemaPart::kOptionalTables, SchemaPart::kGpuprofTables,
                        SchemaPart::kFormatIndexes, SchemaPart::kGpuprofIndexes, SchemaPart::kSpecRows},
                       SchemaPart::kFormatTables);
  return expectations;
}

// analysis.db's: its own part, every table required.
const StatusOr<Expectations>& CachedAnalysisExpectations() {
  static const StatusOr<Expectations> expectations =
      LoadExpectations({SchemaPart::kAnalysisTables}, SchemaPart::kAnalysisTables);
  return expectations;
}

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

// Columns that every consumer joins, sorts or sums on: a NULL there drops or breaks the row.
struct NeverNull {
  const char* table;
  std::vector<const char*> columns;
};
const std::vector<NeverNull> kNeverNull = {
    {"PYTORCH_API", {"startNs", "endNs", "globalTid", "name"}},
    {"TASK", {"startNs", "endNs", "deviceId", "streamId", "globalTaskId"}},
    {"CANN_API", {"startNs", "endNs", "globalTid", "name"}},
    {"COMPUTE_TASK_INFO", {"globalTaskId", "name"}},
    {"STRING_IDS", {"id", "value"}},
    {"CONNECTION_IDS", {"id", "connectionId"}},
    {"STEP_TIME", {"id", "startNs", "endNs"}},
    {"COMMUNICATION_OP", {"opName", "startNs", "endNs"}},
    // Insight's memory view keys on the component, every reader groups by device.
    {"MEMORY_RECORD", {"component", "timestamp", "totalAllocated", "totalReserved", "deviceId"}},
};

std::string Describe(const ColumnInfo& column) {
  return column.name + " " + column.declared_type + (column.primary_key ? " PRIMARY KEY" : "");
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

// SQLite's typeof() values a column of `declared_type` may hold besides NULL ("" when any).
std::string AllowedStorage(std::string_view declared_type) {
  if (SameIgnoringCase(declared_type, "INTEGER")) return "'integer'";
  if (SameIgnoringCase(declared_type, "REAL") || SameIgnoringCase(declared_type, "NUMERIC")) {
    return "'integer', 'real'";
  }
  if (SameIgnoringCase(declared_type, "TEXT")) return "'text'";
  return "";
}

class Checker {
 public:
  Checker(const ProfileReader& reader, const Expectations& expected, CheckReport* report)
      : reader_(reader), expected_(expected), report_(report) {}

  // `progress` (may be null) gets a stage per check.
  Status Run(base::Progress* progress) {
    using Step = Status (Checker::*)();
    static constexpr std::pair<std::string_view, Step> kSteps[] = {
        {"counting rows", &Checker::CountTablesAndRows},
        {"tables and columns", &Checker::CheckSchema},
        {"indexes", &Checker::CheckIndexes},
        {"column types and values", &Checker::CheckColumnValues},
        {"enum tables", &Checker::CheckEnums},
        {"META_DATA", &Checker::CheckMetaData},
        {"STRING_IDS", &Checker::CheckStringIds},
        {"string references", &Checker::CheckStringReferences},
        {"CONNECTION_IDS", &Checker::CheckConnections},
        {"kernel launches", &Checker::CheckKernelLaunches},
        {"times and singletons", &Checker::CheckTimesAndSingletons},
        {"replay tables", &Checker::CheckReplayTables},
    };
    for (const auto& [what, step] : kSteps) {
      base::Progress::StageOf(progress, what);
      GPUPROF_RETURN_IF_ERROR((this->*step)());
    }
    return OkStatus();
  }

  // analysis.db (reader_) against its profile: the tables and columns of schema.sql's analysis
  // part, and the rows the profile implies.
  Status RunAnalysis(const ProfileReader& profile) {
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
    for (const ExpectedTable& expected : expected_.tables) {
      if (!reader_.HasTable(expected.name)) {
        if (expected.required) Problem(expected.name, "table missing (DB_SPEC.md lists it in the exact DDL)");
        continue;
      }
      GPUPROF_ASSIGN_OR_RETURN(std::vector<ColumnInfo> actual, reader_.Columns(expected.name));
      const std::vector<ColumnInfo>& wanted = expected.columns;
      std::size_t lines = 0;
      std::size_t differences = 0;
      for (std::size_t i = 0; i < std::max(actual.size(), wanted.size()); ++i) {
        std::string line;
        if (i >= actual.size()) {
          line = "column " + std::to_string(i + 1) + " missing: expected '" + Describe(wanted[i]) + "'";
        } else if (i >= wanted.size()) {
          // Columns appended after the format's are not a problem: MindStudio Insight adds its own
          // to the tables it opens, and every consumer selects the format's columns by name.
          continue;
        } else if (!SameIgnoringCase(actual[i].name, wanted[i].name) ||
                   !SameIgnoringCase(actual[i].declared_type, wanted[i].declared_type) ||
                   actual[i].primary_key != wanted[i].primary_key) {
          line = "column " + std::to_string(i + 1) + " is '" + Describe(actual[i]) + "', expected '" +
                 Describe(wanted[i]) + "'";
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

  // The stored values of the format's columns, one scan per table: each value of its declared type
  // (SQLite keeps what its affinity cannot convert, e.g. 'abc' in an INTEGER column) or NULL, and
  // no NULL in the columns of kNeverNull.
  Status CheckColumnValues() {
    for (const ExpectedTable& expected : expected_.tables) {
      if (!reader_.HasTable(expected.name)) continue;
      GPUPROF_ASSIGN_OR_RETURN(std::vector<ColumnInfo> actual, reader_.Columns(expected.name));
      auto present = [&actual](const std::string& name) {
        return std::any_of(actual.begin(), actual.end(),
                           [&name](const ColumnInfo& column) { return SameIgnoringCase(column.name, name); });
      };
      const NeverNull* never_null = nullptr;
      for (const NeverNull& entry : kNeverNull) {
        if (expected.name == entry.table) never_null = &entry;
      }
      struct Probe {
        std::string column;
        std::string problem_kind;  // "type" or "null"
        std::string declared;
      };
      std::vector<Probe> probes;
      std::string select;
      for (const ColumnInfo& column : expected.columns) {
        if (!present(column.name)) continue;  // CheckSchema reports it
        // STEP_TIME.id has its own check, whose message says why the type matters there.
        const bool typed_elsewhere = expected.name == "STEP_TIME" && column.name == "id";
        const std::string allowed = AllowedStorage(column.declared_type);
        const std::string quoted = Quoted(column.name);
        if (!allowed.empty() && !typed_elsewhere) {
          select += std::string(select.empty() ? "" : ", ") + "SUM(typeof(" + quoted + ") NOT IN (" +
                    allowed + ", 'null')), MIN(CASE WHEN typeof(" + quoted + ") NOT IN (" + allowed +
                    ", 'null') THEN typeof(" + quoted + ") END)";
          probes.push_back({column.name, "type", column.declared_type});
        }
        const bool required =
            never_null != nullptr && std::any_of(never_null->columns.begin(), never_null->columns.end(),
                                                 [&column](const char* name) { return column.name == name; });
        if (required) {
          select += std::string(select.empty() ? "" : ", ") + "SUM(" + quoted + " IS NULL), MIN(CASE WHEN " +
                    quoted + " IS NULL THEN rowid END)";
          probes.push_back({column.name, "null", ""});
        }
      }
      if (probes.empty()) continue;
      GPUPROF_ASSIGN_OR_RETURN(Query query,
                               reader_.Prepare("SELECT " + select + " FROM " + Quoted(expected.name)));
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) continue;
      for (std::size_t i = 0; i < probes.size(); ++i) {
        const int at = static_cast<int>(2 * i);
        const std::int64_t count = query.Int(at);
        if (count == 0) continue;
        const std::string example = query.IsNull(at + 1) ? "?" : std::string(query.Text(at + 1));
        if (probes[i].problem_kind == "type") {
          Problem(expected.name, std::to_string(count) + " row(s) whose " + probes[i].column +
                                     " is stored as " + example + ", not " + probes[i].declared);
        } else {
          Problem(expected.name, std::to_string(count) + " row(s) with NULL " + probes[i].column +
                                     " (e.g. rowid " + example + "); readers join or sum on it");
        }
      }
    }
    return OkStatus();
  }

  Status CheckIndexes() {
    for (const ExpectedIndex& index : expected_.indexes) {
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
    for (const ExpectedEnum& expected : expected_.enums) {
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
    for (const auto& [name, value] : expected_.schema_version_rows) {
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
      GPUPROF_RETURN_IF_ERROR(
          ReportCount(table,
                      std::string("SELECT COUNT(*), MIN(rowid) FROM ") + table +
                          " WHERE CAST(startNs AS INTEGER) < 0 OR " +
                          "CAST(endNs AS INTEGER) < 0 OR CAST(startNs AS INTEGER) > " + limit +
                          " OR CAST(endNs AS INTEGER) > " + limit,
                      [](std::int64_t n, const std::string& example) {
                        return std::to_string(n) +
                               " row(s) whose startNs or endNs is negative or beyond 2^62 ns (e.g. rowid " +
                               example + "): no clock reading, and sums over them overflow";
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

  // A GPUPROF_REPLAY_PASS or GPUPROF_REPLAY_METRIC `table` whose kernelId values all have a kernel row.
  Status CheckKernelIds(std::string_view table) {
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
  Status CheckReplayTables() {
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

  const ProfileReader& reader_;
  const Expectations& expected_;
  CheckReport* report_;
};

}  // namespace

const std::vector<ExpectedTable>& ExpectedTables() {
  static const std::vector<ExpectedTable> kNone;
  const StatusOr<Expectations>& expectations = CachedExpectations();
  return expectations.ok() ? expectations->tables : kNone;
}

std::string FormatProblem(const std::string& path, const CheckProblem& problem) {
  // One line, whatever the DB's strings hold (a name quoted in a problem may contain a newline).
  return base::PrintableText(path + ": " + problem.table + ": " + problem.problem);
}

namespace {

// A damaged file first: the checks would fail (or, worse, pass) on garbage. quick_check reads every
// page once and skips the slow index-content comparison of integrity_check.
Status CheckIntact(const ProfileReader& reader) {
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
  return OkStatus();
}

}  // namespace

StatusOr<CheckReport> CheckAnalysisDb(const ProfileReader& analysis, const ProfileReader& profile) {
  CheckReport report;
  report.path = analysis.path();
  GPUPROF_RETURN_IF_ERROR(CheckIntact(analysis));
  const StatusOr<Expectations>& expectations = CachedAnalysisExpectations();
  if (!expectations.ok()) return expectations.status().WithContext("check: reading src/db/schema.sql");
  Checker checker(analysis, *expectations, &report);
  GPUPROF_RETURN_IF_ERROR(checker.RunAnalysis(profile));
  return report;
}

StatusOr<CheckReport> CheckProfileDb(const ProfileReader& reader, base::Progress* progress) {
  CheckReport report;
  report.path = reader.path();
  base::Progress::StageOf(progress, "integrity (SQLite quick_check)");
  GPUPROF_RETURN_IF_ERROR(CheckIntact(reader));
  const StatusOr<Expectations>& expectations = CachedExpectations();
  if (!expectations.ok()) return expectations.status().WithContext("check: reading src/db/schema.sql");
  Checker checker(reader, *expectations, &report);
  GPUPROF_RETURN_IF_ERROR(checker.Run(progress));
  return report;
}

}  // namespace gpuprof::db
