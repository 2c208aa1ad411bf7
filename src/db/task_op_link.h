// The consumers' join of each device task to the op that launched it (DB_SPEC §3.4):
// TASK.connectionId = CONNECTION_IDS.connectionId AND CONNECTION_IDS.id = PYTORCH_API.connectionId,
// one op per task: the latest-starting (innermost) op linked to its connection, so repeated
// CONNECTION_IDS or op rows do not multiply the tasks (SQLite takes the bare columns from the row
// of MAX()). `gpuprof export` draws a flow per row, `gpuprof report` counts launches and delays.
//
// The file has no index on TASK.connectionId or PYTORCH_API.connectionId, and a reader cannot add
// one (the DB is opened read-only, query_only). Left to itself, SQLite's planner put the grouped
// ops outside and scanned TASK once per op: quadratic (40k linked kernels took 75 s). CROSS JOIN
// fixes the order (SQLite never reorders it): TASK is scanned once and each row probes the grouped
// ops through an automatic index SQLite builds on them, O(n log n) in all.
#pragma once

#include <string>

namespace gpuprof::db {

// A FROM clause: `t` (TASK) and `l` (cid, op_start, op_tid, op_name: the op's startNs, globalTid
// and name id). Needs CONNECTION_IDS(id, connectionId), PYTORCH_API(startNs, globalTid, name,
// connectionId) and TASK(connectionId).
inline std::string TaskOpLinkFrom() {
  return "TASK t CROSS JOIN (SELECT c.connectionId AS cid, MAX(p.startNs) AS op_start, p.globalTid AS "
         "op_tid, "
         "p.name AS op_name FROM CONNECTION_IDS c JOIN PYTORCH_API p ON p.connectionId = c.id GROUP BY "
         "c.connectionId) l ON l.cid = t.connectionId";
}

}  // namespace gpuprof::db
