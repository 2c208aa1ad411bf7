# The profile DB writer: schema, string interning, background writer thread, output layout.
# SQLite stays private: nothing in db's public headers (profile_writer.h, output_layout.h) names it.
add_library(gpuprof_db STATIC
  output_layout.cc
  profile_writer.cc
  writer_threads.cc
  writer_rows.cc
  writer_op_lane.cc
  writer_kernels.cc
  writer_derived.cc
  writer_collectives.cc
  writer_run_info.cc
  writer_finalize.cc
  writer_task_info.cc
  writer_mstx_device.cc
  schema.cc
  side_file.cc
  string_table.cc)
add_library(gpuprof::db ALIAS gpuprof_db)
target_link_libraries(gpuprof_db
  PUBLIC gpuprof::trace gpuprof::base
  PRIVATE gpuprof_db_derive gpuprof::db_analysis gpuprof::db_sqlite gpuprof::db_schema_sql SQLite::SQLite3 gpuprof::compile_options)
# META_DATA's gpuprof_version and profiler_info json's gpuprof_version.
target_compile_definitions(gpuprof_db PRIVATE GPUPROF_VERSION_STRING="${PROJECT_VERSION}")
