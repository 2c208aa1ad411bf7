# Read side (src/db/profile_reader, stats, perfetto_export, check). Fixture DBs are built from
# src/db/schema.sql through db's SQLite wrapper (fixture_db.cc), independently of the writer; the
# integration test of the CLI (tests/integration/db_cli_test.cc) uses the same fixtures.
add_library(gpuprof_db_reader_testing STATIC fixture_db.cc mini_json.cc)
target_include_directories(gpuprof_db_reader_testing PUBLIC "${PROJECT_SOURCE_DIR}/tests")
target_link_libraries(gpuprof_db_reader_testing
  PUBLIC gpuprof::base
  PRIVATE gpuprof::db_sqlite gpuprof::db_schema_sql gpuprof::compile_options)

gpuprof_add_gtest(NAME db_reader_test
  SOURCES reader_path_test.cc reader_stats_test.cc reader_export_test.cc reader_check_test.cc
  LIBS gpuprof::db_reader gpuprof_db_reader_testing
  LABELS unit)

# Which op each device task's connection links to (db/task_op_link.h), against the SQL join.
gpuprof_add_gtest(NAME db_task_op_link_test
  SOURCES task_op_link_test.cc
  LIBS gpuprof::db_reader gpuprof_db_reader_testing
  LABELS unit)

# The writer's output through the read side (check, stats, export): built once the writer exists.
if(TARGET gpuprof::db)
  gpuprof_add_gtest(NAME db_reader_writer_compat_test
    SOURCES reader_writer_compat_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing
    LABELS unit)
  # Range replay's results per range (db/range_stats.h) on DBs the writer made.
  gpuprof_add_gtest(NAME db_range_stats_test
    SOURCES range_stats_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing
    LABELS unit)
  # The cluster summary of `gpuprof stats DIR` (db/cluster_stats.h) on rank DBs the writer made,
  # and their Perfetto export (one process per rank).
  # The finding rules (db/findings.h) over DBs that plant one problem each, and clean twins.
  gpuprof_add_gtest(NAME db_findings_test
    SOURCES findings_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing
    LABELS unit)
  # The kernel rules (tiny grids; with replay counters, low occupancy and DRAM below peak).
  gpuprof_add_gtest(NAME db_findings_counters_test
    SOURCES findings_counters_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing
    LABELS unit)
  # `gpuprof diff`'s comparison (db/diff.h) over two profiles planted with SQL (diff_fixture.h).
  gpuprof_add_gtest(NAME db_diff_test
    SOURCES diff_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing
    LABELS unit)
  # The warm-up decision (db/warmup.h), shared by the findings, the diff and the cluster summary.
  gpuprof_add_gtest(NAME db_warmup_test
    SOURCES warmup_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing
    LABELS unit)
  # The readers of device work (stats, findings, report, export, diff) on a profile with a
  # device-linked mstx range against its twin without the range's task (db/device_work.h).
  gpuprof_add_gtest(NAME db_device_range_readers_test
    SOURCES device_range_readers_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing gpuprof::db_sqlite
    LABELS unit)
  gpuprof_add_gtest(NAME db_cluster_stats_test
    SOURCES cluster_stats_test.cc
    LIBS gpuprof::db gpuprof::db_reader gpuprof_db_reader_testing gpuprof::db_sqlite
    LABELS unit)
endif()

# analysis.db (src/db/analysis_db.h): written by the writer's Finalize, checked by check.
if(TARGET gpuprof::db)
  gpuprof_add_gtest(NAME db_analysis_test
    SOURCES analysis_db_test.cc
    LIBS gpuprof::db gpuprof::db_analysis gpuprof::db_reader gpuprof_db_reader_testing gpuprof::db_sqlite
    LABELS unit)
endif()
