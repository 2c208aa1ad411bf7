#include "db/sqlite_util.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace gpuprof::db {
namespace {

// "<sqlite message> (code N[, <OS error>])": the OS error says why an I/O error happened (EFBIG,
// ENOSPC, EACCES).
std::string SqliteMessage(sqlite3* db, int rc) {
  std::string out = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  out += " (code ";
  out += std::to_string(rc);
  int os_error = db != nullptr ? sqlite3_system_errno(db) : 0;
  int primary = rc & 0xff;
  if (os_error != 0 && (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_FULL)) {
    out += ", ";
    out += std::strerror(os_error);
  }
  out += ")";
  return out;
}

std::string DbPath(sqlite3* db) {
  const char* name = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  return name != nullptr ? name : "<unknown db>";
}

}  // namespace

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    CloseQuietly();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

StatusOr<Connection> Connection::OpenForWrite(const std::string& path) {
  Connection conn;
  conn.path_ = path;
  // NOMUTEX: the connection is used by one thread at a time (Create, then the writer thread, then
  // Finalize after joining it), so SQLite's per-call mutex is pure overhead on the hot path.
  int rc = sqlite3_open_v2(path.c_str(), &conn.db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status error = UnavailableError("sqlite3_open_v2(" + path + "): " + SqliteMessage(conn.db_, rc));
    conn.CloseQuietly();
    return error;
  }
  sqlite3_extended_result_codes(conn.db_, 1);
  return conn;
}

Status Connection::Exec(std::string_view sql) const {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return OkStatus();
  sqlite3_free(message);  // sqlite3_errmsg has the same text
  std::string head = text.substr(0, 80);
  return InternalError("SQL `" + head + (text.size() > 80 ? "...`" : "`") + " on " + path_ + ": " +
                       SqliteMessage(db_, rc));
}

Status Connection::Close() {
  if (db_ == nullptr) return OkStatus();
  int rc = sqlite3_close(db_);
  if (rc == SQLITE_OK) {
    db_ = nullptr;
    return OkStatus();
  }
  Status error = Error("sqlite3_close", rc);
  // Still release the handle: close_v2 finalizes lazily once the statements go.
  sqlite3_close_v2(db_);
  db_ = nullptr;
  return error;
}

Status Connection::Error(std::string_view what, int rc) const {
  return InternalError(std::string(what) + " on " + path_ + ": " + SqliteMessage(db_, rc));
}

void Connection::CloseQuietly() noexcept {
  if (db_ != nullptr) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

StatusOr<Statement> Statement::Prepare(const Connection& conn, std::string_view sql) {
  Statement statement;
  // PERSISTENT: these statements live for the whole run and are stepped millions of times.
  int rc = sqlite3_prepare_v3(conn.get(), sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                              &statement.stmt_, nullptr);
  if (rc != SQLITE_OK) {
    return conn.Error("prepare `" + std::string(sql.substr(0, 80)) + "`", rc);
  }
  return statement;
}

Status Statement::Run() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
    sqlite3_reset(stmt_);
    return OkStatus();
  }
  sqlite3* db = sqlite3_db_handle(stmt_);
  Status error = InternalError("step `" + std::string(sqlite3_sql(stmt_)).substr(0, 60) + "` on " +
                               DbPath(db) + ": " + SqliteMessage(db, rc));
  sqlite3_reset(stmt_);
  return error;
}

Status BatchInserter::Prepare(const Connection& conn, std::string_view head, std::string_view row) {
  columns_ = static_cast<std::size_t>(std::count(row.begin(), row.end(), '?'));
  if (columns_ == 0 || columns_ > 32) return InvalidArgumentError("BatchInserter: 1..32 parameters per row");
  rows_per_statement_ = std::clamp(kValuesPerStatement / static_cast<int>(columns_), 1, kMaxRowsPerStatement);
  std::string multi(head);
  for (int r = 0; r < rows_per_statement_; ++r) {
    if (r > 0) multi += ',';
    multi += row;
  }
  GPUPROF_ASSIGN_OR_RETURN(multi_, Statement::Prepare(conn, multi));
  GPUPROF_ASSIGN_OR_RETURN(single_, Statement::Prepare(conn, std::string(head) + std::string(row)));
  values_.assign(columns_ * static_cast<std::size_t>(rows_per_statement_), 0);
  pending_ = 0;
  base_ = 0;
  nulls_[0] = 0;
  return OkStatus();
}

void BatchInserter::BindRow(Statement& statement, int first_param, int row) noexcept {
  const std::int64_t* values = &values_[static_cast<std::size_t>(row) * columns_];
  std::uint32_t nulls = nulls_[row];
  for (std::size_t c = 0; c < columns_; ++c) {
    int param = first_param + static_cast<int>(c);
    if ((nulls >> c) & 1u) {
      statement.BindNull(param);
    } else {
      statement.BindInt(param, values[c]);
    }
  }
}

Status BatchInserter::WriteFull() {
  for (int r = 0; r < rows_per_statement_; ++r) BindRow(multi_, 1 + r * static_cast<int>(columns_), r);
  pending_ = 0;
  base_ = 0;
  nulls_[0] = 0;
  GPUPROF_RETURN_IF_ERROR(multi_.Run());
  ignored_ +=
      static_cast<std::uint64_t>(rows_per_statement_ - sqlite3_changes(sqlite3_db_handle(multi_.get())));
  return OkStatus();
}

Status BatchInserter::Flush() {
  int rows = pending_;
  pending_ = 0;
  base_ = 0;
  for (int r = 0; r < rows; ++r) {
    BindRow(single_, 1, r);
    GPUPROF_RETURN_IF_ERROR(single_.Run());
    ignored_ += static_cast<std::uint64_t>(1 - sqlite3_changes(sqlite3_db_handle(single_.get())));
  }
  nulls_[0] = 0;
  return OkStatus();
}

}  // namespace gpuprof::db
