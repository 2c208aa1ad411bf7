// Two profiles compared step by step (diff.h): per-step sums of each op and kernel, their means and
// spreads, and the noise test.
#include "db/diff.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "db/cluster_stats.h"
#include "db/plausible.h"
#include "db/stats.h"
#include "db/string_lookup.h"

namespace gpuprof::db {
namespace {

// What a row compares: an op (its name with its shapes), a kernel (its name and launch shape), a
// collective type.
struct FigureKey {
  std::string name;
  std::string grid;
  std::string block;
  auto operator<=>(const FigureKey&) const = default;
};

using PerStepMap = std::map<FigureKey, std::pair<std::vector<double>, std::uint64_t>>;

// One replayed kernel's pass durations: their count, mean and standard deviation (ms).
struct PassTimes {
  std::uint64_t passes = 0;
  double mean_ms = 0;
  double stddev_ms = 0;
};

// One profile's per-step figures.
struct Side {
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // considered steps' [start, end), by start
  std::vector<double> step_ms;
  PerStepMap ops;  // key -> time per considered step (ms), and calls over them
  PerStepMap kernels;
  PerStepMap collectives;
  bool has_collectives = false;
  std::vector<double> not_overlapped_ms;  // communication not overlapped with compute, per step
  std::vector<MemoryPeak> memory;
  std::map<std::string, PassTimes> replay;  // replayed kernel -> its passes
  std::vector<WarmupStep> warmup;           // left out
};

// Adds each row of `sql` (name id, shapes id, grid id, block id, startNs, endNs; by start; the ids
// but the name may be NULL) to the considered step holding its start, keyed by the ids; the keys
// become text once, at the end. Rows whose name is in `skip` are left out.
Status PerStep(const ProfileReader& reader, const std::string& sql, const Side& side,
               const std::set<std::int64_t>& skip, StringLookup& names, PerStepMap* out) {
  using Ids = std::array<std::optional<std::int64_t>, 4>;
  std::map<Ids, std::pair<std::vector<double>, std::uint64_t>> by_id;
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare(sql));
  std::size_t step = 0;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    const std::int64_t start = query.Int(4);
    while (step < side.steps.size() && side.steps[step].second <= start) ++step;
    if (step == side.steps.size()) break;
    if (start < side.steps[step].first || skip.count(query.Int(0)) > 0) continue;
    auto& [times, calls] =
        by_id[{query.OptionalInt(0), query.OptionalInt(1), query.OptionalInt(2), query.OptionalInt(3)}];
    if (times.empty()) times.assign(side.steps.size(), 0.0);
    times[step] += static_cast<double>(query.Int(5) - start) / 1e6;
    ++calls;
  }
  for (auto& [ids, figures] : by_id) {
    FigureKey key;
    GPUPROF_ASSIGN_OR_RETURN(key.name, names.Get(ids[0]));
    if (ids[1].has_value()) {
      GPUPROF_ASSIGN_OR_RETURN(std::string shapes, names.Get(ids[1]));
      if (!shapes.empty()) key.name += " [" + shapes + "]";
    }
    if (ids[2].has_value()) {
      GPUPROF_ASSIGN_OR_RETURN(key.grid, names.Get(ids[2]));
    }
    if (ids[3].has_value()) {
      GPUPROF_ASSIGN_OR_RETURN(key.block, names.Get(ids[3]));
    }
    auto& [times, calls] = (*out)[key];  // ids of equal text (rare) add up
    if (times.empty()) times.assign(side.steps.size(), 0.0);
    for (std::size_t i = 0; i < times.size(); ++i) times[i] += figures.first[i];
    calls += figures.second;
  }
  return OkStatus();
}

// "hcom_allReduce_" (the format's collective type) -> "allReduce"; other names unchanged.
std::string CollectiveName(std::string name) {
  if (name.rfind("hcom_", 0) == 0 && name.size() > 5) {
    name.erase(0, 5);
    if (name.back() == '_') name.pop_back();
  }
  return name;
}

// Each replayed launch's pass durations, grouped by kernel (graph nodes apart, as `gpuprof stats`
// lists them).
Status ReadReplayPasses(const ProfileReader& reader, Side* side) {
  GPUPROF_ASSIGN_OR_RETURN(const bool kernels,
                           reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"id", "name", "replayed"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool passes,
                           reader.HasColumns("GPUPROF_REPLAY_PASS", {"kernelId", "durationNs"}));
  if (!kernels || !passes) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const bool has_mode, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"replayMode"}));
  std::string kname = StringValueSql(reader, "k.name");
  if (has_mode) kname = "(" + kname + " || CASE WHEN k.replayMode = 'node' THEN ' (graph node)' ELSE '' END)";
  // Sums in SQLite, the variance from them here: d is at most seconds, d * d fits a double's
  // precision well enough for a spread that is compared against 5 % of the mean.
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT kname, COUNT(*), SUM(d), SUM(d * d) FROM (SELECT " + kname +
                     " AS kname, CAST(p.durationNs AS REAL) / 1e6 AS d FROM GPUPROF_REPLAY_PASS p "
                     "JOIN GPUPROF_REPLAY_KERNEL k ON k.id = p.kernelId WHERE k.replayed != 0) "
                     "GROUP BY kname"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    PassTimes& t = side->replay[std::string(query.Text(0))];
    t.passes = static_cast<std::uint64_t>(query.Int(1));
    const double n = static_cast<double>(t.passes);
    t.mean_ms = query.Double(2) / n;
    if (t.passes >= 2)
      t.stddev_ms = std::sqrt(std::max(0.0, (query.Double(3) - n * t.mean_ms * t.mean_ms) / (n - 1)));
  }
  return OkStatus();
}

// The highest totalAllocated per device and component (MEMORY_RECORD), as `gpuprof stats` reads it.
Status ReadMemoryPeaks(const ProfileReader& reader, StringLookup& names, Side* side) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has,
                           reader.HasColumns("MEMORY_RECORD", {"component", "totalAllocated", "deviceId"}));
  if (!has) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(const bool has_active, reader.HasColumns("MEMORY_RECORD", {"totalActive"}));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare("SELECT deviceId, component, MAX(totalAllocated) FROM MEMORY_RECORD WHERE " +
                     PlausibleMemorySql(has_active) + " GROUP BY deviceId, component ORDER BY 1, 2"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    MemoryPeak peak;
    peak.device = query.Int(0);
    const std::optional<std::int64_t> component = query.OptionalInt(1);
    peak.peak_allocated = query.Int(2);
    GPUPROF_ASSIGN_OR_RETURN(peak.component, names.Get(component));
    side->memory.push_back(std::move(peak));
  }
  return OkStatus();
}

StatusOr<Side> ReadSide(const ProfileDbFile& file, const DiffOptions& options) {
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(file.path));
  GPUPROF_ASSIGN_OR_RETURN(RankStats split, ComputeRankStats(file, WithoutSteps::kWholeRunWithoutSteps));
  Side side;
  if (!options.include_warmup) side.warmup = split.warmup;
  for (std::size_t i = 0; i < split.steps.size(); ++i) {
    if (!options.include_warmup && IsWarmupStep(split.warmup, split.steps[i].id)) continue;
    side.steps.emplace_back(split.steps[i].start_ns, split.steps[i].end_ns);
    side.step_ms.push_back(static_cast<double>(split.steps[i].duration_ns) / 1e6);
    side.not_overlapped_ms.push_back(static_cast<double>(split.steps[i].communication_not_overlapped_ns) /
                                     1e6);
  }
  // The split's steps come by start (cluster_stats.h), as PerStep needs them; not_overlapped_ms
  // stays in their order.
  GPUPROF_ASSIGN_OR_RETURN(StringLookup names, StringLookup::Create(*reader));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_ops,
                           reader->HasColumns("PYTORCH_API", {"startNs", "endNs", "name"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_shapes, reader->HasColumns("PYTORCH_API", {"inputShapes"}));
  if (has_ops) {
    // The step ops themselves are the step time, compared on their own.
    std::set<std::int64_t> steps;
    if (reader->HasStringValues()) {
      GPUPROF_ASSIGN_OR_RETURN(
          Query ids, reader->Prepare("SELECT id FROM STRING_IDS WHERE value LIKE 'ProfilerStep#%'"));
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool row, ids.Step());
        if (!row) break;
        steps.insert(ids.Int(0));
      }
    }
    GPUPROF_RETURN_IF_ERROR(PerStep(*reader,
                                    std::string("SELECT name, ") + (has_shapes ? "inputShapes" : "NULL") +
                                        ", NULL, NULL, startNs, endNs FROM PYTORCH_API ORDER BY startNs",
                                    side, steps, names, &side.ops));
  }
  GPUPROF_ASSIGN_OR_RETURN(const bool has_tasks,
                           reader->HasColumns("TASK", {"startNs", "endNs", "globalTaskId"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_info,
                           reader->HasColumns("COMPUTE_TASK_INFO", {"globalTaskId", "name"}));
  if (has_tasks && has_info) {
    // A kernel launched with another grid or block does other work: its own row.
    GPUPROF_ASSIGN_OR_RETURN(const bool has_dims,
                             reader->HasColumns("COMPUTE_TASK_INFO", {"gridDim", "blockDim"}));
    GPUPROF_RETURN_IF_ERROR(PerStep(*reader,
                                    std::string("SELECT c.name, NULL, ") +
                                        (has_dims ? "c.gridDim, c.blockDim" : "NULL, NULL") +
                                        ", t.startNs, t.endNs FROM TASK t JOIN COMPUTE_TASK_INFO c ON "
                                        "c.globalTaskId = t.globalTaskId ORDER BY t.startNs",
                                    side, {}, names, &side.kernels));
  }
  GPUPROF_ASSIGN_OR_RETURN(const bool has_collectives,
                           reader->HasColumns("COMMUNICATION_OP", {"opName", "opType", "startNs", "endNs"}));
  if (has_collectives) {
    GPUPROF_RETURN_IF_ERROR(PerStep(*reader,
                                    "SELECT COALESCE(opType, opName), NULL, NULL, NULL, startNs, endNs FROM "
                                    "COMMUNICATION_OP ORDER BY startNs",
                                    side, {}, names, &side.collectives));
    GPUPROF_ASSIGN_OR_RETURN(Query any, reader->Prepare("SELECT 1 FROM COMMUNICATION_OP LIMIT 1"));
    GPUPROF_ASSIGN_OR_RETURN(side.has_collectives, any.Step());
  }
  GPUPROF_RETURN_IF_ERROR(ReadMemoryPeaks(*reader, names, &side));
  GPUPROF_RETURN_IF_ERROR(ReadReplayPasses(*reader, &side));
  return side;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double Stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = Mean(v);
  double sum = 0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return std::sqrt(sum / static_cast<double>(v.size() - 1));
}

// A figure's mean and standard deviation over `n` samples in A and in B.
ComparedFigure CompareMoments(std::string kind, std::string name, double a_mean, double a_stddev,
                              std::size_t a_n, double b_mean, double b_stddev, std::size_t b_n,
                              double floor) {
  ComparedFigure f;
  f.kind = std::move(kind);
  f.name = std::move(name);
  f.a_mean = a_mean;
  f.b_mean = b_mean;
  f.a_stddev = a_stddev;
  f.b_stddev = b_stddev;
  f.delta = f.b_mean - f.a_mean;
  f.delta_percent = f.a_mean > 0 ? 100.0 * f.delta / f.a_mean : (f.b_mean > 0 ? 100.0 : 0.0);
  const double na = static_cast<double>(std::max<std::size_t>(1, a_n));
  const double nb = static_cast<double>(std::max<std::size_t>(1, b_n));
  f.noise = 3.0 * std::sqrt(f.a_stddev * f.a_stddev / na + f.b_stddev * f.b_stddev / nb);
  f.changed = std::abs(f.delta) > f.noise && std::abs(f.delta) > floor;
  return f;
}

// `a` and `b`: the figure per step in each profile (zeros where a step lacks it).
ComparedFigure Compare(std::string kind, std::string name, const std::vector<double>& a,
                       const std::vector<double>& b, double floor) {
  return CompareMoments(std::move(kind), std::move(name), Mean(a), Stddev(a), a.size(), Mean(b), Stddev(b),
                        b.size(), floor);
}

// Changed first, then by |delta|; the top ones kept.
void SortAndKeepTop(std::vector<ComparedFigure>* rows, std::size_t top) {
  std::stable_sort(rows->begin(), rows->end(), [](const ComparedFigure& x, const ComparedFigure& y) {
    if (x.changed != y.changed) return x.changed;
    return std::abs(x.delta) > std::abs(y.delta);
  });
  if (rows->size() > top) rows->resize(top);
}

// Every key of A and B compared; changed first, then by |delta|, the top ones kept.
std::vector<ComparedFigure> CompareAll(const std::string& kind, const PerStepMap& a, const PerStepMap& b,
                                       std::size_t a_steps, std::size_t b_steps, double floor,
                                       std::size_t top, std::uint64_t* compared, std::uint64_t* changed) {
  std::vector<ComparedFigure> out;
  auto per_step = [](const PerStepMap& map, const FigureKey& key, std::size_t steps) {
    auto it = map.find(key);
    return it == map.end() ? std::make_pair(std::vector<double>(steps, 0.0), std::uint64_t{0}) : it->second;
  };
  std::vector<FigureKey> keys;
  for (const auto& entry : a) keys.push_back(entry.first);
  for (const auto& entry : b) {
    if (a.find(entry.first) == a.end()) keys.push_back(entry.first);
  }
  for (const FigureKey& key : keys) {
    auto [a_times, a_calls] = per_step(a, key, a_steps);
    auto [b_times, b_calls] = per_step(b, key, b_steps);
    ComparedFigure f = Compare(kind, key.name, a_times, b_times, floor);
    f.grid = key.grid;
    f.block = key.block;
    f.a_calls = a_calls;
    f.b_calls = b_calls;
    *changed += f.changed ? 1 : 0;
    out.push_back(std::move(f));
  }
  *compared = keys.size();
  SortAndKeepTop(&out, top);
  return out;
}

// The kernels replayed in both profiles, by their pass durations.
void CompareReplay(const Side& sa, const Side& sb, std::size_t top, ProfileDiff* diff) {
  if (sa.replay.empty() || sb.replay.empty()) {
    diff->replay_absent = sa.replay.empty() && sb.replay.empty()
                              ? "neither profile holds kernel replay results"
                          : sa.replay.empty() ? "A holds no kernel replay results"
                                              : "B holds no kernel replay results";
    return;
  }
  for (const auto& [name, a] : sa.replay) {
    auto it = sb.replay.find(name);
    if (it == sb.replay.end()) continue;
    const PassTimes& b = it->second;
    // Replay times a kernel apart from the steps and from its neighbours, so a change is measured
    // against the kernel's own duration.
    ComparedFigure f = CompareMoments("replay", name, a.mean_ms, a.stddev_ms, a.passes, b.mean_ms,
                                      b.stddev_ms, b.passes, 0.05 * a.mean_ms);
    f.a_calls = a.passes;
    f.b_calls = b.passes;
    diff->replay_changed += f.changed ? 1 : 0;
    diff->replay.push_back(std::move(f));
  }
  diff->replay_compared = diff->replay.size();
  if (diff->replay.empty()) diff->replay_absent = "no kernel was replayed in both profiles";
  SortAndKeepTop(&diff->replay, top);
}

}  // namespace

StatusOr<ProfileDiff> DiffProfiles(const ProfileDbFile& a, const ProfileDbFile& b,
                                   const DiffOptions& options) {
  GPUPROF_ASSIGN_OR_RETURN(Side sa, ReadSide(a, options));
  GPUPROF_ASSIGN_OR_RETURN(Side sb, ReadSide(b, options));
  ProfileDiff diff;
  diff.a_path = a.path;
  diff.b_path = b.path;
  diff.a_steps = sa.steps.size();
  diff.b_steps = sb.steps.size();
  // Two runs of one program differ by a few percent from process to process (clocks, caches,
  // allocator layout), beyond the spread inside each run: a change is at least 5 % of A's step time.
  const double floor = 0.05 * Mean(sa.step_ms);
  diff.step = Compare("step", "step", sa.step_ms, sb.step_ms, floor);
  diff.ops = CompareAll("op", sa.ops, sb.ops, sa.steps.size(), sb.steps.size(), floor, options.top,
                        &diff.ops_compared, &diff.ops_changed);
  // The DB separates the inputs' shapes with ";\r\n": one line per op here.
  for (ComparedFigure& op : diff.ops) {
    for (std::size_t at = op.name.find(";\r\n"); at != std::string::npos; at = op.name.find(";\r\n", at))
      op.name.replace(at, 3, "; ");
  }
  diff.kernels = CompareAll("kernel", sa.kernels, sb.kernels, sa.steps.size(), sb.steps.size(), floor,
                            options.top, &diff.kernels_compared, &diff.kernels_changed);
  diff.has_communication = sa.has_collectives || sb.has_collectives;
  if (diff.has_communication) {
    diff.communication =
        CompareAll("communication", sa.collectives, sb.collectives, sa.steps.size(), sb.steps.size(), floor,
                   options.top, &diff.communication_compared, &diff.communication_changed);
    for (ComparedFigure& f : diff.communication) f.name = CollectiveName(std::move(f.name));
    diff.communication_not_overlapped =
        Compare("communication-not-overlapped", "communication not overlapped with compute",
                sa.not_overlapped_ms, sb.not_overlapped_ms, floor);
  }
  CompareReplay(sa, sb, options.top, &diff);
  for (const MemoryPeak& pa : sa.memory) {
    for (const MemoryPeak& pb : sb.memory) {
      if (pa.device != pb.device || pa.component != pb.component) continue;
      ComparedFigure f =
          Compare("memory", "peak allocated, device " + std::to_string(pa.device) + " " + pa.component,
                  {static_cast<double>(pa.peak_allocated)}, {static_cast<double>(pb.peak_allocated)},
                  0.01 * static_cast<double>(pa.peak_allocated));
      diff.memory.push_back(std::move(f));
    }
  }
  if (!sa.warmup.empty() || !sb.warmup.empty()) {
    auto ids = [](const std::vector<WarmupStep>& warmup) {
      std::string text = warmup.size() == 1 ? "step " : "steps ";
      for (const WarmupStep& step : warmup)
        text += (&step == warmup.data() ? "" : ", ") + std::to_string(step.id);
      return warmup.empty() ? std::string("none") : text;
    };
    diff.note = "the warm-up steps of each run are left out (A: " + ids(sa.warmup) +
                "; B: " + ids(sb.warmup) + "); --include-warmup counts them";
  }
  if (sa.steps.size() < 2 || sb.steps.size() < 2) {
    diff.note +=
        std::string(diff.note.empty() ? "" : "; ") +
        "with fewer than 2 steps in a run there is no spread: every difference above 5 % is reported";
  }
  return diff;
}

}  // namespace gpuprof::db
