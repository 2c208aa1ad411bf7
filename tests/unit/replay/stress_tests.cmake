# Randomized and multi-threaded tests of the replay engine on the host platform, included from
# this folder's CMakeLists.txt. The property test runs GPUPROF_PROPERTY_ITERATIONS random
# workloads from GPUPROF_PROPERTY_SEED (both optional; the seed is printed). The concurrency test
# is also run under ThreadSanitizer (label `concurrency`).
gpuprof_add_gtest(NAME replay_property_test
  SOURCES replay_property_test.cc
  LIBS gpuprof::replay gpuprof::device_host
  LABELS unit)

gpuprof_add_gtest(NAME replay_concurrency_test
  SOURCES replay_concurrency_test.cc
  LIBS gpuprof::replay gpuprof::device_host
  LABELS "unit;concurrency")
