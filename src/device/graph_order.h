// The order a graph's nodes run in when they run one at a time (node-by-node replay, HostPlatform's
// graph launch): device-neutral, so that the CUDA hook and the host device order their graphs the
// same way.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::device {

// `from` must run before `to`; both index a graph's nodes.
struct GraphEdge {
  std::size_t from = 0;
  std::size_t to = 0;
};

// Kahn's algorithm over `node_count` nodes: among the nodes whose dependencies have all run, the
// lowest index goes first, so the same graph always gets the same order whatever the order of its
// edges. InvalidArgument when an edge names a node outside the graph or the edges form a cycle
// (a node depending on itself included). Thread-safe (no state).
StatusOr<std::vector<std::size_t>> TopologicalOrder(std::size_t node_count, std::span<const GraphEdge> edges);

}  // namespace gpuprof::device
