// KernelSink: COMPUTE_TASK_INFO, written on the kernel side thread into its side file
// (side_file.h). It interns the kernel names and launch shapes in the device space it shares with
// the SQLite thread (SharedStrings), writes the STRING_IDS rows of the strings it saw first and one
// COMPUTE_TASK_INFO row per kernel. The SQLite thread's share of a kernel is then just its TASK
// row, so the two tables are inserted in parallel. The SQLite thread hands over each whole batch
// once it has written its rows (and moved its TorchOps to the op lane), so the records are also
// freed here rather than on the busier SQLite thread.
//
// Thread-safety: Write and Release run on the side thread only; rows() from any thread. Private to
// src/db.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/sqlite_util.h"
#include "db/string_table.h"
#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::db::internal {

struct Dim3Hash {
  std::size_t operator()(const std::array<std::uint32_t, 3>& d) const noexcept {
    // Two multiplicative mixes: a few distinct launch shapes, looked up twice per kernel.
    std::uint64_t h = ((static_cast<std::uint64_t>(d[0]) << 32) | d[1]) * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<std::uint64_t>(d[2]) + (h >> 29)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};

class KernelSink {
 public:
  explicit KernelSink(SharedStrings& strings) : strings_(strings) {}

  // `batch` is a batch the SQLite thread has written: its device tasks got the global task ids
  // first_task_id, first_task_id + 1, ... in record order; kernel_type_id is the id of "KERNEL".
  // Throws std::bad_alloc.
  Status Write(const Connection& side, std::vector<trace::Record>& batch, std::uint64_t first_task_id,

               std::uint64_t kernel_type_id);

  // The statements must be finalized before the side connection can close cleanly.
  void Release() {
    string_ids_ = {};
    compute_task_info_.Release();
  }

  std::uint64_t rows() const noexcept { return rows_.load(std::memory_order_relaxed); }

 private:
  std::uint64_t Id(StringTable& table, std::string_view value);
  std::uint64_t DimId(StringTable& table, const std::uint32_t (&dim)[3]);

  SharedStrings& strings_;
  Statement string_ids_;
  BatchInserter compute_task_info_;
  std::unordered_map<std::array<std::uint32_t, 3>, std::uint64_t, Dim3Hash> dim_ids_;
  std::vector<std::pair<std::uint64_t, std::string_view>> new_strings_;      // scratch, per chunk
  std::vector<std::pair<const trace::DeviceTask*, std::uint64_t>> kernels_;  // scratch, per batch
  std::atomic<std::uint64_t> rows_{0};
};

}  // namespace gpuprof::db::internal
