// The findings of db/findings.h as the CLI shows them: a text block (stats, run's summary) and the
// JSON document of `gpuprof stats --format json` (docs/json_output.md, versioned). Formatting
// only: every figure comes from db::ComputeFindings / db::ComputeStats.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "db/cluster_findings.h"
#include "db/findings.h"
#include "db/stats.h"

namespace gpuprof::cli {

// The version of the JSON shape; raised when a field changes meaning or goes away.
inline constexpr int kStatsJsonVersion = 1;

// Nanoseconds as milliseconds in JSON: a number, not text (3 decimals: microseconds).
double JsonMs(std::int64_t ns);

// "Findings" block: one line per finding with its numbers, its longest evidence and the fix; what
// was left out as warm-up. `limit` findings at most (0: all).
void PrintFindings(std::ostream& out, const db::FindingsReport& report, std::size_t limit = 0);

// "Across the ranks" block of `gpuprof stats DIR`: the cluster findings and the most skewed
// collectives with their bus bandwidth; its JSON ("across_ranks" of the stats document).
void PrintClusterFindings(std::ostream& out, const db::ClusterFindings& across);
nlohmann::ordered_json ClusterFindingsJson(const db::ClusterFindings& across);

// One finding / one profile's stats and findings, as documented in docs/json_output.md.
nlohmann::ordered_json FindingsJson(const db::FindingsReport& report);
nlohmann::ordered_json StatsJson(const db::ProfileStats& stats, const db::FindingsReport& findings);
// StatsJson's arrays of ops (`top_ops`), kernels (`top_kernels`) and steps (`steps`): the rows
// `stats --csv=ops|kernels|steps` print too (stats_csv.h), so both show the same figures.
nlohmann::ordered_json OpsJson(const db::ProfileStats& stats);
nlohmann::ordered_json KernelsJson(const db::ProfileStats& stats);
nlohmann::ordered_json StepsJson(const db::ProfileStats& stats);

}  // namespace gpuprof::cli
