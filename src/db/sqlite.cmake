# The one SQLite wrapper (sqlite_util.*): RAII connection and statement, Status errors, the batched
# inserter. The writer and the reader both link it; its header does not include sqlite3.h.
add_library(gpuprof_db_sqlite STATIC sqlite_util.cc)
add_library(gpuprof::db_sqlite ALIAS gpuprof_db_sqlite)
target_link_libraries(gpuprof_db_sqlite
  PUBLIC gpuprof::base
  PRIVATE SQLite::SQLite3 gpuprof::compile_options)
