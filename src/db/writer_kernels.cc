#include "db/writer_kernels.h"

#include <algorithm>
#include <string>
#include <variant>

namespace gpuprof::db::internal {

Status KernelSink::Write(const Connection& side, std::vector<trace::Record>& batch,
                         std::uint64_t first_task_id, std::uint64_t kernel_type_id) {
  if (!compute_task_info_.prepared()) {
    GPUPROF_ASSIGN_OR_RETURN(string_ids_, Statement::Prepare(side, "INSERT INTO STRING_IDS VALUES (?1, ?2)"));
    // inputFormats .. hf32Eligible: not recorded on CUDA.
    GPUPROF_RETURN_IF_ERROR(
        compute_task_info_.Prepare(side, "INSERT INTO COMPUTE_TASK_INFO VALUES ",
                                   "(?,?,?,?,?,?,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,?,?)"));
  }
  // The batch's kernels with their global task ids.
  kernels_.clear();
  std::uint64_t task_id = first_task_id;
  for (trace::Record& record : batch) {
    if (auto* task = std::get_if<trace::DeviceTask>(&record)) {
      if (task->kind == trace::TaskKind::kKernel) kernels_.emplace_back(task, task_id);
      ++task_id;
    }
  }
  std::uint64_t rows = 0;
  constexpr std::size_t kChunk = 256;                      // kernels interned per lock
  std::array<std::array<std::uint64_t, 4>, kChunk> ids{};  // name, opType, grid, block
  for (std::size_t begin = 0; begin < kernels_.size(); begin += kChunk) {
    std::size_t end = std::min(kernels_.size(), begin + kChunk);
    new_strings_.clear();
    strings_.WithTable([&](StringTable& table) {
      for (std::size_t i = begin; i < end; ++i) {
        const trace::DeviceTask& k = *kernels_[i].first;
        std::array<std::uint64_t, 4>& row = ids[i - begin];
        row[0] = Id(table, k.name);
        row[1] = k.short_name.empty() || k.short_name == k.name ? row[0] : Id(table, k.short_name);
        row[2] = DimId(table, k.grid);
        row[3] = DimId(table, k.block);
      }
    });
    for (const auto& [id, value] : new_strings_) {
      string_ids_.BindU64(1, id);
      string_ids_.BindStaticText(2, value);
      GPUPROF_RETURN_IF_ERROR(string_ids_.Run());
      ++rows;
    }
    for (std::size_t i = begin; i < end; ++i) {
      const trace::DeviceTask& k = *kernels_[i].first;
      const std::array<std::uint64_t, 4>& row = ids[i - begin];
      BatchInserter& c = compute_task_info_;
      c.SetU64(0, row[0]);
      c.SetU64(1, kernels_[i].second);
      c.SetU64(2, static_cast<std::uint64_t>(k.grid[0]) * k.grid[1] * k.grid[2]);
      c.Set(3, 0);  // mixBlockNum: no mixed cube/vector launches on CUDA
      c.SetU64(4, kernel_type_id);
      c.SetU64(5, row[1]);
      c.SetU64(6, row[2]);
      c.SetU64(7, row[3]);
      GPUPROF_RETURN_IF_ERROR(c.Push());
      ++rows;
    }
  }
  GPUPROF_RETURN_IF_ERROR(compute_task_info_.Flush());
  rows_.fetch_add(rows, std::memory_order_relaxed);
  kernels_.clear();
  batch = {};  // the records are freed here, not on the SQLite thread
  return OkStatus();
}

std::uint64_t KernelSink::Id(StringTable& table, std::string_view value) {
  StringTable::Interned interned = table.Intern(StringSpace::kDevice, value);
  if (interned.is_new) new_strings_.emplace_back(interned.id, interned.value);
  return interned.id;
}

std::uint64_t KernelSink::DimId(StringTable& table, const std::uint32_t (&dim)[3]) {
  std::array<std::uint32_t, 3> key = {dim[0], dim[1], dim[2]};
  if (auto it = dim_ids_.find(key); it != dim_ids_.end()) return it->second;
  std::string text = std::to_string(dim[0]) + "," + std::to_string(dim[1]) + "," + std::to_string(dim[2]);
  std::uint64_t id = Id(table, text);
  dim_ids_.emplace(key, id);
  return id;
}

}  // namespace gpuprof::db::internal
