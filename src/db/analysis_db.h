// analysis.db: the derived tables torch_npu writes beside each profile DB
// (ASCEND_PROFILER_OUTPUT/analysis.db, DB_SPEC.md §3.11), which msprof-analyze's cluster mode and
// its communication recipes read: StepTraceTime (per step: computing, communication, overlap,
// free, bubble, ...) and the communication analyzer's CommAnalyzerTime, CommAnalyzerBandwidth and
// CommAnalyzerMatrix (per COMMUNICATION_OP row). Filled from the finished profile DB, so its figures
// are those of `gpuprof stats` (the step split is cluster_stats.h's ComputeRankStats). How each
// column is filled, and what gpuprof cannot know (a collective's wait apart from its transfer, the
// links it used): docs/db_gpuprof_tables.md, "analysis.db".
//
// Thread-safety: free functions; WriteAnalysisDb opens its own connections. Errors: Status naming
// the file; a failed write leaves only `<analysis.db>.partial`, never the final name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/db_constants.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// Reads the finished profile at `profile_db_path` and writes `analysis_db_path` complete or not at
// all (under `<analysis_db_path>.partial`, fsync, rename). An existing analysis.db is replaced: it
// is the profile's own (the writer made the directory).
Status WriteAnalysisDb(const std::string& profile_db_path, const std::string& analysis_db_path);

// ---- The pieces, pure, for the tests ------------------------------------------------------------

// One COMMUNICATION_OP row as analysis.db needs it.
struct CommunicationRecord {
  std::string op_name;     // "hcom_allReduce__921_0_1"
  std::string group_name;  // the group as COMMUNICATION_OP names it ("default_pg")
  std::string transport;   // the backend that ran it, upper case ("GLOO", "NCCL"), "UNKNOWN" if not known
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::optional<std::uint64_t> bytes;  // count x element size; none when either is unknown
  std::string step;                    // "step<id>" of the step it starts in, "step" when none
};

// The op's kind as msprof-analyze keys the matrix: the second '_' part, lower case
// ("hcom_allReduce__921_0_1" -> "allreduce"); the whole name when it has no '_'.
std::string CommunicationKind(std::string_view op_name);
// "p2p" for hcom_send*, hcom_receive*, hcom_batchsendrecv* (any case), else "collective".
std::string_view CommunicationType(std::string_view op_name);

// One CommAnalyzerMatrix row (transit_size in MB, transit_time in ms, bandwidth in GB/s).
struct MatrixRow {
  std::string hccl_op_name;  // "<kind>-top1", "-middle", "-bottom1..3", "-total"
  std::string group_name;    // the hashed group name (GroupNameHash, as text)
  std::int64_t src_rank = 0;
  std::int64_t dst_rank = 0;
  std::string transport;
  std::optional<double> transit_size_mb;
  double transit_time_ms = 0;
  std::optional<double> bandwidth_gbps;
  std::string step;
  std::string type;     // "collective" or "p2p"
  std::string op_name;  // the op behind a top/middle/bottom row; "" (NULL) for -total
};

// The matrix torch_npu's analyzer writes, from what one rank sees: per step, type, group and kind,
// the ops by bandwidth (top1 the lowest, bottom1..3 the highest, middle the median) and their total,
// each on the one link gpuprof observes, the rank to itself (`local_rank` both ends): NCCL and
// gloo do not report which peers a collective's bytes went to.
std::vector<MatrixRow> CommunicationMatrix(const std::vector<CommunicationRecord>& ops,
                                           std::int64_t local_rank);

}  // namespace gpuprof::db
