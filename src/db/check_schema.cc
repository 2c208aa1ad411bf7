// check's schema steps: the file's tables, columns, stored types and NULLs, indexes, enum rows and
// SCHEMA_VERSION rows against schema.sql (check_internal.h maps check's files).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "db/check_internal.h"

namespace gpuprof::db::check_internal {
namespace {

constexpr std::size_t kMaxColumnLinesPerTable = 6;

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

// SQLite's typeof() values a column of `declared_type` may hold besides NULL ("" when any).
std::string AllowedStorage(std::string_view declared_type) {
  if (SameIgnoringCase(declared_type, "INTEGER")) return "'integer'";
  if (SameIgnoringCase(declared_type, "REAL") || SameIgnoringCase(declared_type, "NUMERIC")) {
    return "'integer', 'real'";
  }
  if (SameIgnoringCase(declared_type, "TEXT")) return "'text'";
  return "";
}

}  // namespace

Status Checker::CountTablesAndRows() {
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

Status Checker::CheckSchema() {
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
Status Checker::CheckColumnValues() {
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
        select += std::string(select.empty() ? "" : ", ") + "SUM(typeof(" + quoted + ") NOT IN (" + allowed +
                  ", 'null')), MIN(CASE WHEN typeof(" + quoted + ") NOT IN (" + allowed +
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

Status Checker::CheckIndexes() {
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
      Problem(index.table, std::string("index ") + index.name + " is on table " + std::string(query.Text(0)));
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

Status Checker::CheckEnums() {
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

Status Checker::CheckMetaData() {
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

}  // namespace gpuprof::db::check_internal
