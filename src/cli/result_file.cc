#include "cli/result_file.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "base/errno_text.h"
#include "db/output_layout.h"

namespace gpuprof::cli {

namespace fs = std::filesystem;

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

}  // namespace gpuprof::cli
