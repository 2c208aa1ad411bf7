// The finding rules (declared once, below) and their evaluation over one profile DB.
#include "db/findings.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "db/string_lookup.h"

namespace gpuprof::db {
namespace {

// Milliseconds, with three decimals below 1 ms (launch-sized gaps) and one above.
std::string Ms(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, ns < 1'000'000 ? "%.3f" : "%.1f", static_cast<double>(ns) / 1e6);
  return text;
}

std::string StepName(std::int64_t id) { return id < 0 ? "the run" : "step " + std::to_string(id); }

// Keeps the longest `max` of `evidence`, longest first (ties by start).
void KeepLongest(std::vector<FindingEvidence>& evidence, std::size_t max) {
  auto longer = [](const FindingEvidence& a, const FindingEvidence& b) {
    return a.duration_ns != b.duration_ns ? a.duration_ns > b.duration_ns : a.start_ns < b.start_ns;
  };
  if (evidence.size() > max) {
    std::nth_element(evidence.begin(), evidence.begin() + static_cast<std::ptrdiff_t>(max), evidence.end(),
                     longer);
    evidence.resize(max);
  }
  std::sort(evidence.begin(), evidence.end(), longer);
}

// Step-level rules: a figure of the split per considered step.
RuleResult FromSteps(const FindingContext& ctx, std::int64_t RankStepStats::*figure) {
  RuleResult result;
  for (const RankStepStats* step : ctx.steps) {
    const std::int64_t ns = step->*figure;
    if (ns <= 0) continue;
    result.at_stake_ns += ns;
    ++result.occurrences;
    result.evidence.push_back({StepName(step->id), step->id, step->start_ns, ns, 0, ""});
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  return result;
}

// The longest stretches inside the considered steps with no device task running (TASK), longest
// first; each named by its step, with what the host was doing halfway through it: the innermost op
// (any thread) and the CUDA call running then.
StatusOr<std::vector<FindingEvidence>> LongestGaps(const FindingContext& ctx) {
  std::vector<FindingEvidence> gaps;
  GPUPROF_ASSIGN_OR_RETURN(const bool has_tasks, ctx.reader.HasColumns("TASK", {"startNs", "endNs"}));
  if (!has_tasks || ctx.steps.empty()) return gaps;
  GPUPROF_ASSIGN_OR_RETURN(
      Query tasks,
      ctx.reader.Prepare("SELECT startNs, endNs FROM TASK WHERE endNs >= startNs ORDER BY startNs"));
  std::size_t s = 0;
  std::int64_t reach = ctx.steps.front()->start_ns;  // the latest end of a task so far
  std::int64_t covered =
      ctx.steps.front()->start_ns;  // in step s, the device is busy or accounted up to here
  auto gap = [&](std::int64_t from, std::int64_t to) {
    if (to <= from) return;
    gaps.push_back({"idle", ctx.steps[s]->id, from, to - from, 0, ""});
    if (gaps.size() >= 64 * ctx.max_evidence + 1024) KeepLongest(gaps, ctx.max_evidence);
  };
  auto next_step = [&] {
    gap(covered, ctx.steps[s]->end_ns);
    if (++s < ctx.steps.size()) covered = std::max(ctx.steps[s]->start_ns, reach);
  };
  while (s < ctx.steps.size()) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, tasks.Step());
    if (!row) break;
    const std::int64_t start = tasks.Int(0);
    const std::int64_t end = tasks.Int(1);
    while (s < ctx.steps.size() && start >= ctx.steps[s]->end_ns) next_step();
    reach = std::max(reach, end);
    if (s == ctx.steps.size() || end <= ctx.steps[s]->start_ns) continue;
    gap(covered, start);
    covered = std::max(covered, end);
  }
  while (s < ctx.steps.size()) next_step();
  KeepLongest(gaps, ctx.max_evidence);
  if (gaps.empty()) return gaps;
  // One scan per table for every gap: the shortest row covering each gap's midpoint.
  std::vector<std::int64_t> mids;
  for (const FindingEvidence& g : gaps) mids.push_back(g.start_ns + g.duration_ns / 2);
  const auto [low, high] = std::minmax_element(mids.begin(), mids.end());
  std::vector<std::vector<std::string>> doing(gaps.size());
  for (const char* table : {"PYTORCH_API", "CANN_API"}) {
    GPUPROF_ASSIGN_OR_RETURN(const bool has, ctx.reader.HasColumns(table, {"startNs", "endNs", "name"}));
    if (!has) continue;
    const bool ops = std::string_view(table) == "PYTORCH_API";
    GPUPROF_ASSIGN_OR_RETURN(
        Query rows, ctx.reader.Prepare("SELECT startNs, endNs, " + StringValueSql(ctx.reader, "name") +
                                       " FROM " + table + " WHERE startNs <= ?1 AND endNs >= ?2"));
    rows.BindInt(1, *high);
    rows.BindInt(2, *low);
    std::vector<std::int64_t> best(gaps.size(), INT64_MAX);
    std::vector<std::string> names(gaps.size());
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, rows.Step());
      if (!row) break;
      const std::int64_t start = rows.Int(0);
      const std::int64_t end = rows.Int(1);
      for (std::size_t i = 0; i < gaps.size(); ++i) {
        if (start > mids[i] || end < mids[i] || end - start >= best[i]) continue;
        const std::string_view name = rows.Text(2);
        if (ops && name.rfind("ProfilerStep#", 0) == 0) continue;  // the step itself says nothing
        best[i] = end - start;
        names[i] = std::string(name);
      }
    }
    for (std::size_t i = 0; i < gaps.size(); ++i) {
      if (best[i] != INT64_MAX) doing[i].push_back(names[i]);
    }
  }
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    FindingEvidence& g = gaps[i];
    g.context = doing[i].empty() ? "the host in no op or CUDA call" : "the host in " + doing[i].front();
    if (doing[i].size() == 2) g.context += ", " + doing[i].back();
  }
  return gaps;
}

StatusOr<RuleResult> DeviceIdle(const FindingContext& ctx) {
  // Without kernels the split's compute is the host's ops: idle is then no device's.
  if (ctx.split.compute_source != ComputeSource::kKernels) return RuleResult{};
  // The time at stake is the split's (analysis.db's StepTraceTime free); the evidence, its gaps.
  RuleResult result = FromSteps(ctx, &RankStepStats::idle_ns);
  if (result.at_stake_ns <= 0) return result;
  GPUPROF_ASSIGN_OR_RETURN(std::vector<FindingEvidence> gaps, LongestGaps(ctx));
  if (!gaps.empty()) result.evidence = std::move(gaps);
  return result;
}

StatusOr<RuleResult> CommunicationNotOverlapped(const FindingContext& ctx) {
  return FromSteps(ctx, &RankStepStats::communication_not_overlapped_ns);
}

// Interval rules: rows (name, startNs, endNs, globalTid) of `sql`, by start, clipped to the
// considered steps. `with_context`: name the innermost op running on the row's thread.
StatusOr<RuleResult> FromIntervals(const FindingContext& ctx, const std::string& sql, bool with_context) {
  RuleResult result;
  GPUPROF_ASSIGN_OR_RETURN(Query query, ctx.reader.Prepare(sql));
  std::size_t first = 0;  // rows come by start: steps before a row's start are done with
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    const std::int64_t start = query.Int(1);
    const std::int64_t end = query.Int(2);
    while (first < ctx.steps.size() && ctx.steps[first]->end_ns <= start) ++first;
    for (std::size_t s = first; s < ctx.steps.size() && ctx.steps[s]->start_ns < end; ++s) {
      const RankStepStats& step = *ctx.steps[s];
      const std::int64_t from = std::max(start, step.start_ns);
      const std::int64_t inside = std::min(end, step.end_ns) - from;
      if (inside <= 0) continue;
      result.at_stake_ns += inside;
      ++result.occurrences;
      result.evidence.push_back({std::string(query.Text(0)), step.id, from, inside, query.Int(3), ""});
      // Bounded memory over millions of rows: trim to the longest now and then.
      if (result.evidence.size() >= 64 * ctx.max_evidence + 1024)
        KeepLongest(result.evidence, ctx.max_evidence);
    }
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  if (!with_context || result.evidence.empty()) return result;
  GPUPROF_ASSIGN_OR_RETURN(const bool has_ops,
                           ctx.reader.HasColumns("PYTORCH_API", {"startNs", "endNs", "globalTid", "name"}));
  if (!has_ops) return result;
  // The innermost op around each kept row on its thread (few rows: the evidence).
  GPUPROF_ASSIGN_OR_RETURN(
      Query innermost,
      ctx.reader.Prepare(
          "SELECT " + StringValueSql(ctx.reader, "p.name") +
          " AS n FROM PYTORCH_API p WHERE p.globalTid = ?1 AND p.startNs <= ?2 AND p.endNs >= ?3 "
          "AND n NOT LIKE 'ProfilerStep#%' ORDER BY p.endNs - p.startNs LIMIT 1"));
  for (FindingEvidence& e : result.evidence) {
    innermost.Reset();
    innermost.BindInt(1, e.global_tid);
    innermost.BindInt(2, e.start_ns);
    innermost.BindInt(3, e.start_ns + e.duration_ns);
    GPUPROF_ASSIGN_OR_RETURN(bool inside, innermost.Step());
    if (inside) e.context = "in " + std::string(innermost.Text(0));
  }
  return result;
}

constexpr std::string_view kSyncCalls =
    "'cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaMemcpy', "
    "'cudaMemset', 'cudaMemcpy2D', 'cuCtxSynchronize', 'cuStreamSynchronize', 'cuEventSynchronize', "
    "'cuMemcpyDtoH', 'cuMemcpyDtoH_v2', 'cuMemcpyHtoD', 'cuMemcpyHtoD_v2', 'cuMemsetD8', 'cuMemsetD8_v2'";

// Rows (name, startNs, endNs, globalTid) of `table` whose name matches `filter` (an SQL condition on
// `value`), by start. Names are matched in STRING_IDS once, not looked up row by row: over millions
// of rows the filter is a set membership test.
std::string NamedRowsSql(const ProfileReader& reader, const std::string& table, const std::string& filter) {
  if (!reader.HasStringValues()) {
    return "SELECT * FROM (SELECT CAST(name AS TEXT) AS value, startNs, endNs, globalTid FROM " + table +
           ") WHERE " + filter + " ORDER BY startNs";
  }
  return "SELECT (SELECT value FROM STRING_IDS WHERE id = t.name), t.startNs, t.endNs, t.globalTid FROM " +
         table + " t WHERE t.name IN (SELECT id FROM STRING_IDS WHERE " + filter + ") ORDER BY t.startNs";
}

StatusOr<RuleResult> SyncInStep(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has,
                           ctx.reader.HasColumns("CANN_API", {"startNs", "endNs", "globalTid", "name"}));
  if (!has) return RuleResult{};
  return FromIntervals(ctx,
                       NamedRowsSql(ctx.reader, "CANN_API", "value IN (" + std::string(kSyncCalls) + ")"),
                       /*with_context=*/true);
}

constexpr std::string_view kAllocatorCalls =
    "'cudaMalloc', 'cudaFree', 'cudaMallocAsync', 'cudaFreeAsync', 'cuMemAlloc', 'cuMemAlloc_v2', "
    "'cuMemFree', "
    "'cuMemFree_v2', 'cudaHostAlloc', 'cudaFreeHost', 'cudaMallocHost'";

StatusOr<RuleResult> AllocatorChurn(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has,
                           ctx.reader.HasColumns("CANN_API", {"startNs", "endNs", "globalTid", "name"}));
  if (!has) return RuleResult{};
  return FromIntervals(
      ctx, NamedRowsSql(ctx.reader, "CANN_API", "value IN (" + std::string(kAllocatorCalls) + ")"),
      /*with_context=*/true);
}

StatusOr<RuleResult> GcPause(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has,
                           ctx.reader.HasColumns("GC_RECORD", {"startNs", "endNs", "globalTid"}));
  if (!has) return RuleResult{};
  return FromIntervals(ctx, "SELECT 'gc', startNs, endNs, globalTid FROM GC_RECORD ORDER BY startNs",
                       /*with_context=*/true);
}

StatusOr<RuleResult> DataloaderWait(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has,
                           ctx.reader.HasColumns("PYTORCH_API", {"startNs", "endNs", "globalTid", "name"}));
  if (!has) return RuleResult{};
  return FromIntervals(ctx, NamedRowsSql(ctx.reader, "PYTORCH_API", "value LIKE 'enumerate(DataLoader)%'"),
                       /*with_context=*/false);
}

const std::vector<FindingRule> kRules = {
    {.id = "device-idle",
     .title = "The device is idle inside steps",
     .measures = "step time with no kernel, copy or memset running on the device",
     .threshold = 0.10,
     .advice = "the device waits on the host: Python, data loading, launch overhead or synchronization",
     .fix = "look at the host ops of the idlest steps below; fewer, larger kernels (torch.compile, CUDA "
            "graphs), a DataLoader with workers and pin_memory, no syncs in the loop",
     .evidence_sql = "SELECT step, free FROM StepTraceTime ORDER BY free DESC (in analysis.db)",
     .evaluate = DeviceIdle},
    {.id = "communication-not-overlapped",
     .title = "Communication is not overlapped with compute",
     .measures = "step time in collectives while no kernel computes",
     .threshold = 0.05,
     .advice = "the ranks wait for collectives instead of computing",
     .fix = "overlap it (DDP gradient buckets, bucket_cap_mb; FSDP prefetch) or send less (larger "
            "batches per rank, gradient accumulation)",
     .evidence_sql = "SELECT step, communication_not_overlapped FROM StepTraceTime ORDER BY 2 DESC (in "
                     "analysis.db)",
     .evaluate = CommunicationNotOverlapped},
    {.id = "sync-in-step",
     .title = "Synchronizing calls inside steps",
     .measures = "host time blocked in calls that wait for the device (device/stream/event syncs, "
                 "synchronous memcpy and memset)",
     .threshold = 0.02,
     .advice = "each one stops the host from queueing work ahead, so the device idles after it",
     .fix = "move .item(), .cpu(), print(tensor) and torch.cuda.synchronize() out of the loop, or do them "
            "every N steps; use non_blocking=True copies from pinned memory",
     .evidence_sql = "SELECT s.value, a.startNs, a.endNs - a.startNs FROM CANN_API a JOIN STRING_IDS s ON "
                     "s.id = a.name WHERE s.value LIKE '%Synchronize' OR s.value IN ('cudaMemcpy', "
                     "'cudaMemset') ORDER BY 3 DESC",
     .evaluate = SyncInStep},
    {.id = "allocator-churn",
     .title = "Device memory allocated and freed inside steps",
     .measures = "host time in cudaMalloc/cudaFree (and their driver and pinned-host kin) after warm-up",
     .threshold = 0.01,
     .advice = "in the steady state the caching allocator should reuse its blocks; each cudaFree waits for "
               "the device and each cudaMalloc costs up to milliseconds",
     .fix = "no torch.cuda.empty_cache() in the loop; steady shapes (pad or bucket variable lengths); "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
     .evidence_sql = "SELECT s.value, a.startNs, a.endNs - a.startNs FROM CANN_API a JOIN STRING_IDS s ON "
                     "s.id = a.name WHERE s.value IN ('cudaMalloc', 'cudaFree') ORDER BY 3 DESC",
     .evaluate = AllocatorChurn},
    {.id = "gc-pause",
     .title = "Python garbage collection pauses inside steps",
     .measures = "step time in Python's cyclic garbage collector (GC_RECORD)",
     .threshold = 0.02,
     .advice = "the collector stops the training thread while it walks every tracked object",
     .fix = "avoid reference cycles in the loop, gc.freeze() after setup, or gc.disable() with a "
            "gc.collect() every N steps",
     .evidence_sql = "SELECT startNs, endNs - startNs FROM GC_RECORD ORDER BY 2 DESC",
     .evaluate = GcPause},
    {.id = "dataloader-wait",
     .title = "Steps wait for the DataLoader",
     .measures = "step time in the DataLoader's __next__ (enumerate(DataLoader) ops)",
     .threshold = 0.05,
     .advice = "the training loop waits for its next batch",
     .fix = "DataLoader(num_workers=N, pin_memory=True, persistent_workers=True, prefetch_factor=2+); "
            "move costly transforms off the loading path",
     .evidence_sql = "SELECT p.startNs, p.endNs - p.startNs FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = "
                     "p.name WHERE s.value LIKE 'enumerate(DataLoader)%' ORDER BY 2 DESC",
     .evaluate = DataloaderWait},
};

// The spans in which gpuprof replayed kernels (GPUPROF_REPLAY_KERNEL): per range, or per launch in
// kernel mode, from the first replayed launch to the last plus the replay's own time.
using Windows = std::vector<std::pair<std::int64_t, std::int64_t>>;  // [from, to] spans

StatusOr<Windows> ReplayWindows(const ProfileReader& reader) {
  Windows windows;
  GPUPROF_ASSIGN_OR_RETURN(const bool has, reader.HasColumns("GPUPROF_REPLAY_KERNEL",
                                                             {"id", "timestampNs", "replayed", "replayNs"}));
  if (!has) return windows;
  GPUPROF_ASSIGN_OR_RETURN(const bool ranges, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"rangeId"}));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(std::string("SELECT MIN(timestampNs), MAX(timestampNs) + CAST(TOTAL(MAX(replayNs, 0)) "
                                 "AS INTEGER) FROM GPUPROF_REPLAY_KERNEL WHERE replayed = 1 GROUP BY ") +
                     (ranges ? "COALESCE(rangeId, -1 - id)" : "id")));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    windows.emplace_back(query.Int(0), query.Int(1));
  }
  return windows;
}

std::int64_t Median(std::vector<std::int64_t> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

}  // namespace

const std::vector<FindingRule>& FindingRules() { return kRules; }

std::string EvidenceText(const FindingEvidence& evidence) {
  const std::string step = StepName(evidence.step);
  std::string text = Ms(evidence.duration_ns) + " ms (" + evidence.name;
  if (evidence.name != step) text += " in " + step;
  if (!evidence.context.empty()) text += ", " + evidence.context;
  return text + ")";
}

std::string_view FindingSeverityName(FindingSeverity severity) {
  switch (severity) {
    case FindingSeverity::kHigh: return "high";
    case FindingSeverity::kMedium: return "medium";
    case FindingSeverity::kLow: break;
  }
  return "low";
}

StatusOr<FindingsReport> ComputeFindings(const ProfileReader& reader, const ProfileDbFile& file,
                                         const FindingsOptions& options) {
  GPUPROF_ASSIGN_OR_RETURN(RankStats split, ComputeRankStats(file, WithoutSteps::kWholeRunWithoutSteps));
  return ComputeFindings(reader, split, options);
}

StatusOr<FindingsReport> ComputeFindings(const ProfileReader& reader, const RankStats& split,
                                         const FindingsOptions& options) {
  FindingsReport report;
  if (split.steps.empty()) {
    report.absent = split.steps_absent.empty() ? "no steps and no session span" : split.steps_absent;
    return report;
  }
  report.whole_run = split.whole_run;
  FindingContext ctx{.reader = reader, .split = split, .steps = {}, .max_evidence = options.max_evidence};
  for (const RankStepStats& step : split.steps) ctx.steps.push_back(&step);
  if (!options.include_warmup && ctx.steps.size() >= 2) {
    const RankStepStats& first = *ctx.steps.front();
    report.warmup_steps.push_back(first.id);
    report.warmup_ns = first.duration_ns;
    ctx.steps.erase(ctx.steps.begin());
    std::vector<std::int64_t> others;
    for (const RankStepStats* step : ctx.steps) others.push_back(step->duration_ns);
    report.note = "step " + std::to_string(first.id) + " is left out as warm-up (" + Ms(first.duration_ns) +
                  " ms against a median of " + Ms(Median(others)) +
                  " ms for the others); --include-warmup counts it";
  }
  // Steps in which gpuprof replayed kernels hold its passes: their time is the profiler's, not the
  // program's.
  GPUPROF_ASSIGN_OR_RETURN(const Windows replays, ReplayWindows(reader));
  std::vector<std::int64_t> replayed;
  std::erase_if(ctx.steps, [&](const RankStepStats* step) {
    for (const auto& [from, to] : replays) {
      if (from < step->end_ns && to >= step->start_ns) {
        replayed.push_back(step->id);
        return true;
      }
    }
    return false;
  });
  report.replay_steps = replayed;
  if (!replayed.empty()) {
    std::string ids;
    for (std::int64_t id : replayed) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    report.note += std::string(report.note.empty() ? "" : "; ") +
                   (replayed.size() == 1 ? "step " : "steps ") + ids +
                   " left out: gpuprof replayed kernels in " + (replayed.size() == 1 ? "it" : "them") +
                   ", so " + (replayed.size() == 1 ? "its" : "their") + " time holds the replay passes";
  }
  for (const RankStepStats* step : ctx.steps) report.considered_ns += step->duration_ns;
  report.steps_considered = ctx.steps.size();
  if (report.considered_ns <= 0) return report;
  for (const FindingRule& rule : kRules) {
    GPUPROF_ASSIGN_OR_RETURN(RuleResult result, rule.evaluate(ctx));
    const double share = static_cast<double>(result.at_stake_ns) / static_cast<double>(report.considered_ns);
    if (result.at_stake_ns <= 0 || share < rule.threshold) continue;
    Finding finding;
    finding.rule = &rule;
    finding.at_stake_ns = result.at_stake_ns;
    finding.at_stake_percent = 100.0 * share;
    finding.at_stake_ms_per_step =
        static_cast<double>(result.at_stake_ns) / 1e6 / static_cast<double>(report.steps_considered);
    finding.severity = share >= 0.20   ? FindingSeverity::kHigh
                       : share >= 0.05 ? FindingSeverity::kMedium
                                       : FindingSeverity::kLow;
    finding.occurrences = result.occurrences;
    finding.evidence = std::move(result.evidence);
    char figures[96];
    std::snprintf(figures, sizeof figures, "%.2f ms per step (%.1f %% of step time)",
                  finding.at_stake_ms_per_step, finding.at_stake_percent);
    finding.summary = std::string(rule.title) + ": " + figures + ", " + std::to_string(finding.occurrences) +
                      (finding.occurrences == 1 ? " occurrence" : " occurrences");
    if (!finding.evidence.empty()) {
      finding.summary += "; the longest " + EvidenceText(finding.evidence.front());
    }
    report.findings.push_back(std::move(finding));
  }
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.at_stake_ns > b.at_stake_ns; });
  return report;
}

}  // namespace gpuprof::db
