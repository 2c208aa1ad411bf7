#include "db/sqlite_file_name.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <utility>

#include "base/errno_text.h"

namespace gpuprof::db {
namespace {

constexpr std::string_view kFdPrefix = "/proc/self/fd/";

sqlite3_vfs g_vfs{};
sqlite3_vfs* g_base = nullptr;  // the default VFS, whose other methods g_vfs shares (pAppData too)

int FullPathname(sqlite3_vfs* vfs, const char* name, int out_size, char* out) {
  if (std::strncmp(name, kFdPrefix.data(), kFdPrefix.size()) == 0) {
    const std::size_t n = std::strlen(name);
    if (n + 1 > static_cast<std::size_t>(out_size)) return SQLITE_CANTOPEN;
    std::memcpy(out, name, n + 1);
    return SQLITE_OK;
  }
  static_cast<void>(vfs);
  return g_base->xFullPathname(g_base, name, out_size, out);
}

}  // namespace

const char* SqliteVfsName() {
  static std::once_flag once;
  static const char* name = nullptr;
  std::call_once(once, [] {
    sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
    if (base == nullptr) return;
    g_vfs = *base;
    g_vfs.zName = "gpuprof";
    g_vfs.pNext = nullptr;
    g_base = base;
    g_vfs.xFullPathname = &FullPathname;
    if (sqlite3_vfs_register(&g_vfs, 0) == SQLITE_OK) name = g_vfs.zName;
  });
  return name;  // null (SQLite's default) if it could not be registered
}

SqliteFileName::~SqliteFileName() {
  if (dir_fd_ >= 0) close(dir_fd_);
}

SqliteFileName::SqliteFileName(SqliteFileName&& other) noexcept
    : name_(std::move(other.name_)), dir_fd_(std::exchange(other.dir_fd_, -1)) {}

SqliteFileName& SqliteFileName::operator=(SqliteFileName&& other) noexcept {
  if (this != &other) {
    if (dir_fd_ >= 0) close(dir_fd_);
    name_ = std::move(other.name_);
    dir_fd_ = std::exchange(other.dir_fd_, -1);
  }
  return *this;
}

StatusOr<SqliteFileName> SqliteFileName::For(const std::string& path) {
  namespace fs = std::filesystem;
  SqliteFileName out;
  std::error_code ec;
  const fs::path absolute = path.empty() || path == ":memory:" ? fs::path(path) : fs::absolute(path, ec);
  if (ec || absolute.native().size() < kLongPath || SqliteVfsName() == nullptr) {
    out.name_ = path;
    return out;
  }
  const fs::path dir = absolute.parent_path();
  const std::string file = absolute.filename().string();
  out.dir_fd_ = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (out.dir_fd_ < 0) {
    const int err = errno;
    return UnavailableError("cannot open the directory of " + path + " (" + base::ErrnoText(err) +
                            "), which SQLite needs for a path longer than its limit of 512 bytes (" +
                            std::to_string(absolute.native().size()) + " here); use a shorter path");
  }
  out.name_ = std::string(kFdPrefix) + std::to_string(out.dir_fd_) + "/" + file;
  return out;
}

}  // namespace gpuprof::db
