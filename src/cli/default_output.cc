#include "cli/default_output.h"

#include <filesystem>
#include <fstream>

namespace gpuprof::cli {
namespace {

// The report's title follows its head's meta tags (about 300 bytes).
constexpr std::size_t kHeadBytes = 1024;

}  // namespace

std::string DefaultOutputPath(const std::string& profile_path, std::string_view file_name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir =
      fs::is_directory(profile_path, ec) ? fs::path(profile_path) : fs::path(profile_path).parent_path();
  if (dir.filename() == "ASCEND_PROFILER_OUTPUT") dir = dir.parent_path();
  if (dir.empty()) dir = ".";
  return (dir / file_name).lexically_normal().string();
}

Status CheckDefaultOutputReplaceable(const std::string& path, DefaultOutput kind) {
  const bool trace = kind == DefaultOutput::kTrace;
  const std::string_view mark = trace                            ? kTraceProducerMark
                                : kind == DefaultOutput::kReport ? kReportTitleMark
                                                                 : kDiffTitleMark;
  const std::string command = trace ? "export" : kind == DefaultOutput::kReport ? "report" : "diff";
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (status.type() == fs::file_type::not_found) return OkStatus();
  if (status.type() == fs::file_type::regular) {
    std::ifstream in(path, std::ios::binary);
    std::string head(kHeadBytes, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find(mark) != std::string::npos) return OkStatus();
  }
  const std::string what = trace ? "trace" : "page";
  return AlreadyExistsError(path + " exists and is not a " + what + " gpuprof " + command +
                            " wrote; pass --force to replace it, or -o FILE to write the " + what +
                            " elsewhere");
}

}  // namespace gpuprof::cli
