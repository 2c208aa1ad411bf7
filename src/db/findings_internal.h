// The pieces the finding rules are built from (findings_evidence.cc), shared by the files that hold
// rules' evaluate functions, and warmup.cc (the same medians and milliseconds). Not part of db's
// interface: only findings*.cc and warmup.cc include it.
#pragma once

#include <cstdint>
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

// Step-level rules: a figure of the split per considered step.
RuleResult FromSteps(const FindingContext& ctx, std::int64_t RankStepStats::*figure);

// Names what the host was doing at the midpoint of each of `evidence` in its context: the innermost
// op (any thread) and the CUDA call running then ("the host in aten::mm, cudaLaunchKernel").
Status NameHostActivity(const FindingContext& ctx, std::vector<FindingEvidence>& evidence);

// Interval rules: rows (name, startNs, endNs, globalTid) of `sql`, by start, clipped to the
// considered steps. `with_context`: name the innermost op running on the row's thread.
StatusOr<RuleResult> FromIntervals(const FindingContext& ctx, const std::string& sql, bool with_context);

// Rows (name, startNs, endNs, globalTid) of `table` whose name matches `filter` (an SQL condition on
// `value`), by start. Names are matched in STRING_IDS once, not looked up row by row: over millions
// of rows the filter is a set membership test.
std::string NamedRowsSql(const ProfileReader& reader, const std::string& table, const std::string& filter);

// The cluster rule (cluster_findings.cc): the slowest rank of each step, with its cause.
StatusOr<RuleResult> SlowRank(const ClusterFindingContext& ctx);

// The scan of the device's tasks beside their launch calls (findings_launch.cc), made on first use
// and kept in ctx.launches.
StatusOr<std::shared_ptr<const LaunchScan>> ScanLaunches(const FindingContext& ctx);

}  // namespace gpuprof::db::findings_internal

namespace gpuprof::db {

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
