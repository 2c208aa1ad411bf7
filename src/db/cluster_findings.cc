// The findings across ranks (cluster_findings.h): collectives matched by name over the rank DBs,
// and the cluster rules of findings.cc's table run over the considered steps.
#include "db/cluster_findings.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/db_constants.h"
#include "db/findings_internal.h"
#include "db/string_lookup.h"

namespace gpuprof::db {
namespace {

using findings_internal::Median;
using findings_internal::Ms;

struct Arrival {
  std::size_t rank = 0;  // index into ClusterStats::ranks
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;
};

// nccl-tests' bus-bandwidth factor for a collective of `ranks` ranks, by its kind in the name.
double BusFactor(std::string name, std::size_t ranks) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  const double n = static_cast<double>(ranks);
  if (name.find("allreduce") != std::string::npos) return 2 * (n - 1) / n;
  if (name.find("allgather") != std::string::npos || name.find("reducescatter") != std::string::npos)
    return (n - 1) / n;
  return 1;
}

// The id of `rank`'s step holding `time_ns`, or -1.
std::int64_t StepAt(const RankStats& rank, std::int64_t time_ns) {
  for (const RankStepStats& step : rank.steps) {
    if (step.start_ns <= time_ns && time_ns < step.end_ns) return step.id;
  }
  return -1;
}

StatusOr<std::vector<CollectiveStat>> MatchCollectives(const ClusterStats& cluster) {
  std::map<std::string, std::vector<Arrival>> by_name;
  for (std::size_t r = 0; r < cluster.ranks.size(); ++r) {
    GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader,
                             ProfileReader::Open(cluster.ranks[r].path));
    GPUPROF_ASSIGN_OR_RETURN(
        const bool has,
        reader->HasColumns("COMMUNICATION_OP", {"opName", "startNs", "endNs", "count", "dataType"}));
    if (!has) continue;
    GPUPROF_ASSIGN_OR_RETURN(Query ops,
                             reader->Prepare("SELECT " + StringValueSql(*reader, "opName") +
                                             ", startNs, endNs, count, dataType FROM COMMUNICATION_OP"));
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, ops.Step());
      if (!row) break;
      const std::optional<std::uint32_t> element = HcclDataTypeBytes(ops.Int(4));
      by_name[std::string(ops.Text(0))].push_back(
          {r, ops.Int(1), ops.Int(2),
           element.has_value() ? ops.Int(3) * static_cast<std::int64_t>(*element) : 0});
    }
  }
  std::vector<CollectiveStat> collectives;
  for (auto& [name, arrivals] : by_name) {
    if (arrivals.size() < 2) continue;
    const auto [first, last] =
        std::minmax_element(arrivals.begin(), arrivals.end(),
                            [](const Arrival& a, const Arrival& b) { return a.start_ns < b.start_ns; });
    CollectiveStat stat;
    stat.name = name;
    stat.ranks = arrivals.size();
    stat.skew_ns = last->start_ns - first->start_ns;
    stat.first_rank = cluster.ranks[first->rank].rank;
    stat.last_rank = cluster.ranks[last->rank].rank;
    stat.step = StepAt(cluster.ranks[last->rank], last->start_ns);
    stat.transfer_ns = INT64_MAX;
    for (const Arrival& a : arrivals) stat.transfer_ns = std::min(stat.transfer_ns, a.end_ns - a.start_ns);
    stat.transfer_ns = std::max<std::int64_t>(stat.transfer_ns, 0);
    stat.bytes = first->bytes;
    if (stat.transfer_ns > 0 && stat.bytes > 0) {
      stat.bus_gb_per_s = static_cast<double>(stat.bytes) / static_cast<double>(stat.transfer_ns) *
                          BusFactor(name, stat.ranks);  // bytes per ns = GB/s
    }
    collectives.push_back(std::move(stat));
  }
  std::stable_sort(collectives.begin(), collectives.end(),
                   [](const CollectiveStat& a, const CollectiveStat& b) { return a.skew_ns > b.skew_ns; });
  return collectives;
}

const RankStepStats* StepOf(const RankStats& rank, std::int64_t id) {
  for (const RankStepStats& step : rank.steps) {
    if (step.id == id) return &step;
  }
  return nullptr;
}

}  // namespace

namespace findings_internal {

StatusOr<RuleResult> SlowRank(const ClusterFindingContext& ctx) {
  RuleResult result;
  std::vector<std::pair<std::size_t, FindingEvidence>> per_step;  // (the step's straggler, its evidence)
  std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> waits;  // per step: (rank, its wait)
  for (const StepComparison* step : ctx.steps) {
    struct Seen {
      std::size_t rank;
      const RankStepStats* stats;
    };
    std::vector<Seen> seen;
    for (std::size_t r = 0; r < ctx.cluster.ranks.size(); ++r) {
      if (const RankStepStats* stats = StepOf(ctx.cluster.ranks[r], step->id)) seen.push_back({r, stats});
    }
    if (seen.size() < 2) continue;
    auto wait = [](const Seen& s) { return s.stats->communication_ns; };
    waits.emplace_back();
    for (const Seen& s : seen) waits.back().emplace_back(s.rank, wait(s));
    const auto [straggler, waiter] = std::minmax_element(
        seen.begin(), seen.end(), [&](const Seen& a, const Seen& b) { return wait(a) < wait(b); });
    const std::int64_t stake = wait(*waiter) - wait(*straggler);
    if (stake <= 0) continue;
    // What grew on the straggler against the others' median: compute, or time outside it.
    std::vector<std::int64_t> compute;
    std::vector<std::int64_t> outside;
    for (const Seen& s : seen) {
      if (&s == &*straggler) continue;
      compute.push_back(s.stats->compute_ns);
      outside.push_back(s.stats->idle_ns);
    }
    const std::int64_t more_compute = straggler->stats->compute_ns - Median(compute);
    const std::int64_t more_outside = straggler->stats->idle_ns - Median(outside);
    const RankStats& rank = ctx.cluster.ranks[straggler->rank];
    std::string cause = more_outside > more_compute ? "host-bound: " + Ms(more_outside) +
                                                          " ms more outside ops (Python, data loading, I/O)"
                        : rank.compute_source == ComputeSource::kKernels
                            ? "device-bound: its kernels take " + Ms(more_compute) + " ms more"
                            : "host-bound: its ops take " + Ms(more_compute) + " ms more";
    cause += " than the other ranks' median";
    const RankStats& waiting = ctx.cluster.ranks[waiter->rank];
    for (const CollectiveStat& c : ctx.collectives) {  // by skew: the first of the step is the wait
      if (c.step == step->id && c.last_rank == rank.rank) {
        cause += "; rank " + std::to_string(waiting.rank) + " waits for it in " + c.name;
        break;
      }
    }
    per_step.push_back({straggler->rank,
                        {"rank " + std::to_string(rank.rank) + " is the slowest", step->id,
                         straggler->stats->start_ns, stake, 0, cause}});
  }
  // Ranks that take turns being last are noise; one rank last in most steps holds the job back.
  // Two steps cannot tell the one from the other.
  if (waits.size() < 3) return result;
  std::map<std::size_t, std::size_t> times_last;
  for (const auto& [rank, evidence] : per_step) ++times_last[rank];
  const auto most = std::max_element(times_last.begin(), times_last.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == times_last.end() || 3 * most->second < 2 * ctx.steps.size()) return result;
  // Its lead per step: the others' longest wait minus its own (negative where it was not last).
  // The time at stake is the median lead over the steps, so a few noisy steps do not make one.
  std::vector<std::int64_t> leads;
  for (const auto& step : waits) {
    std::optional<std::int64_t> own;
    std::int64_t others = INT64_MIN;
    for (const auto& [rank, wait] : step) {
      if (rank == most->first) {
        own = wait;
      } else {
        others = std::max(others, wait);
      }
    }
    if (own.has_value() && others != INT64_MIN) leads.push_back(others - *own);
  }
  const std::int64_t lead = Median(leads);
  if (lead <= 0) return result;
  result.at_stake_ns = lead * static_cast<std::int64_t>(leads.size());
  for (auto& [rank, evidence] : per_step) {
    if (rank != most->first) continue;
    ++result.occurrences;
    result.evidence.push_back(std::move(evidence));
  }
  findings_internal::KeepLongest(result.evidence, ctx.max_evidence);
  return result;
}

}  // namespace findings_internal

StatusOr<ClusterFindings> ComputeClusterFindings(const ClusterStats& cluster,
                                                 const FindingsOptions& options) {
  ClusterFindings out;
  GPUPROF_ASSIGN_OR_RETURN(std::vector<CollectiveStat> collectives, MatchCollectives(cluster));
  out.collectives_compared = collectives.size();
  ClusterFindingContext ctx{
      .cluster = cluster, .steps = {}, .collectives = collectives, .max_evidence = options.max_evidence};
  for (const StepComparison& step : cluster.steps) {
    if (step.ranks_with_step >= 2) ctx.steps.push_back(&step);
  }
  if (!options.include_warmup && ctx.steps.size() >= 2) {
    out.note = "step " + std::to_string(ctx.steps.front()->id) +
               " is left out as warm-up; --include-warmup counts it";
    ctx.steps.erase(ctx.steps.begin());
  }
  for (const StepComparison* step : ctx.steps) {
    std::int64_t sum = 0;
    std::int64_t ranks = 0;
    for (const std::optional<std::int64_t>& d : step->duration_ns) {
      if (d.has_value()) {
        sum += *d;
        ++ranks;
      }
    }
    if (ranks > 0) out.considered_ns += sum / ranks;
  }
  out.steps_considered = ctx.steps.size();
  for (const FindingRule& rule : FindingRules()) {
    if (rule.evaluate_cluster == nullptr) continue;
    GPUPROF_ASSIGN_OR_RETURN(RuleResult result, rule.evaluate_cluster(ctx));
    std::optional<Finding> finding =
        findings_internal::MakeFinding(rule, std::move(result), out.steps_considered, out.considered_ns);
    if (finding.has_value()) out.findings.push_back(std::move(*finding));
  }
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.at_stake_ns > b.at_stake_ns; });
  if (collectives.size() > 4 * options.max_evidence) collectives.resize(4 * options.max_evidence);
  out.collectives = std::move(collectives);
  return out;
}

}  // namespace gpuprof::db
