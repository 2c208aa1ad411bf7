#include "cupti/graph_executor.h"

#include <string>

#include "cupti/internal_work.h"

namespace gpuprof::cupti {

using device::cuda::CudaDriver;

StatusOr<device::GraphDescription> CudaGraphExecutor::DescribeGraph() {
  if (graph_ == nullptr) {
    return UnavailableError(
        "the graph was instantiated before gpuprof started watching (its nodes were not recorded)");
  }
  device::GraphDescription description;
  description.graph_id = graph_->id;
  description.node_blocker = graph_->node_blocker;
  if (description.node_blocker.empty() && graph_->updated.load(std::memory_order_relaxed)) {
    description.node_blocker =
        "the executable graph was updated after its instantiation (cuGraphExecUpdate or cuGraphExec*Set*)";
  }
  description.relaunch_blocker = graph_->relaunch_blocker;
  for (const GraphNodeInfo& info : graph_->nodes) {
    device::GraphNode node;
    node.id = info.id;
    node.type = GraphNodeTypeOf(info.type);
    if (info.function != nullptr) {
      std::shared_ptr<const FunctionInfo> function = host_.InfoOf(info.function, stream_);
      if (function != nullptr) {
        node.kernel_name = function->name;
        node.uses_device_printf = function->uses_printf;
        node.uses_device_malloc = function->uses_device_malloc;
      }
    }
    description.nodes.push_back(std::move(node));
  }
  return description;
}

Status CudaGraphExecutor::PrepareForSnapshot() {
  for (const GraphNodeInfo& info : graph_->nodes) {
    if (info.function != nullptr) GPUPROF_RETURN_IF_ERROR(host_.PrepareFunction(device_, info.function));
  }
  return OkStatus();
}

StatusOr<device::PassTiming> CudaGraphExecutor::RunPass(int pass) {
  const CudaDriver& d = device_.driver();
  ScopedInternalWork internal;
  if (pass > 1) GPUPROF_RETURN_IF_ERROR(FreeLeftovers());
  return Timed([&] {
    ScopedNestedGraphLaunch tasks(graph_->tasks);
    return d.Check("cuGraphLaunch (replay pass)", d.GraphLaunch(exec_, stream_));
  });
}

Status CudaGraphExecutor::RunCounterPass(int) {
  const CudaDriver& d = device_.driver();
  ScopedInternalWork internal;
  GPUPROF_RETURN_IF_ERROR(FreeLeftovers());
  ScopedNestedGraphLaunch tasks(graph_->tasks);
  GPUPROF_RETURN_IF_ERROR(d.Check("cuGraphLaunch (counter pass)", d.GraphLaunch(exec_, stream_)));
  return d.Check("cuStreamSynchronize", d.StreamSynchronize(stream_));
}

Status CudaGraphExecutor::EndGraphPasses() {
  ScopedInternalWork internal;
  GPUPROF_RETURN_IF_ERROR(FreeLeftovers());
  return device_.driver().Check("cuStreamSynchronize", device_.driver().StreamSynchronize(stream_));
}

StatusOr<device::PassTiming> CudaGraphExecutor::RunGraphNode(std::size_t index, int pass) {
  if (index >= graph_->nodes.size()) {
    return InvalidArgumentError("graph " + std::to_string(graph_->id) + " has " +
                                std::to_string(graph_->nodes.size()) + " nodes, not " +
                                std::to_string(index + 1));
  }
  const CudaDriver& d = device_.driver();
  ScopedInternalWork internal;
  const GraphNodeInfo& node = graph_->nodes[index];
  auto run = [&]() -> Status {
    switch (node.type) {
      case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS p{};
        GPUPROF_RETURN_IF_ERROR(
            d.Check("cuGraphKernelNodeGetParams", d.GraphKernelNodeGetParams(node.node, &p)));
        CUfunction function = node.function;
        return d.Check("cuLaunchKernel (graph node)",
                       d.LaunchKernel(function, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY,
                                      p.blockDimZ, p.sharedMemBytes, stream_, p.kernelParams, p.extra));
      }
      case CU_GRAPH_NODE_TYPE_MEMCPY: {
        CUDA_MEMCPY3D p{};
        GPUPROF_RETURN_IF_ERROR(
            d.Check("cuGraphMemcpyNodeGetParams", d.GraphMemcpyNodeGetParams(node.node, &p)));
        return d.Check("cuMemcpy3DAsync (graph node)", d.Memcpy3DAsync(&p, stream_));
      }
      case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS p{};
        GPUPROF_RETURN_IF_ERROR(
            d.Check("cuGraphMemsetNodeGetParams", d.GraphMemsetNodeGetParams(node.node, &p)));
        if (p.elementSize == 1) {
          return d.Check("cuMemsetD2D8Async (graph node)",
                         d.MemsetD2D8Async(p.dst, p.pitch, static_cast<unsigned char>(p.value), p.width,
                                           p.height, stream_));
        }
        if (p.elementSize == 2) {
          return d.Check("cuMemsetD2D16Async (graph node)",
                         d.MemsetD2D16Async(p.dst, p.pitch, static_cast<unsigned short>(p.value), p.width,
                                            p.height, stream_));
        }
        return d.Check("cuMemsetD2D32Async (graph node)",
                       d.MemsetD2D32Async(p.dst, p.pitch, p.value, p.width, p.height, stream_));
      }
      case CU_GRAPH_NODE_TYPE_EVENT_RECORD: {
        CUevent event = nullptr;
        GPUPROF_RETURN_IF_ERROR(
            d.Check("cuGraphEventRecordNodeGetEvent", d.GraphEventRecordNodeGetEvent(node.node, &event)));
        return d.Check("cuEventRecord (graph node)", d.EventRecord(event, stream_));
      }
      case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
        CUevent event = nullptr;
        GPUPROF_RETURN_IF_ERROR(
            d.Check("cuGraphEventWaitNodeGetEvent", d.GraphEventWaitNodeGetEvent(node.node, &event)));
        return d.Check("cuStreamWaitEvent (graph node)", d.StreamWaitEvent(stream_, event, 0));
      }
      case CU_GRAPH_NODE_TYPE_EMPTY: return OkStatus();
      default:
        return FailedPreconditionError("a " +
                                       std::string(device::GraphNodeTypeName(GraphNodeTypeOf(node.type))) +
                                       " node cannot run alone");
    }
  };
  if (pass == 0) {
    GPUPROF_RETURN_IF_ERROR(run());
    GPUPROF_RETURN_IF_ERROR(d.Check("cuStreamSynchronize", d.StreamSynchronize(stream_)));
    return device::PassTiming{};
  }
  return Timed(run);
}

Status CudaGraphExecutor::FreeLeftovers() {
  const CudaDriver& d = device_.driver();
  for (CUdeviceptr ptr : graph_->leftovers) {
    GPUPROF_RETURN_IF_ERROR(d.Check("cuMemFreeAsync (graph allocation)", d.MemFreeAsync(ptr, stream_)));
  }
  return OkStatus();
}

}  // namespace gpuprof::cupti
