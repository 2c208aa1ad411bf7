// Nsight Compute's metric-name grammar, the one copy: unit__counter[.rollup[.submetric]]. Here in
// base because both the settings table (the --metrics row's check) and replay's metric catalog
// (ExpandMetricRequest) need it, and base cannot see replay. Whether a GPU has the metric is the
// counter backend's to say; this decides only the form.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpuprof::base {

// A letter first, "__" between a non-empty unit and a non-empty counter, then any number of
// non-empty .parts; letters, digits and '_' only: "dram__bytes_read.sum",
// "sm__maximum_warps_per_active_cycle_pct". Not "dram_bytes.sum", "x__y..z", "regex:x__y".
bool IsMetricName(std::string_view name) noexcept;

// The problem with a comma list of metric names, in words that say what is expected, e.g.
// "\"dram bytes\" is not a metric name; expected a comma list of ...", or "an empty entry; ...";
// empty when every entry is a metric name (and for the empty list: no metrics). The one message
// for a bad name, whoever checks the list.
std::string MetricListProblem(std::string_view list);

}  // namespace gpuprof::base
