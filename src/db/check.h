// `gpuprof check`: schema and join-consistency checks of one profile DB against DB_SPEC.md.
//
// The expected tables, columns (order, declared type, primary key), indexes and enum rows are
// written out here from DB_SPEC.md's DDL, independently of the writer's code, so a writer bug
// cannot hide itself. Join checks reproduce the joins the format's consumers perform (DB_SPEC
// §3.4): they use set operations (EXCEPT, GROUP BY) that SQLite runs out of core, never a
// correlated lookup on an unindexed column.
//
// Thread-safety: none (one reader). Errors: Status only when the file cannot be read (damaged,
// truncated); everything wrong with its contents is a CheckProblem.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

StatusOr<CheckReport> CheckProfileDb(const ProfileReader& reader);

// "<db>: <table>: <problem>"
std::string FormatProblem(const std::string& path, const CheckProblem& problem);

// The tables check expects, as "name TYPE[ PK], ..." column lists transcribed from DB_SPEC's DDL;
// `required` is false for the optional ones (checked only when present).
struct ExpectedTable {
  const char* name;
  bool required;
  const char* columns;
};
const std::vector<ExpectedTable>& ExpectedTables();

}  // namespace gpuprof::db
