// `gpuprof export --format perfetto`: profile DBs as Chrome trace-event JSON (the JSON object
// format, {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[...]}) that ui.perfetto.dev and
// chrome://tracing open.
//
// Layout: per DB (rank) one process per host pid with a track per thread (torch ops, runtime API
// calls, a "Python GC" track), and one process per device with a track per stream (kernels,
// copies, memsets), a "gpuprof replay" track (replay passes, declined launches) and memory
// counters. Flows: op -> device task (CONNECTION_IDS joined to TASK.connectionId), forward ->
// backward and enqueue -> dequeue (CONNECTION_IDS groups of more than one op). MSTX ranges are
// async slices, MSTX markers instants. Every string goes through base::AppendJsonString (base/json.h):
// a name with control characters or invalid UTF-8 still gives valid JSON.
//
// Hardware counters (GPUPROF_REPLAY_METRIC): a replayed launch's values go into the args of its
// kernel slice (the TASK row of pass 1, by connectionId) and of its "[pass 1]" replay slice, as
// "metrics": {"<name> (<unit>)": value, ...} (numbers, so trace processor queries can compare them;
// the unit suffix is left out for a metric without one), with "counter status" when the launch has
// no or only some counters. A DB without the table or the counter columns exports as before.
//
// Timestamps are microseconds with three decimals, relative to `time_base_ns` (the earliest
// session start, floored to a whole second; written to otherData): trace viewers parse ts as a
// double, which cannot hold epoch microseconds to the nanosecond, but holds hours of relative
// time exactly.
//
// Memory: every table is read with one statement, row by row, into a buffered writer; joins and
// sorts run in SQLite (out of core). What is kept is bounded by the number of processes, threads
// and streams (a launch's metrics are looked up per slice through GpuprofReplayMetricIndex). The output is
// written to "<output>.tmp.<pid>" and renamed over `output_path` only when complete; on any error the
// temporary file is removed and `output_path` is untouched.
//
// Thread-safety: none needed (a free function; opens its own readers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/progress.h"
#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

inline constexpr std::string_view kPerfettoFormat = "perfetto";

// The formats `gpuprof export --format` accepts.
std::vector<std::string_view> ExportFormats();

struct ExportSummary {
  std::uint64_t dbs = 0;
  std::uint64_t slices = 0;        // X events
  std::uint64_t flows = 0;         // s/f pairs
  std::uint64_t counters = 0;      // C events
  std::uint64_t instants = 0;      // i events
  std::uint64_t async_ranges = 0;  // b/e pairs
  std::uint64_t bytes = 0;         // size of the written file
  std::int64_t time_base_ns = 0;
  // SQLite virtual-machine steps of the statements that streamed the rows: the work the export
  // did, whatever the machine's speed (the tests check that it grows linearly with the rows).
  // SQLite counts per statement in 32 bits: past 2^32 steps of one statement the sum wraps.
  std::uint64_t sqlite_steps = 0;
  std::vector<std::string> notes;  // tables that were absent and so not exported
};

// Errors: the readers' (bad input), InvalidArgument/NotFound for an output path that cannot be
// created, DataLoss/Internal for a write that fails (disk full). `progress` (may be null) gets a
// stage per DB and table part and one unit per row read.
StatusOr<ExportSummary> ExportPerfettoTrace(const std::vector<ProfileDbFile>& dbs,
                                            const std::string& output_path,
                                            base::Progress* progress = nullptr);

// `ns` as microseconds with exactly three decimals ("-1.500", "0.001", "12.000").
void AppendMicros(std::string* out, std::int64_t ns);

}  // namespace gpuprof::db
