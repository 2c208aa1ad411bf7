/* libgpuprof_torch.so's C entry points (its whole ABI), called from Python through ctypes
 * (python/gpuprof/_native.py) and implemented in src/torch/torch_hooks.cc. The records go to the
 * session of libgpuprof.so, which the caller starts first (gpuprof_start, gpuprof_c.h).
 *
 * gpuprof_torch_enable_v1: installs one global RecordFunction callback (every thread): each
 *   finished op, ProfilerStep#N and record_function range included, becomes a PYTORCH_API row
 *   with its OS thread, epoch-ns times, sequence number and forward-thread id, plus input shapes
 *   and dtypes when record_shapes. With profile_memory, the allocator's reports (allocated and
 *   reserved totals, per event) become MEMORY_RECORD / OP_MEMORY rows; they are hooked on the
 *   calling thread and the threads that inherit its thread-local state (autograd's). Enables
 *   nest (a script's profile inside `gpuprof run`'s): inputs are recorded while any enable asked
 *   for shapes, memory while any asked for it. With with_stack, each op on a thread that runs
 *   Python also gets the Python call stack ("file(line): function", innermost first), read
 *   through the interpreter's C API (looked up in the process, no Python.h). Returns 0, 1 when
 *   torch refused, 2 when with_stack was asked but the process has no Python C API.
 * gpuprof_torch_disable_v1: releases the latest enable (call it on the thread that enabled); the
 *   last one removes the hooks. Returns 0.
 * gpuprof_torch_ops_dropped_v1: ops the session did not take (not started, buffer full).
 * gpuprof_torch_memory_step_aside_v1: call on a thread before torch's own profiler starts there.
 *   torch keeps one profiler state per thread and refuses to start while the memory reporter holds
 *   it; this takes the reporter off the calling thread (its memory events are not recorded until
 *   gpuprof_torch_memory_resume_v1). Returns 1 when it stepped aside, 0 when the thread had no
 *   reporter, -1 when it could not (something else was pushed above it).
 * gpuprof_torch_memory_resume_v1: call on the same thread after torch's profiler stopped: the
 *   reporter returns while memory is still asked for and the slot is free. Returns 1 when it
 *   returned, 0 when it had nothing to do (or the slot is still taken), -1 on failure.
 *
 * Thread-safety: enable/disable are serialized; the callbacks run on torch's threads. */
#ifndef GPUPROF_GPUPROF_TORCH_H_
#define GPUPROF_GPUPROF_TORCH_H_

#include <stdint.h>

#define GPUPROF_TORCH_API __attribute__((visibility("default")))

#ifdef __cplusplus
#define GPUPROF_TORCH_NOEXCEPT noexcept
extern "C" {
#else
#define GPUPROF_TORCH_NOEXCEPT
#endif

GPUPROF_TORCH_API int gpuprof_torch_enable_v1(int record_shapes, int profile_memory,
                                              int with_stack) GPUPROF_TORCH_NOEXCEPT;
GPUPROF_TORCH_API int gpuprof_torch_disable_v1(void) GPUPROF_TORCH_NOEXCEPT;
GPUPROF_TORCH_API uint64_t gpuprof_torch_ops_dropped_v1(void) GPUPROF_TORCH_NOEXCEPT;
GPUPROF_TORCH_API int gpuprof_torch_memory_step_aside_v1(void) GPUPROF_TORCH_NOEXCEPT;
GPUPROF_TORCH_API int gpuprof_torch_memory_resume_v1(void) GPUPROF_TORCH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif  // GPUPROF_GPUPROF_TORCH_H_
