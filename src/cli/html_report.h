// `gpuprof report`: one self-contained HTML page (no network request of any kind: styles, charts
// and the little script that sorts tables are inline; charts are SVG drawn here) of where the time
// and the memory of a profile went. Not to be confused with report.h, the text tables that `stats`
// and `replay` print.
//
// Sections (each a <section id=...>): lost (only when records were lost before the DB, per source),
// overview (the run, top-line figures, what to look at first),
// steps (db/cluster_stats' split per step: compute, communication not overlapped, idle), timeline
// (the median and the slowest step: ops per thread, tasks per stream, marks, memory; zoomable), ops and
// kernels (sortable tables, the ops that launched the kernels, the launch delay histogram), collected
// (the top ops' call stacks, the time per nn.Module by its path: html_collected.h),
// memory (the curve per device, the peaks), replay (pass spread, determinism, restore, declines,
// counters) and, for several DBs, cluster (a step-time heat map per rank, the slowest rank per
// step, compute and communication per rank). Figures a test reads carry data-figure="name".
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "db/cluster_findings.h"
#include "db/cluster_stats.h"
#include "db/report_data.h"

namespace gpuprof::cli {

struct HtmlReportInput {
  std::string path;                             // what the user named
  std::vector<db::ReportDb> dbs;                // in the resolver's order (by rank)
  const db::ClusterStats* cluster = nullptr;    // two or more DBs
  const db::ClusterFindings* across = nullptr;  // their findings across the ranks, when computed
};

// The page.
std::string RenderHtmlReport(const HtmlReportInput& input);

// `text` for HTML text and attribute values: & < > " ' escaped, control bytes as U+FFFD.
std::string HtmlEscape(std::string_view text);

}  // namespace gpuprof::cli
