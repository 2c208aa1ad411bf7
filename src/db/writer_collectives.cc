// The torch.distributed collectives among the ops, written at Finalize (RowSink::WriteFinal): a
// CANN_API `communication` row and a COMMUNICATION_OP row each, and a COMMUNICATION_TASK_INFO row
// for each device task an NCCL collective launched (docs/db_gpuprof_tables.md).
#include <algorithm>
#include <string>

#include "db/db_constants.h"
#include "db/writer_rows.h"

namespace gpuprof::db::internal {

// DB_SPEC §7: each collective is a CANN_API `communication` row (type 5500) and a COMMUNICATION_OP
// row with the same connectionId (kCommunicationConnectionBase + its index in start order). The
// opName "hcom_<type>__<tag>_<n>_1" (HCCL's shape, which msprof-analyze parses: split on '_') counts
// collectives in issue order, which every rank of a group shares, so the same collective has the
// same name in every rank's DB; opType is "hcom_<type>_" (torch_npu's; compare_tools'
// npu_profiling_db_parser.py takes the type from its second '_' part). groupName is the default
// group's: the work ops do not say which group they ran on (docs/db_gpuprof_tables.md). A
// collective that launched device work (NCCL) takes its tasks' device time, and each task gets a
// COMMUNICATION_TASK_INFO row naming the op (opId).
Status RowSink::WriteCollectives(const std::vector<CollectiveSpan>& collectives,
                                 const std::vector<OpSpan>& ops, const Connections& connections,
                                 const trace::RunInfo& run) {
  if (collectives.empty()) return OkStatus();
  const std::vector<CollectiveSpan> order = CollectivesInIdOrder(collectives);

  // The device tasks of each collective, from TASK through the launches' correlation ids.
  struct DeviceTask {
    std::uint64_t global_task_id;
    std::int64_t task_type;
    std::int64_t start_ns;
    std::int64_t end_ns;
  };
  std::vector<std::vector<DeviceTask>> tasks(order.size());
  const std::vector<std::pair<std::size_t, std::uint64_t>> launches =
      CollectiveLaunches(order, ops, connections);
  if (!launches.empty()) {
    GPUPROF_RETURN_IF_ERROR(
        conn_.Exec("CREATE TEMP TABLE gpuprof_collective_launch (collective INTEGER, correlation INTEGER)"));
    {
      GPUPROF_ASSIGN_OR_RETURN(
          Statement link,
          Statement::Prepare(conn_, "INSERT INTO temp.gpuprof_collective_launch VALUES (?1, ?2)"));
      for (const auto& [collective, correlation] : launches) {
        link.BindU64(1, collective);
        link.BindU64(2, correlation);
        GPUPROF_RETURN_IF_ERROR(link.Run());
      }
      GPUPROF_ASSIGN_OR_RETURN(
          Statement query,
          Statement::Prepare(conn_,
                             "SELECT l.collective, t.globalTaskId, t.taskType, t.startNs, t.endNs FROM "
                             "temp.gpuprof_collective_launch l JOIN main.TASK t ON t.connectionId = "
                             "l.correlation ORDER BY l.collective, t.startNs"));
      while (true) {
        GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
        if (!row) break;
        const auto collective = static_cast<std::size_t>(query.Int(0));
        if (collective < tasks.size()) {
          tasks[collective].push_back(
              {static_cast<std::uint64_t>(query.Int(1)), query.Int(2), query.Int(3), query.Int(4)});
        }
      }
    }
    GPUPROF_RETURN_IF_ERROR(conn_.Exec("DROP TABLE temp.gpuprof_collective_launch"));
  }

  GPUPROF_ASSIGN_OR_RETURN(std::uint64_t group_id, Id(StringSpace::kDevice, kDefaultGroupName));
  const std::string group_tag = HcclGroupTag(kDefaultGroupName);
  GPUPROF_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(conn_,
                         "INSERT INTO COMMUNICATION_OP VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                         "?12, ?13, ?14)"));
  GPUPROF_ASSIGN_OR_RETURN(
      Statement task_info,
      Statement::Prepare(conn_,
                         "INSERT INTO COMMUNICATION_TASK_INFO (name, globalTaskId, taskType, groupName, "
                         "dataType, opId) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  for (std::size_t i = 0; i < order.size(); ++i) {
    const CollectiveSpan& c = order[i];
    const std::uint64_t connection_id = kCommunicationConnectionBase + i;
    const std::string hccl_type = "hcom_" + HcclOpType(c.name.op_type);
    GPUPROF_ASSIGN_OR_RETURN(
        std::uint64_t op_name_id,
        Id(StringSpace::kDevice, hccl_type + "__" + group_tag + "_" + std::to_string(i) + "_1"));
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t type_id, Id(StringSpace::kDevice, hccl_type + "_"));
    GPUPROF_ASSIGN_OR_RETURN(std::uint64_t api_name_id, Id(StringSpace::kDevice, c.op_name));
    // The CANN_API row is the host call; COMMUNICATION_OP is the communication: on the device when
    // the collective launched tasks there.
    std::int64_t start_ns = c.start_ns;
    std::int64_t end_ns = c.end_ns;
    if (!tasks[i].empty()) {
      start_ns = tasks[i].front().start_ns;
      end_ns = start_ns;
      for (const DeviceTask& task : tasks[i]) end_ns = std::max(end_ns, task.end_ns);
    }
    GPUPROF_RETURN_IF_ERROR(WriteCannApi(c.start_ns, c.end_ns, kApiTypeCommunication, GlobalTid(c.pid, c.tid),
                                         connection_id, api_name_id));
    insert.BindU64(1, op_name_id);
    insert.BindInt(2, start_ns);
    insert.BindInt(3, end_ns);
    insert.BindU64(4, connection_id);
    insert.BindU64(5, group_id);
    insert.BindU64(6, i);
    insert.BindInt(7, 0);  // relay
    insert.BindInt(8, 0);  // retry
    insert.BindU64(9, c.data_type);
    insert.BindNull(10);  // algType: NCCL and gloo do not report the algorithm
    insert.BindOptional(11, c.count);
    insert.BindU64(12, type_id);
    if (run.device >= 0) {
      insert.BindInt(13, run.device);
    } else {
      insert.BindNull(13);
    }
    if (run.world_size > 0) {
      insert.BindInt(14, run.world_size);
    } else {
      insert.BindNull(14);
    }
    GPUPROF_RETURN_IF_ERROR(insert.Run());
    ++rows_;
    for (const DeviceTask& task : tasks[i]) {
      task_info.BindU64(1, api_name_id);
      task_info.BindU64(2, task.global_task_id);
      task_info.BindInt(3, task.task_type);
      task_info.BindU64(4, group_id);
      task_info.BindU64(5, c.data_type);
      task_info.BindU64(6, i);
      GPUPROF_RETURN_IF_ERROR(task_info.Run());
      ++rows_;
    }
  }
  return OkStatus();
}

}  // namespace gpuprof::db::internal
