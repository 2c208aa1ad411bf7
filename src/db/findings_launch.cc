// The task scan: one pass over the device's tasks in the considered steps, each beside the launch
// call that issued it, for the rules that read how the host feeds the device (device idle and its
// causes, launch-bound stretches, launch-delay outliers), and beside its kernel's name and grid, for
// the kernel rules (findings_counters.cc's KernelTally).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "db/db_constants.h"
#include "db/device_work.h"
#include "db/findings_internal.h"
#include "db/string_lookup.h"

namespace gpuprof::db::findings_internal {
namespace {

// STRING_IDS ids of the calls that launch one kernel (not graphs, copies or memsets).
StatusOr<std::unordered_set<std::int64_t>> KernelLaunchCalls(const ProfileReader& reader) {
  std::unordered_set<std::int64_t> ids;
  if (!reader.HasStringValues()) return ids;
  GPUPROF_ASSIGN_OR_RETURN(Query query,
                           reader.Prepare("SELECT id FROM STRING_IDS WHERE value LIKE '%LaunchKernel%' OR "
                                          "value LIKE '%LaunchCooperativeKernel%'"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    ids.insert(query.Int(0));
  }
  return ids;
}

std::string Us(std::int64_t ns) { return std::to_string((ns + 500) / 1000) + " us"; }

// The walk over tasks by start, step by step (the considered steps are by start and disjoint).
class Walk {
 public:
  Walk(const FindingContext& ctx, LaunchScan& scan) : ctx_(ctx), scan_(scan) {
    reach_ = covered_ = ctx.steps.front()->start_ns;
  }

  // One task [start, end) and its launch call [call_start, call_end) (has_call false: none known).
  void Task(std::int64_t start, std::int64_t end, bool has_call, std::int64_t call_start,
            std::int64_t call_end, bool kernel_launch, std::int64_t global_task_id) {
    while (s_ < ctx_.steps.size() && start >= ctx_.steps[s_]->end_ns) NextStep();
    reach_ = std::max(reach_, end);
    if (s_ == ctx_.steps.size() || end <= ctx_.steps[s_]->start_ns) return;
    const std::int64_t gap_start = covered_;
    const bool idle_before = start > gap_start;
    if (idle_before) Gap(gap_start, start, has_call, call_end);
    covered_ = std::max(covered_, end);

    // Launch delay: the device idle while this kernel, already launched, had not started.
    if (idle_before && has_call && kernel_launch && call_end < start) {
      const std::int64_t from = std::max(call_end, gap_start);
      if (start - from >= LaunchScan::kLaunchDelayNs) {
        RuleResult& delay = scan_.launch_delay;
        delay.at_stake_ns += start - from;
        ++delay.occurrences;
        delay.evidence.push_back({"#" + std::to_string(global_task_id), ctx_.steps[s_]->id, from,
                                  start - from, global_task_id, ""});
        if (delay.evidence.size() >= 64 * ctx_.max_evidence + 1024)
          KeepLongest(delay.evidence, ctx_.max_evidence);
      }
    }

    // Launch-bound stretches: kernels each shorter than its launch call, in a row.
    const bool short_kernel = has_call && kernel_launch && end - start < call_end - call_start;
    if (!short_kernel) {
      CloseStretch();
      return;
    }
    if (stretch_device_ns_.empty()) {
      stretch_start_ = start;
    } else if (idle_before) {
      stretch_idle_ns_ += start - gap_start;
    }
    stretch_device_ns_.push_back(end - start);
    stretch_call_ns_.push_back(call_end - call_start);
  }

  void Finish() {
    while (s_ < ctx_.steps.size()) NextStep();
    KeepLongest(gaps_, ctx_.max_evidence);
    scan_.longest_gaps = std::move(gaps_);
    KeepLongest(scan_.launch_bound.evidence, ctx_.max_evidence);
    KeepLongest(scan_.launch_delay.evidence, ctx_.max_evidence);
  }

 private:
  // An idle stretch [from, to) of step s_, before a task whose launch call returned at call_end.
  void Gap(std::int64_t from, std::int64_t to, bool has_call, std::int64_t call_end) {
    std::int64_t host = 0;
    std::int64_t launch = 0;
    std::int64_t other = to - from;
    if (has_call) {
      host = std::clamp<std::int64_t>(call_end - from, 0, to - from);
      launch = std::min(to - from - host, LaunchScan::kLaunchLatencyNs);
      other = to - from - host - launch;
    }
    scan_.idle_host_ns += host;
    scan_.idle_launch_ns += launch;
    scan_.idle_other_ns += other;
    const char* cause = host >= launch && host >= other ? "idle, waiting on the host"
                        : launch >= other               ? "idle, waiting on a launch"
                                                        : "idle, waiting on a dependency or sync";
    gaps_.push_back({cause, ctx_.steps[s_]->id, from, to - from, 0, ""});
    if (gaps_.size() >= 64 * ctx_.max_evidence + 1024) KeepLongest(gaps_, ctx_.max_evidence);
  }

  void NextStep() {
    CloseStretch();
    // The end of a step with nothing left queued: the device waits for the host's next work.
    if (ctx_.steps[s_]->end_ns > covered_)
      Gap(covered_, ctx_.steps[s_]->end_ns, true, ctx_.steps[s_]->end_ns);
    if (++s_ < ctx_.steps.size()) covered_ = std::max(ctx_.steps[s_]->start_ns, reach_);
  }

  void CloseStretch() {
    const std::size_t kernels = stretch_device_ns_.size();
    if (kernels >= LaunchScan::kLaunchBoundKernels && stretch_idle_ns_ > 0) {
      RuleResult& bound = scan_.launch_bound;
      bound.at_stake_ns += stretch_idle_ns_;
      ++bound.occurrences;
      bound.evidence.push_back({std::to_string(kernels) +
                                    " kernels shorter than their launch calls (median " +
                                    Us(Median(stretch_device_ns_)) + " on the device, " +
                                    Us(Median(stretch_call_ns_)) + " to launch)",
                                ctx_.steps[s_]->id, stretch_start_, stretch_idle_ns_, 0, ""});
      if (bound.evidence.size() >= 64 * ctx_.max_evidence + 1024)
        KeepLongest(bound.evidence, ctx_.max_evidence);
    }
    stretch_device_ns_.clear();
    stretch_call_ns_.clear();
    stretch_idle_ns_ = 0;
  }

  const FindingContext& ctx_;
  LaunchScan& scan_;
  std::size_t s_ = 0;
  std::int64_t reach_ = 0;    // the latest end of a task so far
  std::int64_t covered_ = 0;  // in step s_, the device is busy or accounted for up to here
  std::vector<FindingEvidence> gaps_;
  std::int64_t stretch_start_ = 0;
  std::int64_t stretch_idle_ns_ = 0;
  std::vector<std::int64_t> stretch_device_ns_;
  std::vector<std::int64_t> stretch_call_ns_;
};

// The launch-delay evidence carries its TASK's globalTaskId: name each by its kernel.
Status NameKernels(const ProfileReader& reader, std::vector<FindingEvidence>& evidence) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has, reader.HasColumns("COMPUTE_TASK_INFO", {"globalTaskId", "name"}));
  Query query;
  if (has) {
    GPUPROF_ASSIGN_OR_RETURN(query, reader.Prepare("SELECT " + StringValueSql(reader, "name") +
                                                   " FROM COMPUTE_TASK_INFO WHERE globalTaskId = ?1"));
  }
  for (FindingEvidence& e : evidence) {
    std::string name = "a task";
    if (has) {
      query.Reset();
      query.BindInt(1, e.global_tid);
      GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
      if (row) name = std::string(query.Text(0));
    }
    e.name = name + " started late";
    e.global_tid = 0;
  }
  return OkStatus();
}

// The tasks of the considered steps by start (bind ?1 and ?2 to their span), each row: startNs,
// endNs, globalTaskId; for the launch rules (`launches`; else 0 and NULLs): whether it is device work
// they read, its launch call's start, end and name id; for the kernel rules (`kernels`; else 0s):
// whether it has a kernel row, its device, the kernel's name id and grid (-1: not recorded).
StatusOr<Query> TasksQuery(const ProfileReader& reader, bool launches, bool kernels) {
  std::string device_work = "0";
  std::string calls = "NULL, NULL, NULL";
  std::string from = "TASK t";
  if (launches) {
    GPUPROF_ASSIGN_OR_RETURN(device_work, DeviceWorkTaskSql(reader, "t"));
    device_work = "(t.endNs >= t.startNs AND " + device_work + ")";
    GPUPROF_ASSIGN_OR_RETURN(const bool has_calls,
                             reader.HasColumns("CANN_API", {"startNs", "endNs", "connectionId", "name"}));
    // A task joins its call's node-level row ("launch", the call's times); the runtime row that
    // names the call (cudaLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync) sits
    // kRuntimeConnectionOffset above.
    if (has_calls) {
      calls = "a.startNs, a.endNs, COALESCE(r.name, a.name)";
      from +=
          " LEFT JOIN CANN_API a ON a.connectionId = t.connectionId LEFT JOIN CANN_API r ON "
          "r.connectionId = t.connectionId + " +
          std::to_string(kRuntimeConnectionOffset);
    }
  }
  std::string kernel = "0, 0, 0, 0";
  if (kernels) {
    GPUPROF_ASSIGN_OR_RETURN(const bool device, reader.HasColumns("TASK", {"deviceId"}));
    GPUPROF_ASSIGN_OR_RETURN(const bool blocks, reader.HasColumns("COMPUTE_TASK_INFO", {"blockNum"}));
    kernel = std::string("c.globalTaskId IS NOT NULL, ") + (device ? "t.deviceId" : "0") + ", c.name, " +
             (blocks ? "COALESCE(c.blockNum, -1)" : "-1");
    from += " LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId";
  }
  return reader.Prepare("SELECT t.startNs, t.endNs, t.globalTaskId, " + device_work + ", " + calls + ", " +
                        kernel + " FROM " + from +
                        " WHERE t.endNs > ?1 AND t.startNs < ?2 ORDER BY t.startNs");
}

}  // namespace

Status ScanTasks(const FindingContext& ctx) {
  if (ctx.launches && ctx.kernels) return OkStatus();
  GPUPROF_ASSIGN_OR_RETURN(KernelTally kernels, KernelTally::Read(ctx.reader));
  auto scan = std::make_shared<LaunchScan>();
  GPUPROF_ASSIGN_OR_RETURN(
      scan->has_tasks, ctx.reader.HasColumns("TASK", {"startNs", "endNs", "connectionId", "globalTaskId"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_kernel_tasks,
                           ctx.reader.HasColumns("TASK", {"startNs", "endNs", "globalTaskId"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool has_info,
                           ctx.reader.HasColumns("COMPUTE_TASK_INFO", {"globalTaskId", "name"}));
  const bool launches = scan->has_tasks && !ctx.steps.empty();
  const bool with_kernels = kernels.Wanted() && has_kernel_tasks && has_info && !ctx.steps.empty();
  if (launches || with_kernels) {
    GPUPROF_ASSIGN_OR_RETURN(Query tasks, TasksQuery(ctx.reader, launches, with_kernels));
    tasks.BindInt(1, ctx.steps.front()->start_ns);
    tasks.BindInt(2, ctx.steps.back()->end_ns);
    GPUPROF_ASSIGN_OR_RETURN(const std::unordered_set<std::int64_t> launch_ids,
                             launches ? KernelLaunchCalls(ctx.reader) : std::unordered_set<std::int64_t>());
    Walk walk(ctx, *scan);
    StepClipper clipper(ctx.steps);  // the tasks come by start
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, tasks.Step());
      if (!row) break;
      const std::int64_t start = tasks.Int(0);
      const std::int64_t end = tasks.Int(1);
      if (tasks.Int(3) != 0) {
        const bool has_call = !tasks.IsNull(4) && !tasks.IsNull(5);
        walk.Task(start, end, has_call, tasks.Int(4), tasks.Int(5),
                  has_call && launch_ids.contains(tasks.Int(6)), tasks.Int(2));
      }
      if (tasks.Int(7) != 0) {
        std::int64_t inside = 0;
        clipper.Clip(start, end, [&](const RankStepStats&, std::int64_t, std::int64_t ns) { inside += ns; });
        if (inside > 0) kernels.Add(tasks.Int(8), tasks.Int(9), tasks.Int(10), start, inside);
      }
    }
    if (launches) {
      walk.Finish();
      GPUPROF_RETURN_IF_ERROR(NameHostActivity(ctx, {&scan->longest_gaps, &scan->launch_bound.evidence}));
      GPUPROF_RETURN_IF_ERROR(NameKernels(ctx.reader, scan->launch_delay.evidence));
    }
  }
  GPUPROF_ASSIGN_OR_RETURN(ctx.kernels, kernels.Finish(ctx.reader));
  ctx.launches = scan;
  return OkStatus();
}

StatusOr<std::shared_ptr<const LaunchScan>> ScanLaunches(const FindingContext& ctx) {
  if (!ctx.launches) GPUPROF_RETURN_IF_ERROR(ScanTasks(ctx));
  return ctx.launches;
}

}  // namespace gpuprof::db::findings_internal
