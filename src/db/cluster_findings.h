// Findings across the ranks of one job (`gpuprof stats DIR`, the report's cluster section): the
// slowest rank of each step with its cause and the collective where the others wait for it, and
// per collective the skew of the ranks' arrivals and its bus bandwidth.
//
// The slowest rank of a step is the one that waits least in collectives: every rank's step lasts
// about as long (each collective ends when the last rank arrives), so the straggler shows as the
// others' longer waits. Its lead in a step is the longest wait of another rank minus its own (what
// the step would save were it as fast as the rest); the time at stake is its median lead over the
// considered steps times their count, so a few noisy steps neither make nor swell a finding. Its cause: what
// grew on the straggler against the other ranks' median, its compute (kernels: device-bound; host
// ops when the run has no kernels: host-bound in ops) or its time outside compute and collectives
// (host-bound outside ops: Python, data loading, I/O).
//
// A rank counts as slow when it is the straggler of at least two thirds of the considered steps,
// three or more (ranks that take turns are noise).
// Steps are matched by id; the first step id of the job is warm-up and left out, as in findings.h.
// The rule is declared in findings.cc's table (FindingRule::evaluate_cluster).
//
// Thread-safety: none. Errors: the reader's Status, naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/cluster_stats.h"
#include "db/findings.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// One collective (by its name, the same in every rank's DB) across the ranks.
struct CollectiveStat {
  std::string name;
  std::size_t ranks = 0;
  std::int64_t step = -1;        // the step it ran in (-1: outside every step)
  std::int64_t skew_ns = 0;      // the last rank's arrival minus the first's
  std::int64_t transfer_ns = 0;  // its shortest duration over the ranks: the last to arrive waits least
  std::int64_t bytes = 0;        // per rank (count x element size; 0 when unknown)
  double bus_gb_per_s = 0;       // bytes / transfer time, scaled as nccl-tests do (all-reduce 2(n-1)/n)
  std::int64_t first_rank = -1;  // the rank that arrived first, and so waited longest
  std::int64_t last_rank = -1;   // the rank that arrived last
};

struct ClusterFindings {
  std::vector<Finding> findings;            // as FindingsReport's, by time at stake
  std::vector<CollectiveStat> collectives;  // the most skewed first, at most FindingsOptions' 4x max_evidence
  std::uint64_t collectives_compared = 0;   // on two ranks or more
  std::uint64_t steps_considered = 0;
  std::int64_t considered_ns = 0;  // the steps' durations, averaged over the ranks
  std::string note;                // what was left out and why
};

StatusOr<ClusterFindings> ComputeClusterFindings(const ClusterStats& cluster,
                                                 const FindingsOptions& options = {});

// ---- for the cluster rules' evaluate functions ------------------------------------------------

struct ClusterFindingContext {
  const ClusterStats& cluster;
  std::vector<const StepComparison*> steps;        // the considered ones, by id
  const std::vector<CollectiveStat>& collectives;  // every one on two ranks or more, by skew
  std::size_t max_evidence = 5;
};

}  // namespace gpuprof::db
