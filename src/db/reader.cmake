# Read side (gpuprof stats / export / check): path resolution, a read-only SQLite reader (on the
# SQLite wrapper the writer uses too, gpuprof::db_sqlite), the statistics (per DB, and across the
# rank DBs of a cluster), the Perfetto (Chrome trace-event JSON) exporter and the schema/join
# checker. It does not link the writer; check reads the expected schema from src/db/schema.sql, the
# DDL source the writer uses too (gpuprof::db_schema_sql).
add_library(gpuprof_db_reader STATIC
  profile_reader.cc
  stats.cc
  collected.cc
  range_stats.cc
  device_roofs.cc
  cluster_stats.cc
  perfetto_export.cc
  perfetto_export_device.cc
  perfetto_export_host.cc
  trace_args.cc
  check.cc
  check_expectations.cc
  check_schema.cc
  check_rows.cc
  report_data.cc
  task_op_link.cc
  findings.cc
  findings_evidence.cc
  findings_launch.cc
  cluster_findings.cc
  diff.cc)
add_library(gpuprof::db_reader ALIAS gpuprof_db_reader)
target_link_libraries(gpuprof_db_reader
  PUBLIC gpuprof::base gpuprof::db_sqlite
  PRIVATE gpuprof::db_schema_sql SQLite::SQLite3 gpuprof::compile_options)
