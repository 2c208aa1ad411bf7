// What every RecordFunction-based profiler pays before it records anything: a global callback
// that asks for the op's inputs and does nothing. torch_overhead.py builds this against the torch
// it measures (the same flags as tools/build_torch_hooks.sh) and runs it as the variant `floor`,
// so each run shows how much of PyTorch's profiler's added time is torch's own dispatch cost,
// which gpuprof's hooks pay as well (bench/README.md).
//
//   gpuprof_bench_floor_set(1);    // callback on, inputs requested (as record_shapes does)
//   gpuprof_bench_floor_set(0);    // callback on, no inputs
//   gpuprof_bench_floor_set(-1);   // callback off
#ifndef NDEBUG
#error "build with -DNDEBUG, as torch's release libraries are (src/torch/torch_hooks.cc explains why)"
#endif

#include <ATen/record_function.h>

#include <memory>

namespace {

at::CallbackHandle g_handle = 0;

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction&) { return nullptr; }
void OnEnd(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

extern "C" __attribute__((visibility("default"))) int gpuprof_bench_floor_set(int mode) noexcept {
  try {
    if (g_handle != 0) at::removeCallback(g_handle);
    g_handle = 0;
    if (mode < 0) return 0;
    at::RecordFunctionCallback callback(&OnStart, &OnEnd);
    callback.needsInputs(mode > 0);
    g_handle = at::addGlobalCallback(callback);
    return 0;
  } catch (...) {
    return 1;
  }
}
