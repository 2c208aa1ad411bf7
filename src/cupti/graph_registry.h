// The graphs the application instantiated (issue 24), for graph replay: what an executable graph
// was instantiated from, recorded at its instantiation, so that CudaGraphExecutor can describe it
// to the controller and run its nodes one by one.
//
// Thread-safety: every method may be called from any thread (the application's, in CUPTI callbacks).
#pragma once

#include <cupti.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cupti/cupti_api.h"
#include "device/cuda/cuda_device.h"
#include "device/device.h"

namespace gpuprof::cupti {

// One node of an instantiated graph, in the clone taken at its instantiation.
struct GraphNodeInfo {
  CUgraphNode node = nullptr;  // in the clone
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::uint64_t id = 0;           // CUPTI's id of the original node (gpuprof's when CUPTI has none)
  CUfunction function = nullptr;  // kernel nodes
};

// A clone of the graph (PyTorch destroys the graph once it is instantiated), its nodes in a
// topological order (device::TopologicalOrder), and why it cannot run node by node or be launched
// again. Shared with the executors replaying it: it outlives a cuGraphExecDestroy during a replay.
struct GraphInfo {
  GraphInfo() = default;
  ~GraphInfo();  // destroys the clone
  GraphInfo(const GraphInfo&) = delete;
  GraphInfo& operator=(const GraphInfo&) = delete;

  const device::cuda::CudaDriver* driver = nullptr;
  CUgraph clone = nullptr;
  std::uint64_t id = 0;
  std::vector<GraphNodeInfo> nodes;
  std::vector<CUdeviceptr> leftovers;  // allocated by the graph and not freed in it
  std::string node_blocker;
  std::string relaunch_blocker;
  std::array<std::uint32_t, 3> tasks{};  // device tasks per launch, by trace::TaskKind
  std::atomic<bool> updated{false};      // cuGraphExecUpdate / cuGraphExec*Set* since instantiation
};

// The device-neutral name of a CUDA graph node type.
device::GraphNodeType GraphNodeTypeOf(CUgraphNodeType type) noexcept;

class GraphRegistry {
 public:
  // `cupti` gives graphs and nodes CUPTI's ids, so that replayed graphs carry the ids of CUPTI's
  // kernel records; null: gpuprof numbers them itself.
  explicit GraphRegistry(std::shared_ptr<CuptiApi> cupti) : cupti_(std::move(cupti)) {}

  // cuGraphInstantiate* (records the graph at a successful exit), cuGraphExecDestroy (forgets it
  // at entry), cuGraphExecUpdate and the cuGraphExec*Set* calls (mark it updated). Never throws.
  void OnGraphCall(const device::cuda::CudaDriver& driver, CUpti_CallbackId cbid,
                   const CUpti_CallbackData& call) noexcept;
  // What `exec` was instantiated from; null when gpuprof did not see its instantiation.
  std::shared_ptr<GraphInfo> GraphOf(CUgraphExec exec);

 private:
  std::shared_ptr<GraphInfo> RecordInstantiatedGraph(const device::cuda::CudaDriver& driver, CUgraph graph,
                                                     CUgraphExec exec);

  const std::shared_ptr<CuptiApi> cupti_;  // may be null
  std::mutex mu_;
  std::unordered_map<CUgraphExec, std::shared_ptr<GraphInfo>> graphs_;  // guarded by mu_
  std::uint64_t next_graph_id_ = 1;                                     // guarded by mu_
};

}  // namespace gpuprof::cupti
