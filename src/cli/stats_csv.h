// `gpuprof stats --csv[=TABLE]`: instead of the summary, one table of every DB under PATH as CSV
// (RFC 4180, one header line, a `rank` column first). Formatting only: the rows come from db's
// reader. The replay tables (metrics, ranges) have the columns docs/db_gpuprof_tables.md lists; the
// others (ops, kernels, steps, findings) are the rows of `stats --format json` with its fields as
// columns (docs/json_output.md), every row (no --top).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace gpuprof::cli {

// The tables --csv takes: metrics, ranges, ops, kernels, steps, findings.
std::vector<std::string> StatsCsvTables();

// `gpuprof stats --csv=TABLE` (one of StatsCsvTables()); `include_warmup` as stats' flag, for the
// findings. The exit code stats would give.
int RunStatsTableCsv(const std::string& path, std::string_view table, bool include_warmup, std::ostream& out,
                     std::ostream& err);

// `gpuprof stats --csv` (also `gpuprof replay --csv`): every replayed launch's metric values under
// PATH as CSV on `out`, problems on `err`; the exit code stats would give.
int RunStatsCsv(const std::string& path, std::ostream& out, std::ostream& err);

// `gpuprof stats --csv=ranges`: every launch of every replayed range under PATH (db/range_stats.h)
// as CSV, in the order of the text summary's range tables.
int RunRangeCsv(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace gpuprof::cli
