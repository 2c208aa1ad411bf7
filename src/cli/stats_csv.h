// `gpuprof stats --csv[=TABLE]`: instead of the summary, one table of every DB under PATH as CSV
// (RFC 4180, one header line, a `rank` column first). The columns of each table are documented in
// docs/db_gpuprof_tables.md. Formatting only: the rows come from db's reader.
#pragma once

#include <iosfwd>
#include <string>

namespace gpuprof::cli {

// `gpuprof stats --csv` (also `gpuprof replay --csv`): every replayed launch's metric values under
// PATH as CSV on `out`, problems on `err`; the exit code stats would give.
int RunStatsCsv(const std::string& path, std::ostream& out, std::ostream& err);

// `gpuprof stats --csv=ranges`: every launch of every replayed range under PATH (db/range_stats.h)
// as CSV, in the order of the text summary's range tables.
int RunRangeCsv(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace gpuprof::cli
