// `gpuprof check`: schema and join-consistency checks of one profile DB against DB_SPEC.md.
//
// The expected tables, columns (order, declared type, primary key), indexes, enum rows and
// SCHEMA_VERSION rows come from src/db/schema.sql, the one DDL source, run into an in-memory
// database. That the source itself says what DB_SPEC.md says is the schema tests' job
// (tests/unit/db/writer_schema_test.cc checks DB_SPEC's key facts written out by hand). Join checks
// reproduce the joins the format's consumers perform (DB_SPEC §3.4): they use set operations
// (EXCEPT, GROUP BY) that SQLite runs out of core, never a correlated lookup on an unindexed column.
//
// Thread-safety: none (one reader). Errors: Status only when the file cannot be read (damaged,
// truncated); everything wrong with its contents is a CheckProblem.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/progress.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

struct CheckProblem {
  std::string table;    // the table the problem is in ("(file)" for file-level problems)
  std::string problem;  // what is wrong, in one line
};

struct CheckReport {
  std::string path;
  std::vector<CheckProblem> problems;
  std::uint64_t tables = 0;  // tables in the file
  std::uint64_t rows = 0;    // rows in all of them
};

// `progress` (may be null) gets a stage per check.
StatusOr<CheckReport> CheckProfileDb(const ProfileReader& reader, base::Progress* progress = nullptr);

// The analysis.db beside `profile` (opened with DbKind::kAnalysis): intact, the tables and columns
// of schema.sql's analysis part, one StepTraceTime row per STEP_TIME row (one when there are none)
// whose parts add up to the step, one CommAnalyzerTime and CommAnalyzerBandwidth row per
// COMMUNICATION_OP row, a matrix total when there is communication. Errors as CheckProfileDb.
StatusOr<CheckReport> CheckAnalysisDb(const ProfileReader& analysis, const ProfileReader& profile);

// "<db>: <table>: <problem>"
std::string FormatProblem(const std::string& path, const CheckProblem& problem);

// The tables check expects, read from src/db/schema.sql (the DDL the writer also uses): the
// format's, `required`; its optional device tables and GPUPROF_*, checked only when present. Empty
// only if the embedded source cannot be run (then CheckProfileDb returns that error).
struct ExpectedTable {
  std::string name;
  bool required = false;
  std::vector<ColumnInfo> columns;  // in declaration order, as PRAGMA table_info reads the DDL
};
const std::vector<ExpectedTable>& ExpectedTables();

}  // namespace gpuprof::db
