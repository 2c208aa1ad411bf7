// ScopedInternalWork: the calling thread is doing gpuprof's own CUDA work (REPLAY_SPEC C1).
//
// For its lifetime, the CUDA calls the thread makes (snapshot copies, hash kernels, cache
// flushes, replay passes 2..N, device queries) are gpuprof's, not the application's:
//
//   { device::cuda::ScopedInternalWork internal;  // CUDA calls below are gpuprof's
//     device.RunChunkOp(...); }
//
// CudaDevice opens one around every driver call it makes; the CUPTI layer asks Active() in its
// API-entry callback and keeps the call's records out of the profile and the inventory
// (cupti/internal_work.h's InternalWorkFilter).
//
// It lives here, not in cupti/, because the layer that makes the calls must be able to mark them:
// device/cuda sits below cupti (cupti -> device/cuda, never the reverse). No CUDA types, so its
// target (gpuprof::internal_work_guard) is always built and links only base. The state is one
// thread_local: link the target into exactly one shared object (libgpuprof.so), or each copy
// would see its own flag.
#pragma once

namespace gpuprof::device::cuda {

// RAII; nests (a depth counter, so a snapshot inside a replay window restores correctly). Cheap:
// one thread_local increment. Not movable: it belongs to the thread and scope that made it.
class ScopedInternalWork {
 public:
  ScopedInternalWork() noexcept;
  ~ScopedInternalWork();
  ScopedInternalWork(const ScopedInternalWork&) = delete;
  ScopedInternalWork& operator=(const ScopedInternalWork&) = delete;

  // True while any ScopedInternalWork lives on the calling thread.
  static bool Active() noexcept;
};

}  // namespace gpuprof::device::cuda
