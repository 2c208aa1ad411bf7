#include "db/warmup.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "db/cluster_stats.h"
#include "db/findings_internal.h"
#include "db/profile_reader.h"

namespace gpuprof::db {
namespace {

using findings_internal::Median;
using findings_internal::Ms;

// The first-call work calls the host made during [start_ns, end_ns), at most 3 names. The name
// filter runs on STRING_IDS first, so CANN_API is scanned once with a set-membership test.
StatusOr<std::vector<std::string>> FirstCallWorkIn(const ProfileReader& reader, std::int64_t start_ns,
                                                   std::int64_t end_ns) {
  std::vector<std::string> names;
  GPUPROF_ASSIGN_OR_RETURN(const bool has, reader.HasColumns("CANN_API", {"startNs", "endNs", "name"}));
  // Without STRING_IDS the calls have no names to match.
  if (!has || !reader.HasStringValues()) return names;
  std::string list;
  for (std::string_view name : FirstCallWorkCalls()) {
    list += std::string(list.empty() ? "" : ", ") + "'" + std::string(name) + "'";
  }
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT DISTINCT (SELECT value FROM STRING_IDS WHERE id = c.name) FROM CANN_API c "
                     "WHERE c.name IN (SELECT id FROM STRING_IDS WHERE value IN (" +
                     list + ")) AND c.startNs < ?1 AND c.endNs > ?2 LIMIT 3"));
  query.BindInt(1, end_ns);
  query.BindInt(2, start_ns);
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    names.emplace_back(query.Text(0));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "1022.9 ms against a median of 8.2 ms for the others", with its first-call work when it has some.
std::string Why(const WarmupStep& step) {
  std::string calls;
  for (const std::string& call : step.calls) calls += (calls.empty() ? "" : ", ") + call;
  return Ms(step.duration_ns) + " ms" + (calls.empty() ? "" : " with first-call work (" + calls + ")") +
         " against a median of " + Ms(step.median_ns) + " ms for the others";
}

}  // namespace

const std::vector<std::string_view>& FirstCallWorkCalls() {
  // Device memory growth (torch's caching allocator calls these only when its pool grows;
  // cuMemCreate is its expandable segments' growth), pinned host memory, and module loading.
  static const std::vector<std::string_view> kCalls = {
      "cudaMalloc",           "cudaMallocAsync",       "cudaMallocManaged",
      "cudaMallocHost",       "cudaHostAlloc",         "cuMemAlloc",
      "cuMemAlloc_v2",        "cuMemAllocAsync",       "cuMemAllocManaged",
      "cuMemAllocHost",       "cuMemAllocHost_v2",     "cuMemHostAlloc",
      "cuMemCreate",          "cuModuleLoad",          "cuModuleLoadData",
      "cuModuleLoadDataEx",   "cuModuleLoadFatBinary", "cuLibraryLoadData",
      "cuLibraryLoadFromFile"};
  return kCalls;
}

StatusOr<std::vector<WarmupStep>> FindWarmupSteps(const ProfileReader& reader,
                                                  const std::vector<RankStepStats>& steps) {
  std::vector<WarmupStep> warmup;
  if (steps.size() < 2) return warmup;
  std::vector<std::int64_t> later;
  for (std::size_t i = 1; i < steps.size(); ++i) later.push_back(steps[i].duration_ns);
  warmup.push_back({steps[0].id, steps[0].duration_ns, Median(later), {}});
  for (std::size_t i = 1; i < steps.size(); ++i) {
    std::vector<std::int64_t> others = later;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i - 1));
    if (others.empty()) break;  // two steps: nothing to stand out from
    const std::int64_t median = Median(std::move(others));
    if (static_cast<double>(steps[i].duration_ns) <= kWarmupOutlierFactor * static_cast<double>(median)) {
      continue;
    }
    GPUPROF_ASSIGN_OR_RETURN(std::vector<std::string> calls,
                             FirstCallWorkIn(reader, steps[i].start_ns, steps[i].end_ns));
    if (calls.empty()) continue;  // slow for its own reasons: the program's time
    warmup.push_back({steps[i].id, steps[i].duration_ns, median, std::move(calls)});
  }
  return warmup;
}

bool IsWarmupStep(const std::vector<WarmupStep>& warmup, std::int64_t id) {
  return std::any_of(warmup.begin(), warmup.end(), [id](const WarmupStep& step) { return step.id == id; });
}

std::string WarmupNote(const std::vector<WarmupStep>& warmup, const std::vector<std::string>& owners) {
  if (warmup.empty()) return "";
  auto owner = [&](std::size_t i) {
    return i < owners.size() && !owners[i].empty() ? "on " + owners[i] + ": " : "";
  };
  if (warmup.size() == 1) {
    return "step " + std::to_string(warmup[0].id) + " is left out as warm-up (" + owner(0) + Why(warmup[0]) +
           "); --include-warmup counts it";
  }
  std::string ids;
  std::string whys;
  for (std::size_t i = 0; i < warmup.size(); ++i) {
    const std::string id = std::to_string(warmup[i].id);
    ids += (i == 0 ? "" : i + 1 == warmup.size() ? " and " : ", ") + id;
    whys += (i == 0 ? "" : "; ") + ("step " + id + ", " + owner(i) + Why(warmup[i]));
  }
  return "steps " + ids + " are left out as warm-up (" + whys + "); --include-warmup counts them";
}

}  // namespace gpuprof::db
