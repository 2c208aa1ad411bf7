# ProfileWriter (src/db/writer.cmake): golden rows per table, the consumers' joins, the schema against
# src/db/schema.sql, DB_SPEC.md's key facts and ../shared/tools/schema_check.py, the file lifecycle
# (crash safety included), string interning.
set(_gpuprof_writer_test_defs
  GPUPROF_TEST_VERSION="${PROJECT_VERSION}"
  GPUPROF_SCHEMA_CHECK_PY="${PROJECT_SOURCE_DIR}/../shared/tools/schema_check.py")
foreach(_suite tables joins schema)
  gpuprof_add_gtest(NAME db_writer_${_suite}_test SOURCES writer_${_suite}_test.cc
                    LIBS gpuprof::db gpuprof::db_schema_sql gpuprof::db_sqlite LABELS unit)
  target_compile_definitions(db_writer_${_suite}_test PRIVATE ${_gpuprof_writer_test_defs})
endforeach()
gpuprof_add_gtest(NAME db_string_table_test SOURCES writer_string_table_test.cc
                  LIBS gpuprof::db LABELS unit)
# The lifecycle suite has the concurrent-submitter and fork/SIGKILL cases: also run under TSan.
gpuprof_add_gtest(NAME db_writer_lifecycle_test SOURCES writer_lifecycle_test.cc
                  LIBS gpuprof::db gpuprof::db_sqlite LABELS "unit;concurrency")
target_compile_definitions(db_writer_lifecycle_test PRIVATE ${_gpuprof_writer_test_defs})
# The side files the writer fills on a second thread and merges (src/db/side_file.h).
gpuprof_add_gtest(NAME db_side_file_test SOURCES side_file_test.cc
                  LIBS gpuprof::db gpuprof::db_sqlite LABELS "unit;concurrency")
