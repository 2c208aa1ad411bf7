#include "device/cuda/scoped_internal_work.h"

namespace gpuprof::device::cuda {
namespace {

// Depth, not a bool, so nested scopes (a snapshot inside a replay window) restore correctly.
thread_local int internal_depth = 0;

}  // namespace

ScopedInternalWork::ScopedInternalWork() noexcept { ++internal_depth; }
ScopedInternalWork::~ScopedInternalWork() { --internal_depth; }
bool ScopedInternalWork::Active() noexcept { return internal_depth > 0; }

}  // namespace gpuprof::device::cuda
