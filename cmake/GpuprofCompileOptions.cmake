# Warning and sanitizer flags shared by every gpuprof target (through gpuprof_compile_options).
add_library(gpuprof_compile_options INTERFACE)
add_library(gpuprof::compile_options ALIAS gpuprof_compile_options)
target_compile_options(gpuprof_compile_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion -Wnull-dereference
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(GPUPROF_WARNINGS_AS_ERRORS)
  target_compile_options(gpuprof_compile_options INTERFACE -Werror)
endif()

if(GPUPROF_SANITIZE)
  string(REPLACE ";" "," _gpuprof_sanitizers "${GPUPROF_SANITIZE}")
  add_compile_options(-fsanitize=${_gpuprof_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_gpuprof_sanitizers})
endif()
