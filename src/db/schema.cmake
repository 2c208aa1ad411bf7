# The profile database's one DDL source, src/db/schema.sql, embedded into gpuprof_db_schema_sql
# (schema_sql.*) for the writer, the checker and the test fixtures; the Python benchmark peer reads
# the file itself. Editing schema.sql re-runs CMake (CMAKE_CONFIGURE_DEPENDS), which rewrites the
# generated include only when the text changed.
file(READ "${CMAKE_CURRENT_SOURCE_DIR}/schema.sql" GPUPROF_SCHEMA_SQL)
if(GPUPROF_SCHEMA_SQL MATCHES "\\)gpuprof_sql\"")
  message(FATAL_ERROR "src/db/schema.sql contains the raw-string delimiter )gpuprof_sql\"")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/schema.sql")
file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/generated/db/schema_sql.inc"
     CONTENT "R\"gpuprof_sql(@GPUPROF_SCHEMA_SQL@)gpuprof_sql\"\n" @ONLY)

# thread_names.cc, lost_records.cc: META_DATA gpuprof_thread_names and gpuprof_lost_records, encoded
# by the writer and decoded by export and stats; here because both sides link this library and
# neither links the other.
add_library(gpuprof_db_schema_sql STATIC schema_sql.cc thread_names.cc lost_records.cc)
add_library(gpuprof::db_schema_sql ALIAS gpuprof_db_schema_sql)
target_include_directories(gpuprof_db_schema_sql PRIVATE "${CMAKE_CURRENT_BINARY_DIR}/generated")
target_link_libraries(gpuprof_db_schema_sql
  PUBLIC gpuprof::base
  PRIVATE gpuprof::compile_options)
