#include "db/sqlite_util.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/errno_text.h"

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
    out += base::ErrnoText(os_error);
  }
  out += ")";
  return out;
}

// A name SQLite opens as that file and nothing else. Debian's SQLite is built with URI file names
// on, so a file named `file:a.db` would be parsed as a URI naming a.db; "./" keeps it a plain name.
// ":memory:" is kept: the check opens its reference schema there on purpose.
std::string PlainFileName(const std::string& path) {
  if (path.rfind("file:", 0) == 0) return "./" + path;
  return path;
}

// `path` as an SQLite URI (every byte outside the unreserved set percent-encoded, so `?`, `#` and
// `%` in a name stay part of it) with `query` appended.
std::string FileUri(const std::string& path, std::string_view query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  // "file://" + an absolute path gives "file:///..."; a relative path must not start an authority.
  std::string uri = path.rfind('/', 0) == 0 ? "file://" : "file:";
  for (char byte : path) {
    const auto c = static_cast<unsigned char>(byte);
    if (std::isalnum(c) != 0 || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      uri.push_back(static_cast<char>(c));
    } else {
      uri.push_back('%');
      uri.push_back(kHex[static_cast<unsigned>(c) >> 4U]);
      uri.push_back(kHex[static_cast<unsigned>(c) & 0xFU]);
    }
  }
  uri.push_back('?');
  uri.append(query);
  return uri;
}

// True when `path` is an SQLite file in WAL mode (header bytes 18 and 19 are 2) with no -wal file
// beside it: then the main file holds every committed page, and opening it read-only the usual way
// would still create -wal and -shm files beside it.
bool IsQuiescentWalFile(const std::string& path) {
  unsigned char header[20] = {};
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  const std::size_t n = std::fread(header, 1, sizeof(header), file);
  std::fclose(file);
  if (n != sizeof(header) || std::memcmp(header, "SQLite format 3", 16) != 0) return false;
  if (header[18] != 2 || header[19] != 2) return false;
  struct stat info {};
  return ::stat((path + "-wal").c_str(), &info) != 0 && errno == ENOENT;
}

}  // namespace

Status DefaultSqliteError(std::string_view path, std::string_view what, int rc, sqlite3* db) {
  return InternalError(std::string(what) + " on " + std::string(path) + ": " + SqliteMessage(db, rc));
}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    CloseQuietly();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    file_name_ = std::move(other.file_name_);
    formatter_ = other.formatter_;
  }
  return *this;
}

int Connection::Open(const std::string& path, int flags, Connection* conn) {
  conn->path_ = path;
  StatusOr<SqliteFileName> name = SqliteFileName::For(path);
  if (!name.ok()) return SQLITE_CANTOPEN;
  conn->file_name_ = std::move(name).value();
  int rc =
      sqlite3_open_v2(PlainFileName(conn->file_name_.name()).c_str(), &conn->db_, flags, SqliteVfsName());
  if (rc == SQLITE_OK) sqlite3_extended_result_codes(conn->db_, 1);
  return rc;
}

StatusOr<Connection> Connection::OpenForWrite(const std::string& path) {
  Connection conn;
  // NOMUTEX: the connection is used by one thread at a time (Create, then the writer thread, then
  // Finalize after joining it), so SQLite's per-call mutex is pure overhead on the hot path.
  int rc = Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, &conn);
  if (rc != SQLITE_OK)
    return UnavailableError("sqlite3_open_v2(" + path + "): " + SqliteMessage(conn.db_, rc));
  return conn;
}

StatusOr<Connection> Connection::OpenReadOnly(const std::string& path, SqliteErrorFormatter formatter) {
  Connection conn;
  conn.formatter_ = formatter != nullptr ? formatter : DefaultSqliteError;
  // Plain read-only, not `immutable=1`: immutable would skip locking and change detection, which
  // is unsafe when a writer may still hold the file. The exception is a WAL-mode file with no -wal
  // beside it: read-only opening would create -wal and -shm there (a reader must not write beside
  // its input), and with no -wal there is no writer whose pages immutable could miss. NOMUTEX: a
  // reader is used by one thread. The name goes in as a URI so that it is only ever a file name.
  conn.path_ = path;
  StatusOr<SqliteFileName> name = SqliteFileName::For(path);
  if (!name.ok()) return name.status();
  conn.file_name_ = std::move(name).value();
  const std::string uri =
      FileUri(conn.file_name_.name(), IsQuiescentWalFile(path) ? "mode=ro&immutable=1" : "mode=ro");
  int rc = sqlite3_open_v2(uri.c_str(), &conn.db_,
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, SqliteVfsName());
  if (rc == SQLITE_OK) sqlite3_extended_result_codes(conn.db_, 1);
  if (rc != SQLITE_OK) return conn.Error("opening", rc);
  return conn;
}

Status Connection::Exec(std::string_view sql) const {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return OkStatus();
  sqlite3_free(message);  // sqlite3_errmsg has the same text
  std::string head = text.substr(0, 80);
  return Error("SQL `" + head + (text.size() > 80 ? "...`" : "`"), rc);
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

Status Connection::Error(std::string_view what, int rc) const { return formatter_(path_, what, rc, db_); }

void Connection::CloseQuietly() noexcept {
  if (db_ != nullptr) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)),
      path_(std::move(other.path_)),
      formatter_(other.formatter_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    path_ = std::move(other.path_);
    formatter_ = other.formatter_;
  }
  return *this;
}

StatusOr<Statement> Statement::Prepare(const Connection& conn, std::string_view sql, Use use) {
  Statement statement;
  statement.path_ = conn.path();
  statement.formatter_ = conn.formatter();
  // PERSISTENT: these statements live for the whole run and are stepped millions of times.
  const unsigned flags = use == Use::kPersistent ? SQLITE_PREPARE_PERSISTENT : 0;
  int rc = sqlite3_prepare_v3(conn.get(), sql.data(), static_cast<int>(sql.size()), flags, &statement.stmt_,
                              nullptr);
  if (rc != SQLITE_OK) {
    std::string shown(sql.substr(0, std::min<std::size_t>(sql.size(), 80)));
    return conn.Error("preparing (" + shown + (sql.size() > 80 ? "..." : "") + ")", rc);
  }
  return statement;
}

void Statement::BindInt(int index, std::int64_t value) noexcept { sqlite3_bind_int64(stmt_, index, value); }

void Statement::BindNull(int index) noexcept { sqlite3_bind_null(stmt_, index); }

void Statement::BindDouble(int index, double value) noexcept { sqlite3_bind_double(stmt_, index, value); }

void Statement::BindText(int index, std::string_view text) noexcept {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void Statement::BindStaticText(int index, std::string_view text) noexcept {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

Status Statement::Run() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
    sqlite3_reset(stmt_);
    return OkStatus();
  }
  Status error = Error("step `" + std::string(sqlite3_sql(stmt_)).substr(0, 60) + "`", rc);
  sqlite3_reset(stmt_);
  return error;
}

StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  std::string sql = sqlite3_sql(stmt_) != nullptr ? sqlite3_sql(stmt_) : "";
  if (sql.size() > 80) sql = sql.substr(0, 77) + "...";
  return Error("reading (" + sql + ")", rc);
}

void Statement::Reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::IsNull(int column) const noexcept {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t Statement::Int(int column) const noexcept { return sqlite3_column_int64(stmt_, column); }

std::optional<std::int64_t> Statement::OptionalInt(int column) const noexcept {
  if (IsNull(column)) return std::nullopt;
  return Int(column);
}

double Statement::Double(int column) const noexcept { return sqlite3_column_double(stmt_, column); }

std::string_view Statement::Text(int column) const noexcept {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
}

int Statement::ColumnType(int column) const noexcept { return sqlite3_column_type(stmt_, column); }

int Statement::ColumnCount() const noexcept { return sqlite3_column_count(stmt_); }

Status Statement::Error(std::string_view what, int rc) const {
  return formatter_(path_, what, rc, stmt_ != nullptr ? sqlite3_db_handle(stmt_) : nullptr);
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
  reals_[0] = 0;
  return OkStatus();
}

void BatchInserter::BindRow(Statement& statement, int first_param, int row) noexcept {
  const std::int64_t* values = &values_[static_cast<std::size_t>(row) * columns_];
  std::uint32_t nulls = nulls_[row];
  std::uint32_t reals = reals_[row];
  for (std::size_t c = 0; c < columns_; ++c) {
    int param = first_param + static_cast<int>(c);
    if ((nulls >> c) & 1u) {
      statement.BindNull(param);
    } else if ((reals >> c) & 1u) {
      statement.BindDouble(param, std::bit_cast<double>(values[c]));
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
  reals_[0] = 0;
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
  reals_[0] = 0;
  return OkStatus();
}

}  // namespace gpuprof::db
