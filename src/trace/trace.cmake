# gpuprof_trace: the record model (records.h, header only) and the per-thread append buffers that
# producers fill and the DB writer drains (trace_buffer.*). Depends only on base.
add_library(gpuprof_trace STATIC trace_buffer.cc)
add_library(gpuprof::trace ALIAS gpuprof_trace)
target_link_libraries(gpuprof_trace
  PUBLIC gpuprof::base
  PRIVATE gpuprof::compile_options)
