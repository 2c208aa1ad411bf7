// src/db/schema.sql, the profile database's one DDL source, embedded at build time (schema.cmake),
// and its parts. The writer creates its files from it (schema.cc), check derives what it expects
// from it (check.cc), the test fixtures and the Python benchmark peer read it too.
//
// Thread-safety: pure functions over constant text. No SQLite.
#pragma once

#include <string_view>
#include <vector>

namespace gpuprof::db {

// The parts of schema.sql, each introduced by a line "-- [<name>]" there.
enum class SchemaPart {
  kFormatTables,    // "format-tables": DB_SPEC's tables, created in every profile
  kOptionalTables,  // "optional-tables": DB_SPEC's optional device tables, never created by gpuprof
  kGpuprofTables,   // "gpuprof-tables": GPUPROF_* tables, created in every profile
  kFormatIndexes,   // "format-indexes": DB_SPEC's indexes
  kGpuprofIndexes,  // "gpuprof-indexes": the GPUPROF_* tables' indexes
  kSpecRows,        // "spec-rows": DB_SPEC's fixed enum rows and SCHEMA_VERSION rows
  kMsprofRows,      // "msprof-rows": msprof's HCCL and module enum rows
  kAnalysisTables,  // "analysis-tables": analysis.db's tables (DB_SPEC §3.11), its own file
};

// The whole file, as written.
std::string_view SchemaSqlText() noexcept;

// The statements of one part, comments included, ready for sqlite3_exec.
std::string_view SchemaSql(SchemaPart part) noexcept;

// The names of the tables a part creates (CREATE TABLE ... <name> (...)), in order.
std::vector<std::string_view> SchemaSqlTables(SchemaPart part);

}  // namespace gpuprof::db
