# analysis.db (torch_npu's derived tables beside each profile DB): computed from the finished
# profile through the read side (cluster_stats' step split, the reader), so the writer's Finalize
# links it and `gpuprof stats` and analysis.db share one computation.
add_library(gpuprof_db_analysis STATIC analysis_db.cc)
add_library(gpuprof::db_analysis ALIAS gpuprof_db_analysis)
target_link_libraries(gpuprof_db_analysis
  PUBLIC gpuprof::base
  PRIVATE gpuprof::db_reader gpuprof_db_derive gpuprof::db_sqlite gpuprof::db_schema_sql SQLite::SQLite3
          gpuprof::compile_options)
