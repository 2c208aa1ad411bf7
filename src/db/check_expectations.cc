// What check expects of a profile and of analysis.db, read from src/db/schema.sql run into an
// in-memory database (check_internal.h maps check's files).
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "db/check.h"
#include "db/check_internal.h"
#include "db/schema_sql.h"
#include "db/sqlite_util.h"

namespace gpuprof::db {
namespace check_internal {
namespace {

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

}  // namespace

const StatusOr<Expectations>& CachedExpectations() {
  static const StatusOr<Expectations> expectations =
      LoadExpectations({SchemaPart::kFormatTables, SchemaPart::kOptionalTables, SchemaPart::kGpuprofTables,
                        SchemaPart::kFormatIndexes, SchemaPart::kGpuprofIndexes, SchemaPart::kSpecRows},
                       SchemaPart::kFormatTables);
  return expectations;
}

const StatusOr<Expectations>& CachedAnalysisExpectations() {
  static const StatusOr<Expectations> expectations =
      LoadExpectations({SchemaPart::kAnalysisTables}, SchemaPart::kAnalysisTables);
  return expectations;
}

}  // namespace check_internal

const std::vector<ExpectedTable>& ExpectedTables() {
  static const std::vector<ExpectedTable> kNone;
  const StatusOr<check_internal::Expectations>& expectations = check_internal::CachedExpectations();
  return expectations.ok() ? expectations->tables : kNone;
}

}  // namespace gpuprof::db
