// One unit of replay inside the controller's replay window (ARCHITECTURE.md: one replay window,
// four shapes): a kernel or a whole graph (the executor's RunPass), one kernel node of a graph run
// node by node (RunGraphNode). (A range of launches runs its passes in range_replay.cc: it has
// no executor for the window.) The window restores its snapshot before
// every pass but the first; the unit says what runs around each restore and in each pass.
#pragma once

#include <functional>

#include "device/device.h"
#include "gpuprof/status.h"

namespace gpuprof::replay {

struct ReplayUnit {
  // Runs after every restore, before the pass: a graph node runs the nodes before it again, so
  // that every pass sees the inputs the node sees in the graph. Empty: nothing.
  std::function<Status()> after_restore;
  // Timing pass `pass` (from 1), waited for. Pass 1 is the application's own work.
  std::function<StatusOr<device::PassTiming>(int pass)> run;
  // A counter pass in two steps, so that the counters see the unit alone: what goes before it,
  // then, between the counter backend's BeginPass and EndPass, the unit's work, waited for.
  std::function<Status()> prepare_counter_pass;
  std::function<Status(int pass)> run_counter_pass;
  // Once the passes are over and the clocks released, before the window's final restore (a whole
  // graph: the executor's EndGraphPasses). Empty: nothing.
  std::function<Status()> end_passes;
  // A whole graph's description: each pass's kernel-node durations are named from it.
  const device::GraphDescription* graph = nullptr;
};

}  // namespace gpuprof::replay
