// The finding rules (declared once, below) and their evaluation over one profile DB.
#include "db/findings.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/db_constants.h"
#include "db/findings_internal.h"
#include "db/string_lookup.h"

namespace gpuprof::db {
namespace {

using findings_internal::FromIntervals;
using findings_internal::FromNamedRows;
using findings_internal::FromSteps;
using findings_internal::LowOccupancy;
using findings_internal::MemoryBoundKernels;
using findings_internal::Ms;
using findings_internal::ScanLaunches;
using findings_internal::SlowRank;
using findings_internal::StepName;
using findings_internal::TinyGrids;

StatusOr<RuleResult> DeviceIdle(const FindingContext& ctx) {
  // Without kernels the split's compute is the host's ops: idle is then no device's.
  if (ctx.split.compute_source != ComputeSource::kKernels) return RuleResult{};
  // The time at stake is the split's (analysis.db's StepTraceTime free); the evidence, its gaps.
  RuleResult result = FromSteps(ctx, &RankStepStats::idle_ns);
  if (result.at_stake_ns <= 0) return result;
  GPUPROF_ASSIGN_OR_RETURN(const std::shared_ptr<const LaunchScan> scan, ScanLaunches(ctx));
  if (!scan->longest_gaps.empty()) result.evidence = scan->longest_gaps;
  if (scan->idle_host_ns + scan->idle_launch_ns + scan->idle_other_ns > 0) {
    result.parts = {{"waiting on the host", scan->idle_host_ns},
                    {"waiting on a launch", scan->idle_launch_ns},
                    {"waiting on a dependency or sync", scan->idle_other_ns}};
  }
  return result;
}

StatusOr<RuleResult> LaunchBound(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const std::shared_ptr<const LaunchScan> scan, ScanLaunches(ctx));
  return scan->launch_bound;
}

StatusOr<RuleResult> LaunchDelay(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const std::shared_ptr<const LaunchScan> scan, ScanLaunches(ctx));
  return scan->launch_delay;
}

StatusOr<RuleResult> CommunicationNotOverlapped(const FindingContext& ctx) {
  return FromSteps(ctx, &RankStepStats::communication_not_overlapped_ns);
}

constexpr std::string_view kSyncCalls =
    "'cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaMemcpy', "
    "'cudaMemset', 'cudaMemcpy2D', 'cuCtxSynchronize', 'cuStreamSynchronize', 'cuEventSynchronize', "
    "'cuMemcpyDtoH', 'cuMemcpyDtoH_v2', 'cuMemcpyHtoD', 'cuMemcpyHtoD_v2', 'cuMemsetD8', 'cuMemsetD8_v2'";

StatusOr<RuleResult> SyncInStep(const FindingContext& ctx) {
  return FromNamedRows(ctx, "CANN_API", "value IN (" + std::string(kSyncCalls) + ")", /*with_context=*/true);
}

constexpr std::string_view kAllocatorCalls =
    "'cudaMalloc', 'cudaFree', 'cudaMallocAsync', 'cudaFreeAsync', 'cuMemAlloc', 'cuMemAlloc_v2', "
    "'cuMemFree', "
    "'cuMemFree_v2', 'cudaHostAlloc', 'cudaFreeHost', 'cudaMallocHost'";

StatusOr<RuleResult> AllocatorChurn(const FindingContext& ctx) {
  return FromNamedRows(ctx, "CANN_API", "value IN (" + std::string(kAllocatorCalls) + ")",
                       /*with_context=*/true);
}

StatusOr<RuleResult> PageableCopies(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(
      const bool has_kinds,
      ctx.reader.HasColumns("GPUPROF_COPY_MEMORY", {"globalTaskId", "srcKind", "dstKind"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_tasks,
                           ctx.reader.HasColumns("TASK", {"globalTaskId", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_calls,
                           ctx.reader.HasColumns("CANN_API", {"startNs", "endNs", "globalTid", "name"}));
  if (!has_kinds || !has_tasks || !has_calls) return RuleResult{};
  // The host side of each copy: its CUDA call, which returns only once the pageable bytes are staged.
  const std::string pageable = std::to_string(kCopyMemoryPageable);
  // The task joins the call's node-level row; the runtime row naming the call sits
  // kRuntimeConnectionOffset above it.
  return FromIntervals(
      ctx,
      "SELECT " + StringValueSql(ctx.reader, "COALESCE(r.name, a.name)") +
          ", a.startNs, a.endNs, a.globalTid FROM GPUPROF_COPY_MEMORY k JOIN TASK t ON "
          "t.globalTaskId = k.globalTaskId JOIN CANN_API a ON a.connectionId = t.connectionId "
          "LEFT JOIN CANN_API r ON r.connectionId = t.connectionId + " +
          std::to_string(kRuntimeConnectionOffset) + " WHERE k.srcKind = " + pageable +
          " OR k.dstKind = " + pageable + " ORDER BY a.startNs",
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
  return FromNamedRows(ctx, "PYTORCH_API", "value LIKE 'enumerate(DataLoader)%'", /*with_context=*/false);
}

// gpuprof records each torch.cuda.empty_cache() call as an op of this name (python/gpuprof/_empty_cache.py).
constexpr std::string_view kEmptyCacheOp = "torch.cuda.empty_cache";

StatusOr<RuleResult> EmptyCache(const FindingContext& ctx) {
  return FromNamedRows(ctx, "PYTORCH_API", "value = '" + std::string(kEmptyCacheOp) + "'",
                       /*with_context=*/true);
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
    {.id = "launch-bound",
     .title = "Launch-bound stretches: kernels shorter than their launch calls",
     .measures = "device idle inside stretches of 20 or more kernels in a row, each shorter on the device "
                 "than its launch call on the host",
     .threshold = 0.05,
     .advice = "the host spends longer issuing each kernel than the device spends running it, so the "
               "device waits between kernels however fast it is",
     .fix =
         "fewer, larger kernels: CUDA graphs (torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")), "
         "fused ops (torch.compile, foreach/fused optimizers), larger batches",
     .evidence_sql = "SELECT t.startNs, t.endNs - t.startNs AS device_ns, a.endNs - a.startNs AS launch_ns "
                     "FROM TASK t JOIN CANN_API a ON a.connectionId = t.connectionId WHERE t.endNs - "
                     "t.startNs < a.endNs - a.startNs ORDER BY t.startNs",
     .evaluate = LaunchBound},
    {.id = "launch-delay",
     .title = "Kernels that start late after their launch, on an idle device",
     .measures = "device idle between a launch call's return and its kernel's start, where that is 50 us "
                 "or more and nothing else ran",
     .threshold = 0.02,
     .advice = "the kernel was queued but did not run: it waited on an event or stream dependency, a "
               "host callback, lazy module loading or the driver",
     .fix = "look at the streams and events before the late kernels (gpuprof export, Perfetto); load "
            "modules eagerly (CUDA_MODULE_LOADING=EAGER) when the delay is on first calls",
     .evidence_sql = "SELECT t.startNs - a.endNs AS delay_ns, t.startNs FROM TASK t JOIN CANN_API a ON "
                     "a.connectionId = t.connectionId ORDER BY 1 DESC",
     .evaluate = LaunchDelay},
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
    {.id = "slow-rank",
     .title = "One rank is slower than the others; they wait for it in collectives",
     .measures = "per step, the longest wait of a rank in collectives minus the slowest rank's own (the rank "
                 "that waits least is the one the others wait for)",
     .threshold = 0.05,
     .advice = "a collective ends when its last rank arrives: every rank runs at the straggler's pace",
     .fix = "look at the slowest rank's cause below: host-bound (data loading, Python, I/O on that rank), or "
            "device-bound (more work or a slower GPU there); balance the work per rank",
     .evidence_sql =
         "SELECT step, communication FROM StepTraceTime ORDER BY step (in each rank's analysis.db: "
         "the rank waiting least is the slowest)",
     .evaluate = nullptr,
     .evaluate_cluster = SlowRank},
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
    {.id = "empty-cache",
     .title = "torch.cuda.empty_cache() called inside steps",
     .measures =
         "host time in torch.cuda.empty_cache() calls inside steps, the cudaFree calls in them "
         "included (they wait for the device); the cudaMalloc calls that refill the cache afterwards "
         "show under allocator-churn. Every call inside a step is reported, however short (threshold "
         "0): in the steady state a call is never needed, and one that costs microseconds where torch "
         "has no GPU costs a device sync, cudaFree and cudaMalloc on one",
     .threshold = 0,
     .advice = "each call hands the caching allocator's free blocks back to the driver: cudaFree waits for "
               "the device to finish its queued work, and the next steps allocate the same memory again "
               "with cudaMalloc",
     .fix = "remove torch.cuda.empty_cache() from the training loop (call it once after training to leave "
            "the memory to another process); against fragmentation, "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
     .evidence_sql = "SELECT p.startNs, p.endNs - p.startNs FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = "
                     "p.name WHERE s.value = 'torch.cuda.empty_cache' ORDER BY 2 DESC",
     .evaluate = EmptyCache},
    {.id = "pageable-copies",
     .title = "Copies between the device and pageable host memory inside steps",
     .measures = "host time in the CUDA calls of copies whose host side is pageable (not pinned) memory",
     .threshold = 0.02,
     .advice = "the driver stages pageable bytes through a pinned buffer, so the call blocks the host for "
               "the copy (non_blocking=True does not help) and the copy cannot overlap compute",
     .fix = "pin the host buffers: DataLoader(pin_memory=True), tensor.pin_memory(), then "
            ".to(device, non_blocking=True); keep results on the device instead of copying them back",
     .evidence_sql =
         "SELECT s.value, a.startNs, a.endNs - a.startNs, m.size FROM GPUPROF_COPY_MEMORY k JOIN TASK "
         "t ON t.globalTaskId = k.globalTaskId JOIN CANN_API a ON a.connectionId = t.connectionId + "
         "4294967296 JOIN STRING_IDS s ON s.id = a.name JOIN MEMCPY_INFO m ON m.globalTaskId = "
         "t.globalTaskId "
         "WHERE k.srcKind = 1 OR k.dstKind = 1 ORDER BY 3 DESC",
     .evaluate = PageableCopies},
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
    {.id = "tiny-grids",
     .title = "Kernels launched with fewer blocks than the device has SMs",
     .measures =
         "device time of kernels whose grid is smaller than the device's SM count, times the share of "
         "SMs their grid leaves idle (an upper bound: the time saved were the same work spread over "
         "every SM)",
     .threshold = 0.03,
     .advice = "a block runs on one SM: a grid of fewer blocks than SMs leaves the rest of the device idle "
               "while the kernel runs; many such kernels in a row are usually small ops launched one by one",
     .fix = "batch the small ops into one launch (torch.compile, foreach/fused ops, larger batches), or "
            "for your own kernel a grid of at least one block per SM (split the work finer, or split-K)",
     .evidence_sql = "SELECT s.value AS kernel, c.blockNum AS blocks, COUNT(*) AS launches, SUM(t.endNs - "
                     "t.startNs) AS device_ns FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = "
                     "t.globalTaskId JOIN STRING_IDS s ON s.id = c.name WHERE c.blockNum < 132 /* the "
                     "device's SMs: 132 on H100 SXM and H200, 114 on H100 PCIe, 108 on A100 */ GROUP BY "
                     "s.value, c.blockNum ORDER BY device_ns DESC",
     .evaluate = TinyGrids},
    {.id = "low-occupancy",
     .title = "Kernels whose achieved occupancy is far below the theoretical",
     .measures = "device time of kernels with hardware counters whose achieved occupancy is under half the "
                 "theoretical (and no unit at 60 % of its peak), times 1 - achieved / theoretical (an upper "
                 "bound, as Nsight Compute's estimated speed-up)",
     .threshold = 0.03,
     .advice = "the launch allows more warps per SM than are resident on average: the SMs have fewer warps "
               "to switch to while others wait on memory (load imbalance between blocks, a tail wave, "
               "short blocks)",
     .fix = "balance the work per block, a grid of whole waves (a multiple of SMs x blocks per SM), longer "
            "blocks (more work per thread); ncu's Occupancy and Launch Statistics sections say more",
     .evidence_sql = "SELECT s.value AS kernel, n.value AS metric, AVG(m.value) FROM GPUPROF_REPLAY_METRIC m "
                     "JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId JOIN STRING_IDS s ON s.id = k.name "
                     "JOIN STRING_IDS n ON n.id = m.name WHERE n.value IN "
                     "('sm__warps_active.avg.pct_of_peak_sustained_active', "
                     "'sm__maximum_warps_per_active_cycle_pct') GROUP BY s.value, n.value ORDER BY s.value",
     .evaluate = LowOccupancy},
    {.id = "memory-bound-kernels",
     .title = "Kernels limited by DRAM but well below its peak bandwidth",
     .measures = "device time of kernels with hardware counters whose DRAM throughput is their busiest unit "
                 "(at least the SMs' and 80 % of the busiest memory unit's) yet under 60 % of peak, times "
                 "1 - DRAM share (an upper bound: the time saved were their bytes moved at peak)",
     .threshold = 0.03,
     .advice = "the kernel leans on DRAM but keeps too few bytes in flight to use it: scattered or "
               "uncoalesced accesses, narrow loads, or dependent loads that wait one after another",
     .fix = "coalesced, vectorized (16-byte) accesses, more independent loads per thread; fuse it with its "
            "neighbours so the data is read once (torch.compile)",
     .evidence_sql = "SELECT s.value AS kernel, n.value AS metric, AVG(m.value) FROM GPUPROF_REPLAY_METRIC m "
                     "JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId JOIN STRING_IDS s ON s.id = k.name "
                     "JOIN STRING_IDS n ON n.id = m.name WHERE n.value IN "
                     "('gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed', "
                     "'sm__throughput.avg.pct_of_peak_sustained_elapsed', "
                     "'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed') GROUP BY s.value, "
                     "n.value ORDER BY s.value",
     .evaluate = MemoryBoundKernels},
};

// The spans in which gpuprof replayed kernels (GPUPROF_REPLAY_KERNEL). A range: from its first
// launch to its last plus the replay's own time (its passes run when the range ends). A launch in
// the other modes: the moment of the launch, as its passes block the program there (its replayNs
// also counts work that does not block it, such as the first snapshot's setup: on an H100, 1.5 s
// for a launch 207 ms before the next, which reached into every later step).
using Windows = std::vector<std::pair<std::int64_t, std::int64_t>>;  // [from, to] spans

StatusOr<Windows> ReplayWindows(const ProfileReader& reader) {
  Windows windows;
  GPUPROF_ASSIGN_OR_RETURN(const bool has, reader.HasColumns("GPUPROF_REPLAY_KERNEL",
                                                             {"id", "timestampNs", "replayed", "replayNs"}));
  if (!has) return windows;
  GPUPROF_ASSIGN_OR_RETURN(const bool ranges, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"rangeId"}));
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(
          ranges ? "SELECT MIN(timestampNs), MAX(timestampNs) + CASE WHEN MAX(rangeId) IS NULL THEN 0 "
                   "ELSE CAST(TOTAL(MAX(replayNs, 0)) AS INTEGER) END FROM GPUPROF_REPLAY_KERNEL "
                   "WHERE replayed = 1 GROUP BY COALESCE(rangeId, -1 - id)"
                 : "SELECT timestampNs, timestampNs FROM GPUPROF_REPLAY_KERNEL WHERE replayed = 1"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    windows.emplace_back(query.Int(0), query.Int(1));
  }
  return windows;
}

// " (waiting on the host 70 %, ...)": each part's share of their sum, largest first.
std::string PartsText(std::vector<FindingPart> parts) {
  std::int64_t sum = 0;
  for (const FindingPart& part : parts) sum += part.ns;
  if (sum <= 0) return "";
  std::stable_sort(parts.begin(), parts.end(),
                   [](const FindingPart& a, const FindingPart& b) { return a.ns > b.ns; });
  std::string text;
  for (const FindingPart& part : parts) {
    char share[32];
    std::snprintf(share, sizeof share, " %.0f %%",
                  100.0 * static_cast<double>(part.ns) / static_cast<double>(sum));
    text += (text.empty() ? " (" : ", ") + part.name + share;
  }
  return text + ")";
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

namespace findings_internal {

std::optional<Finding> MakeFinding(const FindingRule& rule, RuleResult result, std::uint64_t steps,
                                   std::int64_t considered_ns) {
  if (steps == 0 || considered_ns <= 0) return std::nullopt;
  const double share = static_cast<double>(result.at_stake_ns) / static_cast<double>(considered_ns);
  if (result.at_stake_ns <= 0 || share < rule.threshold) return std::nullopt;
  Finding finding;
  finding.rule = &rule;
  finding.at_stake_ns = result.at_stake_ns;
  finding.at_stake_percent = 100.0 * share;
  finding.at_stake_ms_per_step = static_cast<double>(result.at_stake_ns) / 1e6 / static_cast<double>(steps);
  finding.severity = share >= 0.20   ? FindingSeverity::kHigh
                     : share >= 0.05 ? FindingSeverity::kMedium
                                     : FindingSeverity::kLow;
  finding.occurrences = result.occurrences;
  finding.evidence = std::move(result.evidence);
  finding.parts = std::move(result.parts);
  char figures[96];
  std::snprintf(figures, sizeof figures, "%.2f ms per step (%.1f %% of step time)",
                finding.at_stake_ms_per_step, finding.at_stake_percent);
  finding.summary = std::string(rule.title) + ": " + figures + ", " + std::to_string(finding.occurrences) +
                    (finding.occurrences == 1 ? " occurrence" : " occurrences");
  finding.summary += PartsText(finding.parts);
  if (!finding.evidence.empty()) finding.summary += "; the longest " + EvidenceText(finding.evidence.front());
  return finding;
}

}  // namespace findings_internal

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
  FindingContext ctx{.reader = reader,
                     .split = split,
                     .steps = {},
                     .max_evidence = options.max_evidence,
                     .launches = nullptr,
                     .kernels = nullptr};
  for (const RankStepStats& step : split.steps) ctx.steps.push_back(&step);
  if (!options.include_warmup && !split.warmup.empty()) {
    for (const WarmupStep& step : split.warmup) {
      report.warmup_steps.push_back(step.id);
      report.warmup_ns += step.duration_ns;
    }
    std::erase_if(ctx.steps, [&](const RankStepStats* step) { return IsWarmupStep(split.warmup, step->id); });
    report.note = WarmupNote(split.warmup);
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
    if (rule.evaluate == nullptr) continue;
    GPUPROF_ASSIGN_OR_RETURN(RuleResult result, rule.evaluate(ctx));
    std::optional<Finding> finding = findings_internal::MakeFinding(
        rule, std::move(result), report.steps_considered, report.considered_ns);
    if (finding.has_value()) report.findings.push_back(std::move(*finding));
  }
  if (const std::string counters = findings_internal::KernelCountersNote(ctx); !counters.empty())
    report.note += (report.note.empty() ? "" : "; ") + counters;
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.at_stake_ns > b.at_stake_ns; });
  return report;
}

}  // namespace gpuprof::db
