// Helpers for the session and inject tests: a scratch directory, the DBs a run left, SQLite
// queries as "a|b" rows, and running a helper program with a controlled environment.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace gpuprof::session::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuprof_session_XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Every file under `dir` whose name ends with `suffix`, sorted.
inline std::vector<std::string> FilesEndingWith(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    const std::string name = entry.path().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(name);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}
// The profile DBs under `dir` (ascend_pytorch_profiler*.db; not the analysis.db beside each).
inline std::vector<std::string> FinalDbs(const std::string& dir) {
  std::vector<std::string> dbs = FilesEndingWith(dir, ".db");
  std::erase_if(dbs, [](const std::string& path) {
    return std::filesystem::path(path).filename().string().rfind("ascend_pytorch_profiler", 0) != 0;
  });
  return dbs;
}
inline std::vector<std::string> PartialDbs(const std::string& dir) {
  return FilesEndingWith(dir, ".partial");
}

// Each result row as its columns joined by '|'; NULL as "NULL".
inline std::vector<std::string> Query(const std::string& db_path, const std::string& sql) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "open " << db_path << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "prepare " << sql << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
      if (i > 0) row += '|';
      const unsigned char* text = sqlite3_column_text(stmt, i);
      row += text != nullptr ? reinterpret_cast<const char*>(text) : "NULL";
    }
    rows.push_back(row);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

// MSTX_EVENTS as "<message>|<eventType>|<pid>" rows, in start order.
inline std::vector<std::string> MarkRows(const std::string& db_path) {
  return Query(db_path,
               "SELECT s.value, m.eventType, m.globalTid >> 32 FROM MSTX_EVENTS m "
               "JOIN STRING_IDS s ON s.id = m.message ORDER BY m.startNs, s.value");
}

// The marks' messages only, sorted.
inline std::vector<std::string> MarkMessages(const std::string& db_path) {
  std::vector<std::string> rows =
      Query(db_path, "SELECT s.value FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message");
  std::sort(rows.begin(), rows.end());
  return rows;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The "db <path>" lines of a result file (the sessions' other kinds of lines left out).
inline std::vector<std::string> DbResultLines(const std::string& path) {
  std::vector<std::string> lines;
  for (std::string& line : Lines(ReadFile(path))) {
    if (line.rfind("db ", 0) == 0) lines.push_back(std::move(line));
  }
  return lines;
}

inline int CountOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

struct ProgramResult {
  int exit_code = -1;  // -1: did not exit normally
  int signal = 0;
  std::string out;
  std::string err;
};

// A value in RunProgram's `env` that the started process sees as its own pid (as `gpuprof run`
// sets GPUPROF_ROOT_PID).
inline constexpr const char* kOwnPid = "<own pid>";

// Runs `argv` with the current environment minus every GPUPROF_* variable (and RANK), plus `env`.
// stdout and stderr go to files in `scratch_dir` and are returned.
inline ProgramResult RunProgram(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env,
                                const std::string& scratch_dir) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (entry.rfind("GPUPROF_", 0) == 0 || entry.rfind("RANK=", 0) == 0) continue;
    environment.push_back(entry);
  }
  std::vector<std::size_t> own_pid_entries;
  for (const auto& [key, value] : env) {
    if (value == kOwnPid) {
      own_pid_entries.push_back(environment.size());
      environment.push_back(key + "=" + std::string(24, '\0'));  // filled in the child
    } else {
      environment.push_back(key + "=" + value);
    }
  }
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& arg : args) argp.push_back(arg.data());
  argp.push_back(nullptr);
  static int serial = 0;
  const std::string out_path = scratch_dir + "/stdout." + std::to_string(++serial);
  const std::string err_path = scratch_dir + "/stderr." + std::to_string(serial);

  ProgramResult result;
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    for (std::size_t index : own_pid_entries) {
      char* value = std::strchr(envp[index], '=') + 1;
      std::snprintf(value, 24, "%d", static_cast<int>(getpid()));
    }
    execve(argp[0], argp.data(), envp.data());
    _exit(127);
  }
  EXPECT_GT(pid, 0) << "fork";
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

}  // namespace gpuprof::session::testing
