// `gpuprof stats`: the numbers behind the summary tables, computed from one profile DB.
//
// Every aggregate is either an SQL GROUP BY (SQLite sorts out of core) or a streaming pass whose
// state is bounded by the number of distinct names or threads, never by the number of rows, so a
// DB of any size is summarized in bounded memory. Tables that are missing (optional ones, or a DB
// from another writer) or empty leave their section empty with the reason in `absent`.
//
// Thread-safety: none (a ProfileReader is single-threaded). Errors: the reader's Status (a file
// that turns out damaged while reading), nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/progress.h"
#include "db/collected.h"
#include "db/profile_reader.h"
#include "db/range_stats.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// ---- Self time ----------------------------------------------------------------------------------

struct OpTotals {
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t self_ns = 0;  // total minus the time of ops nested inside it on the same thread
};

// A stack sweep over ops sorted per thread. Feed every op of a thread before the next thread's,
// each thread's ops by start ascending and, for equal starts, end descending (so a parent comes
// before a child that starts with it). An op is a child of the innermost open op whose range
// contains its start; a child that runs past its parent's end counts only up to that end. Ops
// with end < start are treated as zero-length. Memory: the deepest nesting plus one entry per key.
class SelfTimeSweep {
 public:
  void Add(std::int64_t thread, std::int64_t start_ns, std::int64_t end_ns, std::int64_t key);
  // Closes every op still open; call once after the last Add.
  void Finish();
  const std::unordered_map<std::int64_t, OpTotals>& totals() const noexcept { return totals_; }

 private:
  struct OpenOp {
    std::int64_t start_ns;
    std::int64_t end_ns;
    std::int64_t child_ns;
    std::int64_t key;
  };
  void PopOne();

  std::vector<OpenOp> stack_;
  std::optional<std::int64_t> thread_;
  std::unordered_map<std::int64_t, OpTotals> totals_;
};

// "ProfilerStep#12" -> "ProfilerStep#*" (one row for every step, as torch's key_averages does);
// other names unchanged.
std::string OpDisplayName(std::string_view name);

// ---- The report ---------------------------------------------------------------------------------

struct OpStat {
  std::string name;
  OpTotals totals;
};

struct KernelStat {
  std::string name;
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t max_ns = 0;
};

struct TaskTypeStat {
  std::string type;  // TASK.taskType's string (KERNEL, MEMCPY_ASYNC, MEMSET, ...)
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
};

struct MemoryPeak {
  std::int64_t device = 0;
  std::string component;  // PTA, WORKSPACE, ...
  std::uint64_t records = 0;
  std::int64_t peak_allocated = 0;
  std::int64_t peak_reserved = 0;
  std::optional<std::int64_t> peak_active;
};

struct StepStat {
  std::int64_t id = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

struct ReplayKernelStat {
  std::string kernel;
  std::int64_t device = 0;
  std::uint64_t launches = 0;
  std::uint64_t passes = 0;  // pass rows recorded for these launches
  std::int64_t min_ns = 0;
  std::int64_t median_ns = 0;
  std::int64_t max_ns = 0;
  double restored_bytes_per_pass = 0;  // mean over passes 2..N (pass 1 restores nothing)
  std::uint64_t nondeterministic_launches = 0;
};

struct ReplayDeclineStat {
  std::string kernel;
  std::int64_t device = 0;
  std::string reason;
  std::uint64_t launches = 0;
};

// One metric of a replayed kernel group (GPUPROF_REPLAY_METRIC): its values over the group's
// launches that have it.
struct ReplayMetricStat {
  std::string name;  // Nsight Compute's name, e.g. "dram__bytes_read.sum"
  std::string unit;  // "" when it has none
  std::uint64_t launches = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
};

// The hardware counters of one replayed (kernel, device) group, for the Speed-of-Light block of
// `gpuprof stats`. Groups with metric rows or a counterStatus are listed.
struct ReplayCounterStat {
  std::string kernel;
  std::int64_t device = 0;
  std::uint64_t launches = 0;               // replayed launches of the group
  std::uint64_t launches_with_metrics = 0;  // of them, those with GPUPROF_REPLAY_METRIC rows
  std::vector<ReplayMetricStat> metrics;    // by name
  // Pass durations of the group's replayed launches (the duration when gpu__time_duration.sum is
  // absent); pass_count 0 when there are none.
  std::uint64_t pass_count = 0;
  double pass_mean_ns = 0;
  std::int64_t pass_min_ns = 0;
  std::int64_t pass_max_ns = 0;
  // Launches whose counterStatus is set, and the status of the first of them (by id).
  std::uint64_t launches_without_counters = 0;
  std::string counter_status;
  std::vector<std::string> clock_controls;  // distinct clockControl values, sorted ("none", "base")
  std::vector<std::string> cache_controls;  // distinct cacheControl values, sorted ("all", "none")

  // The metric named `name`, or null.
  const ReplayMetricStat* Find(std::string_view name) const;
};

struct ProfileStats {
  std::string path;
  std::optional<std::int64_t> rank;    // RANK_DEVICE_MAP
  std::optional<std::int64_t> device;  // RANK_DEVICE_MAP
  std::string host_name;               // HOST_INFO
  std::optional<std::int64_t> session_start_ns;
  std::optional<std::int64_t> session_end_ns;
  // What the figures below leave out or cannot resolve, one line each: a table's rows whose spans
  // are impossible (NULL, reversed, far outside the session), names that cannot be looked up.
  std::vector<std::string> data_notes;

  // Torch ops (PYTORCH_API rows of type op): all of them are counted, the top ones listed.
  std::uint64_t op_calls = 0;
  std::uint64_t op_names = 0;
  std::int64_t op_self_sum_ns = 0;  // sum of self times = time covered by ops, per thread
  std::vector<OpStat> top_ops_by_total;
  std::vector<OpStat> top_ops_by_self;
  std::string ops_absent;  // why there is no op data ("" when there is a PYTORCH_API to read)

  std::uint64_t kernel_calls = 0;
  std::uint64_t kernel_names = 0;
  std::int64_t kernel_total_ns = 0;
  std::vector<KernelStat> top_kernels;
  std::string kernels_absent;
  std::vector<TaskTypeStat> task_types;

  std::vector<MemoryPeak> memory;
  std::string memory_absent;

  std::uint64_t step_count = 0;
  std::int64_t step_total_ns = 0;
  std::int64_t step_min_ns = 0;
  std::int64_t step_max_ns = 0;
  std::vector<StepStat> steps;  // the first `top` steps by start time
  std::string steps_absent;

  std::uint64_t gc_count = 0;
  std::int64_t gc_total_ns = 0;
  std::int64_t gc_max_ns = 0;
  std::string gc_absent;

  std::uint64_t replay_kernel_groups = 0;  // all (kernel, device) groups with replayed launches
  std::vector<ReplayKernelStat> replay;    // the top ones by launches
  std::uint64_t replay_decline_groups = 0;
  std::vector<ReplayDeclineStat> replay_declines;
  std::string replay_absent;

  // Hardware counters per replayed group (GPUPROF_REPLAY_METRIC and the counter columns of
  // GPUPROF_REPLAY_KERNEL); empty for a DB without them (written before issue 19) or without
  // counters asked, `replay_counters_absent` saying which.
  std::uint64_t replay_counter_groups = 0;
  std::vector<ReplayCounterStat> replay_counters;  // the top ones by launches, as `replay`
  std::string replay_counters_absent;

  // Range replay (db/range_stats.h): the launches of the first `top` replayed ranges, by device,
  // range and place; `more_ranges` when there are others (`stats --csv=ranges` lists every one).
  std::vector<RangeKernel> range_kernels;
  std::uint64_t range_count = 0;  // ranges in range_kernels
  bool more_ranges = false;
  std::string ranges_absent;
  // NPU_INFO's (id, name) rows, read when there are ranges (the step roofline's device).
  std::vector<std::pair<std::int64_t, std::string>> device_names;

  // Records lost before the DB, the call stacks of the top ops by self time, and the time per
  // nn.Module by its path (db/collected.h).
  CollectedStats collected;
};

struct StatsOptions {
  std::size_t top = 15;                // rows per table
  base::Progress* progress = nullptr;  // a stage per part read; null: nobody watches
};

StatusOr<ProfileStats> ComputeStats(const ProfileReader& reader, const StatsOptions& options);

// ---- Raw hardware-counter values ---------------------------------------------------------------

// One GPUPROF_REPLAY_METRIC row with its launch (`gpuprof stats --csv`).
struct ReplayMetricRow {
  std::optional<std::int64_t> rank;  // RANK_DEVICE_MAP.rankId, when the DB has one
  std::int64_t kernel_id = 0;        // GPUPROF_REPLAY_KERNEL.id
  std::string kernel;                // the kernel name
  std::int64_t launch_index = 0;
  std::string metric;
  std::string unit;             // "" when it has none
  std::optional<double> value;  // none: NULL (a NaN the writer was given)
  std::int64_t passes = 0;
};

// RANK_DEVICE_MAP's rankId (its first row); none when the DB has no such table or row.
StatusOr<std::optional<std::int64_t>> DbRank(const ProfileReader& reader);

// Calls `row` for every metric row, by kernelId then rowid (the order they were recorded), streaming.
// A DB without GPUPROF_REPLAY_METRIC (older, or no replay) calls nothing and returns why in `absent`
// ("" when the table is there, rows or not).
Status ForEachReplayMetric(const ProfileReader& reader,
                           const std::function<void(const ReplayMetricRow&)>& row, std::string* absent);

// ---- CUDA runtime API time ---------------------------------------------------------------------

// CANN_API's `runtime` rows (the host API calls) per function name, for `gpuprof run`'s summary
// after the application ends. Separate from ProfileStats, whose report is about ops and device
// work; one GROUP BY, bounded by the number of distinct names.
struct ApiStat {
  std::string name;
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
};

struct ApiSummary {
  std::uint64_t calls = 0;  // every runtime call, not only the listed ones
  std::uint64_t names = 0;
  std::int64_t total_ns = 0;
  std::vector<ApiStat> top;  // at most `top` names by total time, then name
  std::string absent;        // why there is nothing to show ("" when there is)
};

StatusOr<ApiSummary> ComputeApiSummary(const ProfileReader& reader, std::size_t top);

}  // namespace gpuprof::db
