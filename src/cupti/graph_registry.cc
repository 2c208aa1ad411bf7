#include "cupti/graph_registry.h"

#include <algorithm>

#include "cupti/internal_work.h"
#include "device/graph_order.h"
#include "trace/records.h"

namespace gpuprof::cupti {

using device::cuda::CudaDriver;

device::GraphNodeType GraphNodeTypeOf(CUgraphNodeType type) noexcept {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return device::GraphNodeType::kKernel;
    case CU_GRAPH_NODE_TYPE_MEMCPY: return device::GraphNodeType::kMemcpy;
    case CU_GRAPH_NODE_TYPE_MEMSET: return device::GraphNodeType::kMemset;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return device::GraphNodeType::kEventRecord;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return device::GraphNodeType::kEventWait;
    case CU_GRAPH_NODE_TYPE_EMPTY: return device::GraphNodeType::kEmpty;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return device::GraphNodeType::kMemAlloc;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return device::GraphNodeType::kMemFree;
    case CU_GRAPH_NODE_TYPE_HOST: return device::GraphNodeType::kHost;
    case CU_GRAPH_NODE_TYPE_GRAPH: return device::GraphNodeType::kChildGraph;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return device::GraphNodeType::kConditional;
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return device::GraphNodeType::kExternalSemaphore;
    default: return device::GraphNodeType::kOther;
  }
}

GraphInfo::~GraphInfo() {
  if (clone == nullptr || driver == nullptr) return;
  ScopedInternalWork internal;
  static_cast<void>(driver->GraphDestroy(clone));
}

std::shared_ptr<GraphInfo> GraphRegistry::GraphOf(CUgraphExec exec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = graphs_.find(exec);
  return it == graphs_.end() ? nullptr : it->second;
}

// At cuGraphInstantiate's exit: the graph is cloned (the application may destroy it now), and its
// nodes are listed in a topological order with what node-by-node replay needs of each.
std::shared_ptr<GraphInfo> GraphRegistry::RecordInstantiatedGraph(const CudaDriver& driver, CUgraph graph,
                                                                  CUgraphExec exec) {
  const CudaDriver& d = driver;
  ScopedInternalWork internal;
  auto info = std::make_shared<GraphInfo>();
  info->driver = &driver;
  // A graph the driver will not clone (one with memory-allocation nodes) is still replayed as a
  // whole; only node-by-node replay needs the clone.
  std::string clone_error;
  if (const CUresult cloned = d.GraphClone(&info->clone, graph); cloned != CUDA_SUCCESS) {
    info->clone = nullptr;
    clone_error = "the driver could not copy the graph to run its nodes alone (" +
                  d.Error("cuGraphClone", cloned) + ")";
  }
  size_t count = 0;
  if (d.GraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS) return nullptr;
  std::vector<CUgraphNode> originals(count);
  if (count > 0 && d.GraphGetNodes(graph, originals.data(), &count) != CUDA_SUCCESS) return nullptr;
  size_t edge_count = 0;
  if (d.GraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count) != CUDA_SUCCESS) return nullptr;
  std::vector<CUgraphNode> from(edge_count), to(edge_count);
  if (edge_count > 0 && d.GraphGetEdges(graph, from.data(), to.data(), nullptr, &edge_count) != CUDA_SUCCESS)
    return nullptr;
  std::unordered_map<CUgraphNode, std::size_t> index;
  for (std::size_t i = 0; i < originals.size(); ++i) index[originals[i]] = i;
  std::vector<device::GraphEdge> edges;
  for (std::size_t e = 0; e < edge_count; ++e) {
    auto f = index.find(from[e]);
    auto t = index.find(to[e]);
    if (f != index.end() && t != index.end()) edges.push_back({f->second, t->second});
  }
  // In the driver's node order among the nodes ready to run.
  StatusOr<std::vector<std::size_t>> sorted = device::TopologicalOrder(originals.size(), edges);
  if (!sorted.ok()) return nullptr;
  const std::vector<std::size_t>& order = *sorted;

  std::uint32_t exec_id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    info->id = cupti_ != nullptr && cupti_->GetGraphExecId(exec, &exec_id) == CUPTI_SUCCESS ? exec_id
                                                                                            : next_graph_id_;
    ++next_graph_id_;
  }
  std::vector<CUdeviceptr> allocated;
  std::vector<CUdeviceptr> freed;
  for (std::size_t position = 0; position < order.size(); ++position) {
    const CUgraphNode original = originals[order[position]];
    GraphNodeInfo node;
    if (d.GraphNodeGetType(original, &node.type) != CUDA_SUCCESS) return nullptr;
    if (info->clone != nullptr && d.GraphNodeFindInClone(&node.node, original, info->clone) != CUDA_SUCCESS) {
      return nullptr;
    }
    std::uint64_t id = 0;
    node.id = cupti_ != nullptr && cupti_->GetGraphNodeId(original, &id) == CUPTI_SUCCESS
                  ? id
                  : (info->id << 32) | static_cast<std::uint64_t>(position + 1);
    const device::GraphNodeType type = GraphNodeTypeOf(node.type);
    switch (node.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL: {
        ++info->tasks[static_cast<int>(trace::TaskKind::kKernel)];
        CUDA_KERNEL_NODE_PARAMS p{};
        if (d.GraphKernelNodeGetParams(original, &p) == CUDA_SUCCESS) {
          node.function = p.func;
          if (node.function == nullptr && p.kern != nullptr) d.KernelGetFunction(&node.function, p.kern);
        }
        if (node.function == nullptr && info->node_blocker.empty())
          info->node_blocker =
              "the function of kernel node " + std::to_string(node.id) + " could not be read";
        break;
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY: ++info->tasks[static_cast<int>(trace::TaskKind::kMemcpy)]; break;
      case CU_GRAPH_NODE_TYPE_MEMSET: ++info->tasks[static_cast<int>(trace::TaskKind::kMemset)]; break;
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      case CU_GRAPH_NODE_TYPE_EMPTY: break;
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        CUDA_MEM_ALLOC_NODE_PARAMS p{};
        if (d.GraphMemAllocNodeGetParams(original, &p) == CUDA_SUCCESS) allocated.push_back(p.dptr);
        [[fallthrough]];
      }
      default:
        if (node.type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
          CUdeviceptr ptr = 0;
          if (d.GraphMemFreeNodeGetParams(original, &ptr) == CUDA_SUCCESS) freed.push_back(ptr);
        }
        if (info->node_blocker.empty()) {
          info->node_blocker = "it has a " + std::string(device::GraphNodeTypeName(type)) + " node (" +
                               std::to_string(node.id) + "), which cannot run alone";
        }
    }
    info->nodes.push_back(node);
  }
  if (info->node_blocker.empty()) info->node_blocker = clone_error;
  for (CUdeviceptr ptr : allocated) {
    if (std::find(freed.begin(), freed.end(), ptr) == freed.end()) info->leftovers.push_back(ptr);
  }
  for (CUdeviceptr ptr : freed) {
    if (std::find(allocated.begin(), allocated.end(), ptr) == allocated.end() &&
        info->relaunch_blocker.empty()) {
      info->relaunch_blocker =
          "a free node frees memory allocated outside the graph, which a second launch "
          "would free again";
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  graphs_[exec] = info;
  return info;
}

void GraphRegistry::OnGraphCall(const CudaDriver& driver, CUpti_CallbackId cbid,
                                const CUpti_CallbackData& call) noexcept {
  try {
    const bool exit_ok = call.callbackSite == CUPTI_API_EXIT && call.functionReturnValue != nullptr &&
                         *static_cast<const CUresult*>(call.functionReturnValue) == CUDA_SUCCESS;
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
        if (!exit_ok) return;
        // Every form starts with (CUgraphExec* phGraphExec, CUgraph hGraph).
        const auto* params = static_cast<const cuGraphInstantiateWithFlags_params*>(call.functionParams);
        if (params == nullptr || params->phGraphExec == nullptr || *params->phGraphExec == nullptr) return;
        if (RecordInstantiatedGraph(driver, params->hGraph, *params->phGraphExec) == nullptr) {
          std::lock_guard<std::mutex> lock(mu_);
          graphs_.erase(*params->phGraphExec);
        }
        return;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy: {
        if (call.callbackSite != CUPTI_API_ENTER) return;
        const auto* params = static_cast<const cuGraphExecDestroy_params*>(call.functionParams);
        std::shared_ptr<GraphInfo> gone;  // destroyed outside the lock
        std::lock_guard<std::mutex> lock(mu_);
        auto it = graphs_.find(params->hGraphExec);
        if (it != graphs_.end()) {
          gone = std::move(it->second);
          graphs_.erase(it);
        }
        return;
      }
      default: {
        // cuGraphExecUpdate and the cuGraphExec*Set* calls: the clone no longer matches the exec.
        if (!exit_ok) return;
        const auto* params = static_cast<const cuGraphExecDestroy_params*>(call.functionParams);
        if (std::shared_ptr<GraphInfo> info = GraphOf(params->hGraphExec)) info->updated.store(true);
        return;
      }
    }
  } catch (...) {
  }
}

}  // namespace gpuprof::cupti
