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
// With an output directory, the launches (as API calls and device tasks, pass 1 only: passes
// 2..N live in gpuprof's replay tables, rule C1) and the replay results are written into an
// ascend_pytorch_profiler DB in the layout of docs/architecture.md, so stats/export/check have input.
#pragma once

#include <iosfwd>
#include <string>

#include "gpuprof/replay.h"
#include "gpuprof/status.h"

namespace gpuprof::cli {

struct DemoOptions {
  replay::ReplayOptions replay;  // must have passed replay::Controller::ValidateOptions
  int devices = 2;               // >= 2: device 0 runs most kernels, every other device one more
  std::string output_dir;        // non-empty: write the session and replay results into a DB there
};

struct DemoOutcome {
  bool results_match = false;  // every deterministic kernel's results equal an unreplayed run's
  std::string db_path;         // the finalized DB, when output_dir was given
};

// Runs the demo and writes its report to `out`; `err` gets a progress line only for a step that
// finishes more than a second into the run. Errors: InvalidArgument for bad options; otherwise
// the status of the runtime call the workload could not go on without, naming the step.
StatusOr<DemoOutcome> RunDemo(const DemoOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gpuprof::cli
