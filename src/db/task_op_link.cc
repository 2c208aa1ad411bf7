#include "db/task_op_link.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace gpuprof::db {
namespace {

// One CONNECTION_IDS row: an op index (`id`), the slot of its connection id and its place in the
// table's scan. 32-bit places keep the rows of tens of millions of links small.
struct LinkRow {
  std::int64_t id = 0;
  std::uint32_t slot = 0;
  std::uint32_t row = 0;
};

}  // namespace

// Whether the op at (connection_row, op_row) with `start` replaces the slot's op: the latest start
// wins and, among equal starts, the earliest rows; an op without a start wins only over others
// without one, and then the latest rows do (SQLite's MAX() keeps the first maximum and, before any
// value, takes each row's bare columns).
bool TaskOpLinks::Slot::ReplacedBy(const std::optional<std::int64_t>& start, std::uint32_t at_connection_row,
                                   std::uint32_t at_op_row) const {
  if (!linked) return true;
  const auto rows = std::make_pair(at_connection_row, at_op_row);
  const auto own_rows = std::make_pair(connection_row, op_row);
  if (start.has_value()) {
    if (!op.start_ns.has_value()) return true;
    if (*start != *op.start_ns) return *start > *op.start_ns;
    return rows < own_rows;
  }
  return !op.start_ns.has_value() && rows > own_rows;
}

StatusOr<TaskOpLinks> TaskOpLinks::Read(const ProfileReader& reader) {
  TaskOpLinks links;
  GPUPROF_ASSIGN_OR_RETURN(bool has_connections, reader.HasColumns("CONNECTION_IDS", {"id", "connectionId"}));
  GPUPROF_ASSIGN_OR_RETURN(
      bool has_ops, reader.HasColumns("PYTORCH_API", {"connectionId", "startNs", "globalTid", "name"}));
  if (!has_connections || !has_ops) return links;

  // A NULL on either side links nothing (NULL = x is never true). Reserved from the count: growing
  // by doubling would hold up to twice the rows.
  GPUPROF_ASSIGN_OR_RETURN(std::int64_t count, reader.QueryInt("SELECT COUNT(*) FROM CONNECTION_IDS"));
  constexpr auto kMaxRows = static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max());
  if (count > kMaxRows) {
    return InvalidArgumentError("the DB holds " + std::to_string(count) +
                                " launch links; linking ops to their kernels handles at most " +
                                std::to_string(kMaxRows));
  }
  std::vector<LinkRow> rows;
  std::vector<std::int64_t> row_connection_ids;
  rows.reserve(static_cast<std::size_t>(count));
  row_connection_ids.reserve(static_cast<std::size_t>(count));
  GPUPROF_ASSIGN_OR_RETURN(Query connections,
                           reader.Prepare("SELECT id, connectionId FROM CONNECTION_IDS WHERE id IS NOT NULL "
                                          "AND connectionId IS NOT NULL"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, connections.Step());
    if (!row) break;
    if (rows.size() == static_cast<std::size_t>(kMaxRows)) break;  // the table grew under us
    rows.push_back(LinkRow{connections.Int(0), 0, static_cast<std::uint32_t>(rows.size())});
    row_connection_ids.push_back(connections.Int(1));
  }
  links.connection_ids_ = row_connection_ids;
  std::sort(links.connection_ids_.begin(), links.connection_ids_.end());
  links.connection_ids_.erase(std::unique(links.connection_ids_.begin(), links.connection_ids_.end()),
                              links.connection_ids_.end());
  links.connection_ids_.shrink_to_fit();
  for (LinkRow& row : rows) {
    const auto at = std::lower_bound(links.connection_ids_.begin(), links.connection_ids_.end(),
                                     row_connection_ids[row.row]);
    row.slot = static_cast<std::uint32_t>(at - links.connection_ids_.begin());
  }
  row_connection_ids = {};
  // By op index, each index's rows in table order.
  std::sort(rows.begin(), rows.end(),
            [](const LinkRow& a, const LinkRow& b) { return a.id != b.id ? a.id < b.id : a.row < b.row; });

  links.slots_.resize(links.connection_ids_.size());
  GPUPROF_ASSIGN_OR_RETURN(Query ops, reader.Prepare("SELECT connectionId, startNs, globalTid, name FROM "
                                                     "PYTORCH_API WHERE connectionId IS NOT NULL"));
  for (std::uint32_t op_row = 0;; ++op_row) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, ops.Step());
    if (!row) break;
    const std::int64_t index = ops.Int(0);
    auto it = std::lower_bound(rows.begin(), rows.end(), index,
                               [](const LinkRow& link, std::int64_t id) { return link.id < id; });
    const std::optional<std::int64_t> start = ops.OptionalInt(1);
    for (; it != rows.end() && it->id == index; ++it) {
      Slot& slot = links.slots_[it->slot];
      if (!slot.ReplacedBy(start, it->row, op_row)) continue;
      slot = Slot{LinkedOp{start, ops.Int(2), ops.OptionalInt(3)}, it->row, op_row, true};
    }
    if (op_row == std::numeric_limits<std::uint32_t>::max()) {
      return InvalidArgumentError("the DB holds more linked ops than linking ops to their kernels handles (" +
                                  std::to_string(kMaxRows) + ")");
    }
  }
  return links;
}

const LinkedOp* TaskOpLinks::Find(std::int64_t connection_id) const {
  auto it = std::lower_bound(connection_ids_.begin(), connection_ids_.end(), connection_id);
  if (it == connection_ids_.end() || *it != connection_id) return nullptr;
  const Slot& slot = slots_[static_cast<std::size_t>(it - connection_ids_.begin())];
  return slot.linked ? &slot.op : nullptr;
}

bool TaskOpLinks::empty() const {
  return std::none_of(slots_.begin(), slots_.end(), [](const Slot& slot) { return slot.linked; });
}

}  // namespace gpuprof::db
