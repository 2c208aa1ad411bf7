#include "db/side_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>
#include <utility>

#include "base/errno_text.h"
#include "base/thread_priority.h"

namespace gpuprof::db {
namespace {

constexpr std::string_view kSchemaName = "gpuprof_side";

std::string QuotedName(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    out += c;
    if (c == '"') out += '"';
  }
  out += '"';
  return out;
}

// The CREATE TABLE statement `conn` has for `table`.
StatusOr<std::string> TableDdl(const Connection& conn, const std::string& table) {
  GPUPROF_ASSIGN_OR_RETURN(
      Statement query,
      Statement::Prepare(conn, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1"));
  query.BindStaticText(1, table);
  GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return NotFoundError("table " + table + " is not in " + conn.path());
  return std::string(query.Text(0));
}

}  // namespace

SideFile::SideFile(Connection conn, std::string path, std::vector<std::string> tables)
    : conn_(std::move(conn)), path_(std::move(path)), tables_(std::move(tables)) {}

StatusOr<std::unique_ptr<SideFile>> SideFile::Create(const Connection& main, std::string path,
                                                     std::vector<std::string> tables) {
  std::vector<std::string> ddl;
  for (const std::string& table : tables) {
    GPUPROF_ASSIGN_OR_RETURN(std::string sql, TableDdl(main, table));
    ddl.push_back(std::move(sql));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return FailedPreconditionError("cannot remove stale " + path + ": " + base::ErrnoText(errno));
  }
  GPUPROF_ASSIGN_OR_RETURN(Connection conn, Connection::OpenForWrite(path));
  Status status = conn.Exec(kBulkWritePragmas);
  for (const std::string& sql : ddl) {
    if (status.ok()) status = conn.Exec(sql);
  }
  if (!status.ok()) {
    conn.Close().IgnoreError();
    unlink(path.c_str());
    return status.WithContext("creating " + path);
  }
  std::unique_ptr<SideFile> side(new SideFile(std::move(conn), std::move(path), std::move(tables)));
  try {
    side->thread_ = std::thread([raw = side.get()] { raw->Run(); });
  } catch (const std::system_error& e) {
    return UnavailableError("cannot start the thread for " + side->path_ + ": " + e.what());
  }
  return side;
}

SideFile::~SideFile() {
  Stop();
  conn_.Close().IgnoreError();
  unlink(path_.c_str());
}

void SideFile::Post(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void SideFile::Run() noexcept {
  base::LowerThisThreadsPriority();  // the profiled program's threads come first
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (!error_.ok()) continue;  // a job failed: the rest are skipped
    }
    Status status;
    try {
      status = conn_.Exec("BEGIN");
      if (status.ok()) status = job(conn_);
      if (status.ok()) status = conn_.Exec("COMMIT");
    } catch (const std::exception& e) {  // bad_alloc
      status = ResourceExhaustedError(std::string("out of memory: ") + e.what());
    }
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.ok()) error_ = status.WithContext("writing " + path_);
    }
  }
}

void SideFile::Stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ && !thread_.joinable()) return;
    closing_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status SideFile::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;  // Run drains the queue before it returns
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Status error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    error = error_;
  }
  GPUPROF_RETURN_IF_ERROR(error);
  if (conn_.is_open()) GPUPROF_RETURN_IF_ERROR(conn_.Close());
  return OkStatus();
}

Status SideFile::MergeInto(const Connection& main) {
  if (conn_.is_open() || thread_.joinable()) {
    return FailedPreconditionError("merging " + path_ + " before its thread finished");
  }
  // Held until DETACH: a long path's name is its directory's descriptor (sqlite_file_name.h).
  GPUPROF_ASSIGN_OR_RETURN(SqliteFileName name, SqliteFileName::For(path_));
  {
    GPUPROF_ASSIGN_OR_RETURN(Statement attach,
                             Statement::Prepare(main, "ATTACH DATABASE ?1 AS " + std::string(kSchemaName)));
    attach.BindStaticText(1, name.name());
    GPUPROF_RETURN_IF_ERROR(attach.Run());
  }
  Status status = main.Exec("BEGIN");
  for (const std::string& table : tables_) {
    if (!status.ok()) break;
    // SELECT * from a table of identical DDL: SQLite's transfer optimization copies the records.
    status = main.Exec("INSERT INTO main." + QuotedName(table) + " SELECT * FROM " +
                       std::string(kSchemaName) + "." + QuotedName(table));
  }
  if (status.ok()) status = main.Exec("COMMIT");
  Status detached = main.Exec("DETACH DATABASE " + std::string(kSchemaName));
  if (status.ok()) status = detached;
  GPUPROF_RETURN_IF_ERROR(status.WithContext("merging " + path_ + " into " + main.path()));
  unlink(path_.c_str());
  return OkStatus();
}

}  // namespace gpuprof::db
