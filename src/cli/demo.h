// `gpuprof demo`: kernel replay end to end on the host backend (a simulated multi-device runtime
// in host memory), wired the way a Session wires it onto CUDA: an Inventory recording every
// allocation from the first one, an Interceptor installed in the runtime's api table, and a
// Controller receiving the launches.
//
// The workload exercises what replay must get right: an in-place update that would compound
// across passes, a module __device__ counter, a __constant__ table filled after load, a kernel
// writing a few bytes of a large buffer (dirty restore), a nondeterministic kernel (B6), a graph
// launch (declined, R11) and a kernel on every other device (per-device snapshots). Afterwards the
// application's results are read back and compared with what one unreplayed run computes.
#pragma once

#include <iosfwd>

#include "gpuprof/replay.h"
#include "gpuprof/status.h"

namespace gpuprof::cli {

struct DemoOptions {
  replay::ReplayOptions replay;  // must have passed replay::Controller::ValidateOptions
  int devices = 2;               // >= 2: device 0 runs most kernels, every other device one more
};

struct DemoOutcome {
  bool results_match = false;  // every deterministic kernel's results equal an unreplayed run's
};

// Runs the demo and writes its report to `out`; `err` gets a progress line only for a step that
// finishes more than a second into the run. Errors: InvalidArgument for bad options; otherwise
// the status of the runtime call the workload could not go on without, naming the step.
StatusOr<DemoOutcome> RunDemo(const DemoOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuprof::cli
