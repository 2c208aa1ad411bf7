# Third-party libraries, all from Debian packages (tools/packages.txt: what the CLI, libraries and
# torch hooks need; tools/packages-test.txt: GoogleTest and what the tests run).
# Nothing is vendored and nothing is downloaded at configure or build time.
find_package(Threads REQUIRED)

find_path(GPUPROF_XXHASH_INCLUDE_DIR xxhash.h)
find_library(GPUPROF_XXHASH_LIBRARY xxhash)
if(NOT GPUPROF_XXHASH_INCLUDE_DIR OR NOT GPUPROF_XXHASH_LIBRARY)
  message(FATAL_ERROR "xxHash not found: install it with `apt-get install libxxhash-dev`.")
endif()
add_library(gpuprof_xxhash UNKNOWN IMPORTED)
set_target_properties(gpuprof_xxhash PROPERTIES
  IMPORTED_LOCATION "${GPUPROF_XXHASH_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${GPUPROF_XXHASH_INCLUDE_DIR}")

find_path(GPUPROF_CLI11_INCLUDE_DIR CLI/CLI.hpp)
if(NOT GPUPROF_CLI11_INCLUDE_DIR)
  message(FATAL_ERROR "CLI11 not found: install it with `apt-get install libcli11-dev`.")
endif()
add_library(gpuprof_cli11 INTERFACE)
target_include_directories(gpuprof_cli11 SYSTEM INTERFACE "${GPUPROF_CLI11_INCLUDE_DIR}")

# JSON output (`stats --format json`): header-only, so nothing is linked or shipped.
find_package(nlohmann_json 3.2 QUIET)
if(NOT nlohmann_json_FOUND)
  message(FATAL_ERROR "nlohmann-json not found: install it with `apt-get install nlohmann-json3-dev`.")
endif()

find_package(SQLite3)
if(NOT SQLite3_FOUND)
  message(FATAL_ERROR "SQLite3 not found: install it with `apt-get install libsqlite3-dev`.")
endif()

if(GPUPROF_BUILD_TESTS)
  find_package(GTest)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "GPUPROF_BUILD_TESTS is ON but GoogleTest was not found: install the packages in "
                        "tools/packages-test.txt (bash tools/install_packages.sh tools/packages-test.txt), or "
                        "configure with -DGPUPROF_BUILD_TESTS=OFF")
  endif()
  include(GoogleTest)
endif()
