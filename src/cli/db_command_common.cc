#include "cli/db_command_common.h"

#include <ostream>
#include <utility>

namespace gpuprof::cli {

void PrintError(std::ostream& err, const Status& status) {
  err << "gpuprof: error: " << status.message() << "\n";
}

std::string DbOfN(std::size_t i, std::size_t n) {
  return n > 1 ? "DB " + std::to_string(i + 1) + " of " + std::to_string(n) : std::string();
}

std::optional<db::ResolvedProfiles> Resolve(const std::string& path, std::ostream& err) {
  StatusOr<db::ResolvedProfiles> resolved = db::ResolveProfilePath(path);
  if (!resolved.ok()) {
    PrintError(err, resolved.status());
    return std::nullopt;
  }
  std::string note = db::PartialDbNote(*resolved);
  if (!note.empty()) err << "gpuprof: note: " << note << "\n";
  std::string duplicates = db::DuplicateRankNote(*resolved);
  if (!duplicates.empty()) err << "gpuprof: warning: " << duplicates << "\n";
  return std::move(resolved).value();
}

}  // namespace gpuprof::cli
