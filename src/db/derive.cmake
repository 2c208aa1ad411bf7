# Derived tables (CONNECTION_IDS, STEP_TIME, OP_MEMORY) as pure functions over compact indexes the
# writer keeps; no SQLite, so their tests link nothing else.
add_library(gpuprof_db_derive STATIC derive.cc)
add_library(gpuprof::db_derive ALIAS gpuprof_db_derive)
target_link_libraries(gpuprof_db_derive
  PUBLIC gpuprof::trace gpuprof::base
  PRIVATE gpuprof::compile_options)
