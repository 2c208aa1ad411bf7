// Findings: why a step is slow, as data. Every rule is declared once, in FindingRules() (its id,
// title, what it measures, the share of step time at which it fires, advice, the fix to try, the
// SQL that shows its evidence, and the function that evaluates it); ComputeFindings runs them
// over one profile DB. `gpuprof stats`, the report, run's summary and the JSON output all show
// this result: the CLI only formats it.
//
// Steps: the DB's steps (STEP_TIME), split as analysis.db's StepTraceTime (cluster_stats.h), or
// the whole run as one step when there are none. The split's warm-up steps (warmup.h: the first
// step of a run of two or more, and later outliers with first-call work) are left out of every
// figure unless FindingsOptions::include_warmup, and said so. So is every step in which gpuprof
// replayed kernels (its passes are in the step's time).
//
// Thread-safety: none (one reader per call). Errors: the reader's Status, naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "db/cluster_stats.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

struct FindingContext;
struct ClusterFindingContext;
struct RuleResult;
struct LaunchScan;
struct KernelScan;

struct FindingRule {
  std::string_view id;            // stable, for scripts: "gc-pause"
  std::string_view title;         // one line: "Python garbage collection pauses inside steps"
  std::string_view measures;      // what the time at stake is
  double threshold = 0;           // fires when the time at stake is at least this share of step time
  std::string_view advice;        // why it costs time
  std::string_view fix;           // what to try
  std::string_view evidence_sql;  // run with sqlite3 on the DB: the evidence rows, longest first
  // One of the two: a rule over one DB (ComputeFindings), or over the ranks of a job
  // (cluster_findings.h's ComputeClusterFindings).
  StatusOr<RuleResult> (*evaluate)(const FindingContext&) = nullptr;
  StatusOr<RuleResult> (*evaluate_cluster)(const ClusterFindingContext&) = nullptr;
};

// Every rule, in the order they are evaluated.
const std::vector<FindingRule>& FindingRules();

// One occurrence behind a finding: a GC pause, a synchronizing call, an idle step, ...
struct FindingEvidence {
  std::string name;        // the call, op or step it is
  std::int64_t step = -1;  // STEP_TIME id; -1 for the whole run
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;  // inside the step
  std::int64_t global_tid = 0;   // the host thread, for host-side evidence (0 for steps)
  std::string context;           // what the host was doing then ("in aten::item"), or ""
};

// "12.3 ms (gc in step 4, in aten::mm)", or "(step 4)" for a step's own figure.
std::string EvidenceText(const FindingEvidence& evidence);

// A share of a finding's time at stake, by cause: device idle waiting on the host, on a launch, ...
struct FindingPart {
  std::string name;
  std::int64_t ns = 0;  // over the considered steps
};

enum class FindingSeverity : std::uint8_t { kLow, kMedium, kHigh };
std::string_view FindingSeverityName(FindingSeverity severity);  // "low", "medium", "high"

struct Finding {
  const FindingRule* rule = nullptr;
  FindingSeverity severity = FindingSeverity::kLow;
  std::int64_t at_stake_ns = 0;     // over the considered steps
  double at_stake_ms_per_step = 0;  // at_stake_ns / considered steps
  double at_stake_percent = 0;      // of the considered steps' time
  std::uint64_t occurrences = 0;    // evidence rows in all (the evidence lists the longest)
  std::vector<FindingEvidence> evidence;
  std::vector<FindingPart> parts;  // the time at stake split by cause, or empty
  std::string summary;             // one line with the numbers, for text output
};

struct FindingsOptions {
  bool include_warmup = false;  // count the warm-up steps too (warmup.h)
  std::size_t max_evidence = 5;
};

struct FindingsReport {
  std::vector<Finding> findings;  // those that fired, by time at stake (largest first)
  std::uint64_t steps_considered = 0;
  std::int64_t considered_ns = 0;          // their summed duration
  bool whole_run = false;                  // no steps: the run is one step
  std::vector<std::int64_t> warmup_steps;  // left out as warm-up (ids)
  std::vector<std::int64_t> replay_steps;  // left out because gpuprof replayed kernels in them (ids)
  std::int64_t warmup_ns = 0;              // their summed duration
  std::string note;                        // what was left out and why, for the reader ("" when nothing)
  std::string absent;  // why there are no findings to compute ("" when steps or a session span exist)
};

StatusOr<FindingsReport> ComputeFindings(const ProfileReader& reader, const ProfileDbFile& file,
                                         const FindingsOptions& options = {});
// The same over a split already computed with WithoutSteps::kWholeRunWithoutSteps (the report's).
StatusOr<FindingsReport> ComputeFindings(const ProfileReader& reader, const RankStats& split,
                                         const FindingsOptions& options = {});

// ---- for the rules' evaluate functions (findings.cc) ------------------------------------------

struct FindingContext {
  const ProfileReader& reader;
  const RankStats& split;
  std::vector<const RankStepStats*> steps;  // the considered ones, by start
  std::size_t max_evidence = 5;
  // Both made by one walk over the device's tasks (findings_launch.cc's ScanTasks), on the first
  // rule that reads either; null until then. The tasks beside their launch calls:
  mutable std::shared_ptr<const LaunchScan> launches;
  // The considered steps' kernels by name and grid, beside the hardware counters of their replayed
  // launches (findings_counters.cc):
  mutable std::shared_ptr<const KernelScan> kernels;
};

struct RuleResult {
  std::int64_t at_stake_ns = 0;
  std::uint64_t occurrences = 0;
  std::vector<FindingEvidence> evidence;  // longest first, at most max_evidence
  std::vector<FindingPart> parts;         // the time at stake split by cause, or empty
};

}  // namespace gpuprof::db
