# What `cmake --install` puts under the prefix (and cpack packs, cmake/GpuprofPackaging.cmake):
#
#   bin/gpuprof                                  the CLI
#   lib/libgpuprof.so, lib/libgpuprof_inject.so  the session library and the CUDA injection shim
#   lib/libgpuprof_torch.so                      the PyTorch hooks (with GPUPROF_ENABLE_TORCH)
#   lib/python3.X/dist-packages/gpuprof/         the Python package, X the system python3's minor
#                                                version: Debian's python3 looks there under /usr
#                                                and /usr/local both (and so does a venv made with
#                                                --system-site-packages); lib/python3/dist-packages
#                                                only under /usr
#   share/man/man1/gpuprof.1                     from `gpuprof --help` by help2man (when installed)
#   share/bash-completion/completions/gpuprof
#
# Every lookup between them is relative, so the tree works wherever it is installed or moved:
# the CLI finds the injection library at <dir of gpuprof>/../lib and the Python package at
# <dir of gpuprof>/../${GPUPROF_INSTALL_PYTHONDIR} (src/cli/run_command.cc); the package finds the
# libraries through the _install_layout.py written here; libgpuprof_inject.so and
# libgpuprof_torch.so find libgpuprof.so beside themselves (dladdr, RUNPATH $ORIGIN).
#
# Everything installed is built by the gpuprof_runtime target, so
# `cmake --build <dir> --target gpuprof_runtime && cmake --install <dir>` is enough; install does
# not build the tests and benchmarks first (CMAKE_SKIP_INSTALL_ALL_DEPENDENCY).

# Not GNUInstallDirs' multiarch libdir: the CLI looks for its libraries in ../lib beside bin/.
set(GPUPROF_INSTALL_LIBDIR "lib")
find_program(GPUPROF_INSTALL_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT GPUPROF_INSTALL_PYTHON)
  find_program(GPUPROF_INSTALL_PYTHON NAMES python3)
endif()
set(GPUPROF_INSTALL_PYTHON_VERSION "")
if(GPUPROF_INSTALL_PYTHON)
  execute_process(COMMAND "${GPUPROF_INSTALL_PYTHON}" -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE GPUPROF_INSTALL_PYTHON_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _gpuprof_python_rc ERROR_QUIET)
  if(NOT _gpuprof_python_rc EQUAL 0)
    set(GPUPROF_INSTALL_PYTHON_VERSION "")
  endif()
endif()
if(GPUPROF_INSTALL_PYTHON_VERSION)
  set(_gpuprof_pythondir "lib/python${GPUPROF_INSTALL_PYTHON_VERSION}/dist-packages")
else()
  set(_gpuprof_pythondir "lib/python3/dist-packages")
endif()
set(GPUPROF_INSTALL_PYTHONDIR "${_gpuprof_pythondir}" CACHE STRING
    "Where under the prefix the gpuprof Python package is installed (default: Debian's lib/python3.X/dist-packages of /usr/bin/python3)")
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# Only run_libraries.cc looks for the package (one file recompiles when the setting changes).
set_property(SOURCE "${PROJECT_SOURCE_DIR}/src/cli/run_libraries.cc" DIRECTORY "${PROJECT_SOURCE_DIR}/src/cli" APPEND PROPERTY
  COMPILE_DEFINITIONS GPUPROF_INSTALL_PYTHONDIR="${GPUPROF_INSTALL_PYTHONDIR}")

# Installed binaries carry only relative RUNPATHs ($ORIGIN, set on the libraries themselves), never
# the build tree's.
set_target_properties(gpuprof_cli PROPERTIES INSTALL_RPATH "")
install(TARGETS gpuprof_cli RUNTIME DESTINATION bin)
set(_gpuprof_libraries gpuprof_session gpuprof_inject)
if(TARGET gpuprof_torch)
  list(APPEND _gpuprof_libraries gpuprof_torch)
endif()
install(TARGETS ${_gpuprof_libraries} LIBRARY DESTINATION "${GPUPROF_INSTALL_LIBDIR}")

# The Python package, and the relative path from it to the libraries.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/python/gpuprof" DESTINATION "${GPUPROF_INSTALL_PYTHONDIR}"
        FILES_MATCHING PATTERN "*.py"
        PATTERN "__pycache__" EXCLUDE)
file(RELATIVE_PATH _gpuprof_package_to_lib "/prefix/${GPUPROF_INSTALL_PYTHONDIR}/gpuprof"
     "/prefix/${GPUPROF_INSTALL_LIBDIR}")
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/python/_install_layout.py" CONTENT
"\"\"\"Written by `cmake --install` (cmake/GpuprofInstall.cmake): where the installed tree keeps
gpuprof's native libraries, relative to this package's folder. A checkout has no such file.\"\"\"

LIB_DIR = \"${_gpuprof_package_to_lib}\"
")
install(FILES "${PROJECT_BINARY_DIR}/python/_install_layout.py"
        DESTINATION "${GPUPROF_INSTALL_PYTHONDIR}/gpuprof")

install(FILES "${PROJECT_SOURCE_DIR}/tools/gpuprof.bash-completion"
        DESTINATION share/bash-completion/completions RENAME gpuprof)

# The man page, from the CLI's own --help and --version, at build time (part of gpuprof_runtime).
find_program(GPUPROF_HELP2MAN help2man)
if(GPUPROF_SANITIZE)
  # A sanitizer build is for tests, never installed; its CLI is not run at build time.
  message(STATUS "GPUPROF_SANITIZE is set: no man page")
elseif(GPUPROF_HELP2MAN)
  set(_gpuprof_man "${PROJECT_BINARY_DIR}/share/man/man1/gpuprof.1")
  add_custom_command(OUTPUT "${_gpuprof_man}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${PROJECT_BINARY_DIR}/share/man/man1"
    COMMAND "${GPUPROF_HELP2MAN}" --no-info --no-discard-stderr
            --name "a CUDA/PyTorch profiler with kernel replay"
            --include "${PROJECT_SOURCE_DIR}/tools/gpuprof.h2m"
            --output "${_gpuprof_man}" "$<TARGET_FILE:gpuprof_cli>"
    DEPENDS gpuprof_cli "${PROJECT_SOURCE_DIR}/tools/gpuprof.h2m"
    COMMENT "help2man: gpuprof.1"
    VERBATIM)
  add_custom_target(gpuprof_man ALL DEPENDS "${_gpuprof_man}")
  add_dependencies(gpuprof_runtime gpuprof_man)
  install(FILES "${_gpuprof_man}" DESTINATION share/man/man1)
else()
  message(STATUS "help2man not found: no man page is built or installed (Debian: apt-get install help2man)")
endif()
