// The kernel rules (findings_internal.h): the considered steps' kernels by device, name and grid
// (added by the task scan, findings_launch.cc), beside the hardware counters of their replayed
// launches, and the three rules read from them. Each kernel is told under the first cause that
// explains it: a grid smaller than the device (tiny-grids), then too few warps resident
// (low-occupancy), then DRAM under-used (memory-bound-kernels); a kernel whose mean launch lasts
// under kLaunchBoundNs is launch-dominated (the launch rules' matter) and not judged by its counters.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/device_roofs.h"
#include "db/findings_internal.h"
#include "db/range_stats.h"
#include "db/string_lookup.h"

namespace gpuprof::db::findings_internal {
namespace {

using Kernel = KernelScan::Kernel;

constexpr std::string_view kTheoreticalOccupancyMetric = "sm__maximum_warps_per_active_cycle_pct";
constexpr std::string_view kGridSizeMetric = "launch__grid_size";

struct Mean {
  double sum = 0;
  std::uint64_t n = 0;
  void Add(std::optional<double> value) {
    if (!value.has_value()) return;
    sum += *value;
    ++n;
  }
  void Add(const Mean& other) {
    sum += other.sum;
    n += other.n;
  }
  std::optional<double> Get() const {
    return n == 0 ? std::nullopt : std::optional<double>(sum / static_cast<double>(n));
  }
};

// The counters of the replayed launches of one (device, name, grid), summed for their means.
struct CounterSums {
  std::uint64_t launches = 0;
  Mean dram, compute, memory, achieved, theoretical, dram_bytes_per_s;
  void Add(const CounterSums& other) {
    launches += other.launches;
    dram.Add(other.dram);
    compute.Add(other.compute);
    memory.Add(other.memory);
    achieved.Add(other.achieved);
    theoretical.Add(other.theoretical);
    dram_bytes_per_s.Add(other.dram_bytes_per_s);
  }
};

// One replayed launch's values, as its metric rows come.
struct LaunchCounters {
  std::int64_t device = 0;
  std::string name;
  std::optional<double> dram, compute, memory, achieved, theoretical, grid, dram_bytes, dram_read_write,
      duration_ns;
};

using CounterKey = std::tuple<std::int64_t, std::string, std::int64_t>;  // device, name, grid (-1: unknown)

struct DeviceInfo {
  int sms = 0;
  double dram_peak = 0;
};

StatusOr<std::map<std::int64_t, DeviceInfo>> ReadDevices(const ProfileReader& reader) {
  std::map<std::int64_t, DeviceInfo> devices;
  GPUPROF_ASSIGN_OR_RETURN(const bool has, reader.HasColumns("NPU_INFO", {"id", "name"}));
  if (!has) return devices;
  GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT id, COALESCE(name, '') FROM NPU_INFO"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    if (const std::optional<DeviceRoofs> roofs = FindDeviceRoofs(query.Text(1)); roofs.has_value())
      devices[query.Int(0)] = {roofs->sm_count, roofs->dram_bytes_per_s};
  }
  return devices;
}

void AddLaunch(const LaunchCounters& launch, const std::map<std::int64_t, DeviceInfo>& devices,
               std::map<CounterKey, CounterSums>& sums) {
  std::optional<double> bytes = launch.dram_bytes.has_value() ? launch.dram_bytes : launch.dram_read_write;
  std::optional<double> bytes_per_s;
  if (bytes.has_value() && launch.duration_ns.value_or(0) > 0)
    bytes_per_s = *bytes / *launch.duration_ns * 1e9;
  std::optional<double> dram = launch.dram;
  const auto device = devices.find(launch.device);
  // Without the DRAM throughput counter, its share of the datasheet peak.
  if (!dram.has_value() && bytes_per_s.has_value() && device != devices.end() && device->second.dram_peak > 0)
    dram = 100 * *bytes_per_s / device->second.dram_peak;
  CounterSums& sum = sums[{launch.device, launch.name,
                           launch.grid.has_value() ? static_cast<std::int64_t>(*launch.grid + 0.5) : -1}];
  ++sum.launches;
  sum.dram.Add(dram);
  sum.compute.Add(launch.compute);
  sum.memory.Add(launch.memory);
  sum.achieved.Add(launch.achieved);
  sum.theoretical.Add(launch.theoretical);
  sum.dram_bytes_per_s.Add(bytes_per_s);
}

// The kernel name of each replayed launch's own task, by replay kernel id. The replay stores a launch
// under its function name without return type or parameters ("stream<float>"), the device's record
// of it under the whole demangled name ("void stream<float>(float const*, int)"): the kernel rules
// read the tasks, so a launch's counters must carry its task's name. A launch whose connection
// names no single kernel task (a graph launch) keeps the replay's name.
StatusOr<std::unordered_map<std::int64_t, std::string>> TaskNamesOfReplayedLaunches(
    const ProfileReader& reader) {
  std::unordered_map<std::int64_t, std::string> names;
  GPUPROF_ASSIGN_OR_RETURN(const bool replay, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool tasks, reader.HasColumns("TASK", {"connectionId", "globalTaskId"}));
  GPUPROF_ASSIGN_OR_RETURN(const bool info, reader.HasColumns("COMPUTE_TASK_INFO", {"globalTaskId", "name"}));
  if (!replay || !tasks || !info) return names;
  // Without a replayed launch the join below would index every task for nothing.
  GPUPROF_ASSIGN_OR_RETURN(
      const std::int64_t any,
      reader.QueryInt("SELECT EXISTS (SELECT 1 FROM GPUPROF_REPLAY_KERNEL WHERE replayed = 1)"));
  if (any == 0) return names;
  GPUPROF_ASSIGN_OR_RETURN(
      Query rows,
      reader.Prepare(
          "SELECT id, " + StringValueSql(reader, "name") +
          " FROM (SELECT k.id AS id, MIN(c.name) AS name FROM GPUPROF_REPLAY_KERNEL k JOIN TASK t ON "
          "t.connectionId = k.connectionId JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
          "WHERE k.replayed = 1 GROUP BY k.id HAVING COUNT(*) = 1)"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, rows.Step());
    if (!row) break;
    names.emplace(rows.Int(0), std::string(rows.Text(1)));
  }
  return names;
}

// The counters of every replayed launch, by (device, kernel name, grid).
StatusOr<std::map<CounterKey, CounterSums>> ReadCounters(const ProfileReader& reader,
                                                         const std::map<std::int64_t, DeviceInfo>& devices) {
  std::map<CounterKey, CounterSums> sums;
  GPUPROF_ASSIGN_OR_RETURN(const bool metrics,
                           reader.HasColumns("GPUPROF_REPLAY_METRIC", {"kernelId", "name", "unit", "value"}));
  GPUPROF_ASSIGN_OR_RETURN(
      const bool kernels, reader.HasColumns("GPUPROF_REPLAY_KERNEL", {"id", "deviceId", "name", "replayed"}));
  // Metric names are STRING_IDS ids: without their text the counters cannot be told apart.
  if (!metrics || !kernels || !reader.HasStringValues()) return sums;
  const std::string wanted =
      "'" + std::string(kDramThroughputMetric) + "', '" + std::string(kComputeThroughputMetric) + "', '" +
      std::string(kMemoryThroughputMetric) + "', '" + std::string(kAchievedOccupancyMetric) + "', '" +
      std::string(kTheoreticalOccupancyMetric) + "', '" + std::string(kGridSizeMetric) + "', '" +
      std::string(kDramBytesMetric) + "', '" + std::string(kDramReadMetric) + "', '" +
      std::string(kDramWriteMetric) + "', '" + std::string(kDurationMetric) + "'";
  GPUPROF_ASSIGN_OR_RETURN(
      Query rows, reader.Prepare("SELECT k.id, k.deviceId, " + StringValueSql(reader, "k.name") +
                                 ", n.value, m.value, COALESCE(u.value, '') FROM GPUPROF_REPLAY_METRIC m "
                                 "JOIN GPUPROF_REPLAY_KERNEL k ON k.id = m.kernelId JOIN STRING_IDS n ON "
                                 "n.id = m.name LEFT JOIN STRING_IDS u ON u.id = m.unit WHERE k.replayed = 1 "
                                 "AND m.value IS NOT NULL AND n.value IN (" +
                                 wanted + ") ORDER BY k.id, m.rowid"));
  GPUPROF_ASSIGN_OR_RETURN(const auto task_names, TaskNamesOfReplayedLaunches(reader));
  std::optional<std::int64_t> current;
  LaunchCounters launch;
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, rows.Step());
    if (!row) break;
    if (rows.Int(0) != current) {
      if (current.has_value()) AddLaunch(launch, devices, sums);
      current = rows.Int(0);
      launch = LaunchCounters{};
      launch.device = rows.Int(1);
      const auto task_name = task_names.find(*current);
      launch.name = task_name != task_names.end() ? task_name->second : std::string(rows.Text(2));
    }
    const std::string_view metric = rows.Text(3);
    const double value = rows.Double(4);
    if (metric == kDramThroughputMetric) {
      launch.dram = value;
    } else if (metric == kComputeThroughputMetric) {
      launch.compute = value;
    } else if (metric == kMemoryThroughputMetric) {
      launch.memory = value;
    } else if (metric == kAchievedOccupancyMetric) {
      launch.achieved = value;
    } else if (metric == kTheoreticalOccupancyMetric) {
      launch.theoretical = value;
    } else if (metric == kGridSizeMetric) {
      launch.grid = value;
    } else if (metric == kDramBytesMetric) {
      launch.dram_bytes = value;
    } else if (metric == kDramReadMetric || metric == kDramWriteMetric) {
      launch.dram_read_write = launch.dram_read_write.value_or(0) + value;
    } else if (const double ns = NanosecondsPer(rows.Text(5)); ns > 0) {
      launch.duration_ns = value * ns;
    }
  }
  if (current.has_value()) AddLaunch(launch, devices, sums);
  return sums;
}

// The counters standing for `kernel`: those of its device, name and grid, else those whose grid is
// unknown; a kernel whose grid is unknown takes every grid's.
CounterSums CountersFor(const Kernel& kernel, const std::map<CounterKey, CounterSums>& sums) {
  CounterSums found;
  if (kernel.blocks >= 0) {
    for (std::int64_t grid : {kernel.blocks, std::int64_t{-1}}) {
      if (auto it = sums.find({kernel.device, kernel.name, grid}); it != sums.end()) return it->second;
    }
    return found;
  }
  for (auto it = sums.lower_bound({kernel.device, kernel.name, INT64_MIN});
       it != sums.end() && std::get<0>(it->first) == kernel.device && std::get<1>(it->first) == kernel.name;
       ++it) {
    found.Add(it->second);
  }
  return found;
}

StatusOr<std::shared_ptr<const KernelScan>> ScanKernels(const FindingContext& ctx) {
  if (!ctx.kernels) GPUPROF_RETURN_IF_ERROR(ScanTasks(ctx));
  return ctx.kernels;
}

std::string Fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

bool TinyGrid(const Kernel& k) { return k.sms > 0 && k.blocks >= 1 && k.blocks < k.sms; }

// Launch and ramp-up dominate a launch this short: what its counters say is not what holds it back.
bool LaunchDominated(const Kernel& k) {
  return k.launches == 0 || k.ns / static_cast<std::int64_t>(k.launches) < kLaunchBoundNs;
}

// A unit at kBoundPct of its peak or more: the kernel is busy, not starved.
bool Busy(const Kernel& k) {
  for (const std::optional<double>& pct : {k.compute_pct, k.memory_pct, k.dram_pct}) {
    if (pct.value_or(0) >= KernelScan::kBoundPct) return true;
  }
  return false;
}

// Achieved over theoretical occupancy, when it is low and the kernel is judged by it.
std::optional<double> LowOccupancyShare(const Kernel& k) {
  if (TinyGrid(k) || LaunchDominated(k) || Busy(k) || !k.achieved_occupancy_pct.has_value() ||
      k.theoretical_occupancy_pct.value_or(0) <= 0) {
    return std::nullopt;
  }
  const double share = *k.achieved_occupancy_pct / *k.theoretical_occupancy_pct;
  if (share >= KernelScan::kLowOccupancyShare) return std::nullopt;
  return share;
}

// The kernel's device time in the considered steps, per step.
std::string DeviceTime(const FindingContext& ctx, const Kernel& k) {
  const double steps = static_cast<double>(std::max<std::size_t>(1, ctx.steps.size()));
  const double launches = static_cast<double>(k.launches) / steps;
  return Ms(static_cast<std::int64_t>(static_cast<double>(k.ns) / steps)) + " ms per step on the device in " +
         Fixed(launches, launches == static_cast<double>(static_cast<std::int64_t>(launches)) ? 0 : 1) +
         (launches == 1 ? " launch" : " launches");
}

std::string Counted(const Kernel& k) {
  return "counters of " + std::to_string(k.counted_launches) + " replayed launch" +
         (k.counted_launches == 1 ? "" : "es");
}

// Adds `k` with `share` of its device time at stake.
void Add(const FindingContext& ctx, const Kernel& k, double share, std::string context, RuleResult& result) {
  const auto at_stake = static_cast<std::int64_t>(static_cast<double>(k.ns) * std::clamp(share, 0.0, 1.0));
  if (at_stake <= 0) return;
  result.at_stake_ns += at_stake;
  ++result.occurrences;
  // The row is the kernel's share over all the steps considered, not one stretch of time: say so.
  const std::size_t steps = ctx.steps.size();
  result.evidence.push_back({k.name, -1, k.first_start_ns, at_stake, 0,
                             "at stake over " + std::to_string(steps) +
                                 (steps == 1 ? " step; " : " steps; ") + std::move(context) + "; " +
                                 DeviceTime(ctx, k)});
}

}  // namespace

struct KernelTally::State {
  std::map<std::int64_t, DeviceInfo> devices;
  std::map<CounterKey, CounterSums> counters;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, Kernel> by_key;  // device, name id, grid
};

KernelTally::KernelTally() : state_(std::make_unique<State>()) {}
KernelTally::KernelTally(KernelTally&&) noexcept = default;
KernelTally& KernelTally::operator=(KernelTally&&) noexcept = default;
KernelTally::~KernelTally() = default;

StatusOr<KernelTally> KernelTally::Read(const ProfileReader& reader) {
  KernelTally tally;
  GPUPROF_ASSIGN_OR_RETURN(tally.state_->devices, ReadDevices(reader));
  GPUPROF_ASSIGN_OR_RETURN(tally.state_->counters, ReadCounters(reader, tally.state_->devices));
  return tally;
}

bool KernelTally::Wanted() const { return !state_->devices.empty() || !state_->counters.empty(); }

void KernelTally::Add(std::int64_t device, std::int64_t name_id, std::int64_t blocks, std::int64_t start_ns,
                      std::int64_t inside_ns) {
  Kernel& kernel = state_->by_key[{device, name_id, blocks}];
  if (kernel.launches == 0) {
    kernel.device = device;
    kernel.blocks = blocks;
    kernel.first_start_ns = start_ns;
  }
  kernel.ns += inside_ns;
  ++kernel.launches;
}

StatusOr<std::shared_ptr<const KernelScan>> KernelTally::Finish(const ProfileReader& reader) {
  auto scan = std::make_shared<KernelScan>();
  for (const auto& [key, sums] : state_->counters) {
    if (sums.dram.n + sums.compute.n + sums.achieved.n > 0) scan->any_counters = true;
  }
  GPUPROF_ASSIGN_OR_RETURN(StringLookup names, StringLookup::Create(reader));
  for (auto& [key, kernel] : state_->by_key) {
    GPUPROF_ASSIGN_OR_RETURN(kernel.name, names.Get(std::get<1>(key)));
    scan->kernels.push_back(std::move(kernel));
  }
  state_->by_key.clear();
  std::stable_sort(scan->kernels.begin(), scan->kernels.end(),
                   [](const Kernel& a, const Kernel& b) { return a.ns > b.ns; });
  for (Kernel& kernel : scan->kernels) {
    if (auto device = state_->devices.find(kernel.device); device != state_->devices.end()) {
      kernel.sms = device->second.sms;
      kernel.dram_peak_bytes_per_s = device->second.dram_peak;
    }
    const CounterSums sums = CountersFor(kernel, state_->counters);
    kernel.counted_launches = sums.launches;
    kernel.dram_pct = sums.dram.Get();
    kernel.compute_pct = sums.compute.Get();
    kernel.memory_pct = sums.memory.Get();
    kernel.achieved_occupancy_pct = sums.achieved.Get();
    kernel.theoretical_occupancy_pct = sums.theoretical.Get();
    kernel.dram_bytes_per_s = sums.dram_bytes_per_s.Get();
  }
  return std::shared_ptr<const KernelScan>(std::move(scan));
}

StatusOr<RuleResult> TinyGrids(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const std::shared_ptr<const KernelScan> scan, ScanKernels(ctx));
  RuleResult result;
  for (const Kernel& k : scan->kernels) {
    if (!TinyGrid(k)) continue;
    const double idle = 1 - static_cast<double>(k.blocks) / k.sms;
    Add(ctx, k, idle,
        "grid of " + std::to_string(k.blocks) + (k.blocks == 1 ? " block" : " blocks") + " on " +
            std::to_string(k.sms) + " SMs: " + Fixed(100 * idle, 0) + " % of the SMs idle",
        result);
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  return result;
}

StatusOr<RuleResult> LowOccupancy(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const std::shared_ptr<const KernelScan> scan, ScanKernels(ctx));
  RuleResult result;
  for (const Kernel& k : scan->kernels) {
    const std::optional<double> share = LowOccupancyShare(k);
    if (!share.has_value()) continue;
    Add(ctx, k, 1 - *share,
        "achieved occupancy " + Fixed(*k.achieved_occupancy_pct, 1) + " % against " +
            Fixed(*k.theoretical_occupancy_pct, 1) + " % theoretical (" + Counted(k) + ")",
        result);
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  return result;
}

StatusOr<RuleResult> MemoryBoundKernels(const FindingContext& ctx) {
  GPUPROF_ASSIGN_OR_RETURN(const std::shared_ptr<const KernelScan> scan, ScanKernels(ctx));
  RuleResult result;
  for (const Kernel& k : scan->kernels) {
    if (!k.dram_pct.has_value() || !k.compute_pct.has_value() || TinyGrid(k) || LaunchDominated(k) ||
        LowOccupancyShare(k).has_value()) {
      continue;
    }
    const double dram = *k.dram_pct;
    const bool dram_limits =
        dram >= *k.compute_pct &&
        (!k.memory_pct.has_value() || dram >= KernelScan::kDramOfMemoryShare * *k.memory_pct);
    if (!dram_limits || dram >= KernelScan::kBoundPct) continue;
    std::string figures = "DRAM at " + Fixed(dram, 1) + " % of peak";
    if (k.dram_bytes_per_s.has_value()) {
      figures += " (" + Fixed(*k.dram_bytes_per_s / 1e9, 0) + " GB/s";
      if (k.dram_peak_bytes_per_s > 0) figures += " of " + Fixed(k.dram_peak_bytes_per_s / 1e9, 0) + " GB/s";
      figures += ")";
    }
    figures += ", SMs at " + Fixed(*k.compute_pct, 1) + " % (" + Counted(k) + ")";
    Add(ctx, k, 1 - dram / 100, std::move(figures), result);
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  return result;
}

std::string KernelCountersNote(const FindingContext& ctx) {
  if (ctx.split.compute_source != ComputeSource::kKernels || !ctx.kernels || ctx.kernels->any_counters)
    return "";
  return "no hardware counters, so no DRAM or occupancy findings per kernel (gpuprof replay --set basic "
         "collects them)";
}

}  // namespace gpuprof::db::findings_internal
