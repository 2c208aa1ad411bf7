// The results of range replay (issue 40) as users read them: per replayed range, its kernels in
// execution order with their time over the passes, the Speed-of-Light percentages, a bottleneck
// word and the roofline inputs. `gpuprof stats` (text and --csv=ranges) and `gpuprof report` (the
// step roofline) print these rows; this is their one source.
//
// Scaling: one ordered scan of GPUPROF_REPLAY_KERNEL's range rows plus two index lookups per
// launch (GpuprofReplayPassIndex, GpuprofReplayMetricIndex), so time grows as N log N and memory
// with one range's launches. Thread-safety: none (a ProfileReader is single-threaded). Errors: the
// reader's Status only; a DB without range rows or written before them leaves `absent` set.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// The Nsight Compute metrics the rows read (docs/metrics.md). FLOPs are Nsight Compute's
// roofline count: add + mul + 2 * fma, FP32 and FP16 thread instructions.
inline constexpr std::string_view kComputeThroughputMetric =
    "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kMemoryThroughputMetric =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kDramThroughputMetric =
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kAchievedOccupancyMetric =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kDurationMetric = "gpu__time_duration.sum";
inline constexpr std::string_view kDramBytesMetric = "dram__bytes.sum";
inline constexpr std::string_view kDramReadMetric = "dram__bytes_read.sum";
inline constexpr std::string_view kDramWriteMetric = "dram__bytes_write.sum";

// Nanoseconds per `unit` for the time units metrics use (ncu's and CUPTI's spellings); 0 for any
// other unit.
double NanosecondsPer(std::string_view unit) noexcept;

// What limits a kernel, in one word (RangeBottleneck).
enum class Bottleneck : std::uint8_t { kUnknown, kCompute, kMemory, kLatency, kLaunch };
std::string_view BottleneckName(Bottleneck bottleneck) noexcept;  // "-", "compute", ...

// The rule, in one place (docs/db_gpuprof_tables.md, "Range results"):
//   memory   memory throughput >= 60 % of peak and at least the compute throughput;
//   compute  compute (SM) throughput >= 60 % of peak;
//   launch   neither, and the kernel's median time is under 5 µs (the launch and its ramp-up
//            dominate what it does);
//   latency  neither, longer: the units wait (too few warps, dependent loads, syncs).
// Without counters only "launch" can be told (from the time); otherwise kUnknown.
inline constexpr double kBoundThresholdPct = 60;
inline constexpr std::int64_t kLaunchBoundNs = 5000;
Bottleneck RangeBottleneck(std::optional<double> compute_pct, std::optional<double> memory_pct,
                           std::optional<std::int64_t> median_ns);

// One launch of a replayed range (or a declined range's one row).
struct RangeKernel {
  std::int64_t device = 0;
  std::int64_t range_id = 0;
  std::int64_t place = 0;      // rangeLaunch: its place in the range's execution order, from 0
  std::int64_t kernel_id = 0;  // GPUPROF_REPLAY_KERNEL.id
  std::string kernel;
  bool replayed = true;
  std::string decline_reason;  // a declined range: why ("" otherwise)
  // Over the launch's pass rows (none: a declined range, or no GPUPROF_REPLAY_PASS).
  std::uint64_t passes = 0;
  std::optional<std::int64_t> median_ns;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  // (max - min) / median, in %; none without passes or with a median of 0.
  std::optional<double> spread_pct;
  // Counters (GPUPROF_REPLAY_METRIC), none when not collected.
  std::optional<double> compute_pct;    // kComputeThroughputMetric
  std::optional<double> memory_pct;     // kMemoryThroughputMetric, else kDramThroughputMetric
  std::optional<double> occupancy_pct;  // kAchievedOccupancyMetric
  Bottleneck bottleneck = Bottleneck::kUnknown;
  // Roofline inputs: FLOPs (FP32 + FP16 thread instructions), DRAM bytes (dram__bytes.sum, else
  // read + write) and the counter pass's duration in ns (kDurationMetric, else the median).
  std::optional<double> flops;
  std::optional<double> dram_bytes;
  std::optional<double> duration_ns;
};

struct RangeScanOptions {
  // Stop after this many ranges (the text summary's --top); 0: every range.
  std::size_t max_ranges = 0;
};

struct RangeScanSummary {
  std::uint64_t ranges = 0;  // ranges passed to the callback
  bool more = false;         // max_ranges cut the scan short
  std::string absent;        // why there is nothing ("" when there are range rows)
};

// Calls `row` for every range row ordered by device, range, place. A DB written before range
// replay (no rangeId / rangeLaunch columns) or without range rows calls nothing.
StatusOr<RangeScanSummary> ForEachRangeKernel(const ProfileReader& reader, const RangeScanOptions& options,
                                              const std::function<void(const RangeKernel&)>& row);

// The end of the range whose first launch is kernels[begin] in rows kept in ForEachRangeKernel's
// order: the index of the next range's first launch, or kernels.size().
std::size_t RangeEnd(const std::vector<RangeKernel>& kernels, std::size_t begin);

}  // namespace gpuprof::db
