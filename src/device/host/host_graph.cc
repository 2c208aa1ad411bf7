// HostPlatform's graphs (issue 24): creation, launch, and the executor through which the replay
// controller runs a graph as a whole or node by node.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include "device/graph_order.h"
#include "device/host/host_platform.h"
#include "device/host/host_platform_internal.h"

namespace gpuprof::device::host {
namespace {

using Impl = HostPlatform::Impl;

constexpr std::uint8_t kUndefinedByte = 0xCD;  // what a graph allocation holds when it is made

std::string NodeName(const HostGraph& graph, std::size_t index) {
  return "node " + std::to_string(graph.node_ids[index]) + " (" +
         std::string(GraphNodeTypeName(graph.nodes[index].type)) + ") of graph " + std::to_string(graph.id);
}

// Runs `op` on `stream`'s worker and waits: the time it took, or what it threw.
struct StreamRun {
  std::uint64_t duration_ns = 0;
  std::string error;
};
StreamRun RunAndWait(Stream& stream, std::function<void()> op) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    StreamRun run;
  };
  auto shared = std::make_shared<Shared>();
  stream.Enqueue([shared, op = std::move(op)] {
    StreamRun run;
    const auto start = std::chrono::steady_clock::now();
    try {
      op();
    } catch (const std::exception& e) {
      run.error = e.what();
    } catch (...) {
      run.error = "a non-standard exception";
    }
    run.duration_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
            .count());
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->run = std::move(run);
    shared->done = true;
    shared->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->done; });
  return shared->run;
}

// The body of node `index` as a stream operation; null for nodes with nothing to do on the device.
std::function<void()> NodeOp(const std::shared_ptr<HostGraph>& graph, std::size_t index,
                             const KernelContext& context) {
  const GraphNodeSpec& node = graph->nodes[index];
  switch (node.type) {
    case GraphNodeType::kKernel: return [graph, index, context] { graph->nodes[index].kernel.body(context); };
    case GraphNodeType::kMemcpy:
      return [dst = ToHost(node.dst), src = ToHost(node.src), bytes = node.bytes] {
        std::memmove(dst, src, bytes);
      };
    case GraphNodeType::kMemset:
      return [dst = ToHost(node.dst), value = node.value, bytes = node.bytes] {
        std::memset(dst, value, bytes);
      };
    case GraphNodeType::kMemAlloc:
      return [memory = graph->memory[index].get(), bytes = node.bytes] {
        std::memset(memory, kUndefinedByte, bytes);
      };
    case GraphNodeType::kHost: return node.host;
    default: return nullptr;  // empty, event, free: ordering only here
  }
}

class HostGraphExecutor final : public LaunchExecutor {
 public:
  HostGraphExecutor(Impl& impl, Stream& stream, std::shared_ptr<HostGraph> graph, CompletionSignal* signal)
      : impl_(impl), stream_(stream), graph_(std::move(graph)), signal_(signal) {}

  Status RunOriginal() override {
    GPUPROF_RETURN_IF_ERROR(LoadModules());
    GPUPROF_RETURN_IF_ERROR(Allocate());
    const KernelContext context{stream_.device(), stream_.id(), 0};
    for (std::size_t index : graph_->order) {
      if (std::function<void()> op = NodeOp(graph_, index, context)) stream_.Enqueue(std::move(op));
    }
    if (signal_ != nullptr) stream_.Enqueue([signal = signal_] { signal->Signal(); });
    return OkStatus();
  }

  Status PrepareForSnapshot() override { return LoadModules(); }

  // The whole graph, waited for, each kernel node timed.
  StatusOr<PassTiming> RunPass(int pass) override {
    GPUPROF_RETURN_IF_ERROR(LoadModules());
    if (pass > 1) FreeLeftovers();  // what the previous pass left allocated (device.h)
    GPUPROF_RETURN_IF_ERROR(Allocate());
    const KernelContext context{stream_.device(), stream_.id(), pass};
    auto timings = std::make_shared<std::vector<NodeTiming>>();
    std::vector<std::pair<std::size_t, std::function<void()>>> ops;
    for (std::size_t index : graph_->order) {
      if (std::function<void()> op = NodeOp(graph_, index, context)) ops.emplace_back(index, std::move(op));
    }
    auto graph = graph_;
    StreamRun run = RunAndWait(stream_, [graph, timings, ops = std::move(ops)] {
      for (const auto& [index, op] : ops) {
        const auto start = std::chrono::steady_clock::now();
        op();
        if (graph->nodes[index].type != GraphNodeType::kKernel) continue;
        timings->push_back({graph->node_ids[index],
                            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                           std::chrono::steady_clock::now() - start)
                                                           .count())});
      }
    });
    if (!run.error.empty()) {
      return InternalError("RunPass: graph " + std::to_string(graph_->id) + " threw during pass " +
                           std::to_string(pass) + " on stream " + std::to_string(stream_.id()) + ": " +
                           run.error);
    }
    PassTiming timing;
    timing.duration_ns = run.duration_ns;
    timing.kernel_nodes = std::move(*timings);
    return timing;
  }

  Status EndGraphPasses() override {
    FreeLeftovers();
    return OkStatus();
  }

  StatusOr<GraphDescription> DescribeGraph() override {
    GraphDescription description;
    description.graph_id = graph_->id;
    for (std::size_t index : graph_->order) {
      const GraphNodeSpec& spec = graph_->nodes[index];
      GraphNode node;
      node.id = graph_->node_ids[index];
      node.type = spec.type;
      if (spec.type == GraphNodeType::kKernel) {
        node.kernel_name = spec.kernel.name;
        node.uses_device_printf = spec.kernel.uses_device_printf;
        node.uses_device_malloc = spec.kernel.uses_device_malloc;
      }
      switch (spec.type) {
        case GraphNodeType::kKernel:
        case GraphNodeType::kMemcpy:
        case GraphNodeType::kMemset:
        case GraphNodeType::kEventRecord:
        case GraphNodeType::kEventWait:
        case GraphNodeType::kEmpty: break;
        default:
          if (description.node_blocker.empty()) {
            description.node_blocker = "it has a " + std::string(GraphNodeTypeName(spec.type)) + " node (" +
                                       std::to_string(node.id) + "), which cannot run alone";
          }
      }
      if (spec.type == GraphNodeType::kMemFree && spec.allocation == kNoGraphNode &&
          description.relaunch_blocker.empty()) {
        description.relaunch_blocker = "node " + std::to_string(node.id) +
                                       " frees memory allocated outside the graph, which a second launch "
                                       "would free again";
      }
      description.nodes.push_back(std::move(node));
    }
    return description;
  }

  // `index` counts in DescribeGraph's order.
  StatusOr<PassTiming> RunGraphNode(std::size_t index, int pass) override {
    if (index >= graph_->order.size()) {
      return InvalidArgumentError("RunGraphNode: graph " + std::to_string(graph_->id) + " has " +
                                  std::to_string(graph_->order.size()) + " nodes, not " +
                                  std::to_string(index + 1));
    }
    const std::size_t node = graph_->order[index];
    const GraphNodeType type = graph_->nodes[node].type;
    if (type == GraphNodeType::kMemAlloc || type == GraphNodeType::kMemFree || type == GraphNodeType::kHost ||
        type == GraphNodeType::kChildGraph || type == GraphNodeType::kConditional ||
        type == GraphNodeType::kExternalSemaphore || type == GraphNodeType::kOther) {
      return FailedPreconditionError("RunGraphNode: " + NodeName(*graph_, node) + " cannot run alone");
    }
    if (type == GraphNodeType::kKernel && graph_->nodes[node].kernel.module != 0) {
      GPUPROF_RETURN_IF_ERROR(impl_.EnsureModuleLoaded(graph_->nodes[node].kernel.module));
    }
    std::function<void()> op = NodeOp(graph_, node, KernelContext{stream_.device(), stream_.id(), pass});
    if (!op) return PassTiming{};
    StreamRun run = RunAndWait(stream_, std::move(op));
    if (!run.error.empty()) {
      return InternalError("RunGraphNode: " + NodeName(*graph_, node) + " threw during pass " +
                           std::to_string(pass) + ": " + run.error);
    }
    PassTiming timing;
    timing.duration_ns = run.duration_ns;
    return timing;
  }

  void SignalCompletion() override {
    if (signal_ != nullptr) signal_->Signal();
  }

 private:
  Status LoadModules() {
    for (const GraphNodeSpec& node : graph_->nodes) {
      if (node.type != GraphNodeType::kKernel || node.kernel.module == 0) continue;
      Status status = impl_.EnsureModuleLoaded(node.kernel.module);
      if (!status.ok()) return status.WithContext("LaunchGraph of graph " + std::to_string(graph_->id));
    }
    return OkStatus();
  }

  // One launch's allocation bookkeeping: fails, as cuGraphLaunch does, while memory an earlier
  // launch left allocated is still allocated; marks what this launch leaves allocated.
  Status Allocate() {
    std::lock_guard<std::mutex> lock(graph_->mu);
    for (std::size_t i = 0; i < graph_->nodes.size(); ++i) {
      if (graph_->nodes[i].type == GraphNodeType::kMemAlloc && graph_->allocated[i]) {
        return FailedPreconditionError("LaunchGraph: graph " + std::to_string(graph_->id) +
                                       " still holds the memory of allocation " + NodeName(*graph_, i) +
                                       " from an earlier launch; free it (FreeGraphAllocation) first");
      }
    }
    for (std::size_t i = 0; i < graph_->nodes.size(); ++i) {
      if (graph_->nodes[i].type == GraphNodeType::kMemAlloc) graph_->allocated[i] = true;
    }
    for (const GraphNodeSpec& node : graph_->nodes) {
      if (node.type == GraphNodeType::kMemFree && node.allocation != kNoGraphNode)
        graph_->allocated[node.allocation] = false;
    }
    return OkStatus();
  }

  void FreeLeftovers() {
    std::lock_guard<std::mutex> lock(graph_->mu);
    std::fill(graph_->allocated.begin(), graph_->allocated.end(), false);
  }

  Impl& impl_;
  Stream& stream_;
  std::shared_ptr<HostGraph> graph_;
  CompletionSignal* signal_;
};

}  // namespace

std::shared_ptr<HostGraph> Impl::FindGraph(GraphId graph) const {
  auto locked = graphs.rlock();
  auto it = locked->find(graph);
  return it == locked->end() ? nullptr : it->second;
}

StatusOr<GraphId> HostPlatform::CreateGraph(int device, std::vector<GraphNodeSpec> nodes) {
  if (!impl_->ValidDevice(device)) {
    return InvalidArgumentError("CreateGraph: no device " + std::to_string(device));
  }
  if (nodes.empty()) return InvalidArgumentError("CreateGraph: a graph needs at least one node");
  auto graph = std::make_shared<HostGraph>();
  graph->id = impl_->next_graph_id.fetch_add(1);
  graph->device = device;
  const std::size_t count = nodes.size();
  std::vector<GraphEdge> edges;
  for (std::size_t i = 0; i < count; ++i) {
    const GraphNodeSpec& node = nodes[i];
    for (std::size_t dependency : node.dependencies) {
      if (dependency >= count || dependency == i) {
        return InvalidArgumentError("CreateGraph: node " + std::to_string(i) + " depends on node " +
                                    std::to_string(dependency) + " of a graph of " + std::to_string(count));
      }
      edges.push_back({dependency, i});
    }
    if (node.type == GraphNodeType::kKernel && !node.kernel.body) {
      return InvalidArgumentError("CreateGraph: kernel node " + std::to_string(i) + " ('" + node.kernel.name +
                                  "') has no body");
    }
    if (node.type == GraphNodeType::kHost && !node.host) {
      return InvalidArgumentError("CreateGraph: host node " + std::to_string(i) + " has no function");
    }
    if (node.type == GraphNodeType::kMemFree && node.allocation != kNoGraphNode &&
        (node.allocation >= count || nodes[node.allocation].type != GraphNodeType::kMemAlloc)) {
      return InvalidArgumentError("CreateGraph: free node " + std::to_string(i) + " names node " +
                                  std::to_string(node.allocation) +
                                  ", which is not a memory-allocation node");
    }
  }
  // The order every run of the graph uses.
  StatusOr<std::vector<std::size_t>> order = TopologicalOrder(count, edges);
  if (!order.ok()) return InvalidArgumentError("CreateGraph: " + std::string(order.status().message()));
  graph->order = *std::move(order);
  graph->memory.resize(count);
  graph->allocated.assign(count, false);
  for (std::size_t i = 0; i < count; ++i) {
    graph->node_ids.push_back(impl_->next_graph_node_id.fetch_add(1));
    if (nodes[i].type == GraphNodeType::kMemAlloc) {
      graph->memory[i] = std::make_unique<std::uint8_t[]>(std::max<std::uint64_t>(nodes[i].bytes, 1));
    }
  }
  graph->nodes = std::move(nodes);
  const GraphId id = graph->id;
  impl_->graphs.wlock()->emplace(id, std::move(graph));
  return id;
}

Status HostPlatform::DestroyGraph(GraphId graph) {
  if (impl_->graphs.wlock()->erase(graph) == 0) {
    return NotFoundError("DestroyGraph: no graph " + std::to_string(graph));
  }
  return OkStatus();
}

StatusOr<DevicePtr> HostPlatform::GraphAllocation(GraphId graph, std::size_t node) const {
  std::shared_ptr<HostGraph> found = impl_->FindGraph(graph);
  if (found == nullptr) return NotFoundError("GraphAllocation: no graph " + std::to_string(graph));
  if (node >= found->nodes.size() || found->memory[node] == nullptr) {
    return InvalidArgumentError("GraphAllocation: node " + std::to_string(node) + " of graph " +
                                std::to_string(graph) + " is not a memory-allocation node");
  }
  return reinterpret_cast<DevicePtr>(found->memory[node].get());
}

Status HostPlatform::FreeGraphAllocation(GraphId graph, std::size_t node) {
  std::shared_ptr<HostGraph> found = impl_->FindGraph(graph);
  if (found == nullptr) return NotFoundError("FreeGraphAllocation: no graph " + std::to_string(graph));
  std::lock_guard<std::mutex> lock(found->mu);
  if (node >= found->nodes.size() || !found->allocated[node]) {
    return FailedPreconditionError("FreeGraphAllocation: node " + std::to_string(node) + " of graph " +
                                   std::to_string(graph) + " holds no memory now");
  }
  found->allocated[node] = false;
  return OkStatus();
}

Status HostPlatform::LaunchGraph(StreamId stream, GraphId graph, CompletionSignal* signal) {
  return impl_->LaunchGraph(stream, graph, signal);
}

Status Impl::LaunchGraph(StreamId stream_id, GraphId graph_id, CompletionSignal* signal) {
  Stream* stream = FindStream(stream_id);
  if (stream == nullptr)
    return InvalidArgumentError("LaunchGraph: unknown stream " + std::to_string(stream_id));
  std::shared_ptr<HostGraph> graph = FindGraph(graph_id);
  if (graph == nullptr) return NotFoundError("LaunchGraph: no graph " + std::to_string(graph_id));
  if (graph->device != stream->device()) {
    return InvalidArgumentError("LaunchGraph: graph " + std::to_string(graph_id) + " belongs to device " +
                                std::to_string(graph->device) + " but stream " + std::to_string(stream_id) +
                                " is on device " + std::to_string(stream->device()));
  }
  LaunchRequest request;
  request.device = stream->device();
  request.stream = stream_id;
  request.kind = LaunchKind::kGraph;
  request.kernel_name = "<graph>";  // until its first kernel node names it
  request.dispatch_count = 0;
  request.stream_capturing = stream->capturing();
  for (const GraphNodeSpec& node : graph->nodes) {
    if (node.type != GraphNodeType::kKernel) continue;
    if (request.dispatch_count == 0) request.kernel_name = node.kernel.name;
    ++request.dispatch_count;
    request.uses_device_printf = request.uses_device_printf || node.kernel.uses_device_printf;
    request.uses_device_malloc = request.uses_device_malloc || node.kernel.uses_device_malloc;
    request.live_arrays = std::max(request.live_arrays, node.kernel.live_arrays);
    request.peer_access = request.peer_access || node.kernel.peer_access;
  }
  HostGraphExecutor executor(*this, *stream, std::move(graph), signal);
  return api_table.launch(api_table, request, executor);
}

}  // namespace gpuprof::device::host
