#include "replay/metric_catalog.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "base/metric_name.h"

namespace gpuprof::replay {
namespace {

using namespace std::string_view_literals;

// The metric lists follow the section files Nsight Compute ships (sections/*.section): the metrics
// each section's body shows, without the per-architecture variants and charts. Where gpuprof adds
// a metric that ncu keeps in a sub-section (the DRAM byte counts of MemoryWorkloadAnalysis_Tables),
// docs/metrics.md says so.
constexpr std::array kSpeedOfLight = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed"sv,                  // Compute (SM) Throughput
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"sv,  // Memory Throughput
    "l1tex__throughput.avg.pct_of_peak_sustained_active"sv,                // L1/TEX Cache Throughput
    "lts__throughput.avg.pct_of_peak_sustained_elapsed"sv,                 // L2 Cache Throughput
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"sv,            // DRAM Throughput
    "gpu__time_duration.sum"sv,                                            // Duration
    "dram__cycles_elapsed.avg.per_second"sv,                               // DRAM Frequency
    "smsp__cycles_elapsed.avg.per_second"sv,                               // SM Frequency
    "gpc__cycles_elapsed.max"sv,                                           // Elapsed Cycles
    "sm__cycles_active.avg"sv,                                             // SM Active Cycles
};

constexpr std::array kComputeWorkloadAnalysis = {
    "sm__inst_executed.avg.per_cycle_elapsed"sv,                      // Executed Ipc Elapsed
    "sm__inst_executed.avg.per_cycle_active"sv,                       // Executed Ipc Active
    "sm__inst_issued.avg.per_cycle_active"sv,                         // Issued Ipc Active
    "sm__instruction_throughput.avg.pct_of_peak_sustained_active"sv,  // SM Busy
    "sm__inst_issued.avg.pct_of_peak_sustained_active"sv,             // Issue Slots Busy
};

constexpr std::array kMemoryWorkloadAnalysis = {
    "dram__bytes.sum.per_second"sv,                                                // Memory Throughput
    "dram__bytes_read.sum"sv,                                                      // DRAM bytes read
    "dram__bytes_write.sum"sv,                                                     // DRAM bytes written
    "l1tex__t_sector_hit_rate.pct"sv,                                              // L1/TEX Hit Rate
    "lts__t_sector_hit_rate.pct"sv,                                                // L2 Hit Rate
    "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed"sv,  // Mem Busy
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"sv,          // Max Bandwidth
    "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed"sv,                   // Mem Pipes Busy
};

constexpr std::array kSchedulerStats = {
    "smsp__issue_active.avg.pct_of_peak_sustained_active"sv,  // One or More Eligible
    "smsp__issue_inst0.avg.pct_of_peak_sustained_active"sv,   // No Eligible
    "smsp__warps_active.avg.per_cycle_active"sv,              // Active Warps Per Scheduler
    "smsp__warps_eligible.avg.per_cycle_active"sv,            // Eligible Warps Per Scheduler
    "smsp__issue_active.avg.per_cycle_active"sv,              // Issued Warp Per Scheduler
};

constexpr std::array kLaunchStats = {
    "launch__block_size"sv,
    "launch__grid_size"sv,
    "launch__registers_per_thread"sv,
    "launch__shared_mem_per_block_static"sv,
    "launch__shared_mem_per_block_dynamic"sv,
    "launch__thread_count"sv,
    "launch__waves_per_multiprocessor"sv,
};

constexpr std::array kOccupancy = {
    "sm__maximum_warps_per_active_cycle_pct"sv,             // Theoretical Occupancy (from the launch)
    "launch__occupancy_limit_warps"sv,                      // Block Limit Warps (from the launch)
    "sm__warps_active.avg.pct_of_peak_sustained_active"sv,  // Achieved Occupancy
    "sm__warps_active.avg.per_cycle_active"sv,              // Achieved Active Warps Per SM
};

constexpr std::array kWorkloadDistribution = {
    "sm__cycles_active.avg"sv,    "sm__cycles_active.max"sv,    "sm__cycles_active.min"sv,
    "smsp__cycles_active.avg"sv,  "smsp__cycles_active.max"sv,  "smsp__cycles_active.min"sv,
    "l1tex__cycles_active.avg"sv, "l1tex__cycles_active.max"sv, "l1tex__cycles_active.min"sv,
    "lts__cycles_active.avg"sv,   "lts__cycles_active.max"sv,   "lts__cycles_active.min"sv,
    "dram__cycles_active.avg"sv,  "dram__cycles_active.max"sv,  "dram__cycles_active.min"sv,
};

// In the order ncu prints its sections.
const std::array<SectionSpec, 7> kSections = {{
    {"SpeedOfLight", "GPU Speed Of Light Throughput", kSpeedOfLight},
    {"ComputeWorkloadAnalysis", "Compute Workload Analysis", kComputeWorkloadAnalysis},
    {"MemoryWorkloadAnalysis", "Memory Workload Analysis", kMemoryWorkloadAnalysis},
    {"SchedulerStats", "Scheduler Statistics", kSchedulerStats},
    {"LaunchStats", "Launch Statistics", kLaunchStats},
    {"Occupancy", "Occupancy", kOccupancy},
    {"WorkloadDistribution", "GPU and Memory Workload Distribution", kWorkloadDistribution},
}};

// ncu's basic set (its default when no --section is given); full is every section gpuprof has.
constexpr std::array kBasicSet = {"LaunchStats"sv, "Occupancy"sv, "SpeedOfLight"sv, "WorkloadDistribution"sv};
constexpr std::array kSetNames = {"basic"sv, "full"sv};

// The launch__* attributes (and the theoretical occupancy), with the unit ncu gives them.
struct LaunchMetricSpec {
  std::string_view name;
  std::string_view unit;
  std::string_view description;
};
constexpr std::array<LaunchMetricSpec, 9> kLaunchMetrics = {{
    {"launch__grid_size", "block", "Blocks in the grid (from the launch)"},
    {"launch__block_size", "thread", "Threads per block (from the launch)"},
    {"launch__thread_count", "thread", "Threads in the grid: grid size times block size (from the launch)"},
    {"launch__registers_per_thread", "register/thread", "Registers each thread of the kernel uses"},
    {"launch__shared_mem_per_block_static", "byte/block", "Static shared memory per block"},
    {"launch__shared_mem_per_block_dynamic", "byte/block",
     "Dynamic shared memory per block (from the launch)"},
    {"launch__waves_per_multiprocessor", "",
     "Grid blocks over the blocks all SMs hold at once (resident blocks per SM times SMs)"},
    {"launch__occupancy_limit_warps", "block", "Blocks per SM the SM's warp limit allows"},
    {"sm__maximum_warps_per_active_cycle_pct", "percent",
     "Theoretical occupancy: warps of the resident blocks over the SM's warp limit"},
}};

constexpr std::array<std::string_view, kLaunchMetrics.size()> LaunchNames() {
  std::array<std::string_view, kLaunchMetrics.size()> names{};
  for (std::size_t i = 0; i < kLaunchMetrics.size(); ++i) names[i] = kLaunchMetrics[i].name;
  return names;
}
constexpr std::array kLaunchMetricNames = LaunchNames();

constexpr std::uint32_t kWarpSize = 32;

std::string JoinNames(auto&& names) {
  std::string out;
  for (std::string_view name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string Quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

// The words of a comma list; an empty text is no words. Empty words are kept (and refused later).
std::vector<std::string_view> Words(std::string_view list) {
  std::vector<std::string_view> words;
  if (list.empty()) return words;
  while (true) {
    const std::size_t comma = list.find(',');
    words.push_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return words;
}

void AddUnique(std::vector<std::string>& out, std::string_view name) {
  if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::size_t SharedPrefix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// A value the launch metric needs that the backend left at 0.
Status Unknown(std::string_view metric, std::string_view what) {
  return UnavailableError(std::string(metric) + ": the backend did not report the launch's " +
                          std::string(what));
}

}  // namespace

std::span<const SectionSpec> Sections() noexcept { return kSections; }

const SectionSpec* FindSection(std::string_view name) noexcept {
  for (const SectionSpec& section : kSections) {
    if (section.name == name) return &section;
  }
  return nullptr;
}

std::vector<std::string_view> SetSections(std::string_view set) {
  std::vector<std::string_view> sections;
  if (set == "basic") {
    // In the catalog's order, as ncu prints them.
    for (const SectionSpec& section : kSections) {
      if (std::find(kBasicSet.begin(), kBasicSet.end(), section.name) != kBasicSet.end())
        sections.push_back(section.name);
    }
  } else if (set == "full") {
    for (const SectionSpec& section : kSections) sections.push_back(section.name);
  }
  return sections;
}

std::span<const std::string_view> SetNames() noexcept { return kSetNames; }

StatusOr<std::vector<std::string>> ExpandMetricRequest(std::string_view metrics, std::string_view sections,
                                                       std::string_view set) {
  std::vector<std::string> out;
  if (!set.empty()) {
    const std::vector<std::string_view> of_set = SetSections(set);
    if (of_set.empty()) {
      return InvalidArgumentError("unknown set " + Quote(set) + "; known sets: " + JoinNames(kSetNames));
    }
    for (std::string_view name : of_set) {
      for (std::string_view metric : FindSection(name)->metrics) AddUnique(out, metric);
    }
  }
  for (std::string_view name : Words(sections)) {
    const SectionSpec* section = FindSection(name);
    if (section == nullptr) {
      std::vector<std::string_view> known;
      for (const SectionSpec& s : kSections) known.push_back(s.name);
      return InvalidArgumentError(
          (name.empty() ? std::string("an empty section name") : "unknown section " + Quote(name)) +
          "; known sections: " + JoinNames(known) + " (case matters, as in ncu)");
    }
    for (std::string_view metric : section->metrics) AddUnique(out, metric);
  }
  // The one grammar and its message (base/metric_name.h).
  if (std::string problem = base::MetricListProblem(metrics); !problem.empty())
    return InvalidArgumentError(std::move(problem));
  for (std::string_view name : Words(metrics)) AddUnique(out, name);
  return out;
}

bool IsLaunchMetric(std::string_view name) noexcept {
  return std::find(kLaunchMetricNames.begin(), kLaunchMetricNames.end(), name) != kLaunchMetricNames.end();
}

std::span<const std::string_view> LaunchMetricNames() noexcept { return kLaunchMetricNames; }

std::vector<MetricInfo> LaunchMetricInfos() {
  std::vector<MetricInfo> infos;
  infos.reserve(kLaunchMetrics.size());
  for (const LaunchMetricSpec& spec : kLaunchMetrics) {
    infos.push_back({std::string(spec.name), std::string(spec.unit), std::string(spec.description)});
  }
  return infos;
}

StatusOr<MetricValue> LaunchMetric(std::string_view name, const device::LaunchShape& shape) {
  const auto spec = std::find_if(kLaunchMetrics.begin(), kLaunchMetrics.end(),
                                 [&](const LaunchMetricSpec& s) { return s.name == name; });
  if (spec == kLaunchMetrics.end()) {
    return NotFoundError(Quote(name) +
                         " is not a launch metric; launch metrics: " + JoinNames(kLaunchMetricNames));
  }
  const double grid = static_cast<double>(shape.grid[0]) * shape.grid[1] * shape.grid[2];
  const double block = static_cast<double>(shape.block[0]) * shape.block[1] * shape.block[2];
  const double warps_per_block = std::ceil(block / kWarpSize);
  double value = 0;
  if (name == "launch__grid_size") {
    if (grid == 0) return Unknown(name, "grid");
    value = grid;
  } else if (name == "launch__block_size") {
    if (block == 0) return Unknown(name, "block");
    value = block;
  } else if (name == "launch__thread_count") {
    if (grid == 0 || block == 0) return Unknown(name, "grid and block");
    value = grid * block;
  } else if (name == "launch__registers_per_thread") {
    if (shape.registers_per_thread == 0) return Unknown(name, "registers per thread");
    value = shape.registers_per_thread;
  } else if (name == "launch__shared_mem_per_block_static") {
    value = static_cast<double>(shape.static_shared_bytes);  // 0 is a real value here
  } else if (name == "launch__shared_mem_per_block_dynamic") {
    value = static_cast<double>(shape.dynamic_shared_bytes);
  } else if (name == "launch__waves_per_multiprocessor") {
    // ncu: the blocks of the grid over the blocks the whole GPU holds at once.
    if (grid == 0 || shape.active_blocks_per_sm == 0 || shape.sm_count == 0)
      return Unknown(name, "grid, blocks per SM (occupancy) or SM count");
    value = grid / (static_cast<double>(shape.active_blocks_per_sm) * shape.sm_count);
  } else if (name == "launch__occupancy_limit_warps") {
    if (block == 0 || shape.max_warps_per_sm == 0) return Unknown(name, "block or warps per SM limit");
    value = std::floor(shape.max_warps_per_sm / warps_per_block);
  } else if (name == "sm__maximum_warps_per_active_cycle_pct") {
    // Theoretical occupancy: the warps the resident blocks hold over the SM's warp limit.
    if (block == 0 || shape.active_blocks_per_sm == 0 || shape.max_warps_per_sm == 0)
      return Unknown(name, "block, blocks per SM (occupancy) or warps per SM limit");
    value = std::min(100.0, 100.0 * shape.active_blocks_per_sm * warps_per_block / shape.max_warps_per_sm);
  }
  MetricValue out;
  out.name = std::string(name);
  out.unit = std::string(spec->unit);
  out.value = value;
  out.passes = 0;
  return out;
}

std::vector<std::string> NearestMetricNames(std::string_view name, std::span<const std::string> known,
                                            std::size_t limit) {
  struct Candidate {
    std::size_t distance;
    std::size_t prefix;
    std::string_view name;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(known.size());
  for (const std::string& k : known) {
    if (k == name) continue;
    candidates.push_back({EditDistance(name, k), SharedPrefix(name, k), k});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.distance != b.distance) return a.distance < b.distance;
    if (a.prefix != b.prefix) return a.prefix > b.prefix;
    return a.name < b.name;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < candidates.size() && out.size() < limit; ++i)
    out.emplace_back(candidates[i].name);
  return out;
}

}  // namespace gpuprof::replay
