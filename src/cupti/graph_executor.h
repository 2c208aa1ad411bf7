// CudaGraphExecutor: one intercepted graph launch (cuGraphLaunch, issue 24). Like
// CudaLaunchExecutor, every pass is gpuprof's own work on the application's stream, and the
// application's cuGraphLaunch runs after the callback returns. Whole-graph passes launch the
// executable graph itself; node-by-node replay runs the nodes of the clone taken at
// instantiation (GraphRegistry) as standalone operations.
#pragma once

#include <cupti.h>

#include <memory>

#include "cupti/graph_registry.h"
#include "cupti/replay_executor.h"

namespace gpuprof::cupti {

class CudaGraphExecutor final : public CudaExecutorBase {
 public:
  // `graph` is what `exec` was instantiated from; null when gpuprof did not see the instantiation
  // (DescribeGraph then fails and the launch is declined).
  CudaGraphExecutor(ExecutorHost& host, device::cuda::CudaDevice& device, CUgraphExec exec, CUstream stream,
                    std::shared_ptr<GraphInfo> graph)
      : CudaExecutorBase(host, device, stream), exec_(exec), graph_(std::move(graph)) {}

  StatusOr<device::GraphDescription> DescribeGraph() override;
  Status PrepareForSnapshot() override;
  StatusOr<device::PassTiming> RunPass(int pass) override;
  Status RunCounterPass(int pass) override;
  Status EndGraphPasses() override;
  // Node `index` alone on the stream, waited for; timed when `pass` > 0.
  StatusOr<device::PassTiming> RunGraphNode(std::size_t index, int pass) override;

 private:
  // The memory the graph's allocation nodes left allocated (no free node in the graph), freed in
  // stream order so that the next launch can allocate it again.
  Status FreeLeftovers();

  const CUgraphExec exec_;
  const std::shared_ptr<GraphInfo> graph_;
};

}  // namespace gpuprof::cupti
