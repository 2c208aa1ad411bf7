#include "db/check.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "db/check_internal.h"

namespace gpuprof::db {
namespace check_internal {

Status Checker::Run(base::Progress* progress) {
  using Step = Status (Checker::*)();
  static constexpr std::pair<std::string_view, Step> kSteps[] = {
      {"counting rows", &Checker::CountTablesAndRows},
      {"tables and columns", &Checker::CheckSchema},
      {"indexes", &Checker::CheckIndexes},
      {"column types and values", &Checker::CheckColumnValues},
      {"enum tables", &Checker::CheckEnums},
      {"META_DATA", &Checker::CheckMetaData},
      {"STRING_IDS", &Checker::CheckStringIds},
      {"string references", &Checker::CheckStringReferences},
      {"CONNECTION_IDS", &Checker::CheckConnections},
      {"kernel launches", &Checker::CheckKernelLaunches},
      {"times and singletons", &Checker::CheckTimesAndSingletons},
      {"replay tables", &Checker::CheckReplayTables},
  };
  for (const auto& [what, step] : kSteps) {
    base::Progress::StageOf(progress, what);
    GPUPROF_RETURN_IF_ERROR((this->*step)());
  }
  return OkStatus();
}

}  // namespace check_internal

std::string FormatProblem(const std::string& path, const CheckProblem& problem) {
  // One line, whatever the DB's strings hold (a name quoted in a problem may contain a newline).
  return base::PrintableText(path + ": " + problem.table + ": " + problem.problem);
}

namespace {

// A damaged file first: the checks would fail (or, worse, pass) on garbage. quick_check reads every
// page once and skips the slow index-content comparison of integrity_check.
Status CheckIntact(const ProfileReader& reader) {
  GPUPROF_ASSIGN_OR_RETURN(Query integrity, reader.Prepare("PRAGMA quick_check(5)"));
  std::vector<std::string> damage;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, integrity.Step());
    if (!row) break;
    if (integrity.Text(0) != "ok") damage.emplace_back(integrity.Text(0));
  }
  if (!damage.empty()) {
    // quick_check's first finding, on one line.
    std::string first = damage.front().substr(0, 200);
    std::replace(first.begin(), first.end(), '\n', ' ');
    return DataLossError(reader.path() + " is damaged or truncated (SQLite's quick_check: " + first +
                         (damage.size() > 1 || damage.front().size() > 200 ? " ..." : "") +
                         "); copy it again from the run's output directory, or re-run the profile");
  }
  return OkStatus();
}

}  // namespace

StatusOr<CheckReport> CheckAnalysisDb(const ProfileReader& analysis, const ProfileReader& profile) {
  CheckReport report;
  report.path = analysis.path();
  GPUPROF_RETURN_IF_ERROR(CheckIntact(analysis));
  const StatusOr<check_internal::Expectations>& expectations = check_internal::CachedAnalysisExpectations();
  if (!expectations.ok()) return expectations.status().WithContext("check: reading src/db/schema.sql");
  check_internal::Checker checker(analysis, *expectations, &report);
  GPUPROF_RETURN_IF_ERROR(checker.RunAnalysis(profile));
  return report;
}

StatusOr<CheckReport> CheckProfileDb(const ProfileReader& reader, base::Progress* progress) {
  CheckReport report;
  report.path = reader.path();
  base::Progress::StageOf(progress, "integrity (SQLite quick_check)");
  GPUPROF_RETURN_IF_ERROR(CheckIntact(reader));
  const StatusOr<check_internal::Expectations>& expectations = check_internal::CachedExpectations();
  if (!expectations.ok()) return expectations.status().WithContext("check: reading src/db/schema.sql");
  check_internal::Checker checker(reader, *expectations, &report);
  GPUPROF_RETURN_IF_ERROR(checker.Run(progress));
  return report;
}

}  // namespace gpuprof::db
