// The synthetic training profile the DB benchmarks write (one copy, shared by db_writer_benchmark
// and export_benchmark): TorchOp records on 4 threads (a main thread running ProfilerStep#N steps of
// nested forward ops with autograd sequence numbers, an autograd thread running the matching
// backward nodes, two data-loader threads), names from ~300 op names, input shapes/dtypes from a
// pool of signatures in torch_npu's string format (DB_SPEC §3.3); DeviceTask kernel records (TASK +
// COMPUTE_TASK_INFO rows) with ~500 demangled kernel names, grid/block dims, 4 streams, and
// correlation ids that the launching leaf ops carry (so every kernel is linked to an op); optionally
// one cudaLaunchKernel ApiCall per kernel (CANN_API rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "db/profile_writer.h"
#include "trace/records.h"

namespace gpuprof::bench {

inline constexpr std::uint32_t kWorkloadPid = 4242;
inline constexpr std::int64_t kWorkloadStartNs = 1'717'200'000'000'000'000;  // 2024-06-01, epoch ns

struct Workload {
  std::vector<trace::TorchOp> ops;
  std::vector<trace::DeviceTask> tasks;
  std::vector<trace::ApiCall> api_calls;
  std::size_t distinct_op_names = 0;
  std::size_t distinct_kernel_names = 0;
  std::size_t signatures = 0;
  std::int64_t end_ns = 0;
};

// `rows` TorchOp records and `rows` kernel records (and as many API calls when asked), the same for
// the same seed.
Workload GenerateWorkload(std::uint64_t seed, std::uint64_t rows, bool with_api_calls);

// The records as Submit batches of `batch` records, torch-op, API and kernel batches alternating,
// as a collector's per-thread buffers hold them when it flushes; `work`'s record lists are emptied.
std::vector<std::vector<trace::Record>> CutIntoBatches(Workload* work, std::size_t batch);

// A ProfileWriter's options for the workload's run, written under `out_dir`; `source` goes into
// the config JSON.
db::WriterOptions WorkloadWriterOptions(const Workload& work, const std::string& out_dir,
                                        const std::string& source);

}  // namespace gpuprof::bench
