// The pieces the finding rules are built from: steps' figures, intervals clipped to steps, the
// device's idle gaps and what the host was doing in them (findings_internal.h).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "db/db_constants.h"
#include "db/findings_internal.h"
#include "db/string_lookup.h"

namespace gpuprof::db::findings_internal {

std::string Ms(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, ns < 1'000'000 ? "%.3f" : "%.1f", static_cast<double>(ns) / 1e6);
  return text;
}

std::string StepName(std::int64_t id) { return id < 0 ? "the run" : "step " + std::to_string(id); }

void KeepLongest(std::vector<FindingEvidence>& evidence, std::size_t max) {
  auto longer = [](const FindingEvidence& a, const FindingEvidence& b) {
    return a.duration_ns != b.duration_ns ? a.duration_ns > b.duration_ns : a.start_ns < b.start_ns;
  };
  if (evidence.size() > max) {
    std::nth_element(evidence.begin(), evidence.begin() + static_cast<std::ptrdiff_t>(max), evidence.end(),
                     longer);
    evidence.resize(max);
  }
  std::sort(evidence.begin(), evidence.end(), longer);
}

RuleResult FromSteps(const FindingContext& ctx, std::int64_t RankStepStats::*figure) {
  RuleResult result;
  for (const RankStepStats* step : ctx.steps) {
    const std::int64_t ns = step->*figure;
    if (ns <= 0) continue;
    result.at_stake_ns += ns;
    ++result.occurrences;
    result.evidence.push_back({StepName(step->id), step->id, step->start_ns, ns, 0, ""});
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  return result;
}

Status NameHostActivity(const FindingContext& ctx,
                        std::initializer_list<std::vector<FindingEvidence>*> lists) {
  std::vector<FindingEvidence*> evidence;
  for (std::vector<FindingEvidence>* list : lists) {
    for (FindingEvidence& e : *list) evidence.push_back(&e);
  }
  if (evidence.empty()) return OkStatus();
  // One scan per table for all the evidence: the shortest row covering each one's midpoint.
  std::vector<std::int64_t> mids;
  for (const FindingEvidence* e : evidence) mids.push_back(e->start_ns + e->duration_ns / 2);
  const auto [low, high] = std::minmax_element(mids.begin(), mids.end());
  std::vector<std::vector<std::string>> doing(evidence.size());
  for (const char* table : {"PYTORCH_API", "CANN_API"}) {
    GPUPROF_ASSIGN_OR_RETURN(const bool has, ctx.reader.HasColumns(table, {"startNs", "endNs", "name"}));
    if (!has) continue;
    const bool ops = std::string_view(table) == "PYTORCH_API";
    // A CUDA call has two rows of one span: the node-level one ('launch') and, kRuntimeConnectionOffset
    // above it, the runtime one that names the call ('cudaLaunchKernel'); on a tie the latter wins.
    GPUPROF_ASSIGN_OR_RETURN(const bool has_connection, ctx.reader.HasColumns(table, {"connectionId"}));
    const std::string runtime_row =
        !ops && has_connection ? "connectionId >= " + std::to_string(kRuntimeConnectionOffset) : "0";
    GPUPROF_ASSIGN_OR_RETURN(
        Query rows,
        ctx.reader.Prepare("SELECT startNs, endNs, " + StringValueSql(ctx.reader, "name") + ", " +
                           runtime_row + " FROM " + table + " WHERE startNs <= ?1 AND endNs >= ?2"));
    rows.BindInt(1, *high);
    rows.BindInt(2, *low);
    std::vector<std::int64_t> best(evidence.size(), INT64_MAX);
    std::vector<std::string> names(evidence.size());
    while (true) {
      GPUPROF_ASSIGN_OR_RETURN(bool row, rows.Step());
      if (!row) break;
      const std::int64_t start = rows.Int(0);
      const std::int64_t end = rows.Int(1);
      const bool runtime = rows.Int(3) != 0;
      for (std::size_t i = 0; i < evidence.size(); ++i) {
        if (start > mids[i] || end < mids[i] || end - start > best[i] || (end - start == best[i] && !runtime))
          continue;
        const std::string_view name = rows.Text(2);
        if (ops && name.rfind("ProfilerStep#", 0) == 0) continue;  // the step itself says nothing
        best[i] = end - start;
        names[i] = std::string(name);
      }
    }
    for (std::size_t i = 0; i < evidence.size(); ++i) {
      if (best[i] != INT64_MAX) doing[i].push_back(names[i]);
    }
  }
  for (std::size_t i = 0; i < evidence.size(); ++i) {
    FindingEvidence& e = *evidence[i];
    e.context = doing[i].empty() ? "the host in no op or CUDA call" : "the host in " + doing[i].front();
    if (doing[i].size() == 2) e.context += ", " + doing[i].back();
  }
  return OkStatus();
}

StatusOr<RuleResult> FromIntervals(const FindingContext& ctx, const std::string& sql, bool with_context) {
  RuleResult result;
  GPUPROF_ASSIGN_OR_RETURN(Query query, ctx.reader.Prepare(sql));
  StepClipper clipper(ctx.steps);  // the rows come by start
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    clipper.Clip(
        query.Int(1), query.Int(2), [&](const RankStepStats& step, std::int64_t from, std::int64_t inside) {
          result.at_stake_ns += inside;
          ++result.occurrences;
          result.evidence.push_back({std::string(query.Text(0)), step.id, from, inside, query.Int(3), ""});
          // Bounded memory over millions of rows: trim to the longest now and then.
          if (result.evidence.size() >= 64 * ctx.max_evidence + 1024)
            KeepLongest(result.evidence, ctx.max_evidence);
        });
  }
  KeepLongest(result.evidence, ctx.max_evidence);
  if (!with_context || result.evidence.empty()) return result;
  GPUPROF_ASSIGN_OR_RETURN(const bool has_ops,
                           ctx.reader.HasColumns("PYTORCH_API", {"startNs", "endNs", "globalTid", "name"}));
  if (!has_ops) return result;
  // The innermost op around each kept row on its thread (few rows: the evidence); an op row (the
  // empty_cache op) is not its own context.
  GPUPROF_ASSIGN_OR_RETURN(
      Query innermost,
      ctx.reader.Prepare(
          "SELECT " + StringValueSql(ctx.reader, "p.name") +
          " AS n FROM PYTORCH_API p WHERE p.globalTid = ?1 AND p.startNs <= ?2 AND p.endNs >= ?3 "
          "AND n NOT LIKE 'ProfilerStep#%' AND n <> ?4 ORDER BY p.endNs - p.startNs LIMIT 1"));
  for (FindingEvidence& e : result.evidence) {
    innermost.Reset();
    innermost.BindInt(1, e.global_tid);
    innermost.BindInt(2, e.start_ns);
    innermost.BindInt(3, e.start_ns + e.duration_ns);
    innermost.BindText(4, e.name);
    GPUPROF_ASSIGN_OR_RETURN(bool inside, innermost.Step());
    if (inside) e.context = "in " + std::string(innermost.Text(0));
  }
  return result;
}

StatusOr<RuleResult> FromNamedRows(const FindingContext& ctx, const std::string& table,
                                   const std::string& filter, bool with_context) {
  GPUPROF_ASSIGN_OR_RETURN(const bool has,
                           ctx.reader.HasColumns(table, {"startNs", "endNs", "globalTid", "name"}));
  if (!has) return RuleResult{};
  const std::string sql =
      ctx.reader.HasStringValues()
          ? "SELECT (SELECT value FROM STRING_IDS WHERE id = t.name), t.startNs, t.endNs, t.globalTid FROM " +
                table + " t WHERE t.name IN (SELECT id FROM STRING_IDS WHERE " + filter +
                ") ORDER BY t.startNs"
          : "SELECT * FROM (SELECT CAST(name AS TEXT) AS value, startNs, endNs, globalTid FROM " + table +
                ") WHERE " + filter + " ORDER BY startNs";
  return FromIntervals(ctx, sql, with_context);
}

std::int64_t Median(std::vector<std::int64_t> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  return *mid;
}

}  // namespace gpuprof::db::findings_internal
