#include "db/output_layout.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <string>
#include <utility>

namespace gpuprof::db {
namespace {

// YYYYmmddHHMMSSfff in local time, as torch_npu names its *_ascend_pt directories.
std::string FormatTimestamp(std::int64_t epoch_ns) {
  if (epoch_ns < 0) epoch_ns = 0;
  std::int64_t ms_total = epoch_ns / 1'000'000;
  auto seconds = static_cast<std::time_t>(ms_total / 1000);
  auto millis = static_cast<int>(ms_total % 1000);
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char buf[64];  // room for any int fields, so the format cannot truncate
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d%03d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace

OutputLayout MakeOutputLayout(const std::string& out_dir, const std::string& worker_name,
                              const std::string& hostname, std::uint32_t pid, std::int64_t start_ns,
                              std::int32_t rank) {
  std::string worker = worker_name.empty() ? hostname + "_" + std::to_string(pid) : worker_name;
  std::string rank_suffix = rank < 0 ? "" : "_" + std::to_string(rank);
  OutputLayout layout;
  layout.run_dir = JoinPath(out_dir, worker + "_" + FormatTimestamp(start_ns) + "_ascend_pt");
  layout.output_dir = JoinPath(layout.run_dir, "ASCEND_PROFILER_OUTPUT");
  layout.db_path = JoinPath(layout.output_dir, "ascend_pytorch_profiler" + rank_suffix + ".db");
  layout.partial_path = layout.db_path + kPartialSuffix;
  layout.analysis_db_path = JoinPath(layout.output_dir, kAnalysisDbName);
  layout.info_json_path = JoinPath(layout.run_dir, "profiler_info" + rank_suffix + ".json");
  layout.metadata_json_path = JoinPath(layout.run_dir, "profiler_metadata.json");
  return layout;
}

RunProgress& RunProgress::operator+=(const RunProgress& other) {
  launches += other.launches;
  kernels += other.kernels;
  ops += other.ops;
  replayed += other.replayed;
  declined += other.declined;
  finalizing += other.finalizing;
  return *this;
}

std::string EscapeResultText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string UnescapeResultText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out.push_back(text[i]);
      continue;
    }
    const char next = text[++i];
    out.push_back(next == 'n' ? '\n' : next == 'r' ? '\r' : next);
  }
  return out;
}

std::string RunProgressPath(const std::string& result_file, std::uint32_t pid) {
  return result_file + std::string(kRunProgressInfix) + std::to_string(pid);
}

std::string FormatRunProgress(const RunProgress& progress) {
  return "launches=" + std::to_string(progress.launches) + " kernels=" + std::to_string(progress.kernels) +
         " ops=" + std::to_string(progress.ops) + " replayed=" + std::to_string(progress.replayed) +
         " declined=" + std::to_string(progress.declined) +
         " finalizing=" + std::to_string(progress.finalizing) + "\n";
}

bool ParseRunProgress(std::string_view text, RunProgress* progress) {
  if (text.empty() || text.back() != '\n') return false;  // empty or cut short
  text.remove_suffix(1);
  RunProgress parsed;
  const std::pair<std::string_view, std::uint64_t*> fields[] = {
      {"launches", &parsed.launches}, {"kernels", &parsed.kernels},   {"ops", &parsed.ops},
      {"replayed", &parsed.replayed}, {"declined", &parsed.declined}, {"finalizing", &parsed.finalizing},
  };
  while (!text.empty()) {
    const std::size_t end = std::min(text.find(' '), text.size());
    const std::string_view word = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const std::size_t equals = word.find('=');
    if (equals == std::string_view::npos) return false;
    const std::string_view name = word.substr(0, equals);
    const std::string_view value = word.substr(equals + 1);
    std::uint64_t number = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) return false;
    for (const auto& [field, slot] : fields) {
      if (field == name) *slot = number;
    }
  }
  *progress = parsed;
  return true;
}

}  // namespace gpuprof::db
