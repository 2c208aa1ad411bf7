// The pieces the finding rules are built from (findings_evidence.cc), shared by the files that hold
// rules' evaluate functions, and warmup.cc (the same medians and milliseconds). Not part of db's
// interface: only findings*.cc and warmup.cc include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/cluster_findings.h"
#include "db/findings.h"

namespace gpuprof::db::findings_internal {

// The finding `result` makes for `rule` over `steps` steps lasting `considered_ns` in all: its share,
// severity and summary; none when it stays under the rule's threshold.
std::optional<Finding> MakeFinding(const FindingRule& rule, RuleResult result, std::uint64_t steps,
                                   std::int64_t considered_ns);

// Milliseconds, with three decimals below 1 ms (launch-sized gaps) and one above.
std::string Ms(std::int64_t ns);
// "step 4", or "the run" for -1.
std::string StepName(std::int64_t id);
std::int64_t Median(std::vector<std::int64_t> values);

// Keeps the longest `max` of `evidence`, longest first (ties by start).
void KeepLongest(std::vector<FindingEvidence>& evidence, std::size_t max);

// The parts of rows [start, end) inside the considered steps, for rows that come by start: the steps
// that end before a row's start are done with, so each row looks only at the steps it may overlap.
class StepClipper {
 public:
  explicit StepClipper(const std::vector<const RankStepStats*>& steps) : steps_(steps) {}

  // Calls part(step, from, inside_ns) for each considered step that [start, end) overlaps, with the
  // overlap's start and length (> 0). `start` is at least the previous row's.
  template <typename Part>
  void Clip(std::int64_t start, std::int64_t end, Part&& part) {
    while (first_ < steps_.size() && steps_[first_]->end_ns <= start) ++first_;
    for (std::size_t s = first_; s < steps_.size() && steps_[s]->start_ns < end; ++s) {
      const std::int64_t from = std::max(start, steps_[s]->start_ns);
      const std::int64_t inside = std::min(end, steps_[s]->end_ns) - from;
      if (inside > 0) part(*steps_[s], from, inside);
    }
  }

 private:
  const std::vector<const RankStepStats*>& steps_;
  std::size_t first_ = 0;
};

// Step-level rules: a figure of the split per considered step.
RuleResult FromSteps(const FindingContext& ctx, std::int64_t RankStepStats::*figure);

// Names what the host was doing at the midpoint of each evidence row of `lists` in its context: the
// innermost op (any thread) and the CUDA call running then ("the host in aten::mm,
// cudaLaunchKernel"). One scan of each host table for all the lists.
Status NameHostActivity(const FindingContext& ctx,
                        std::initializer_list<std::vector<FindingEvidence>*> lists);

// Interval rules: rows (name, startNs, endNs, globalTid) of `sql`, by start, clipped to the
// considered steps. `with_context`: name the innermost op running on the row's thread (one of another
// name than the row's: an op row is not its own context).
StatusOr<RuleResult> FromIntervals(const FindingContext& ctx, const std::string& sql, bool with_context);

// FromIntervals over the rows of `table` (PYTORCH_API, CANN_API) whose name matches `filter` (an SQL
// condition on `value`); nothing when the table lacks startNs, endNs, globalTid or name. Names are
// matched in STRING_IDS once, not looked up row by row: over millions of rows the filter is a set
// membership test.
StatusOr<RuleResult> FromNamedRows(const FindingContext& ctx, const std::string& table,
                                   const std::string& filter, bool with_context);

// The cluster rule (cluster_findings.cc): the slowest rank of each step, with its cause.
StatusOr<RuleResult> SlowRank(const ClusterFindingContext& ctx);

// The one walk over the device's tasks in the considered steps (findings_launch.cc), made on the
// first use of either result: each task beside its launch call for the launch rules (ctx.launches),
// and the kernels' device time by device, name and grid for the kernel rules (ctx.kernels).
Status ScanTasks(const FindingContext& ctx);
// ScanTasks' launch part.
StatusOr<std::shared_ptr<const LaunchScan>> ScanLaunches(const FindingContext& ctx);

// The kernel rules' part of ScanTasks (findings_counters.cc): what they judge kernels by, read before
// the walk (the devices' SMs and DRAM peaks, the counters of replayed launches), the kernels the walk
// adds, and the KernelScan made of them after it.
class KernelTally {
 public:
  static StatusOr<KernelTally> Read(const ProfileReader& reader);
  KernelTally(KernelTally&&) noexcept;
  KernelTally& operator=(KernelTally&&) noexcept;
  ~KernelTally();

  // Without a device whose SMs are known and without counters no kernel rule can fire: the walk
  // then adds no kernel.
  bool Wanted() const;
  // One launch of the kernel named by STRING_IDS id `name_id` on `device` with a grid of `blocks`
  // (-1: not recorded), started at start_ns, inside_ns of it in the considered steps (> 0). Launches
  // come by start.
  void Add(std::int64_t device, std::int64_t name_id, std::int64_t blocks, std::int64_t start_ns,
           std::int64_t inside_ns);
  // The kernels named, with their counters, by device time; once, after the walk.
  StatusOr<std::shared_ptr<const KernelScan>> Finish(const ProfileReader& reader);

 private:
  struct State;
  KernelTally();
  std::unique_ptr<State> state_;
};

// The kernel rules (findings_counters.cc): kernels launched with fewer blocks than the device has
// SMs, kernels whose achieved occupancy is far below the theoretical, kernels limited by DRAM but
// well below its peak. The last two read the hardware counters of replayed launches.
StatusOr<RuleResult> TinyGrids(const FindingContext& ctx);
StatusOr<RuleResult> LowOccupancy(const FindingContext& ctx);
StatusOr<RuleResult> MemoryBoundKernels(const FindingContext& ctx);
// What the note says when the run has kernels but no counters the kernel rules read ("" otherwise);
// after the rules ran.
std::string KernelCountersNote(const FindingContext& ctx);

}  // namespace gpuprof::db::findings_internal

namespace gpuprof::db {

// The considered steps' kernels by device, name and grid size, each beside the hardware counters
// of its replayed launches (GPUPROF_REPLAY_METRIC) of the same device, kernel (named by each launch's
// own task) and grid: the replayed launches sit in steps left out (their passes are there), so their
// counters stand for the kernel's launches in the considered ones. Made once, by ScanTasks.
struct KernelScan {
  // A unit below this share of its peak does not bound the kernel (range_stats.h's rule).
  static constexpr double kBoundPct = 60;
  // Achieved occupancy below this share of the theoretical is low.
  static constexpr double kLowOccupancyShare = 0.5;
  // DRAM limits a kernel when its throughput share is at least the SMs' and at least this share of
  // the busiest memory unit's (L1, L2 or DRAM, gpu__compute_memory_throughput).
  static constexpr double kDramOfMemoryShare = 0.8;

  struct Kernel {
    std::string name;
    std::int64_t device = 0;
    std::int64_t blocks = -1;  // the grid's size; -1 when not recorded
    std::int64_t ns = 0;       // device time inside the considered steps
    std::uint64_t launches = 0;
    std::int64_t first_start_ns = 0;
    int sms = 0;                       // the device's SMs (device_roofs.h); 0 for a device it does not know
    double dram_peak_bytes_per_s = 0;  // its datasheet DRAM bandwidth; 0 when unknown
    // Means over the replayed launches standing for this kernel (none: not collected).
    std::uint64_t counted_launches = 0;
    std::optional<double> dram_pct;     // DRAM throughput, % of peak
    std::optional<double> compute_pct;  // SM throughput, % of peak
    std::optional<double> memory_pct;   // the busiest memory unit's throughput, % of peak
    std::optional<double> achieved_occupancy_pct;
    std::optional<double> theoretical_occupancy_pct;
    std::optional<double> dram_bytes_per_s;  // DRAM bytes over the counter pass's duration
  };
  std::vector<Kernel> kernels;  // by device time, longest first
  bool any_counters = false;    // a replayed launch has a counter the rules read
};

// What the scan found over the considered steps. Device idle is split as HTA splits it: waiting on
// the host (the next task's launch call had not returned yet, or nothing was queued), on a launch
// (up to kLaunchLatencyNs after the call returned: the queue's own latency), other (longer:
// dependencies, events, syncs).
struct LaunchScan {
  static constexpr std::int64_t kLaunchLatencyNs = 10'000;
  // At least this many kernels in a row, each shorter on the device than its launch call on the
  // host, are a launch-bound stretch: the host cannot keep the device busy.
  static constexpr std::size_t kLaunchBoundKernels = 20;
  // A kernel that starts this long after its launch call returned, on an idle device, is a
  // launch-delay outlier.
  static constexpr std::int64_t kLaunchDelayNs = 50'000;

  bool has_tasks = false;
  std::int64_t idle_host_ns = 0;
  std::int64_t idle_launch_ns = 0;
  std::int64_t idle_other_ns = 0;
  std::vector<FindingEvidence> longest_gaps;  // named by their main cause, with the host's activity
  RuleResult launch_bound;  // idle inside launch-bound stretches; a stretch per evidence row
  RuleResult launch_delay;  // idle while a launched kernel had not started; a kernel per row
};

}  // namespace gpuprof::db
