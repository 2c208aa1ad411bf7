#include "device/graph_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace gpuprof::device {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Where each node stands in `order`.
std::vector<std::size_t> PositionsOf(const std::vector<std::size_t>& order) {
  std::vector<std::size_t> position(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  return position;
}

TEST(TopologicalOrderTest, EveryNodeComesAfterItsDependencies) {
  // A diamond whose edges list the later nodes first: 3 -> {1, 4} -> 0 -> 2.
  const std::vector<GraphEdge> edges = {{0, 2}, {4, 0}, {1, 0}, {3, 4}, {3, 1}};
  StatusOr<std::vector<std::size_t>> order = TopologicalOrder(5, edges);
  ASSERT_TRUE(order.ok()) << order.status().message();
  ASSERT_EQ(order->size(), 5u);
  const std::vector<std::size_t> position = PositionsOf(*order);
  for (const GraphEdge& edge : edges) {
    EXPECT_LT(position[edge.from], position[edge.to]) << "node " << edge.from << " before node " << edge.to;
  }
}

TEST(TopologicalOrderTest, LowestReadyIndexGoesFirstWhateverTheEdgeOrder) {
  // Node 2 waits for 3; 0, 1 and 3 are ready at once and run by index.
  EXPECT_THAT(*TopologicalOrder(4, std::vector<GraphEdge>{{3, 2}}), ElementsAre(0, 1, 3, 2));
  const std::vector<GraphEdge> forward = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  const std::vector<GraphEdge> backward = {{2, 3}, {1, 3}, {0, 2}, {0, 1}};
  EXPECT_THAT(*TopologicalOrder(4, forward), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(*TopologicalOrder(4, backward), ElementsAre(0, 1, 2, 3));
}

TEST(TopologicalOrderTest, NodesWithoutEdgesKeepTheirOrderAndAnEmptyGraphHasNone) {
  EXPECT_THAT(*TopologicalOrder(3, {}), ElementsAre(0, 1, 2));
  EXPECT_TRUE(TopologicalOrder(0, {})->empty());
}

TEST(TopologicalOrderTest, ACycleIsReported) {
  StatusOr<std::vector<std::size_t>> cycle =
      TopologicalOrder(3, std::vector<GraphEdge>{{0, 1}, {1, 2}, {2, 1}});
  ASSERT_FALSE(cycle.ok());
  EXPECT_EQ(cycle.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cycle.status().message()), HasSubstr("cycle"));
  EXPECT_FALSE(TopologicalOrder(1, std::vector<GraphEdge>{{0, 0}}).ok()) << "a node depending on itself";
}

TEST(TopologicalOrderTest, AnEdgeOutsideTheGraphIsReported) {
  StatusOr<std::vector<std::size_t>> order = TopologicalOrder(2, std::vector<GraphEdge>{{0, 2}});
  ASSERT_FALSE(order.ok());
  EXPECT_THAT(std::string(order.status().message()), HasSubstr("node 2"));
}

}  // namespace
}  // namespace gpuprof::device
