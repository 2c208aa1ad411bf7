// The name SQLite is given for a file, whatever the length of its path. SQLite's unix VFS refuses
// a path whose absolute form is longer than 512 bytes (SQLITE_CANTOPEN), far below Linux's 4096;
// an output directory deep in a project tree or a long worker name reaches that. For such a path
// the file's directory is held open and SQLite gets "/proc/self/fd/<fd>/<file name>" (short, and
// the kernel follows the descriptor whatever the directory's own path is), through the "gpuprof"
// VFS: the default one, except that it takes those names as they are (the default resolves the
// /proc link back into the long path). The working directory is never changed. Journal and
// side files SQLite derives from the name land beside the file, as they would have.
//
// Private to src/db. Thread-safety: the VFS is registered once (thread-safe); an object is used by
// one thread at a time.
#pragma once

#include <string>

#include "gpuprof/status.h"

namespace gpuprof::db {

// The VFS every gpuprof connection opens with ("gpuprof"); registered at the first call.
const char* SqliteVfsName();

class SqliteFileName {
 public:
  // Absolute paths at least this long take the /proc/self/fd route (room for SQLite's "-journal"
  // and "-wal" suffixes below its 512).
  static constexpr std::size_t kLongPath = 400;

  SqliteFileName() = default;
  ~SqliteFileName();
  SqliteFileName(SqliteFileName&& other) noexcept;
  SqliteFileName& operator=(SqliteFileName&& other) noexcept;
  SqliteFileName(const SqliteFileName&) = delete;
  SqliteFileName& operator=(const SqliteFileName&) = delete;

  // `path` itself when short; else the /proc name, failing (with the path, the reason and the
  // limit) when the directory cannot be opened.
  static StatusOr<SqliteFileName> For(const std::string& path);

  const std::string& name() const noexcept { return name_; }

 private:
  std::string name_;
  int dir_fd_ = -1;
};

}  // namespace gpuprof::db
