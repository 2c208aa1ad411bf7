// Warm-up steps: steps whose time is first-call work (allocator growth, module loading, lazy
// initialization, autotuning) rather than the program's steady state. They are left out of means,
// findings, the cluster summary and diffs unless asked (`--include-warmup`), and said so.
// FindWarmupSteps decides it once per DB, inside ComputeRankStats (RankStats::warmup), so every
// reader of the step split (findings.h, cluster_stats.h, cluster_findings.h, diff.h, the report)
// leaves out the same steps.
//
// A step is warm-up when it is
//   - the first step (by start) of a run of two or more: every first call lands there; or
//   - a later step lasting more than kWarmupOutlierFactor times the median of the steps after the
//     first (itself left out), during which the host made a call that does first-call work
//     (FirstCallWorkCalls: device or pinned memory growth, module loading). A slow step without such
//     a call is the program's own (a checkpoint, an evaluation) and stays counted. Autotuning
//     (cudnn.benchmark, Triton) shows through the workspaces it allocates; its own calls are not in
//     the DB. Allocations are recorded by default; module loading (driver calls) with
//     `--cuda-trace` including `driver`.
// The shortest step is never an outlier, so at least one step always stays counted.
//
// Thread-safety: none needed (free functions; FindWarmupSteps reads through the reader it is
// given). Errors: the reader's Status, naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::db {

class ProfileReader;
struct RankStepStats;

// A later step counts as an outlier above this many times the median of the others.
inline constexpr double kWarmupOutlierFactor = 3.0;

struct WarmupStep {
  std::int64_t id = 0;
  std::int64_t duration_ns = 0;
  std::int64_t median_ns = 0;  // the median of the other steps after the first
  std::vector<std::string>
      calls;  // the first-call work seen in it (names, at most 3); empty for the first step
};

// The names FindWarmupSteps counts as first-call work ("cudaMalloc", "cuModuleLoadData", ...).
const std::vector<std::string_view>& FirstCallWorkCalls();

// The warm-up steps among `steps` (one DB's, by start), by start. Reads the CUDA calls only when a
// later step is an outlier. Errors: the reader's Status.
StatusOr<std::vector<WarmupStep>> FindWarmupSteps(const ProfileReader& reader,
                                                  const std::vector<RankStepStats>& steps);

// True when `id` is one of `warmup`'s.
bool IsWarmupStep(const std::vector<WarmupStep>& warmup, std::int64_t id);

// The one line that says what was left out, for findings, the cluster summary and diffs, e.g.
// "step 1 is left out as warm-up (1022.9 ms against a median of 8.2 ms for the others);
// --include-warmup counts it", or for two: "steps 1 and 7 are left out as warm-up (step 1: ...;
// step 7: 40.0 ms with first-call work (cudaMalloc) against a median of 8.2 ms for the others);
// --include-warmup counts them". `owners`, when given, names the rank of each entry of `warmup`
// ("rank 1"; across ranks). "" when `warmup` is empty.
std::string WarmupNote(const std::vector<WarmupStep>& warmup, const std::vector<std::string>& owners = {});

}  // namespace gpuprof::db
