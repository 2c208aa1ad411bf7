// The pieces the finding rules are built from (findings_evidence.cc), shared by the files that hold
// rules' evaluate functions. Not part of db's interface: only findings*.cc include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/findings.h"

namespace gpuprof::db::findings_internal {

// Milliseconds, with three decimals below 1 ms (launch-sized gaps) and one above.
std::string Ms(std::int64_t ns);
// "step 4", or "the run" for -1.
std::string StepName(std::int64_t id);
std::int64_t Median(std::vector<std::int64_t> values);

// Keeps the longest `max` of `evidence`, longest first (ties by start).
void KeepLongest(std::vector<FindingEvidence>& evidence, std::size_t max);

// Step-level rules: a figure of the split per considered step.
RuleResult FromSteps(const FindingContext& ctx, std::int64_t RankStepStats::*figure);

// The longest stretches inside the considered steps with no device task running, longest first;
// each named by its step, with what the host was doing halfway through it: the innermost op (any
// thread) and the CUDA call running then.
StatusOr<std::vector<FindingEvidence>> LongestGaps(const FindingContext& ctx);

// Interval rules: rows (name, startNs, endNs, globalTid) of `sql`, by start, clipped to the
// considered steps. `with_context`: name the innermost op running on the row's thread.
StatusOr<RuleResult> FromIntervals(const FindingContext& ctx, const std::string& sql, bool with_context);

// Rows (name, startNs, endNs, globalTid) of `table` whose name matches `filter` (an SQL condition on
// `value`), by start. Names are matched in STRING_IDS once, not looked up row by row: over millions
// of rows the filter is a set membership test.
std::string NamedRowsSql(const ProfileReader& reader, const std::string& table, const std::string& filter);

}  // namespace gpuprof::db::findings_internal
