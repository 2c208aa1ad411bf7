// `gpuprof replay --query-metrics [--chip CHIP] [--query-device N] [--json]`: the metrics
// `--metrics` can name. The launch metrics come from the catalog (replay/metric_catalog.h; no
// backend, no GPU); the counter metrics from libgpuprof.so, which the CLI loads with dlopen and
// asks through gpuprof_query_metrics_v1 (the CLI itself never links the session or CUDA).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "gpuprof/status.h"
#include "replay/counter_backend.h"

namespace gpuprof::cli {

struct QueryMetricsOptions {
  std::string library;  // libgpuprof.so's path
  int device = 0;
  std::string chip;  // "" : ask the device
  bool json = false;
};

// Parses gpuprof_query_metrics_v1's text: a JSON array of {"name", "unit", "description"} objects.
StatusOr<std::vector<replay::MetricInfo>> ParseMetricsJson(std::string_view json);

// Asks `library` for the counter metrics (Unavailable, with the library's message, when it cannot).
StatusOr<std::vector<replay::MetricInfo>> QueryCounterMetrics(const QueryMetricsOptions& options);

// Prints the launch metrics and `counters` (or, when it failed, why there are none) on `out`, as a
// table or as one JSON object ({"launch_metrics": [...], "counter_metrics": [...] or null,
// "counter_error": "..." or null}).
void PrintMetrics(std::ostream& out, const QueryMetricsOptions& options,
                  const StatusOr<std::vector<replay::MetricInfo>>& counters);

}  // namespace gpuprof::cli
