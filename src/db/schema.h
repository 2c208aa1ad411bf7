// The schema of ascend_pytorch_profiler[_<rank>].db: created from src/db/schema.sql, the one DDL
// source (schema_sql.h): DB_SPEC.md "Exact DDL" plus gpuprof's own GPUPROF_* tables
// (docs/db_gpuprof_tables.md). Tables, enum rows and SCHEMA_VERSION rows are written at open; the
// optional device tables of DB_SPEC are not created (gpuprof collects none of them).
//
// Indexes are created with the tables, before the bulk load, although the usual advice is the
// opposite. Measured on the 2M-task benchmark: device tasks arrive nearly in start-time order, so
// every TaskIndex insert lands on the index's rightmost pages and keeping it current costs
// ~0.2-0.4 s over the whole stream, while CREATE INDEX at Finalize took 1.3-1.5 s (its sorter
// spills to temp storage, which must stay in memory because gpuprof writes nothing outside the
// output directory, and memory temp files are slow inside a process with a large heap). The other
// indexes are on tables gpuprof fills rarely or not at all.
#pragma once

#include <span>
#include <string_view>

#include "db/sqlite_util.h"

namespace gpuprof::db {

// META_DATA names of gpuprof's own rows.
inline constexpr std::string_view kMetaGpuprofVersion = "gpuprof_version";
inline constexpr std::string_view kMetaGpuprofConfig = "gpuprof_config";

// gpuprof's own tables.
inline constexpr std::string_view kReplayKernelTable = "GPUPROF_REPLAY_KERNEL";
inline constexpr std::string_view kReplayPassTable = "GPUPROF_REPLAY_PASS";

// Every table the writer creates, in creation order (format tables first, then GPUPROF_*).
std::span<const std::string_view> SchemaTableNames();

// Creates every table (format and GPUPROF_*), fills the enum tables and the SCHEMA_VERSION rows of
// META_DATA.
Status CreateSchema(const Connection& conn);

// TaskIndex, CommunicationTaskIndex (the format's) and the kernel indexes of GPUPROF_REPLAY_PASS and
// GPUPROF_REPLAY_METRIC
// (IF NOT EXISTS: harmless to call again).
Status CreateIndexes(const Connection& conn);

}  // namespace gpuprof::db
