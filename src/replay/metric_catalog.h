// Nsight Compute's names for what `gpuprof replay --metrics / --section / --set` collects: the
// sections (SpeedOfLight, MemoryWorkloadAnalysis, ComputeWorkloadAnalysis, Occupancy, LaunchStats,
// ...) with the metric lists ncu's section files use, the sets (basic, full), and the launch__*
// attributes gpuprof supplies from the launch itself (no counter pass). No CUDA: the CLI, the
// session's configuration and the controller all use it.
//
// Thread-safety: the tables are immutable; every function is pure.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_name.h"
#include "device/device.h"
#include "gpuprof/replay.h"
#include "gpuprof/status.h"
#include "replay/counter_backend.h"

namespace gpuprof::replay {

struct SectionSpec {
  std::string_view name;   // "SpeedOfLight", as ncu's --section takes it
  std::string_view title;  // "GPU Speed Of Light Throughput"
  std::span<const std::string_view> metrics;
};

// Every section gpuprof knows, in ncu's order.
std::span<const SectionSpec> Sections() noexcept;
// By name (case-sensitive, as ncu); nullptr when unknown.
const SectionSpec* FindSection(std::string_view name) noexcept;
// The sections of a set ("basic", "full"), in Sections()' order; empty for an unknown set.
std::vector<std::string_view> SetSections(std::string_view set);
// Every set's name ("basic", "full").
std::span<const std::string_view> SetNames() noexcept;
// Whether `name` has Nsight Compute's metric form: base's grammar, the one copy.
using base::IsMetricName;

// The ordered, de-duplicated metric list for a request: the sections of `set`, then `sections`,
// then `metrics` (each a comma list; empty: nothing from it). InvalidArgument naming the unknown
// section or set and listing the known ones (names are case-sensitive; an empty list entry is an
// error). Metric names are checked for form only here (base::MetricListProblem, the settings row's
// check and message too); whether the GPU has them is the backend's.
StatusOr<std::vector<std::string>> ExpandMetricRequest(std::string_view metrics, std::string_view sections,
                                                       std::string_view set);

// True for the launch__* attributes (and the theoretical occupancy) gpuprof supplies itself.
bool IsLaunchMetric(std::string_view name) noexcept;
// Every launch metric's name, for --query-metrics and suggestions.
std::span<const std::string_view> LaunchMetricNames() noexcept;
// The launch metrics with their units and descriptions, in LaunchMetricNames()' order.
std::vector<MetricInfo> LaunchMetricInfos();
// The value of a launch metric for `shape`, with its unit and passes 0; NotFound for another name,
// Unavailable when `shape` lacks what the metric needs (a field the backend left 0).
// launch__occupancy_limit_warps and sm__maximum_warps_per_active_cycle_pct assume 32-thread warps.
StatusOr<MetricValue> LaunchMetric(std::string_view name, const device::LaunchShape& shape);

// Up to `limit` names from `known` nearest to `name` (edit distance, then the longer shared prefix,
// then alphabetical; `name` itself is left out), for "unknown metric X; did you mean ...".
std::vector<std::string> NearestMetricNames(std::string_view name, std::span<const std::string> known,
                                            std::size_t limit = 3);

}  // namespace gpuprof::replay
