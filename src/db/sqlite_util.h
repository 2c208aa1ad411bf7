// The one RAII layer over the SQLite C API, for the writer and the reader alike: a connection that
// closes itself, a prepared statement that finalizes itself, and Status-returning calls whose
// messages name the operation, the file and SQLite's own error text. How those messages are worded
// is the connection's: the writer's (the default) name the SQL and SQLite's code; the reader passes
// its own (profile_reader.cc: a damaged, foreign or locked file, each with its fix). Private to
// src/db; it does not include sqlite3.h, so the reader's public header can use it.
//
// Thread-safety: none. A Connection and its Statements are used by one thread at a time (both
// open their files with SQLITE_OPEN_NOMUTEX for that reason).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/sqlite_file_name.h"
#include "gpuprof/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gpuprof::db {

// Pragmas of the profile file and of its side files (side_file.h): trade-offs for a write-once
// bulk file. Each is safe because the file is written under a .partial name and renamed only after
// a clean close and fsync: a crash mid-write can at worst corrupt the .partial file, which nothing
// reads as a profile.
inline constexpr std::string_view kBulkWritePragmas = R"sql(
-- 64 KiB pages: fewer b-tree pages and page writes per row for these narrow, append-only tables.
PRAGMA page_size = 65536;
-- No rollback journal: halves the bytes written. We never roll back; a failed run leaves .partial.
PRAGMA journal_mode = OFF;
-- No fsync per commit: we fsync once, before the rename that publishes the file.
PRAGMA synchronous = OFF;
-- Nobody else opens the .partial file; holding the lock saves lock/unlock syscalls per transaction.
PRAGMA locking_mode = EXCLUSIVE;
-- Anything SQLite needs a temporary file for stays in memory: gpuprof never writes outside the
-- output directory (no /var/tmp files, no dependency on a writable temp dir).
PRAGMA temp_store = MEMORY;
-- 64 MiB page cache: keeps the b-tree tails of every table and of TaskIndex hot while rows stream in.
PRAGMA cache_size = -65536;
)sql";

// The Status for SQLite result `rc` of `what` on the file at `path` (`db` may be null).
using SqliteErrorFormatter = Status (*)(std::string_view path, std::string_view what, int rc, sqlite3* db);

// "<what> on <path>: <sqlite message> (code N[, <OS error>])" as InternalError: the writer's wording.
Status DefaultSqliteError(std::string_view path, std::string_view what, int rc, sqlite3* db);

class Connection {
 public:
  Connection() = default;
  ~Connection() { CloseQuietly(); }
  Connection(Connection&& other) noexcept
      : db_(other.db_),
        path_(std::move(other.path_)),
        file_name_(std::move(other.file_name_)),
        formatter_(other.formatter_) {
    other.db_ = nullptr;
  }
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Opens (creating) `path` read-write. The connection is single-threaded (NOMUTEX).
  static StatusOr<Connection> OpenForWrite(const std::string& path);
  // Opens `path` read-only, never creating it; single-threaded (NOMUTEX). Every error of the
  // connection and its statements, the failed open included, is worded by `formatter`.
  static StatusOr<Connection> OpenReadOnly(const std::string& path, SqliteErrorFormatter formatter);

  // Runs one or more statements that return no rows we need.
  Status Exec(std::string_view sql) const;

  // Closes the file. An error (e.g. unfinalized statements, a failed final write) is returned and
  // the handle is still released.
  Status Close();

  sqlite3* get() const noexcept { return db_; }
  const std::string& path() const noexcept { return path_; }
  bool is_open() const noexcept { return db_ != nullptr; }
  SqliteErrorFormatter formatter() const noexcept { return formatter_; }

  // The connection's Status for result `rc` of `what` (the writer's: "<what> on <path>: <sqlite
  // message> (code N)").
  Status Error(std::string_view what, int rc) const;

 private:
  // sqlite3_open_v2 into `conn` (which closes the handle, opened or not, when it goes).
  static int Open(const std::string& path, int flags, Connection* conn);
  void CloseQuietly() noexcept;

  sqlite3* db_ = nullptr;
  std::string path_;
  SqliteFileName file_name_;  // what SQLite was given for path_ (a long path's directory held open)
  SqliteErrorFormatter formatter_ = DefaultSqliteError;
};

// A prepared statement. Binders take 1-based parameter indexes, column accessors 0-based
// columns (SQLite's conventions). It keeps its connection's path and error wording, not the
// connection: a Statement must be destroyed before its Connection closes.
class Statement {
 public:
  // kPersistent: prepared once and stepped many times (the writer's inserts); kTransient: a
  // query run a few times (the reader's).
  enum class Use { kPersistent, kTransient };

  Statement() = default;
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  static StatusOr<Statement> Prepare(const Connection& conn, std::string_view sql,
                                     Use use = Use::kPersistent);

  // Binders cannot fail on a valid index and a prepared statement, so they return nothing; a bad
  // index shows up as a wrong row in the tests.
  void BindInt(int index, std::int64_t value) noexcept;
  // Stores a u64 as its two's complement i64 (SQLite integers are signed 64-bit).
  void BindU64(int index, std::uint64_t value) noexcept { BindInt(index, static_cast<std::int64_t>(value)); }
  void BindNull(int index) noexcept;
  void BindDouble(int index, double value) noexcept;         // NaN is stored as NULL (SQLite's rule)
  void BindText(int index, std::string_view text) noexcept;  // copied
  // Binds text that stays valid until the statement is reset (no copy).
  void BindStaticText(int index, std::string_view text) noexcept;
  template <typename T>
  void BindOptional(int index, const std::optional<T>& value) noexcept {
    if (value.has_value()) {
      BindInt(index, static_cast<std::int64_t>(*value));
    } else {
      BindNull(index);
    }
  }

  // Steps a statement that returns no rows, then resets it for the next use.
  Status Run();

  // Steps a query: true when a row is ready, false when done. A corrupt or truncated file shows
  // up here as an error naming the file.
  StatusOr<bool> Step();
  // Back to before the first Step, bindings cleared.
  void Reset() noexcept;

  bool IsNull(int column) const noexcept;
  std::int64_t Int(int column) const noexcept;  // NULL reads as 0; TEXT digits convert
  std::optional<std::int64_t> OptionalInt(int column) const noexcept;
  double Double(int column) const noexcept;
  std::string_view Text(int column) const noexcept;  // NULL reads as ""; valid until the next Step
  int ColumnType(int column) const noexcept;         // SQLITE_INTEGER, SQLITE_TEXT, ...
  int ColumnCount() const noexcept;

  sqlite3_stmt* get() const noexcept { return stmt_; }

 private:
  Status Error(std::string_view what, int rc) const;

  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
  SqliteErrorFormatter formatter_ = DefaultSqliteError;
};

// Inserts rows into one table many at a time through a multi-row `INSERT ... VALUES (...),(...)`:
// one sqlite3_step per ~400 bound values (32 rows of 11 columns, 192 rows of 2) instead of one per
// row, which is most of SQLite's per-row cost for narrow integer rows. Rows are buffered as 64-bit words
// (integers, or a double's bits) plus a NULL mask and a REAL mask; Flush() writes the remainder
// through a one-row statement.
//
//   inserter.Set(0, start_ns); inserter.SetNull(3); ...; GPUPROF_RETURN_IF_ERROR(inserter.Push());
//
// Rows reach the table in Push order, possibly later than Push returns: Flush before COMMIT.
class BatchInserter {
 public:
  static constexpr int kMaxRowsPerStatement = 256;
  static constexpr int kValuesPerStatement = 400;

  // `head` is "INSERT INTO T VALUES " (or "INSERT OR IGNORE ..."); `row` is one parenthesized row
  // whose '?' are the bound columns, in order (constants such as NULL may sit between them).
  Status Prepare(const Connection& conn, std::string_view head, std::string_view row);

  void Set(int column, std::int64_t value) noexcept {
    values_[base_ + static_cast<std::size_t>(column)] = value;
  }
  void SetU64(int column, std::uint64_t value) noexcept { Set(column, static_cast<std::int64_t>(value)); }
  void SetNull(int column) noexcept { nulls_[pending_] |= 1u << column; }
  // Bound as REAL (SetNull and Set reset nothing: set each column of a row once).
  void SetDouble(int column, double value) noexcept {
    Set(column, std::bit_cast<std::int64_t>(value));
    reals_[pending_] |= 1u << column;
  }
  template <typename T>
  void SetOptional(int column, const std::optional<T>& value) noexcept {
    if (value.has_value()) {
      Set(column, static_cast<std::int64_t>(*value));
    } else {
      SetNull(column);
    }
  }

  // Ends the current row.
  Status Push() {
    ++pending_;
    base_ += columns_;
    if (pending_ == rows_per_statement_) return WriteFull();
    nulls_[pending_] = 0;
    reals_[pending_] = 0;
    return OkStatus();
  }

  // Writes the buffered rows.
  Status Flush();

  // Rows the table did not take (INSERT OR IGNORE conflicts), counted from sqlite3_changes.
  std::uint64_t ignored() const noexcept { return ignored_; }
  bool prepared() const noexcept { return multi_.get() != nullptr; }
  void Release() {
    multi_ = {};
    single_ = {};
  }

 private:
  void BindRow(Statement& statement, int first_param, int row) noexcept;
  Status WriteFull();

  Statement multi_;
  Statement single_;
  std::size_t columns_ = 0;
  int rows_per_statement_ = 1;
  int pending_ = 0;
  std::size_t base_ = 0;
  std::vector<std::int64_t> values_;
  std::uint32_t nulls_[kMaxRowsPerStatement] = {};
  std::uint32_t reals_[kMaxRowsPerStatement] = {};
  std::uint64_t ignored_ = 0;
};

}  // namespace gpuprof::db
