# Derived tables (src/db/derive.*): golden vectors from synthetic ops, launches and allocator events,
# a brute-force cross-check, and 1M-row runs that make a quadratic algorithm show in the CI time.
gpuprof_add_gtest(NAME db_derive_test SOURCES derive_test.cc LIBS gpuprof::db_derive LABELS unit)
