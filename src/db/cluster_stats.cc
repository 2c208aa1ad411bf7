#include "db/cluster_stats.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "db/plausible.h"

namespace gpuprof::db {
namespace {

// PYTORCH_API.type of torch ops (ENUM_API_TYPE 'op'); stats.cc reads the same rows.
constexpr std::int64_t kApiTypeOp = 50001;

// Host ops that are not compute on a CPU run: the step markers (they span the whole step) and the
// communication ops of torch.distributed (c10d's ops and the ProcessGroup work ops of each backend,
// which the writer turns into COMMUNICATION_OP rows), matched case-sensitively as torch names them.
// GLOB, not LIKE: LIKE treats '_' as a wildcard and ignores case.
constexpr std::string_view kNotComputeHostOpGlobs[] = {
    "ProfilerStep#*", "c10d::*", "gloo:*", "nccl:*", "mpi:*", "ucc:*", "record_param_comms*"};

// Intervals of one source, read by start ascending from a query whose columns 0 and 1 are
// startNs and endNs, handed out step by step (steps by start ascending).
class StepwiseIntervals {
 public:
  StepwiseIntervals() = default;  // a source without rows
  explicit StepwiseIntervals(Query query) : query_(std::move(query)), done_(false) {}

  // Fills `out` with the union of this source's intervals clipped to [start_ns, end_ns).
  // `next_step_start_ns` is the start of the next step (the lowest start of every later one):
  // intervals that end after it are kept for the later steps, the others are dropped.
  Status Collect(std::int64_t start_ns, std::int64_t end_ns, std::int64_t next_step_start_ns,
                 IntervalUnion* out) {
    out->Clear();
    std::vector<Interval> kept;
    auto take = [&](const Interval& interval) {
      if (interval.end_ns > start_ns && interval.start_ns < end_ns) {
        out->Add({std::max(interval.start_ns, start_ns), std::min(interval.end_ns, end_ns)});
      }
      if (interval.end_ns > next_step_start_ns) kept.push_back(interval);
    };
    // Carried intervals started before the previous step's end, so before every unread row.
    for (const Interval& interval : carried_) take(interval);
    while (true) {
      GPUPROF_RETURN_IF_ERROR(Peek());
      if (!next_.has_value() || next_->start_ns >= end_ns) break;
      take(*next_);
      next_.reset();
    }
    carried_ = std::move(kept);
    return OkStatus();
  }

 private:
  // Loads the next non-empty row into next_, unless one is waiting or the rows are done.
  Status Peek() {
    while (!next_.has_value() && !done_) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, query_.Step());
      if (!row) {
        done_ = true;
        break;
      }
      Interval interval{query_.Int(0), query_.Int(1)};
      if (interval.end_ns > interval.start_ns) next_ = interval;
    }
    return OkStatus();
  }

  Query query_;
  bool done_ = true;
  std::optional<Interval> next_;
  std::vector<Interval> carried_;
};

std::string SqlText(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += '\'';
    quoted += c;
  }
  return quoted + "'";
}

Status ReadRankAndDevice(const ProfileReader& reader, const ProfileDbFile& file, RankStats* stats) {
  std::optional<std::int64_t> rank;
  GPUPROF_ASSIGN_OR_RETURN(bool has_map, reader.HasColumns("RANK_DEVICE_MAP", {"rankId", "deviceId"}));
  if (has_map) {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT rankId, deviceId FROM RANK_DEVICE_MAP LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (row) {
      // -1 means "not set" / "not collected" (DB_SPEC §3.8).
      if (!query.IsNull(0) && query.Int(0) >= 0) rank = query.Int(0);
      if (!query.IsNull(1) && query.Int(1) >= 0) stats->device = query.Int(1);
    }
  }
  if (!rank.has_value() && file.rank.has_value()) rank = *file.rank;
  stats->rank = rank.value_or(-1);
  return OkStatus();
}

Status ReadSteps(const ProfileReader& reader, ImpossibleSteps impossible, RankStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_steps, reader.HasColumns("STEP_TIME", {"id", "startNs", "endNs"}));
  if (!has_steps) {
    stats->steps_absent = reader.HasTable("STEP_TIME")
                              ? "no steps (STEP_TIME lacks some of the columns id, startNs, endNs; "
                                "`gpuprof check` lists the differences)"
                              : "no steps (this DB has no table of steps)";
    return OkStatus();
  }
  std::string plausible = "1";
  if (impossible == ImpossibleSteps::kLeaveOut) {
    std::optional<std::int64_t> session_start;
    std::optional<std::int64_t> session_end;
    GPUPROF_ASSIGN_OR_RETURN(bool has_session,
                             reader.HasColumns("SESSION_TIME_INFO", {"startTimeNs", "endTimeNs"}));
    if (has_session) {
      GPUPROF_ASSIGN_OR_RETURN(
          Query session, reader.Prepare("SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO LIMIT 1"));
      GPUPROF_ASSIGN_OR_RETURN(bool row, session.Step());
      if (row) {
        session_start = session.OptionalInt(0);
        session_end = session.OptionalInt(1);
      }
    }
    plausible = PlausibleSpanSql("startNs", "endNs", session_start, session_end);
    GPUPROF_ASSIGN_OR_RETURN(std::int64_t left_out,
                             reader.QueryInt("SELECT COUNT(*) FROM STEP_TIME WHERE NOT " + plausible));
    stats->steps_left_out = static_cast<std::uint64_t>(left_out);
  }
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT id, startNs, endNs FROM STEP_TIME WHERE " +
                                                       plausible + " ORDER BY startNs, id"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    RankStepStats step;
    step.id = query.Int(0);
    step.start_ns = query.Int(1);
    step.end_ns = query.Int(2);
    step.duration_ns = std::max<std::int64_t>(0, step.end_ns - step.start_ns);
    stats->steps.push_back(step);
  }
  if (stats->steps.empty() && stats->steps_left_out > 0) {
    stats->steps_absent =
        "no steps (every step recorded is impossible: reversed, negative or far outside the "
        "session; `gpuprof check` names them)";
  } else if (stats->steps.empty()) {
    stats->steps_absent =
        "no steps (none was recorded: steps come from ProfilerStep#N ops, which torch.profiler records "
        "on each prof.step())";
  }
  return OkStatus();
}

// The query for `stats->compute_source`'s intervals; sets the source. Without kernel and host-op
// tables the source is kNone and the query is left unset.
StatusOr<std::optional<Query>> ComputeQuery(const ProfileReader& reader, RankStats* stats) {
  const bool has_strings = reader.HasStringValues();
  GPUPROF_ASSIGN_OR_RETURN(bool has_task, reader.HasColumns("TASK", {"globalTaskId", "startNs", "endNs"}));
  GPUPROF_ASSIGN_OR_RETURN(bool has_info, reader.HasColumns("COMPUTE_TASK_INFO", {"globalTaskId", "name"}));
  if (has_task && has_info) {
    GPUPROF_ASSIGN_OR_RETURN(std::int64_t any_kernel,
                             reader.QueryInt("SELECT EXISTS (SELECT 1 FROM TASK t JOIN COMPUTE_TASK_INFO c "
                                             "ON c.globalTaskId = t.globalTaskId)"));
    if (any_kernel != 0) {
      stats->compute_source = ComputeSource::kKernels;
      // NCCL kernels are communication (COMMUNICATION_OP has their time), not compute.
      std::string sql =
          "SELECT t.startNs AS s, t.endNs FROM TASK t JOIN COMPUTE_TASK_INFO c "
          "ON c.globalTaskId = t.globalTaskId";
      if (has_strings) {
        sql +=
            " WHERE c.name IS NULL OR c.name NOT IN "
            "(SELECT id FROM STRING_IDS WHERE instr(lower(value), 'nccl') > 0)";
      }
      sql += " ORDER BY s";
      GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
      return std::optional<Query>(std::move(query));
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_ops,
                           reader.HasColumns("PYTORCH_API", {"startNs", "endNs", "name", "type"}));
  if (!has_ops) return std::optional<Query>();
  stats->compute_source = ComputeSource::kHostOps;
  // CAST: torch_npu declares startNs/endNs TEXT, and text would sort lexicographically.
  std::string sql =
      "SELECT CAST(startNs AS INTEGER) AS s, CAST(endNs AS INTEGER) FROM PYTORCH_API "
      "WHERE (type IS NULL OR type = " +
      std::to_string(kApiTypeOp) + ")";
  if (has_strings) {
    std::string globs;
    for (std::string_view glob : kNotComputeHostOpGlobs) {
      globs += (globs.empty() ? "" : " OR ") + std::string("value GLOB ") + SqlText(glob);
    }
    sql += " AND (name IS NULL OR name NOT IN (SELECT id FROM STRING_IDS WHERE " + globs + "))";
  }
  sql += " ORDER BY s";
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
  return std::optional<Query>(std::move(query));
}

// The communication intervals, the receives (opName "hcom_receive*": the bubble) apart from the
// rest. A DB whose COMMUNICATION_OP has no opName, or no STRING_IDS, has no receive.
struct CommunicationQueries {
  std::optional<Query> others;
  std::optional<Query> receives;
};

StatusOr<CommunicationQueries> ReadCommunicationQueries(const ProfileReader& reader, RankStats* stats) {
  CommunicationQueries queries;
  GPUPROF_ASSIGN_OR_RETURN(bool has_comm, reader.HasColumns("COMMUNICATION_OP", {"startNs", "endNs"}));
  if (!has_comm) {
    stats->communication_absent = reader.HasTable("COMMUNICATION_OP")
                                      ? "COMMUNICATION_OP lacks startNs or endNs"
                                      : "this DB has no table of collectives";
    return queries;
  }
  GPUPROF_ASSIGN_OR_RETURN(bool has_names, reader.HasColumns("COMMUNICATION_OP", {"opName"}));
  if (!has_names || !reader.HasStringValues()) {
    GPUPROF_ASSIGN_OR_RETURN(Query query,
                             reader.Prepare("SELECT startNs AS s, endNs FROM COMMUNICATION_OP ORDER BY s"));
    queries.others = std::move(query);
    return queries;
  }
  const std::string receives = "(SELECT id FROM STRING_IDS WHERE value GLOB 'hcom_receive*')";
  GPUPROF_ASSIGN_OR_RETURN(
      Query others, reader.Prepare("SELECT startNs AS s, endNs FROM COMMUNICATION_OP WHERE opName IS NULL "
                                   "OR opName NOT IN " +
                                   receives + " ORDER BY s"));
  GPUPROF_ASSIGN_OR_RETURN(
      Query receive, reader.Prepare("SELECT startNs AS s, endNs FROM COMMUNICATION_OP WHERE opName IN " +
                                    receives + " ORDER BY s"));
  queries.others = std::move(others);
  queries.receives = std::move(receive);
  return queries;
}

// SESSION_TIME_INFO's span as the one step of a DB without steps.
Status ReadWholeRun(const ProfileReader& reader, RankStats* stats) {
  GPUPROF_ASSIGN_OR_RETURN(bool has_session,
                           reader.HasColumns("SESSION_TIME_INFO", {"startTimeNs", "endTimeNs"}));
  if (!has_session) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(Query query,
                           reader.Prepare("SELECT MIN(startTimeNs), MAX(endTimeNs) FROM SESSION_TIME_INFO"));
  GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row || query.IsNull(0) || query.IsNull(1)) return OkStatus();
  RankStepStats step;
  step.id = -1;
  step.start_ns = query.Int(0);
  step.end_ns = query.Int(1);
  step.duration_ns = std::max<std::int64_t>(0, step.end_ns - step.start_ns);
  stats->steps.push_back(step);
  stats->whole_run = true;
  return OkStatus();
}

// RankStats' sums over its steps whose id is not in `left_out`.
void SumSteps(const std::vector<std::int64_t>& left_out, RankStats* stats) {
  stats->steps_counted = 0;
  stats->step_total_ns = stats->step_max_ns = stats->compute_ns = 0;
  stats->communication_not_overlapped_ns = stats->idle_ns = 0;
  for (const RankStepStats& step : stats->steps) {
    if (std::find(left_out.begin(), left_out.end(), step.id) != left_out.end()) continue;
    ++stats->steps_counted;
    stats->step_total_ns += step.duration_ns;
    stats->step_max_ns = std::max(stats->step_max_ns, step.duration_ns);
    stats->compute_ns += step.compute_ns;
    stats->communication_not_overlapped_ns += step.communication_not_overlapped_ns;
    stats->idle_ns += step.idle_ns;
  }
}

StatusOr<RankStats> ComputeRankStatsOf(const ProfileDbFile& file, WithoutSteps without_steps,
                                       ImpossibleSteps impossible) {
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(file.path));
  RankStats stats;
  stats.path = file.path;
  GPUPROF_RETURN_IF_ERROR(ReadRankAndDevice(*reader, file, &stats));
  GPUPROF_RETURN_IF_ERROR(ReadSteps(*reader, impossible, &stats));
  if (stats.steps.empty() && without_steps == WithoutSteps::kWholeRunWithoutSteps) {
    GPUPROF_RETURN_IF_ERROR(ReadWholeRun(*reader, &stats));
  }
  if (stats.steps.empty()) return stats;

  GPUPROF_ASSIGN_OR_RETURN(std::optional<Query> compute_query, ComputeQuery(*reader, &stats));
  GPUPROF_ASSIGN_OR_RETURN(CommunicationQueries comm_queries, ReadCommunicationQueries(*reader, &stats));
  auto source = [](std::optional<Query>& query) {
    return query.has_value() ? StepwiseIntervals(*std::move(query)) : StepwiseIntervals();
  };
  StepwiseIntervals compute_source = source(compute_query);
  StepwiseIntervals comm_source = source(comm_queries.others);
  StepwiseIntervals receive_source = source(comm_queries.receives);

  IntervalUnion compute;
  IntervalUnion others;
  IntervalUnion receives;
  IntervalUnion communication;
  for (std::size_t i = 0; i < stats.steps.size(); ++i) {
    RankStepStats& step = stats.steps[i];
    const std::int64_t next_start =
        i + 1 < stats.steps.size() ? stats.steps[i + 1].start_ns : std::numeric_limits<std::int64_t>::max();
    GPUPROF_RETURN_IF_ERROR(compute_source.Collect(step.start_ns, step.end_ns, next_start, &compute));
    GPUPROF_RETURN_IF_ERROR(comm_source.Collect(step.start_ns, step.end_ns, next_start, &others));
    GPUPROF_RETURN_IF_ERROR(receive_source.Collect(step.start_ns, step.end_ns, next_start, &receives));
    communication.Clear();
    for (const Interval& interval : others.merged()) communication.Add(interval);
    for (const Interval& interval : receives.merged()) communication.Add(interval);
    step.compute_ns = compute.LengthNs();
    step.communication_ns = communication.LengthNs();
    step.communication_not_overlapped_ns = LengthOfDifferenceNs(communication.merged(), compute.merged());
    step.idle_ns = step.duration_ns - step.compute_ns - step.communication_not_overlapped_ns;
    step.bubble_ns = receives.LengthNs();
    step.communication_not_overlapped_excluding_receive_ns =
        LengthOfDifferenceNs(others.merged(), compute.merged());
    std::int64_t first = step.end_ns;
    if (!compute.merged().empty()) first = std::min(first, compute.merged().front().start_ns);
    if (!communication.merged().empty()) first = std::min(first, communication.merged().front().start_ns);
    step.preparing_ns = std::max<std::int64_t>(0, first - step.start_ns);
    if (compute.merged().empty() && communication.merged().empty()) step.preparing_ns = 0;
  }
  GPUPROF_ASSIGN_OR_RETURN(stats.warmup, FindWarmupSteps(*reader, stats.steps));
  SumSteps({}, &stats);
  return stats;
}

// The job's warm-up: every rank's warm-up step ids, each with the rank where it lasted longest (the
// one the note names).
void FindJobWarmup(const ClusterOptions& options, ClusterStats* cluster) {
  std::map<std::int64_t, std::pair<const WarmupStep*, std::size_t>> longest;
  for (std::size_t r = 0; r < cluster->ranks.size(); ++r) {
    for (const WarmupStep& step : cluster->ranks[r].warmup) {
      auto [it, added] = longest.emplace(step.id, std::pair{&step, r});
      if (!added && step.duration_ns > it->second.first->duration_ns) it->second = {&step, r};
    }
  }
  for (StepComparison& step : cluster->steps) step.warmup = longest.count(step.id) > 0;
  std::vector<WarmupStep> steps;
  std::vector<std::string> owners;
  for (const auto& [id, which] : longest) {
    if (!options.include_warmup) cluster->left_out.push_back(id);
    steps.push_back(*which.first);
    const RankStats& rank = cluster->ranks[which.second];
    owners.push_back(rank.rank >= 0 ? "rank " + std::to_string(rank.rank)
                                    : "profile " + std::to_string(which.second + 1));
  }
  cluster->warmup_note = WarmupNote(steps, owners);
}

// The job's figures over the steps compared: the rank slowest most often, the spread.
void SummarizeJob(ClusterStats* cluster) {
  std::map<std::size_t, std::uint64_t> times_slowest;
  std::int64_t spread_total = 0;
  for (const StepComparison& step : cluster->steps) {
    if (!step.slowest.has_value()) continue;
    if (std::find(cluster->left_out.begin(), cluster->left_out.end(), step.id) != cluster->left_out.end()) {
      continue;
    }
    ++cluster->steps_compared;
    ++times_slowest[*step.slowest];
    spread_total += step.spread_ns;
    if (cluster->max_spread_step < 0 || step.spread_ns > cluster->max_spread_ns) {
      cluster->max_spread_ns = step.spread_ns;
      cluster->max_spread_step = step.id;
    }
  }
  if (cluster->steps_compared == 0) return;
  cluster->mean_spread_ns = spread_total / static_cast<std::int64_t>(cluster->steps_compared);
  for (const auto& [rank, times] : times_slowest) {
    if (times > cluster->slowest_rank_steps) {
      cluster->slowest_rank = rank;
      cluster->slowest_rank_steps = times;
    }
  }
}

std::vector<StepComparison> CompareSteps(const std::vector<RankStats>& ranks) {
  std::map<std::int64_t, StepComparison> by_id;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const RankStepStats& step : ranks[r].steps) {
      StepComparison& comparison = by_id[step.id];
      if (comparison.duration_ns.empty()) {
        comparison.id = step.id;
        comparison.duration_ns.resize(ranks.size());
      }
      // A repeated id in one DB (two ProfilerStep#N with one N): the first by start stands.
      if (!comparison.duration_ns[r].has_value()) comparison.duration_ns[r] = step.duration_ns;
    }
  }
  std::vector<StepComparison> steps;
  steps.reserve(by_id.size());
  for (auto& [id, comparison] : by_id) {
    std::optional<std::size_t> longest;
    std::optional<std::size_t> shortest;
    for (std::size_t r = 0; r < comparison.duration_ns.size(); ++r) {
      const std::optional<std::int64_t>& duration = comparison.duration_ns[r];
      if (!duration.has_value()) continue;
      ++comparison.ranks_with_step;
      if (!longest.has_value() || *duration > *comparison.duration_ns[*longest]) longest = r;
      if (!shortest.has_value() || *duration < *comparison.duration_ns[*shortest]) shortest = r;
    }
    if (comparison.ranks_with_step >= 2) {
      comparison.slowest = longest;
      comparison.spread_ns = *comparison.duration_ns[*longest] - *comparison.duration_ns[*shortest];
    }
    steps.push_back(std::move(comparison));
  }
  return steps;
}

}  // namespace

// ---- IntervalUnion ------------------------------------------------------------------------------

void IntervalUnion::Add(Interval interval) {
  if (interval.end_ns <= interval.start_ns) return;
  if (merged_.empty()) {
    merged_.push_back(interval);
    return;
  }
  Interval& last = merged_.back();
  if (sorted_ && interval.start_ns >= last.start_ns) {
    // Every earlier interval ends before `last` starts, so only `last` can meet this one.
    if (interval.start_ns <= last.end_ns) {
      last.end_ns = std::max(last.end_ns, interval.end_ns);
    } else {
      merged_.push_back(interval);
    }
    return;
  }
  merged_.push_back(interval);
  sorted_ = false;
}

void IntervalUnion::Clear() noexcept {
  merged_.clear();
  sorted_ = true;
}

const std::vector<Interval>& IntervalUnion::merged() {
  if (!sorted_) Normalize();
  return merged_;
}

std::int64_t IntervalUnion::LengthNs() { return db::LengthNs(merged()); }

void IntervalUnion::Normalize() {
  std::sort(merged_.begin(), merged_.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.start_ns, a.end_ns) < std::tie(b.start_ns, b.end_ns);
  });
  std::size_t out = 0;
  for (std::size_t i = 1; i < merged_.size(); ++i) {
    if (merged_[i].start_ns <= merged_[out].end_ns) {
      merged_[out].end_ns = std::max(merged_[out].end_ns, merged_[i].end_ns);
    } else {
      merged_[++out] = merged_[i];
    }
  }
  merged_.resize(merged_.empty() ? 0 : out + 1);
  sorted_ = true;
}

std::int64_t LengthNs(const std::vector<Interval>& merged) {
  std::int64_t total = 0;
  for (const Interval& interval : merged) total += interval.end_ns - interval.start_ns;
  return total;
}

std::int64_t LengthOfDifferenceNs(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  std::size_t first = 0;  // the first interval of b that may meet the current one of a
  for (const Interval& x : a) {
    while (first < b.size() && b[first].end_ns <= x.start_ns) ++first;
    std::int64_t covered = 0;
    for (std::size_t k = first; k < b.size() && b[k].start_ns < x.end_ns; ++k) {
      covered += std::min(b[k].end_ns, x.end_ns) - std::max(b[k].start_ns, x.start_ns);
    }
    total += (x.end_ns - x.start_ns) - covered;
  }
  return total;
}

std::int64_t LengthOfUnionNs(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  return LengthNs(b) + LengthOfDifferenceNs(a, b);
}

// ---- The cluster summary ------------------------------------------------------------------------

std::string_view ComputeSourceName(ComputeSource source) {
  switch (source) {
    case ComputeSource::kKernels: return "kernels";
    case ComputeSource::kHostOps: return "host ops";
    case ComputeSource::kNone: return "none";
  }
  return "none";
}

StatusOr<RankStats> ComputeRankStats(const ProfileDbFile& file, WithoutSteps without_steps,
                                     ImpossibleSteps impossible) {
  return ComputeRankStatsOf(file, without_steps, impossible);
}

StatusOr<ClusterStats> ComputeClusterStats(const std::vector<ProfileDbFile>& dbs, base::Progress* progress,
                                           const ClusterOptions& options) {
  if (dbs.empty()) {
    return InvalidArgumentError(
        "no profile DB to summarize: pass the ascend_pytorch_profiler_<rank>.db files of the ranks, or "
        "the directory holding their *_ascend_pt run directories");
  }
  ClusterStats cluster;
  cluster.ranks.reserve(dbs.size());
  for (const ProfileDbFile& file : dbs) {
    base::Progress::StageOf(progress, "the step split of DB " + std::to_string(cluster.ranks.size() + 1) +
                                          " of " + std::to_string(dbs.size()));
    GPUPROF_ASSIGN_OR_RETURN(RankStats rank,
                             ComputeRankStatsOf(file, WithoutSteps::kNoRows, ImpossibleSteps::kLeaveOut));
    cluster.ranks.push_back(std::move(rank));
  }
  std::stable_sort(cluster.ranks.begin(), cluster.ranks.end(), [](const RankStats& a, const RankStats& b) {
    return std::tie(a.rank, a.path) < std::tie(b.rank, b.path);
  });
  cluster.steps = CompareSteps(cluster.ranks);
  FindJobWarmup(options, &cluster);
  for (RankStats& rank : cluster.ranks) SumSteps(cluster.left_out, &rank);
  SummarizeJob(&cluster);
  return cluster;
}

}  // namespace gpuprof::db
