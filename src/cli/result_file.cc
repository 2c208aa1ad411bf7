#include "cli/result_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "base/errno_text.h"
#include "cli/live_line.h"
#include "db/output_layout.h"

namespace gpuprof::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kResultDirPrefix = "gpuprof-run-";

// Removes the result directories ("gpuprof-run-<pid>-XXXXXX", ours by uid) of gpuprof processes
// that no longer exist: a gpuprof killed with SIGKILL cannot remove its own. A directory whose pid
// is alive, or that is not ours, is left alone.
void RemoveStaleResultDirs(const std::string& tmp) {
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kResultDirPrefix, 0) != 0) continue;
    const std::string rest = name.substr(kResultDirPrefix.size());
    const std::size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    pid_t pid = 0;
    auto [ptr, parse_ec] = std::from_chars(rest.data(), rest.data() + dash, pid);
    if (parse_ec != std::errc() || ptr != rest.data() + dash || pid <= 0) continue;
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::getuid())
      continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask): kept
    std::error_code remove_ec;
    fs::remove_all(it->path(), remove_ec);
  }
}

}  // namespace

std::vector<std::string> ReadResultLines(const std::string& result_file, std::string_view kind) {
  std::vector<std::string> texts;
  std::ifstream in(result_file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() <= kind.size() || line.compare(0, kind.size(), kind) != 0 || line[kind.size()] != ' ') {
      continue;
    }
    std::string text = db::UnescapeResultText(std::string_view(line).substr(kind.size() + 1));
    if (!text.empty() && std::find(texts.begin(), texts.end(), text) == texts.end()) {
      texts.push_back(std::move(text));
    }
  }
  return texts;
}

std::vector<std::string> UnfinishedDbs(const std::string& result_file) {
  std::vector<std::string> unfinished;
  std::error_code ec;
  for (std::string& path : ReadResultLines(result_file, db::kResultLinePartial)) {
    if (fs::exists(path, ec)) unfinished.push_back(std::move(path));
  }
  std::sort(unfinished.begin(), unfinished.end());
  return unfinished;
}

std::string WhyNotFinalized(const std::string& line, const std::string& result_file) {
  std::string text = line;
  auto has = [&](std::string_view what) { return line.find(what) != std::string::npos; };
  std::vector<std::string> reported = ReadResultLines(result_file, db::kResultLinePartial);
  const std::string dir =
      reported.empty() ? std::string() : fs::path(reported.front()).parent_path().string();
  if (has(base::ErrnoText(ENOSPC)) || has("database or disk is full")) {
    text = "the disk is full (ENOSPC) under " + dir + ": free space there or choose another -o DIR (" + line +
           ")";
  } else if (has(base::ErrnoText(EFBIG))) {
    text =
        "the file size limit was reached (EFBIG; see `ulimit -f`) writing under " + dir + " (" + line + ")";
  }
  std::error_code ec;
  for (const std::string& path : reported) {
    text += fs::exists(path, ec) ? "; the unfinished file " + path + " was kept (not a complete profile)"
                                 : "; the unfinished file " + path + " was removed";
  }
  return text;
}

StatusOr<std::unique_ptr<ResultDir>> ResultDir::Create() {
  const char* tmp_env = std::getenv("TMPDIR");
  const std::string tmp = tmp_env != nullptr && *tmp_env != '\0' ? tmp_env : "/tmp";
  RemoveStaleResultDirs(tmp);
  std::string pattern = tmp + "/" + std::string(kResultDirPrefix) + std::to_string(::getpid()) + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    int err = errno;
    return InternalError("cannot create a temporary directory " + pattern + ": " + base::ErrnoText(err) +
                         "; set TMPDIR to a writable directory");
  }
  auto dir = std::unique_ptr<ResultDir>(new ResultDir(pattern));
  // Created empty so that "no lines" and "no file" mean the same: nothing was finalized.
  std::ofstream touch(dir->result_file());
  if (!touch) return InternalError("cannot create " + dir->result_file());
  return dir;
}

ResultDir::~ResultDir() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string RunProgressText(const std::string& result_file, bool replay) {
  const fs::path file(result_file);
  const std::string prefix = file.filename().string() + std::string(db::kRunProgressInfix);
  db::RunProgress total;
  std::size_t processes = 0;
  std::error_code ec;
  for (fs::directory_iterator it(file.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0 || name.find('.', prefix.size()) != std::string::npos) {
      continue;  // not a progress file (or its temporary)
    }
    std::ifstream in(it->path());
    std::string text;
    db::RunProgress one;
    if (std::getline(in, text) && !in.eof() && db::ParseRunProgress(text + "\n", &one)) {
      total += one;
      ++processes;
    }
  }
  if (processes == 0) return "running, nothing recorded yet";
  std::string text = GroupedNumber(total.launches) + " launches, " + GroupedNumber(total.kernels) +
                     " kernels, " + GroupedNumber(total.ops) + " ops";
  if (replay) {
    text += ", " + GroupedNumber(total.replayed) + " replayed";
    if (total.declined > 0) text += " (" + GroupedNumber(total.declined) + " declined)";
  }
  if (processes > 1) text += " in " + std::to_string(processes) + " processes";
  if (total.finalizing > 0) {
    text += processes > 1 ? "; " + std::to_string(total.finalizing) + " of them writing their DB"
                          : "; writing the DB";
  }
  return text;
}

}  // namespace gpuprof::cli
