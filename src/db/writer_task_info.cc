// The end of Finalize: COMPUTE_TASK_INFO's op columns, once PYTORCH_API and CONNECTION_IDS are
// complete (their last rows come from side files merged after the final commit).
//
// What reads them (msprof-analyze v26.1.0):
// - inputShapes: prof_exports/compute_op_sum_export.py joins STRING_IDS on it and
//   cluster_analyse/recipes/compute_op_sum groups by the value; a NULL (or an id without a row)
//   drops the kernel, and with every kernel dropped the recipe fails ("Length mismatch").
//   compare_tools' npu_profiling_db_parser.py reads it with inputFormats/inputDataTypes.
// - opState: advisor/common/profiling/op_summary.py reads STRING_IDS(opState) and counts
//   "static" ops; none makes it report every operator as dynamic-shape. A CUDA kernel is compiled
//   ahead of time for any shape it is launched with: "static" in the format's terms.
// A kernel launched inside a torch op (TASK.connectionId = CONNECTION_IDS.connectionId,
// CONNECTION_IDS.id = PYTORCH_API.connectionId; the innermost op when several link it) carries that
// op's inputShapes and inputDtypes ids; every other string column holds the id of ''.
#include <cstdint>
#include <string>

#include "db/writer_rows.h"

namespace gpuprof::db::internal {

Status RowSink::FillComputeTaskOpColumns() {
  {
    // No kernel, nothing to fill: and no '' or 'static' row in STRING_IDS.
    GPUPROF_ASSIGN_OR_RETURN(
        Statement any,
        Statement::Prepare(conn_, "SELECT 1 FROM COMPUTE_TASK_INFO LIMIT 1", Statement::Use::kTransient));
    GPUPROF_ASSIGN_OR_RETURN(const bool has_kernels, any.Step());
    if (!has_kernels) return OkStatus();
  }
  GPUPROF_RETURN_IF_ERROR(Begin());
  GPUPROF_ASSIGN_OR_RETURN(const std::uint64_t empty, EmptyId(StringSpace::kDevice));
  GPUPROF_ASSIGN_OR_RETURN(const std::uint64_t static_state, Id(StringSpace::kDevice, "static"));
  const std::string e = std::to_string(empty);
  const std::string invalid = std::to_string(kInvalidStringId);
  // An op's shapes, or '' where the op recorded none (4294967295: --no-record-shapes).
  const auto or_empty = [&](const std::string& column) {
    return "CASE WHEN " + column + " IS NULL OR " + column + " = " + invalid + " THEN " + e + " ELSE " +
           column + " END";
  };
  GPUPROF_RETURN_IF_ERROR(conn_.Exec(
      "CREATE TEMP TABLE gpuprof_api_op (id INTEGER PRIMARY KEY, shapes INTEGER, dtypes INTEGER, "
      "startNs INTEGER);"
      "INSERT OR REPLACE INTO temp.gpuprof_api_op SELECT connectionId, inputShapes, inputDtypes, startNs "
      "FROM PYTORCH_API WHERE connectionId IS NOT NULL;"
      // One op per correlation id: ORDER BY start, so the innermost (latest-starting) one stays.
      "CREATE TEMP TABLE gpuprof_corr_op (corr INTEGER PRIMARY KEY, shapes INTEGER, dtypes INTEGER);"
      "INSERT OR REPLACE INTO temp.gpuprof_corr_op SELECT c.connectionId, a.shapes, a.dtypes "
      "FROM CONNECTION_IDS c JOIN temp.gpuprof_api_op a ON a.id = c.id ORDER BY a.startNs;"
      "CREATE TEMP TABLE gpuprof_task_op (task INTEGER PRIMARY KEY, shapes INTEGER, dtypes INTEGER);"
      "INSERT OR REPLACE INTO temp.gpuprof_task_op SELECT t.globalTaskId, o.shapes, o.dtypes "
      "FROM TASK t JOIN temp.gpuprof_corr_op o ON o.corr = t.connectionId "
      "WHERE t.globalTaskId IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO);"
      "UPDATE COMPUTE_TASK_INFO SET "
      "inputShapes = COALESCE((SELECT " +
      or_empty("shapes") + " FROM temp.gpuprof_task_op WHERE task = COMPUTE_TASK_INFO.globalTaskId), " + e +
      "), inputDataTypes = COALESCE((SELECT " + or_empty("dtypes") +
      " FROM temp.gpuprof_task_op WHERE task = COMPUTE_TASK_INFO.globalTaskId), " + e + "), inputFormats = " +
      e + ", outputFormats = " + e + ", outputDataTypes = " + e + ", outputShapes = " + e +
      ", attrInfo = " + e + ", hf32Eligible = " + e + ", opState = " + std::to_string(static_state) +
      ";"
      "DROP TABLE temp.gpuprof_task_op; DROP TABLE temp.gpuprof_corr_op; DROP TABLE temp.gpuprof_api_op;"));
  return Commit();
}

}  // namespace gpuprof::db::internal
