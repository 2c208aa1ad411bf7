// `gpuprof stats DIR` over several rank DBs: per rank the step times and the split of each step
// into compute, communication not overlapped with compute, and idle; per step id the slowest rank
// and the spread between the slowest and the fastest rank.
//
// Definitions (all in ns, every interval clipped to its step's [startNs, endNs)):
//   compute        = |union of the kernels|: TASK rows joined to COMPUTE_TASK_INFO whose name does
//                    not contain "nccl" (any case). A DB without any kernel row (a CPU run) uses
//                    the host ops instead: PYTORCH_API rows of type op (50001, or NULL as `stats`
//                    reads them) minus "ProfilerStep#*" and the communication ops ("c10d::*",
//                    "gloo:*", "nccl:*", "mpi:*", "ucc:*", "record_param_comms*").
//   communication  = |union of COMMUNICATION_OP [startNs, endNs)|.
//   communication not overlapped = |communication minus compute|.
//   idle           = step duration - |compute ∪ communication|.
// So compute + communication not overlapped + idle = the step's duration. A step whose endNs is
// before its startNs lasts 0 ns. For analysis.db's StepTraceTime (analysis_db.h) also:
//   bubble         = |union of the receives|: COMMUNICATION_OP rows named "hcom_receive*" (a
//                    pipeline stage waiting for its input, as torch_npu counts it);
//   communication not overlapped excluding receive = |(communication minus the receives) minus compute|;
//   preparing      = from the step's start to its first compute or communication interval (0
//                    when it has none).
//
// Memory: per DB the STEP_TIME rows; each source (kernels, host ops, communication) is read once,
// sorted by start in SQLite (out of core), and only one step's merged intervals are held at a
// time, plus the intervals that run past a step's end into the next one.
//
// Thread-safety: none needed (free functions; ComputeClusterStats opens its own readers, one at a
// time). Errors: a DB that cannot be opened or turns out damaged while reading is a Status whose
// message names the file; a DB without steps is not an error (RankStats::steps_absent says so).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/progress.h"
#include "db/profile_reader.h"
#include "db/warmup.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// ---- Interval unions ----------------------------------------------------------------------------

// A half-open time range [start_ns, end_ns); empty when end_ns <= start_ns.
struct Interval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  friend bool operator==(const Interval&, const Interval&) = default;
};

// The union of the intervals added, as sorted, disjoint, non-touching intervals. Add is O(1) for
// intervals that come by start ascending (what an ORDER BY gives); any other order is accepted and
// sorted on the next read. Empty intervals are ignored.
class IntervalUnion {
 public:
  void Add(Interval interval);
  void Clear() noexcept;
  const std::vector<Interval>& merged();
  std::int64_t LengthNs();

 private:
  void Normalize();

  std::vector<Interval> merged_;
  bool sorted_ = true;
};

// Total length of sorted, disjoint intervals (an IntervalUnion's merged()).
std::int64_t LengthNs(const std::vector<Interval>& merged);
// |a minus b| and |a ∪ b| for two sorted, disjoint interval lists, in one linear pass.
std::int64_t LengthOfDifferenceNs(const std::vector<Interval>& a, const std::vector<Interval>& b);
std::int64_t LengthOfUnionNs(const std::vector<Interval>& a, const std::vector<Interval>& b);

// ---- The cluster summary ------------------------------------------------------------------------

enum class ComputeSource : std::uint8_t {
  kKernels,  // device kernels (TASK ⋈ COMPUTE_TASK_INFO)
  kHostOps,  // no kernel in the DB: the torch ops on the host
  kNone,     // neither: compute is 0
};

// "kernels", "host ops", "none".
std::string_view ComputeSourceName(ComputeSource source);

struct RankStepStats {
  std::int64_t id = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t duration_ns = 0;  // max(0, end - start)
  std::int64_t compute_ns = 0;
  std::int64_t communication_ns = 0;  // |communication|, overlapped or not
  std::int64_t communication_not_overlapped_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t bubble_ns = 0;
  std::int64_t communication_not_overlapped_excluding_receive_ns = 0;
  std::int64_t preparing_ns = 0;
};

struct RankStats {
  std::int64_t rank = -1;              // RANK_DEVICE_MAP.rankId, else the file name's "_<rank>", else -1
  std::optional<std::int64_t> device;  // RANK_DEVICE_MAP.deviceId
  std::string path;
  ComputeSource compute_source = ComputeSource::kNone;
  std::string steps_absent;          // "no steps (...)" when there is no step to split; "" otherwise
  std::string communication_absent;  // why communication is 0 ("" when COMMUNICATION_OP was read)
  std::vector<RankStepStats> steps;  // by start, then id
  std::uint64_t steps_left_out = 0;  // STEP_TIME rows left out as impossible (ImpossibleSteps)
  // Set by ComputeRankStats(..., kWholeRunWithoutSteps) on a DB without steps: `steps` then holds
  // one step, id -1, over SESSION_TIME_INFO's span ("" steps_absent stays as the reason).
  bool whole_run = false;
  // The steps that are warm-up (warmup.h's FindWarmupSteps over `steps`), by start.
  std::vector<WarmupStep> warmup;

  // Sums over the steps counted: every one of `steps` from ComputeRankStats; ComputeClusterStats
  // leaves out the job's warm-up steps (ClusterStats::left_out) unless asked to count them.
  std::uint64_t steps_counted = 0;
  std::int64_t step_total_ns = 0;
  std::int64_t step_max_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t communication_not_overlapped_ns = 0;
  std::int64_t idle_ns = 0;
};

// One step id across the ranks.
struct StepComparison {
  std::int64_t id = 0;
  // Per entry of ClusterStats::ranks: that rank's duration of this step (the first row with this
  // id, by start), none when the rank has no such step.
  std::vector<std::optional<std::int64_t>> duration_ns;
  std::size_t ranks_with_step = 0;
  // Index into ClusterStats::ranks of the rank with the longest duration (the first of equals);
  // set only when two or more ranks have the step.
  std::optional<std::size_t> slowest;
  std::int64_t spread_ns = 0;  // longest minus shortest duration over the ranks that have the step
  bool warmup = false;         // a warm-up step on some rank (RankStats::warmup)
};

struct ClusterOptions {
  bool include_warmup = false;  // count the warm-up steps in the sums and the job's figures
};

struct ClusterStats {
  std::vector<RankStats> ranks;       // by rank ascending, then path
  std::vector<StepComparison> steps;  // by id ascending
  // The step ids left out of the ranks' sums and of the figures below: those that are warm-up on
  // any rank (the same steps on every rank, so their means compare); empty with include_warmup.
  std::vector<std::int64_t> left_out;
  // The line that says the job's warm-up steps are left out (warmup.h's WarmupNote, naming the rank
  // where each lasted longest); set whenever there are some, with include_warmup too (the cluster
  // findings leave them out by their own options). "" when there are none.
  std::string warmup_note;

  // Over the steps compared (on two ranks or more, not left out):
  std::uint64_t steps_compared = 0;
  std::optional<std::size_t> slowest_rank;  // index into `ranks` slowest in most of them (first of equals)
  std::uint64_t slowest_rank_steps = 0;     // in how many
  std::int64_t mean_spread_ns = 0;
  std::int64_t max_spread_ns = 0;
  std::int64_t max_spread_step = -1;  // the step id of max_spread_ns
};

// What ComputeRankStats does on a DB without steps: nothing to split (RankStats::steps empty), or
// one step over the whole run (SESSION_TIME_INFO's start and end).
enum class WithoutSteps : std::uint8_t { kNoRows, kWholeRunWithoutSteps };

// What ComputeRankStats does with the STEP_TIME rows whose span `gpuprof stats` leaves out
// (plausible.h: reversed, negative, beyond 2^62 ns, far outside the session): leave them out too
// (counted in RankStats::steps_left_out), or keep them (analysis.db has a row per STEP_TIME row).
enum class ImpossibleSteps : std::uint8_t { kLeaveOut, kKeep };

// One DB's split (read-only). Errors: the reader's Status, naming the file.
StatusOr<RankStats> ComputeRankStats(const ProfileDbFile& file,
                                     WithoutSteps without_steps = WithoutSteps::kNoRows,
                                     ImpossibleSteps impossible = ImpossibleSteps::kLeaveOut);

// Reads every DB in `dbs` (read-only, one at a time). Errors: InvalidArgument for an empty list;
// the reader's Status, naming the file, for a DB that cannot be opened or read. `progress` (may be
// null) gets a stage per DB.
StatusOr<ClusterStats> ComputeClusterStats(const std::vector<ProfileDbFile>& dbs,
                                           base::Progress* progress = nullptr,
                                           const ClusterOptions& options = {});

}  // namespace gpuprof::db
