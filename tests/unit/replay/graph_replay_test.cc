// Replay of graph launches (issue 24) on the host backend: whole-graph and node-by-node replay,
// graph memory-allocation nodes, the fallbacks and their reasons, and relaunching.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/hash.h"
#include "base/logging.h"
#include "device/host/host_platform.h"
#include "fakes/replay_rig.h"
#include "replay/controller.h"

namespace gpuprof::replay {
namespace {

using device::DevicePtr;
using device::GraphNodeType;
using device::host::FaultPoint;
using device::host::GraphId;
using device::host::GraphNodeSpec;
using device::host::Kernel;
using device::host::KernelContext;
using gpuprof::testing::ReplayRig;

constexpr std::size_t kWords = 1024;  // 4 KiB per buffer, one chunk each

std::uint32_t* Words(DevicePtr p) { return reinterpret_cast<std::uint32_t*>(p); }

// Per kernel name: the hash of the bytes each run read before writing, by pass.
class InputLog {
 public:
  void Record(const std::string& name, const KernelContext& context, DevicePtr data) {
    std::lock_guard<std::mutex> lock(mu_);
    runs_[name].push_back({context.pass, base::HashBytes(Words(data), kWords * sizeof(std::uint32_t))});
  }
  std::vector<std::pair<int, std::uint64_t>> runs(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_[name];
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    runs_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::pair<int, std::uint64_t>>> runs_;
};

GraphNodeSpec KernelNode(std::string name, std::function<void(const KernelContext&)> body,
                         std::vector<std::size_t> dependencies) {
  GraphNodeSpec node;
  node.type = GraphNodeType::kKernel;
  node.kernel = Kernel{std::move(name), std::move(body)};
  node.dependencies = std::move(dependencies);
  return node;
}

// An in-place update chain: scale_a (a = a*3+1), copy of a's first half into b (memcpy), bump_b
// (b += a), a memset of a's first word to 7, then finish_b (b = b*5 + a). Each step reads what the
// one before wrote, so a pass that saw other inputs, or a step run twice, changes the result.
GraphId MakeChainOn(device::host::HostPlatform& platform, DevicePtr a, DevicePtr b, InputLog* log) {
  std::vector<GraphNodeSpec> nodes;
  nodes.push_back(KernelNode("scale_a",
                             [=](const KernelContext& c) {
                               log->Record("scale_a", c, a);
                               for (std::size_t i = 0; i < kWords; ++i) Words(a)[i] = Words(a)[i] * 3 + 1;
                             },
                             {}));
  GraphNodeSpec copy;
  copy.type = GraphNodeType::kMemcpy;
  copy.dst = b;
  copy.src = a;
  copy.bytes = kWords * sizeof(std::uint32_t) / 2;
  copy.dependencies = {0};
  nodes.push_back(copy);
  nodes.push_back(KernelNode("bump_b",
                             [=](const KernelContext& c) {
                               log->Record("bump_b", c, b);
                               for (std::size_t i = 0; i < kWords; ++i) Words(b)[i] += Words(a)[i];
                             },
                             {1}));
  GraphNodeSpec set;
  set.type = GraphNodeType::kMemset;
  set.dst = a;
  set.value = 7;
  set.bytes = 4;
  set.dependencies = {2};
  nodes.push_back(set);
  nodes.push_back(KernelNode("finish_b",
                             [=](const KernelContext& c) {
                               log->Record("finish_b", c, b);
                               for (std::size_t i = 0; i < kWords; ++i)
                                 Words(b)[i] = Words(b)[i] * 5 + Words(a)[i];
                             },
                             {3}));
  auto graph = platform.CreateGraph(0, std::move(nodes));
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return graph.ok() ? *graph : 0;
}

class GraphReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rig_.Configure(ReplayOptions{});  // records allocations from here on
    a_ = Alloc(1);
    b_ = Alloc(100);
  }

  DevicePtr Alloc(std::uint32_t first) {
    auto ptr = rig_.platform().Malloc(0, kWords * sizeof(std::uint32_t));
    EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
    for (std::size_t i = 0; i < kWords; ++i) Words(*ptr)[i] = first + static_cast<std::uint32_t>(i);
    return *ptr;
  }

  Controller& Configure(GraphReplay mode, int passes = 3, std::string kernel = "") {
    ReplayOptions options;
    options.passes = passes;
    options.chunk_size = 4096;
    options.graph_replay = mode;
    options.selector.name = std::move(kernel);
    return rig_.Configure(options);
  }

  GraphId MakeChain() { return MakeChainOn(rig_.platform(), a_, b_, &log_); }

  Status Launch(GraphId graph) {
    auto& platform = rig_.platform();
    Status launched = platform.LaunchGraph(platform.DefaultStream(0), graph);
    if (!launched.ok()) return launched;
    return platform.DeviceSynchronize(0);
  }

  // The two buffers after `launches` unreplayed launches of the chain from SnapshotInitial's state,
  // on a platform without replay.
  std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>> Expected(int launches) {
    device::host::HostPlatform platform;
    const DevicePtr a = *platform.Malloc(0, kWords * 4);
    const DevicePtr b = *platform.Malloc(0, kWords * 4);
    std::memcpy(Words(a), a_initial_.data(), kWords * 4);
    std::memcpy(Words(b), b_initial_.data(), kWords * 4);
    InputLog scratch;
    const GraphId graph = MakeChainOn(platform, a, b, &scratch);
    for (int i = 0; i < launches; ++i)
      EXPECT_TRUE(platform.LaunchGraph(platform.DefaultStream(0), graph).ok());
    EXPECT_TRUE(platform.DeviceSynchronize(0).ok());
    return {{Words(a), Words(a) + kWords}, {Words(b), Words(b) + kWords}};
  }

  void SnapshotInitial() {
    a_initial_.assign(Words(a_), Words(a_) + kWords);
    b_initial_.assign(Words(b_), Words(b_) + kWords);
  }

  std::vector<std::uint32_t> A() const { return {Words(a_), Words(a_) + kWords}; }
  std::vector<std::uint32_t> B() const { return {Words(b_), Words(b_) + kWords}; }

  std::vector<ReplayRecord> Records() { return rig_.controller()->records(); }

  ReplayRig rig_;
  DevicePtr a_ = 0;
  DevicePtr b_ = 0;
  std::vector<std::uint32_t> a_initial_, b_initial_;
  InputLog log_;
};

// Every run of `name` in `runs` read the same bytes, and the passes were 1..n.
void ExpectIdenticalInputs(const std::vector<std::pair<int, std::uint64_t>>& runs, int passes,
                           const std::string& name) {
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(passes)) << name;
  for (int i = 0; i < passes; ++i) {
    EXPECT_EQ(runs[static_cast<std::size_t>(i)].first, i + 1) << name;
    EXPECT_EQ(runs[static_cast<std::size_t>(i)].second, runs.front().second)
        << name << " pass " << i + 1 << " read other inputs than pass 1";
  }
}

TEST_F(GraphReplayTest, OffDeclinesAndTheMessageNamesTheOption) {
  Configure(GraphReplay::kOff);
  SnapshotInitial();
  const GraphId graph = MakeChain();
  base::ScopedLogCapture logs;
  ASSERT_TRUE(Launch(graph).ok());
  const auto expected = Expected(1);
  EXPECT_EQ(A(), expected.first);
  EXPECT_EQ(B(), expected.second);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].replayed);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kGraphLaunch);
  EXPECT_EQ(records[0].replay_mode, ReplayMode::kGraph);
  EXPECT_NE(records[0].decline_detail.find("--graph-replay graph or node"), std::string::npos)
      << records[0].decline_detail;
  EXPECT_EQ(logs.Count("--graph-replay"), 1);
}

TEST_F(GraphReplayTest, WholeGraphPassesSeeIdenticalInputsAndLeaveOneLaunchsResult) {
  Configure(GraphReplay::kGraph, 3);
  SnapshotInitial();
  const GraphId graph = MakeChain();
  ASSERT_TRUE(Launch(graph).ok());
  const auto expected = Expected(1);
  EXPECT_EQ(A(), expected.first) << "the graph's final memory equals one ordinary launch";
  EXPECT_EQ(B(), expected.second);
  for (const char* name : {"scale_a", "bump_b", "finish_b"}) ExpectIdenticalInputs(log_.runs(name), 3, name);

  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  const ReplayRecord& r = records[0];
  EXPECT_TRUE(r.replayed) << r.decline_detail;
  EXPECT_EQ(r.replay_mode, ReplayMode::kGraph);
  EXPECT_EQ(r.kernel_name, "graph " + std::to_string(graph));
  EXPECT_EQ(r.graph_id, graph);
  EXPECT_EQ(r.graph_nodes, 5u);
  EXPECT_EQ(r.graph_kernel_nodes, 3u);
  EXPECT_TRUE(r.deterministic);
  ASSERT_EQ(r.passes.size(), 3u);
  for (const PassRecord& pass : r.passes) {
    ASSERT_EQ(pass.kernel_nodes.size(), 3u) << "each kernel node timed in each pass";
    EXPECT_EQ(pass.kernel_nodes[0].kernel_name, "scale_a");
    EXPECT_EQ(pass.kernel_nodes[1].kernel_name, "bump_b");
    EXPECT_EQ(pass.kernel_nodes[2].kernel_name, "finish_b");
    EXPECT_NE(pass.kernel_nodes[0].node_id, pass.kernel_nodes[1].node_id);
    EXPECT_GT(pass.output_hash, 0u);
  }
  EXPECT_GT(r.passes[1].bytes_restored, 0u) << "both buffers were written back between passes";
}

TEST_F(GraphReplayTest, GraphsAreRelaunchedAndEachLaunchIsReplayed) {
  Configure(GraphReplay::kGraph, 2);
  SnapshotInitial();
  const GraphId graph = MakeChain();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Launch(graph).ok());
  const auto expected = Expected(3);
  EXPECT_EQ(A(), expected.first);
  EXPECT_EQ(B(), expected.second);
  auto records = Records();
  ASSERT_EQ(records.size(), 3u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_TRUE(records[i].replayed);
    EXPECT_EQ(records[i].launch_index, i);
  }
}

TEST_F(GraphReplayTest, SkipAndCountCountGraphLaunches) {
  ReplayOptions options;
  options.passes = 2;
  options.chunk_size = 4096;
  options.graph_replay = GraphReplay::kGraph;
  options.selector.skip = 1;
  options.selector.count = 1;
  rig_.Configure(options);
  const GraphId graph = MakeChain();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Launch(graph).ok());
  auto records = Records();
  ASSERT_EQ(records.size(), 1u) << "launch 0 skipped, launch 1 replayed, launch 2 past the count";
  EXPECT_EQ(records[0].launch_index, 1u);
  EXPECT_EQ(log_.runs("scale_a").size(), 4u) << "1 + 2 passes + 1";
}

TEST_F(GraphReplayTest, KernelNameSelectsGraphsByTheirKernelNodes) {
  Configure(GraphReplay::kGraph, 2, "no_such_kernel");
  const GraphId graph = MakeChain();
  ASSERT_TRUE(Launch(graph).ok());
  EXPECT_TRUE(Records().empty());
  Configure(GraphReplay::kGraph, 2, "regex:^bump");
  ASSERT_TRUE(Launch(graph).ok());
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_TRUE(Records()[0].replayed);
}

TEST_F(GraphReplayTest, NodeByNodeReplaysEachSelectedKernelWithTheInputsItSeesInTheGraph) {
  Configure(GraphReplay::kNode, 3);
  SnapshotInitial();
  const GraphId graph = MakeChain();
  ASSERT_TRUE(Launch(graph).ok());
  const auto expected = Expected(1);
  EXPECT_EQ(A(), expected.first) << "the graph's final memory equals one ordinary launch";
  EXPECT_EQ(B(), expected.second);

  // Each kernel node ran 3 passes from identical inputs (the nodes before it run again before
  // passes 2 and 3, so earlier kernels also run unreplayed, pass 0).
  for (const char* name : {"scale_a", "bump_b", "finish_b"}) {
    std::vector<std::pair<int, std::uint64_t>> passes;
    for (const auto& run : log_.runs(name)) {
      if (run.first > 0) passes.push_back(run);
    }
    ExpectIdenticalInputs(passes, 3, name);
  }
  auto records = Records();
  ASSERT_EQ(records.size(), 3u) << "one record per kernel node";
  const char* names[] = {"scale_a", "bump_b", "finish_b"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(records[i].replayed) << records[i].decline_detail;
    EXPECT_EQ(records[i].replay_mode, ReplayMode::kNode);
    EXPECT_EQ(records[i].kernel_name, names[i]);
    EXPECT_EQ(records[i].graph_id, graph);
    EXPECT_NE(records[i].graph_node_id, 0u);
    EXPECT_EQ(records[i].passes.size(), 3u);
    EXPECT_TRUE(records[i].deterministic);
    EXPECT_EQ(records[i].launch_index, 0u) << "the graph launch's index";
  }
  // bump_b's inputs in node mode are the ones it sees inside the graph: after scale_a and the copy.
  const auto bump_runs = log_.runs("bump_b");
  const auto finish_runs = log_.runs("finish_b");
  log_.Clear();
  Configure(GraphReplay::kGraph, 2);
  std::memcpy(Words(a_), a_initial_.data(), kWords * 4);
  std::memcpy(Words(b_), b_initial_.data(), kWords * 4);
  ASSERT_TRUE(Launch(graph).ok());
  EXPECT_EQ(log_.runs("bump_b").front().second, bump_runs.back().second);
  EXPECT_EQ(log_.runs("finish_b").front().second, finish_runs.back().second);
}

TEST_F(GraphReplayTest, NodeByNodeReplaysOnlyTheNodesTheNameSelects) {
  Configure(GraphReplay::kNode, 4, "bump_b");
  SnapshotInitial();
  const GraphId graph = MakeChain();
  ASSERT_TRUE(Launch(graph).ok());
  const auto expected = Expected(1);
  EXPECT_EQ(A(), expected.first);
  EXPECT_EQ(B(), expected.second);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kernel_name, "bump_b");
  EXPECT_EQ(records[0].passes.size(), 4u);
  // finish_b is not selected: it runs once, after bump_b's passes.
  ASSERT_EQ(log_.runs("finish_b").size(), 1u);
  EXPECT_EQ(log_.runs("finish_b")[0].first, 0);
  // scale_a runs once, then again before each of bump_b's passes 2..4.
  EXPECT_EQ(log_.runs("scale_a").size(), 4u);
}

TEST_F(GraphReplayTest, NodeByNodeDetectsANondeterministicNode) {
  Configure(GraphReplay::kNode, 3);
  int calls = 0;
  const DevicePtr a = a_;
  std::vector<GraphNodeSpec> nodes;
  nodes.push_back(KernelNode("steady", [=](const KernelContext&) { Words(a)[1] += 1; }, {}));
  nodes.push_back(KernelNode(
      "racy", [=, &calls](const KernelContext&) { Words(a)[0] = static_cast<std::uint32_t>(++calls); }, {0}));
  const GraphId graph = *rig_.platform().CreateGraph(0, std::move(nodes));
  ASSERT_TRUE(Launch(graph).ok());
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].deterministic);
  EXPECT_FALSE(records[1].deterministic);
  EXPECT_EQ(records[1].mismatched_passes, (std::vector<int>{2, 3}));
}

// A graph that allocates memory and leaves it allocated: pass 2 could not allocate it again if
// the passes did not free it; the application's launch keeps it, and must free it to relaunch.
TEST_F(GraphReplayTest, AMemoryAllocationNodeIsReplayedAsAWholeWithTheReason) {
  Configure(GraphReplay::kNode, 3);
  const DevicePtr b = b_;
  auto& platform = rig_.platform();
  std::vector<GraphNodeSpec> nodes;
  GraphNodeSpec alloc;
  alloc.type = GraphNodeType::kMemAlloc;
  alloc.bytes = kWords * 4;
  nodes.push_back(alloc);
  // The allocation's address is known once the graph exists: the kernels read it from a cell.
  auto scratch = std::make_shared<DevicePtr>(0);
  nodes.push_back(KernelNode("fill_scratch",
                             [=](const KernelContext&) {
                               for (std::size_t i = 0; i < kWords; ++i) Words(*scratch)[i] = Words(b)[i] + 1;
                             },
                             {0}));
  nodes.push_back(KernelNode("sum_into_b",
                             [=](const KernelContext&) {
                               for (std::size_t i = 0; i < kWords; ++i) Words(b)[i] += Words(*scratch)[i];
                             },
                             {1}));
  const GraphId graph = *platform.CreateGraph(0, std::move(nodes));
  *scratch = *platform.GraphAllocation(graph, 0);
  const std::uint32_t b0 = Words(b)[0];
  base::ScopedLogCapture logs;
  ASSERT_TRUE(Launch(graph).ok());
  EXPECT_EQ(Words(b)[0], b0 + (b0 + 1)) << "one launch's result";
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].replayed) << records[0].decline_detail;
  EXPECT_EQ(records[0].replay_mode, ReplayMode::kGraph);
  EXPECT_EQ(records[0].passes.size(), 3u);
  EXPECT_NE(records[0].graph_fallback.find("memory-allocation node"), std::string::npos)
      << records[0].graph_fallback;
  EXPECT_TRUE(records[0].deterministic);
  EXPECT_EQ(logs.Count("is replayed as a whole, not node by node"), 1);

  // The application's launch left the memory allocated: relaunching without freeing fails, as
  // cuGraphLaunch does; after freeing, the next launch is replayed too.
  EXPECT_FALSE(Launch(graph).ok());
  ASSERT_TRUE(platform.FreeGraphAllocation(graph, 0).ok());
  ASSERT_TRUE(Launch(graph).ok());
  EXPECT_EQ(Records().back().passes.size(), 3u);
  EXPECT_TRUE(Records().back().replayed);
}

TEST_F(GraphReplayTest, AHostNodeFallsBackToWholeGraphReplay) {
  Configure(GraphReplay::kNode, 2);
  int host_calls = 0;
  const DevicePtr a = a_;
  std::vector<GraphNodeSpec> nodes;
  nodes.push_back(KernelNode("before_host", [=](const KernelContext&) { Words(a)[0] += 1; }, {}));
  GraphNodeSpec host;
  host.type = GraphNodeType::kHost;
  host.host = [&host_calls] { ++host_calls; };
  host.dependencies = {0};
  nodes.push_back(host);
  const GraphId graph = *rig_.platform().CreateGraph(0, std::move(nodes));
  const std::uint32_t a0 = Words(a)[0];
  ASSERT_TRUE(Launch(graph).ok());
  EXPECT_EQ(Words(a)[0], a0 + 1);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].replay_mode, ReplayMode::kGraph);
  EXPECT_NE(records[0].graph_fallback.find("host node"), std::string::npos) << records[0].graph_fallback;
  EXPECT_EQ(host_calls, 2) << "whole-graph passes run the host node once per pass";
}

TEST_F(GraphReplayTest, AGraphThatFreesOutsideMemoryIsDeclinedAndRunsOnce) {
  Configure(GraphReplay::kGraph, 3);
  auto& platform = rig_.platform();
  const DevicePtr a = a_;
  int runs = 0;
  std::vector<GraphNodeSpec> nodes;
  nodes.push_back(KernelNode("k",
                             [=, &runs](const KernelContext&) {
                               ++runs;
                               Words(a)[0] = 5;
                             },
                             {}));
  GraphNodeSpec free_node;
  free_node.type = GraphNodeType::kMemFree;
  free_node.dst = b_;
  free_node.dependencies = {0};
  nodes.push_back(free_node);
  const GraphId graph = *platform.CreateGraph(0, std::move(nodes));
  ASSERT_TRUE(Launch(graph).ok());
  EXPECT_EQ(runs, 1);
  auto records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].replayed);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kGraphLaunch);
  EXPECT_NE(records[0].decline_detail.find("frees memory allocated outside the graph"), std::string::npos)
      << records[0].decline_detail;
}

TEST_F(GraphReplayTest, ARestoreFailureInNodeModeStopsTheWalkAndTheGraphRunsOnce) {
  Configure(GraphReplay::kNode, 3);
  SnapshotInitial();
  const GraphId graph = MakeChain();
  // The first restore (before scale_a's pass 2) fails, and so do the full restores it retries.
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 1000);
  base::ScopedLogCapture logs;
  ASSERT_TRUE(Launch(graph).ok());
  rig_.platform().ClearFaults();
  auto records = Records();
  ASSERT_FALSE(records.empty());
  EXPECT_FALSE(records[0].replayed);
  EXPECT_EQ(records[0].decline_reason, DeclineReason::kRestoreFailed);
  EXPECT_GE(logs.Count("node-by-node replay of graph"), 1);
}

TEST_F(GraphReplayTest, AFailedRestoreOnceRecoversAndTheResultIsOneLaunchs) {
  Configure(GraphReplay::kNode, 3);
  SnapshotInitial();
  const GraphId graph = MakeChain();
  // One failed scatter: the snapshot's retry (a full restore) succeeds, so replay goes on.
  rig_.platform().InjectFault(FaultPoint::kRestoreCopy, 1, 1);
  ASSERT_TRUE(Launch(graph).ok());
  rig_.platform().ClearFaults();
  const auto expected = Expected(1);
  EXPECT_EQ(A(), expected.first);
  EXPECT_EQ(B(), expected.second);
}

// A graph executor shaped like the CUDA backend's (a CUPTI entry callback cannot skip the graph
// launch it reports): every pass and node run is the executor's own, RunOriginal submits nothing,
// and the application's launch of the graph runs after Dispatch returns. Two kernel nodes:
// scale_a (a = a*3+1), then bump_b (b += a); bump_b's pass `fail_pass` fails when set.
class GraphRunsAfterReturnExecutor : public device::LaunchExecutor {
 public:
  GraphRunsAfterReturnExecutor(DevicePtr a, DevicePtr b) : a_(a), b_(b) {}
  Status RunOriginal() override {
    ++originals;
    return OkStatus();
  }
  StatusOr<device::PassTiming> RunPass(int pass) override {
    GPUPROF_RETURN_IF_ERROR(RunGraphNode(0, pass).status());
    return RunGraphNode(1, pass);
  }
  void SignalCompletion() override { ++completions; }
  bool original_runs_after_return() const noexcept override { return true; }
  StatusOr<device::GraphDescription> DescribeGraph() override {
    device::GraphDescription graph;
    graph.graph_id = 42;
    for (const char* name : {"scale_a", "bump_b"}) {
      device::GraphNode node;
      node.id = graph.nodes.size() + 1;
      node.type = GraphNodeType::kKernel;
      node.kernel_name = name;
      graph.nodes.push_back(node);
    }
    return graph;
  }
  StatusOr<device::PassTiming> RunGraphNode(std::size_t index, int pass) override {
    if (index == 0) {
      for (std::size_t i = 0; i < kWords; ++i) Words(a_)[i] = Words(a_)[i] * 3 + 1;
    } else {
      if (pass == fail_pass) return InternalError("bump_b failed");
      for (std::size_t i = 0; i < kWords; ++i) Words(b_)[i] += Words(a_)[i];
    }
    return device::PassTiming{1000, 0, 0, {}};
  }
  Status EndGraphPasses() override {
    ++ended;
    return OkStatus();
  }

  int originals = 0;
  int completions = 0;
  int ended = 0;
  int fail_pass = -1;

 private:
  DevicePtr a_;
  DevicePtr b_;
};

// Whole-graph and node-by-node replay of a graph whose own launch runs after the call: the
// passes' inputs are put back for it, completion is left to it, and a walk that stops restores
// fully without running the graph itself.
TEST_F(GraphReplayTest, AGraphWhoseOwnLaunchRunsAfterTheCallFindsItsInputsRestored) {
  device::LaunchRequest request;
  request.device = 0;
  request.kind = device::LaunchKind::kGraph;
  request.kernel_name = "graph";
  for (GraphReplay mode : {GraphReplay::kGraph, GraphReplay::kNode}) {
    SCOPED_TRACE(mode == GraphReplay::kGraph ? "graph" : "node");
    Configure(mode, 3);
    SnapshotInitial();
    GraphRunsAfterReturnExecutor executor(a_, b_);
    ASSERT_TRUE(rig_.controller()->Dispatch(request, executor).ok());
    EXPECT_EQ(A(), a_initial_) << "the application's launch finds the graph's inputs";
    EXPECT_EQ(B(), b_initial_);
    EXPECT_EQ(executor.originals, 0);
    EXPECT_EQ(executor.completions, 1);
    EXPECT_EQ(executor.ended, mode == GraphReplay::kGraph ? 1 : 0);
    auto records = Records();
    ASSERT_EQ(records.size(), mode == GraphReplay::kGraph ? 1u : 2u);
    for (const ReplayRecord& r : records) {
      EXPECT_TRUE(r.replayed) << r.decline_detail;
      EXPECT_EQ(r.passes.size(), 3u);
      EXPECT_TRUE(r.deterministic);
    }
  }

  Configure(GraphReplay::kNode, 3);
  SnapshotInitial();
  GraphRunsAfterReturnExecutor executor(a_, b_);
  executor.fail_pass = 2;
  base::ScopedLogCapture logs;
  ASSERT_TRUE(rig_.controller()->Dispatch(request, executor).ok());
  EXPECT_EQ(A(), a_initial_) << "a stopped walk restores the inputs fully";
  EXPECT_EQ(B(), b_initial_);
  EXPECT_EQ(executor.originals, 0) << "the application's own launch runs the graph once";
  EXPECT_EQ(executor.completions, 0);
  auto records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].replayed);
  EXPECT_FALSE(records[1].replayed);
  EXPECT_EQ(records[1].decline_reason, DeclineReason::kLaunchFailed);
  EXPECT_EQ(logs.Count("node-by-node replay of graph 42 stopped"), 1);
}

TEST_F(GraphReplayTest, CreateGraphRejectsCyclesAndBadFrees) {
  auto& platform = rig_.platform();
  std::vector<GraphNodeSpec> cycle;
  cycle.push_back(KernelNode("x", [](const KernelContext&) {}, {1}));
  cycle.push_back(KernelNode("y", [](const KernelContext&) {}, {0}));
  auto made = platform.CreateGraph(0, cycle);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("cycle"), std::string::npos);
  GraphNodeSpec bad_free;
  bad_free.type = GraphNodeType::kMemFree;
  bad_free.allocation = 0;
  made = platform.CreateGraph(0, {KernelNode("x", [](const KernelContext&) {}, {}), bad_free});
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("not a memory-allocation node"), std::string::npos);
}

}  // namespace
}  // namespace gpuprof::replay
