// Read side of the profile database (DB_SPEC.md): finding the DBs a PATH names, and a read-only
// connection with prepared queries whose errors say what is wrong with the file and how to fix it.
// `gpuprof stats`, `export` and `check` are built on this.
//
// Ownership and lifetime: ProfileReader owns its connection (sqlite_util.h, the RAII wrapper the
// writer uses too); a Query borrows the reader it was prepared on and must be destroyed first.
// Thread-safety: none; one thread uses a reader and its queries at a time. Errors: every fallible
// call returns Status/StatusOr with the file's path in the message; nothing throws.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/sqlite_util.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// One finished DB found under a PATH.
struct ProfileDbFile {
  std::string path;
  std::optional<std::int32_t> rank;  // from "ascend_pytorch_profiler_<rank>.db"; none without suffix
};

struct ResolvedProfiles {
  std::vector<ProfileDbFile> dbs;        // by rank (unranked first), then path
  std::vector<std::string> partial_dbs;  // "*.db.partial" files seen while searching, sorted
};

// PATH is a .db file, an `*_ascend_pt` run directory (its ASCEND_PROFILER_OUTPUT/
// ascend_pytorch_profiler*.db), an ASCEND_PROFILER_OUTPUT directory, or a directory holding run
// directories (one DB per rank). `*.db.partial` files are never returned as DBs, only listed.
// Errors: NotFound for a missing path or a directory without a finished DB; InvalidArgument for a
// partial DB named directly or a path that is neither a file nor a directory.
StatusOr<ResolvedProfiles> ResolveProfilePath(const std::string& path);

// "found N partial DB(s) from runs that did not finish: a, b", or "" when there are none.
std::string PartialDbNote(const ResolvedProfiles& resolved);

// "2 DBs are rank 0: a, b (...)" for each rank that more than one DB's file name claims, or "".
std::string DuplicateRankNote(const ResolvedProfiles& resolved);

// The rank in "ascend_pytorch_profiler_<rank>.db", if the file name carries one.
std::optional<std::int32_t> RankFromDbFileName(std::string_view file_name);

struct ColumnInfo {
  std::string name;
  std::string declared_type;  // as written in the DDL ("INTEGER", "TEXT", "" when none)
  bool primary_key = false;
};

// A prepared statement over a ProfileReader: the shared Statement (sqlite_util.h), whose errors
// are worded by the reader (see ProfileReader::Error). Column accessors take 0-based indexes;
// binders take 1-based parameter indexes (SQLite's conventions). Text views stay valid until the
// next Step(). A Query must be destroyed before the reader it was prepared on.
using Query = Statement;

// What a file opened by ProfileReader must be: a profile (it has PYTORCH_API or TASK) or the
// analysis.db beside one (it has StepTraceTime).
enum class DbKind : std::uint8_t { kProfile, kAnalysis };

class ProfileReader {
 public:
  // Opens `path` read-only (never creates, never writes) and checks that it is an SQLite file
  // holding the format's tables. Errors (InvalidArgument unless noted):
  //   "not an SQLite database: PATH", "PATH is not a gpuprof/ascend_pytorch_profiler database
  //   (no PYTORCH_API or TASK table)", a damaged/truncated file (DataLoss), NotFound.
  //   for kAnalysis "PATH is not an analysis.db (no StepTraceTime table)".
  static StatusOr<std::unique_ptr<ProfileReader>> Open(const std::string& path,
                                                       DbKind kind = DbKind::kProfile);

  ~ProfileReader() = default;
  ProfileReader(const ProfileReader&) = delete;
  ProfileReader& operator=(const ProfileReader&) = delete;

  const std::string& path() const noexcept { return path_; }

  // Tables and views in the file (names as stored), in sqlite_master order.
  const std::vector<std::string>& tables() const noexcept { return tables_; }
  bool HasTable(std::string_view table) const noexcept;
  // The table's columns in declaration order; empty when the table does not exist.
  StatusOr<std::vector<ColumnInfo>> Columns(std::string_view table) const;
  // True when `table` exists and has every one of `columns`.
  StatusOr<bool> HasColumns(std::string_view table, const std::vector<std::string_view>& columns) const;
  // True when STRING_IDS exists with its id and value columns: the one test before joining names.
  bool HasStringValues() const noexcept { return has_string_values_; }

  StatusOr<Query> Prepare(std::string_view sql) const;

  // Runs a query expected to return one integer (COUNT(*), ...); NULL reads as 0.
  StatusOr<std::int64_t> QueryInt(std::string_view sql) const;

  // A Status for SQLite result `rc` on this file, worded for the user: corrupt or truncated
  // files, non-SQLite files and locked files get their own messages and fixes.
  Status Error(std::string_view what, int rc) const;

 private:
  explicit ProfileReader(std::string path) : path_(std::move(path)) {}
  Status LoadTables();

  std::string path_;
  Connection conn_;  // read-only, errors worded for the user (ReaderError in profile_reader.cc)
  std::vector<std::string> tables_;
  bool has_string_values_ = false;
};

// The message for a file whose SQLite result is `rc` (SQLITE_CORRUPT, SQLITE_NOTADB, ...):
// exposed for the tests and for callers that report without a reader.
std::string DescribeSqliteFailure(const std::string& path, std::string_view what, int rc,
                                  std::string_view sqlite_message);

}  // namespace gpuprof::db
