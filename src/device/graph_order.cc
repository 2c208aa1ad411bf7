#include "device/graph_order.h"

#include <algorithm>
#include <string>

namespace gpuprof::device {

StatusOr<std::vector<std::size_t>> TopologicalOrder(std::size_t node_count,
                                                    std::span<const GraphEdge> edges) {
  std::vector<std::size_t> waiting(node_count, 0);
  std::vector<std::vector<std::size_t>> dependents(node_count);
  for (const GraphEdge& edge : edges) {
    if (edge.from >= node_count || edge.to >= node_count) {
      return InvalidArgumentError("an edge from node " + std::to_string(edge.from) + " to node " +
                                  std::to_string(edge.to) + " leaves a graph of " +
                                  std::to_string(node_count) + " nodes");
    }
    ++waiting[edge.to];
    dependents[edge.from].push_back(edge.to);
  }
  std::vector<std::size_t> order;
  order.reserve(node_count);
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < node_count; ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const auto lowest = std::min_element(ready.begin(), ready.end());
    const std::size_t next = *lowest;
    ready.erase(lowest);
    order.push_back(next);
    for (std::size_t dependent : dependents[next]) {
      if (--waiting[dependent] == 0) ready.push_back(dependent);
    }
  }
  if (order.size() != node_count) return InvalidArgumentError("the dependencies form a cycle");
  return order;
}

}  // namespace gpuprof::device
