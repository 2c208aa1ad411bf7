#include "db/profile_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>
#include <tuple>
#include <utility>

namespace gpuprof::db {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDbPrefix = "ascend_pytorch_profiler";
constexpr std::string_view kDbSuffix = ".db";
constexpr std::string_view kPartialSuffix = ".db.partial";
constexpr std::string_view kOutputDirName = "ASCEND_PROFILER_OUTPUT";
// Every SQLite 3 file starts with these 16 bytes; its header is 100 bytes long.
constexpr char kSqliteMagic[] = "SQLite format 3";  // + the terminating NUL, 16 bytes in all
constexpr std::uintmax_t kSqliteHeaderBytes = 100;

// How long a read waits for a writer's lock before reporting the file as busy. Finished DBs are
// renamed into place complete, so a lock here means someone is writing the file by hand.
constexpr int kBusyTimeoutMs = 2000;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.substr(0, prefix.size()) == prefix;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool IsDirectory(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// Adds the finished DBs and the partial ones directly inside `dir`.
Status ScanDbDirectory(const fs::path& dir, ResolvedProfiles* out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    return InvalidArgumentError("cannot list directory " + dir.string() + ": " + ec.message());
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::error_code type_ec;
    if (!entry.is_regular_file(type_ec)) continue;
    std::string name = entry.path().filename().string();
    if (EndsWith(name, kPartialSuffix)) {
      out->partial_dbs.push_back(entry.path().string());
    } else if (StartsWith(name, kDbPrefix) && EndsWith(name, kDbSuffix)) {
      out->dbs.push_back({entry.path().string(), RankFromDbFileName(name)});
    }
  }
  if (ec) return InvalidArgumentError("cannot list directory " + dir.string() + ": " + ec.message());
  return OkStatus();
}

std::string SqliteMessage(sqlite3* db, int rc) {
  if (db != nullptr) {
    const char* message = sqlite3_errmsg(db);
    if (message != nullptr && *message != '\0') return message;
  }
  return sqlite3_errstr(rc);
}

// The reader connection's error wording (sqlite_util.h): DescribeSqliteFailure's message, and a
// code that says whose the problem is.
Status ReaderError(std::string_view path, std::string_view what, int rc, sqlite3* db) {
  std::string message = DescribeSqliteFailure(std::string(path), what, rc, SqliteMessage(db, rc));
  switch (rc & 0xff) {
    case SQLITE_NOTADB: return InvalidArgumentError(std::move(message));
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
    case SQLITE_IOERR: return DataLossError(std::move(message));
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return UnavailableError(std::move(message));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH: return FailedPreconditionError(std::move(message));
    case SQLITE_NOMEM: return ResourceExhaustedError(std::move(message));
    default: return InternalError(std::move(message));
  }
}

}  // namespace

std::optional<std::int32_t> RankFromDbFileName(std::string_view file_name) {
  if (!StartsWith(file_name, kDbPrefix) || !EndsWith(file_name, kDbSuffix)) return std::nullopt;
  std::string_view middle =
      file_name.substr(kDbPrefix.size(), file_name.size() - kDbPrefix.size() - kDbSuffix.size());
  if (middle.size() < 2 || middle[0] != '_' || middle.size() > 10) return std::nullopt;
  std::int32_t rank = 0;
  for (char c : middle.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

StatusOr<ResolvedProfiles> ResolveProfilePath(const std::string& path) {
  const std::string what_to_pass =
      "pass an ascend_pytorch_profiler*.db file, an *_ascend_pt run directory, or a directory holding them";
  if (path.empty()) return InvalidArgumentError("no PATH given: " + what_to_pass);
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return InvalidArgumentError("cannot access " + path + ": " + ec.message());
    }
    return NotFoundError("no such file or directory: " + path + " (" + what_to_pass + ")");
  }

  ResolvedProfiles resolved;
  if (fs::is_regular_file(status)) {
    if (EndsWith(path, kPartialSuffix)) {
      return InvalidArgumentError(
          path +
          " is a partial DB from a run that did not finish (its writer never finalized "
          "it, so it may be incomplete); pass a finished .db, or re-run the profile");
    }
    resolved.dbs.push_back({path, RankFromDbFileName(fs::path(path).filename().string())});
    return resolved;
  }
  if (!fs::is_directory(status)) {
    return InvalidArgumentError(path + " is neither a file nor a directory (" + what_to_pass + ")");
  }

  const fs::path dir(path);
  // The ASCEND_PROFILER_OUTPUT directory itself, a run directory, or a directory of run directories.
  GPUPROF_RETURN_IF_ERROR(ScanDbDirectory(dir, &resolved));
  if (IsDirectory(dir / kOutputDirName)) {
    GPUPROF_RETURN_IF_ERROR(ScanDbDirectory(dir / kOutputDirName, &resolved));
  }
  std::vector<fs::path> run_dirs;
  fs::directory_iterator it(dir, ec);
  if (ec) return InvalidArgumentError("cannot list directory " + path + ": " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec) && IsDirectory(it->path() / kOutputDirName)) run_dirs.push_back(it->path());
  }
  if (ec) return InvalidArgumentError("cannot list directory " + path + ": " + ec.message());
  std::sort(run_dirs.begin(), run_dirs.end());
  for (const fs::path& run_dir : run_dirs) {
    GPUPROF_RETURN_IF_ERROR(ScanDbDirectory(run_dir / kOutputDirName, &resolved));
  }

  std::sort(resolved.partial_dbs.begin(), resolved.partial_dbs.end());
  std::sort(resolved.dbs.begin(), resolved.dbs.end(), [](const ProfileDbFile& a, const ProfileDbFile& b) {
    return std::tie(a.rank, a.path) < std::tie(b.rank, b.path);
  });
  if (resolved.dbs.empty()) {
    std::string message = "no profile database under " + path + ": expected " + std::string(kDbPrefix) +
                          "*.db in it, in its " + std::string(kOutputDirName) + "/, or in */" +
                          std::string(kOutputDirName) + "/ of the *_ascend_pt directories it holds";
    if (!resolved.partial_dbs.empty()) message += "; " + PartialDbNote(resolved);
    return NotFoundError(std::move(message));
  }
  return resolved;
}

std::string PartialDbNote(const ResolvedProfiles& resolved) {
  if (resolved.partial_dbs.empty()) return "";
  std::string note = "found " + std::to_string(resolved.partial_dbs.size()) +
                     " partial DB(s) from runs that did not finish: ";
  for (std::size_t i = 0; i < resolved.partial_dbs.size(); ++i) {
    if (i > 0) note += ", ";
    note += resolved.partial_dbs[i];
  }
  return note;
}

std::string DuplicateRankNote(const ResolvedProfiles& resolved) {
  std::map<std::int32_t, std::vector<std::string>> by_rank;
  for (const ProfileDbFile& file : resolved.dbs) {
    if (file.rank.has_value()) by_rank[*file.rank].push_back(file.path);
  }
  std::string note;
  for (const auto& [rank, paths] : by_rank) {
    if (paths.size() < 2) continue;
    if (!note.empty()) note += "; ";
    note += std::to_string(paths.size()) + " DBs are rank " + std::to_string(rank) + ": ";
    for (std::size_t i = 0; i < paths.size(); ++i) note += (i > 0 ? ", " : "") + paths[i];
  }
  if (note.empty()) return note;
  return note +
         " (separate runs written into one directory, or several profiles of one process, not the ranks of "
         "one job: they are shown as separate profiles; give each run its own -o directory)";
}

std::string DescribeSqliteFailure(const std::string& path, std::string_view what, int rc,
                                  std::string_view sqlite_message) {
  const std::string detail = "SQLite: " + std::string(sqlite_message);
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return "not an SQLite database: " + path + " (" + detail +
             "); pass the ascend_pytorch_profiler*.db file that a gpuprof run wrote";
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
    case SQLITE_IOERR:
      return path + " is damaged or truncated (" + detail + " while " + std::string(what) +
             "); copy it again from the run's output directory, or re-run the profile";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return path + " is locked by another process (" + detail +
             "); a writer may still be running: retry when it has finished";
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return "cannot open " + path + " (" + detail + "): check that it exists and is readable";
    case SQLITE_NOMEM: return "out of memory while " + std::string(what) + " on " + path;
    default:
      return std::string(what) + " on " + path + " failed: " + std::string(sqlite_message) +
             " (SQLite code " + std::to_string(rc) + ")";
  }
}

// ---------------------------------------------------------------------------------------------
// ProfileReader

StatusOr<std::unique_ptr<ProfileReader>> ProfileReader::Open(const std::string& path, DbKind kind) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return NotFoundError("no such file: " + path);
  if (fs::is_directory(status)) {
    return InvalidArgumentError(path + " is a directory, not a database file");
  }
  // Check the header ourselves first: SQLite opens any file lazily (and a 0-byte file as an empty
  // database), so without this a text file or an empty file would only fail on the first query,
  // or pass as "a database without our tables".
  std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return InvalidArgumentError("cannot read " + path + ": " + ec.message());
  if (size == 0) {
    return InvalidArgumentError("not an SQLite database: " + path +
                                " (the file is empty; a run that died before writing leaves a .db.partial, "
                                "never an empty .db: was it created by something else?)");
  }
  std::array<char, sizeof(kSqliteMagic)> magic{};
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return InvalidArgumentError("cannot read " + path + ": permission denied or not readable");
    in.read(magic.data(), static_cast<std::streamsize>(magic.size()));
  }
  if (size < kSqliteHeaderBytes || std::memcmp(magic.data(), kSqliteMagic, sizeof(kSqliteMagic)) != 0) {
    return InvalidArgumentError("not an SQLite database: " + path +
                                " (the file does not start with the SQLite header); pass the "
                                "ascend_pytorch_profiler*.db file that a gpuprof run wrote");
  }

  std::unique_ptr<ProfileReader> reader(new ProfileReader(path));
  GPUPROF_ASSIGN_OR_RETURN(reader->conn_, Connection::OpenReadOnly(path, ReaderError));
  sqlite3_busy_timeout(reader->conn_.get(), kBusyTimeoutMs);
  // query_only: a second guard, on top of the read-only open, that nothing here writes the file.
  // cache_size: 16 MiB of page cache bounds memory however large the DB is; sorts and automatic
  // indexes for joins spill to temporary files instead (SQLite's default temp_store is a file).
  GPUPROF_RETURN_IF_ERROR(reader->conn_.Exec("PRAGMA query_only = 1; PRAGMA cache_size = -16384;"));

  GPUPROF_RETURN_IF_ERROR(reader->LoadTables());
  if (kind == DbKind::kAnalysis) {
    if (!reader->HasTable("StepTraceTime")) {
      return InvalidArgumentError(path +
                                  " is not an analysis.db (no StepTraceTime table); gpuprof writes it "
                                  "beside each profile DB, and a re-run of the profile writes it again");
    }
    return reader;
  }
  if (!reader->HasTable("PYTORCH_API") && !reader->HasTable("TASK")) {
    return InvalidArgumentError(path +
                                " is not a gpuprof/ascend_pytorch_profiler database (no PYTORCH_API or TASK "
                                "table); pass the ascend_pytorch_profiler*.db file that a gpuprof run wrote");
  }
  return reader;
}

Status ProfileReader::LoadTables() {
  GPUPROF_ASSIGN_OR_RETURN(
      Query query, Prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY rowid"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    tables_.emplace_back(query.Text(0));
  }
  GPUPROF_ASSIGN_OR_RETURN(has_string_values_, HasColumns("STRING_IDS", {"id", "value"}));
  return OkStatus();
}

bool ProfileReader::HasTable(std::string_view table) const noexcept {
  return std::any_of(tables_.begin(), tables_.end(),
                     [table](const std::string& name) { return EqualsIgnoreCase(name, table); });
}

StatusOr<std::vector<ColumnInfo>> ProfileReader::Columns(std::string_view table) const {
  std::vector<ColumnInfo> columns;
  if (!HasTable(table)) return columns;
  GPUPROF_ASSIGN_OR_RETURN(Query query,
                           Prepare("SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid"));
  query.BindText(1, table);
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    columns.push_back({std::string(query.Text(0)), std::string(query.Text(1)), query.Int(2) != 0});
  }
  return columns;
}

StatusOr<bool> ProfileReader::HasColumns(std::string_view table,
                                         const std::vector<std::string_view>& wanted) const {
  GPUPROF_ASSIGN_OR_RETURN(std::vector<ColumnInfo> columns, Columns(table));
  if (columns.empty()) return false;
  for (std::string_view name : wanted) {
    bool found = std::any_of(columns.begin(), columns.end(), [name](const ColumnInfo& column) {
      return EqualsIgnoreCase(column.name, name);
    });
    if (!found) return false;
  }
  return true;
}

StatusOr<Query> ProfileReader::Prepare(std::string_view sql) const {
  return Statement::Prepare(conn_, sql, Statement::Use::kTransient);
}

StatusOr<std::int64_t> ProfileReader::QueryInt(std::string_view sql) const {
  GPUPROF_ASSIGN_OR_RETURN(Query query, Prepare(sql));
  GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return std::int64_t{0};
  return query.Int(0);
}

Status ProfileReader::Error(std::string_view what, int rc) const { return conn_.Error(what, rc); }

}  // namespace gpuprof::db
