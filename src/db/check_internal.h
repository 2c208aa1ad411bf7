// What check.h's files share: the expectations read from schema.sql (check_expectations.cc) and
// the Checker, one per checked file, whose steps live in one file per job:
//   check.cc          the entry points, the order of the steps, the integrity check first
//   check_schema.cc   the file's shape against schema.sql: tables, columns, stored types and NULLs,
//                     indexes, enum and META_DATA rows
//   check_rows.cc     the rows: ids that must resolve (STRING_IDS, CONNECTION_IDS, launches, replay
//                     kernels), times, memory figures and singletons; analysis.db against its profile
// Private to src/db.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/progress.h"
#include "db/check.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db::check_internal {

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

// The profile's (every part of schema.sql but analysis.db's; the format's tables required). Built
// once per process; the source is constant.
const StatusOr<Expectations>& CachedExpectations();

// analysis.db's: its own part, every table required.
const StatusOr<Expectations>& CachedAnalysisExpectations();

inline std::string Quoted(std::string_view identifier) {
  std::string out = "\"";
  for (char c : identifier) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

inline bool SameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

class Checker {
 public:
  Checker(const ProfileReader& reader, const Expectations& expected, CheckReport* report)
      : reader_(reader), expected_(expected), report_(report) {}

  // `progress` (may be null) gets a stage per check.
  Status Run(base::Progress* progress);

  // analysis.db (reader_) against its profile: the tables and columns of schema.sql's analysis
  // part, and the rows the profile implies.
  Status RunAnalysis(const ProfileReader& profile);

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

  // check_schema.cc
  Status CountTablesAndRows();
  Status CheckSchema();
  Status CheckColumnValues();
  Status CheckIndexes();
  Status CheckEnums();
  Status CheckMetaData();

  // check_rows.cc
  Status CheckStringIds();
  Status CheckStringReferences();
  Status CheckConnections();
  Status CheckKernelLaunches();
  Status CheckTimesAndSingletons();
  Status CheckKernelIds(std::string_view table);
  Status CheckReplayTables();

  const ProfileReader& reader_;
  const Expectations& expected_;
  CheckReport* report_;
};

}  // namespace gpuprof::db::check_internal
