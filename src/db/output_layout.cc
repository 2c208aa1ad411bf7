#include "db/output_layout.h"

#include <cstdio>
#include <ctime>
#include <string>

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
  return layout;
}

}  // namespace gpuprof::db
