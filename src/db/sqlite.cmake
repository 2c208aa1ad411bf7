# The one SQLite wrapper (sqlite_util.*): RAII connection and statement, Status errors, the batched
# inserter, and the names it gives SQLite for paths past its length limit (sqlite_file_name.*). The
# writer and the reader both link it; its headers do not include sqlite3.h.
add_library(gpuprof_db_sqlite STATIC sqlite_util.cc sqlite_file_name.cc)
add_library(gpuprof::db_sqlite ALIAS gpuprof_db_sqlite)
target_link_libraries(gpuprof_db_sqlite
  PUBLIC gpuprof::base
  PRIVATE SQLite::SQLite3 gpuprof::compile_options)
