// What `gpuprof report` (cli/html_report.h) shows of one profile DB, read once and aggregated, so
// that a page stays small whatever the DB's size: the `gpuprof stats` figures (ComputeStats), the
// step split of db/cluster_stats (the same code as analysis.db's StepTraceTime), the memory curve
// per device cut into time buckets, and the ops that launched the kernels with the launch delay
// (op start to kernel start) as a histogram.
//
// Thread-safety: a free function over its own reader. Errors: the reader's, naming the file.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/progress.h"
#include "db/cluster_stats.h"
#include "db/findings.h"
#include "db/profile_reader.h"
#include "db/stats.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// The highest allocated and reserved figures within one time bucket.
struct MemoryPoint {
  std::int64_t time_ns = 0;  // the bucket's start
  std::int64_t allocated = 0;
  std::int64_t reserved = 0;
};

struct MemoryCurve {
  std::int64_t device = 0;
  std::vector<MemoryPoint> points;  // by time; buckets without a record are left out
};

// The kernels (and copies) launched under one op: the innermost op linked to each task through
// CONNECTION_IDS, as export's flows pick it.
struct OpLaunchStat {
  std::string op;
  std::uint64_t tasks = 0;
  std::int64_t task_ns = 0;
};

// Launch delays in power-of-two buckets: bucket 0 holds delays below 1 µs, bucket i (i >= 1)
// those in [2^(i-1), 2^i) µs, the last bucket everything longer. Negative delays (a clock skew)
// count in bucket 0.
inline constexpr std::size_t kDelayBuckets = 24;

// Allocations of one op name (OP_MEMORY rows).
struct OpMemoryStat {
  std::string op;
  std::uint64_t allocations = 0;
  std::int64_t bytes = 0;
};

// One bar of the one-step timeline: an op (lane "thread <tid>", nested ops one row deeper), a
// device task (lane "device <d> stream <s>") or an NVTX/mstx range (lane "marks").
struct TimelineItem {
  std::string lane;
  int depth = 0;  // ops: how many ops enclose it on its thread
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::string name;            // at most kReportNameBytes of it (base::Utf8Prefix)
  std::size_t name_bytes = 0;  // the whole name's length
};

// A timeline keeps this much of each bar's name: thousands of bars of one op with a name of
// megabytes held gigabytes; a page shows less than this anyway.
inline constexpr std::size_t kReportNameBytes = 4096;

// The step a timeline shows, chosen as `why` ("median", "slowest"), with what ran in it; at most
// ReportOptions::timeline_items items (the longest kept: `dropped` says how many were not).
struct StepTimeline {
  std::string why;
  std::int64_t step_id = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::vector<TimelineItem> items;  // by lane, then start
  std::uint64_t dropped = 0;
  std::vector<MemoryPoint> memory;  // MEMORY_RECORD within the step (every record, at most 2000)
};

struct ReportDb {
  ProfileStats stats;
  RankStats split;          // whole_run: no steps, one step over the session
  FindingsReport findings;  // over `split` (its warm-up steps left out unless include_warmup)
  std::vector<MemoryCurve> memory;
  std::vector<OpLaunchStat> op_launches;         // by task time, the top ones
  std::vector<OpMemoryStat> top_allocating_ops;  // by bytes allocated over the run, the top ones
  // The highest totalAllocated of MEMORY_RECORD (its first time) and the ops whose OP_MEMORY
  // blocks were live then (allocated at or before it, released after it or never), by bytes.
  std::optional<std::int64_t> peak_time_ns;
  std::int64_t peak_device = 0;
  std::vector<OpMemoryStat> live_at_peak;
  std::vector<StepTimeline> timelines;  // the median step, and the slowest when it is another
  // Per entry of split.steps: |union of the memcpy and memset tasks| within the step, the part of
  // its time HTA's temporal breakdown calls memory (it overlaps the split's compute and idle, which
  // stay as analysis.db's StepTraceTime has them).
  std::vector<std::int64_t> step_memcpy_ns;
  std::array<std::uint64_t, kDelayBuckets> launch_delay_histogram{};
  std::uint64_t launch_delays = 0;
  std::string config_json;  // META_DATA gpuprof_config: the settings in force ("" when absent)
};

struct ReportOptions {
  std::size_t top = 25;               // rows of the op and kernel tables
  std::size_t memory_buckets = 400;   // points per device at most
  std::size_t timeline_items = 4000;  // bars per step timeline at most
  bool include_warmup = false;        // the findings count the warm-up steps (findings.h)
  base::Progress* progress = nullptr;
};

StatusOr<ReportDb> ReadReportDb(const ProfileDbFile& file, const ReportOptions& options);

}  // namespace gpuprof::db
