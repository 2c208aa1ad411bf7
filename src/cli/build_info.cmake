# Writes build_info.h for `gpuprof --version` (run at every build by src/cli/CMakeLists.txt, so a
# new commit shows without reconfiguring; configure_file leaves the header untouched, and main.cc
# uncompiled, while nothing changed). Inputs: SOURCE_DIR, OUTPUT, TEMPLATE, and the build options
# GPUPROF_BUILD_TYPE, GPUPROF_CUDA, GPUPROF_TORCH.
#
# The commit is the source tree's own: "unknown" where it is not a git checkout (a release tarball,
# a .deb built from one) or git is missing, and never the commit of a repository around it.
set(GPUPROF_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --show-toplevel
                  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE _top RESULT_VARIABLE _top_result
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_top_result EQUAL 0)
    file(REAL_PATH "${_top}" _top)
    file(REAL_PATH "${SOURCE_DIR}" _source)
  endif()
  if(_top_result EQUAL 0 AND _top STREQUAL _source)
    execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE _commit RESULT_VARIABLE _commit_result
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_commit_result EQUAL 0 AND NOT _commit STREQUAL "")
      set(GPUPROF_GIT_COMMIT "${_commit}")
      # Tracked files changed since the commit (untracked ones do not make a build differ).
      execute_process(COMMAND "${GIT_EXECUTABLE}" status --porcelain --untracked-files=no
                      WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE _changes ERROR_QUIET)
      if(NOT _changes STREQUAL "")
        string(APPEND GPUPROF_GIT_COMMIT "-dirty")
      endif()
    endif()
  endif()
endif()
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
