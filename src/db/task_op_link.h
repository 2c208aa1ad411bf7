// The consumers' link of each device task to the op that launched it (DB_SPEC §3.4):
// TASK.connectionId = CONNECTION_IDS.connectionId AND CONNECTION_IDS.id = PYTORCH_API.connectionId,
// one op per task: the latest-starting (innermost) op linked to its connection, so repeated
// CONNECTION_IDS or op rows do not multiply the tasks. `gpuprof export` draws a flow per linked
// task, `gpuprof report` counts launches and delays.
//
// Built in memory from one scan of CONNECTION_IDS and one of PYTORCH_API, then probed once per task.
// The file has no index on the link columns and a reader cannot add one (the DB is opened
// read-only), so SQLite joined them through automatic indexes and a GROUP BY sorter: most of
// `gpuprof report`'s time on large DBs (bench/README.md, report_benchmark).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

// The op linked to one connection id.
struct LinkedOp {
  std::optional<std::int64_t> start_ns;  // PYTORCH_API.startNs; none when every linked op has none
  std::int64_t tid = 0;                  // PYTORCH_API.globalTid (NULL reads as 0)
  std::optional<std::int64_t> name;      // PYTORCH_API.name, a STRING_IDS id
};

// Which op each connection id links to. Immutable once read; not tied to the reader's lifetime.
class TaskOpLinks {
 public:
  // Reads CONNECTION_IDS(id, connectionId) and PYTORCH_API(connectionId, startNs, globalTid, name).
  // Empty (Find always nullptr) when either table lacks those columns.
  //
  // The op of a connection: the one with the latest startNs; of ops starting together, the first
  // by CONNECTION_IDS row then PYTORCH_API row; when no linked op has a startNs, the last by that
  // order. This is the row SQLite's MAX() takes its bare columns from in
  // `SELECT c.connectionId, MAX(p.startNs), p.globalTid, p.name FROM CONNECTION_IDS c JOIN
  // PYTORCH_API p ON p.connectionId = c.id GROUP BY c.connectionId` on a DB without indexes, which
  // gpuprof used before: the figures of a DB stay as they were.
  static StatusOr<TaskOpLinks> Read(const ProfileReader& reader);

  // The op linked to a task's connectionId; nullptr when none is. Valid while this object lives.
  const LinkedOp* Find(std::int64_t connection_id) const;

  // Whether no connection id links to an op.
  bool empty() const;

 private:
  // A connection id's op, with the rows it came from to break ties while reading.
  struct Slot {
    LinkedOp op;
    std::uint32_t connection_row = 0;
    std::uint32_t op_row = 0;
    bool linked = false;

    bool ReplacedBy(const std::optional<std::int64_t>& start, std::uint32_t at_connection_row,
                    std::uint32_t at_op_row) const;
  };

  std::vector<std::int64_t> connection_ids_;  // sorted, unique; slots_[i] is connection_ids_[i]'s op
  std::vector<Slot> slots_;
};

}  // namespace gpuprof::db
