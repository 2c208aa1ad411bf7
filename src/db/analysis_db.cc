#include "db/analysis_db.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <system_error>
#include <tuple>
#include <utility>

#include "base/durable_file.h"
#include "db/cluster_stats.h"
#include "db/derive.h"
#include "db/output_layout.h"
#include "db/profile_reader.h"
#include "db/schema_sql.h"
#include "db/sqlite_util.h"

namespace gpuprof::db {
namespace {

constexpr double kNsPerUs = 1e3;
constexpr double kNsPerMs = 1e6;
constexpr double kBytesPerMb = 1024.0 * 1024.0;  // torch_npu's MB

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The step a time falls in ("step<id>"), "step" when none: steps by start, the first that holds it.
std::string StepOf(const std::vector<RankStepStats>& steps, std::int64_t ns) {
  for (const RankStepStats& step : steps) {
    if (step.start_ns > ns) break;
    if (ns < step.end_ns) return "step" + std::to_string(step.id);
  }
  return "step";
}

// The COMMUNICATION_OP rows, by start. The backend comes from the CANN_API `communication` row of
// the same connectionId, named after the work op ("gloo:all_reduce").
StatusOr<std::vector<CommunicationRecord>> ReadCommunication(const ProfileReader& reader,
                                                             const std::vector<RankStepStats>& steps) {
  std::vector<CommunicationRecord> records;
  GPUPROF_ASSIGN_OR_RETURN(
      bool has_ops, reader.HasColumns("COMMUNICATION_OP", {"opName", "startNs", "endNs", "connectionId",
                                                           "groupName", "dataType", "count"}));
  if (!has_ops || !reader.HasStringValues()) return records;
  GPUPROF_ASSIGN_OR_RETURN(bool has_api, reader.HasColumns("CANN_API", {"connectionId", "name"}));
  const std::string api_join = has_api ? " LEFT JOIN CANN_API k ON k.connectionId = c.connectionId LEFT JOIN "
                                         "STRING_IDS a ON a.id = k.name"
                                       : "";
  GPUPROF_ASSIGN_OR_RETURN(
      Query query,
      reader.Prepare(
          "SELECT n.value, g.value, c.startNs, c.endNs, c.count, c.dataType, " +
          std::string(has_api ? "a.value" : "NULL") +
          " FROM COMMUNICATION_OP c LEFT JOIN STRING_IDS n ON n.id = c.opName LEFT JOIN STRING_IDS g "
          "ON g.id = c.groupName" +
          api_join + " ORDER BY c.startNs, c.opId"));
  while (true) {
    GPUPROF_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    CommunicationRecord& r = records.emplace_back();
    r.op_name = std::string(query.Text(0));
    r.group_name = std::string(query.Text(1));
    r.start_ns = query.Int(2);
    r.end_ns = std::max(r.start_ns, query.Int(3));
    const std::optional<std::uint32_t> element = HcclDataTypeBytes(query.Int(5));
    if (!query.IsNull(4) && element.has_value())
      r.bytes = static_cast<std::uint64_t>(query.Int(4)) * *element;
    const std::string_view api = query.Text(6);
    const std::size_t colon = api.find(':');
    r.transport = colon == std::string_view::npos ? "UNKNOWN" : Lower(api.substr(0, colon));
    for (char& c : r.transport) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    r.step = StepOf(steps, r.start_ns);
  }
  return records;
}

Status WriteStepTrace(const Connection& conn, const RankStats& stats) {
  GPUPROF_ASSIGN_OR_RETURN(
      Statement insert,
      Statement::Prepare(conn,
                         "INSERT INTO StepTraceTime VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / kNsPerUs; };
  for (const RankStepStats& step : stats.steps) {
    insert.BindInt(1, stats.device.value_or(-1));
    if (stats.whole_run) {
      insert.BindNull(2);  // no steps: one row over the run, as torch_npu writes it
    } else {
      insert.BindText(2, std::to_string(step.id));
    }
    insert.BindDouble(3, us(step.compute_ns));
    insert.BindDouble(4, us(step.communication_not_overlapped_ns));
    insert.BindDouble(5, us(step.communication_ns - step.communication_not_overlapped_ns));
    insert.BindDouble(6, us(step.communication_ns));
    insert.BindDouble(7, us(step.idle_ns));
    insert.BindDouble(8, us(step.duration_ns - step.bubble_ns));
    insert.BindDouble(9, us(step.bubble_ns));
    insert.BindDouble(10, us(step.communication_not_overlapped_excluding_receive_ns));
    insert.BindDouble(11, us(step.preparing_ns));
    GPUPROF_RETURN_IF_ERROR(insert.Run());
  }
  return OkStatus();
}

void BindOptionalDouble(Statement& s, int index, const std::optional<double>& value) {
  if (value.has_value()) {
    s.BindDouble(index, *value);
  } else {
    s.BindNull(index);
  }
}

Status WriteCommunication(const Connection& conn, const std::vector<CommunicationRecord>& ops,
                          std::int64_t local_rank) {
  GPUPROF_ASSIGN_OR_RETURN(
      Statement time,
      Statement::Prepare(conn,
                         "INSERT INTO CommAnalyzerTime VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
  GPUPROF_ASSIGN_OR_RETURN(
      Statement bandwidth,
      Statement::Prepare(
          conn,
          "INSERT INTO CommAnalyzerBandwidth VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
  for (const CommunicationRecord& op : ops) {
    const std::string group = std::to_string(GroupNameHash(op.group_name));
    const std::string_view type = CommunicationType(op.op_name);
    const double elapsed_ms = static_cast<double>(op.end_ns - op.start_ns) / kNsPerMs;
    time.BindText(1, op.op_name);
    time.BindText(2, group);
    time.BindDouble(3, static_cast<double>(op.start_ns) / kNsPerUs);
    time.BindDouble(4, elapsed_ms);
    // Neither NCCL nor gloo says how much of a collective was waiting for the peers: all of it is
    // transfer here, none wait, synchronization or idle (docs/db_gpuprof_tables.md).
    time.BindDouble(5, elapsed_ms);
    time.BindDouble(6, 0);
    time.BindDouble(7, 0);
    time.BindDouble(8, 0);
    time.BindText(9, op.step);
    time.BindText(10, type);
    GPUPROF_RETURN_IF_ERROR(time.Run());

    std::optional<double> size_mb;
    std::optional<double> gbps;
    if (op.bytes.has_value()) size_mb = static_cast<double>(*op.bytes) / kBytesPerMb;
    if (size_mb.has_value() && elapsed_ms > 0) gbps = *size_mb / elapsed_ms;  // MB/ms = GB/s
    bandwidth.BindText(1, op.op_name);
    bandwidth.BindText(2, group);
    bandwidth.BindText(3, op.transport);
    BindOptionalDouble(bandwidth, 4, size_mb);
    bandwidth.BindDouble(5, elapsed_ms);
    BindOptionalDouble(bandwidth, 6, gbps);
    bandwidth.BindDouble(7, 0);  // large_packet_ratio: one message per op, not split into packets
    BindOptionalDouble(bandwidth, 8, size_mb);
    bandwidth.BindInt(9, 1);
    bandwidth.BindDouble(10, elapsed_ms);
    bandwidth.BindText(11, op.step);
    bandwidth.BindText(12, type);
    GPUPROF_RETURN_IF_ERROR(bandwidth.Run());
  }

  GPUPROF_ASSIGN_OR_RETURN(
      Statement matrix,
      Statement::Prepare(
          conn, "INSERT INTO CommAnalyzerMatrix VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  for (const MatrixRow& row : CommunicationMatrix(ops, local_rank)) {
    matrix.BindText(1, row.hccl_op_name);
    matrix.BindText(2, row.group_name);
    matrix.BindText(3, std::to_string(row.src_rank));
    matrix.BindText(4, std::to_string(row.dst_rank));
    matrix.BindText(5, row.transport);
    BindOptionalDouble(matrix, 6, row.transit_size_mb);
    matrix.BindDouble(7, row.transit_time_ms);
    BindOptionalDouble(matrix, 8, row.bandwidth_gbps);
    matrix.BindText(9, row.step);
    matrix.BindText(10, row.type);
    if (row.op_name.empty()) {
      matrix.BindNull(11);
    } else {
      matrix.BindText(11, row.op_name);
    }
    GPUPROF_RETURN_IF_ERROR(matrix.Run());
  }
  return OkStatus();
}

}  // namespace

std::string CommunicationKind(std::string_view op_name) {
  const std::size_t first = op_name.find('_');
  if (first == std::string_view::npos) return Lower(op_name);
  const std::size_t second = op_name.find('_', first + 1);
  return Lower(op_name.substr(
      first + 1, second == std::string_view::npos ? std::string_view::npos : second - first - 1));
}

std::string_view CommunicationType(std::string_view op_name) {
  const std::string name = Lower(op_name);
  for (std::string_view p2p : {"hcom_send", "hcom_receive", "hcom_batchsendrecv"}) {
    if (name.rfind(p2p, 0) == 0) return "p2p";
  }
  return "collective";
}

std::vector<MatrixRow> CommunicationMatrix(const std::vector<CommunicationRecord>& ops,
                                           std::int64_t local_rank) {
  // Per (step, type, group, kind), the ops in start order.
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, std::vector<const CommunicationRecord*>> groups;
  std::vector<Key> order;
  for (const CommunicationRecord& op : ops) {
    Key key{op.step, std::string(CommunicationType(op.op_name)), op.group_name,
            CommunicationKind(op.op_name)};
    auto [it, inserted] = groups.try_emplace(key);
    if (inserted) order.push_back(key);
    it->second.push_back(&op);
  }
  auto size_mb = [](const CommunicationRecord& op) -> std::optional<double> {
    if (!op.bytes.has_value()) return std::nullopt;
    return static_cast<double>(*op.bytes) / kBytesPerMb;
  };
  auto time_ms = [](const CommunicationRecord& op) {
    return static_cast<double>(op.end_ns - op.start_ns) / kNsPerMs;
  };
  auto gbps = [&](const CommunicationRecord& op) -> std::optional<double> {
    const std::optional<double> size = size_mb(op);
    if (!size.has_value() || time_ms(op) <= 0) return std::nullopt;
    return *size / time_ms(op);
  };
  std::vector<MatrixRow> rows;
  for (const Key& key : order) {
    const auto& [step, type, group_name, kind] = key;
    std::vector<const CommunicationRecord*> by_bandwidth = groups[key];
    // Lowest bandwidth first (an op of unknown size counts as the lowest); ties keep start order.
    std::stable_sort(by_bandwidth.begin(), by_bandwidth.end(),
                     [&](const CommunicationRecord* a, const CommunicationRecord* b) {
                       return gbps(*a).value_or(-1) < gbps(*b).value_or(-1);
                     });
    const std::string group = std::to_string(GroupNameHash(group_name));
    auto row_of = [&](const std::string& suffix, const CommunicationRecord& op) {
      MatrixRow row;
      row.hccl_op_name = kind + "-" + suffix;
      row.group_name = group;
      row.src_rank = local_rank;
      row.dst_rank = local_rank;
      row.transport = op.transport;
      row.transit_size_mb = size_mb(op);
      row.transit_time_ms = time_ms(op);
      row.bandwidth_gbps = gbps(op);
      row.step = step;
      row.type = type;
      row.op_name = op.op_name;
      return row;
    };
    const std::size_t n = by_bandwidth.size();
    rows.push_back(row_of("top1", *by_bandwidth.front()));
    rows.push_back(row_of("middle", *by_bandwidth[n / 2]));
    for (std::size_t k = 1; k <= 3 && k <= n; ++k)
      rows.push_back(row_of("bottom" + std::to_string(k), *by_bandwidth[n - k]));
    MatrixRow total = row_of("total", *by_bandwidth.front());
    total.op_name.clear();
    std::optional<double> total_size = 0.0;
    double total_time = 0;
    for (const CommunicationRecord* op : by_bandwidth) {
      const std::optional<double> size = size_mb(*op);
      total_size = total_size.has_value() && size.has_value() ? std::optional<double>(*total_size + *size)
                                                              : std::nullopt;
      total_time += time_ms(*op);
    }
    total.transit_size_mb = total_size;
    total.transit_time_ms = total_time;
    total.bandwidth_gbps = total_size.has_value() && total_time > 0
                               ? std::optional<double>(*total_size / total_time)
                               : std::nullopt;
    rows.push_back(std::move(total));
  }
  return rows;
}

Status WriteAnalysisDb(const std::string& profile_db_path, const std::string& analysis_db_path) {
  const std::filesystem::path profile(profile_db_path);
  GPUPROF_ASSIGN_OR_RETURN(
      RankStats stats, ComputeRankStats({profile_db_path, RankFromDbFileName(profile.filename().string())},
                                        WithoutSteps::kWholeRunWithoutSteps, ImpossibleSteps::kKeep));
  std::vector<CommunicationRecord> ops;
  {
    GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<ProfileReader> reader, ProfileReader::Open(profile_db_path));
    const std::vector<RankStepStats> no_steps;
    GPUPROF_ASSIGN_OR_RETURN(ops, ReadCommunication(*reader, stats.whole_run ? no_steps : stats.steps));
  }
  // The rank's index in its group: the default group holds every rank in order.
  const std::int64_t local_rank = std::max<std::int64_t>(0, stats.rank);

  const std::string partial = analysis_db_path + kPartialSuffix;
  std::error_code ec;
  std::filesystem::remove(partial, ec);  // a leftover of this profile's own earlier attempt
  {
    GPUPROF_ASSIGN_OR_RETURN(Connection conn, Connection::OpenForWrite(partial));
    // A small file, written once under its .partial name: no journal, no fsync per commit (one
    // before the rename), no temporary file outside the output directory.
    GPUPROF_RETURN_IF_ERROR(
        conn.Exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY;"));
    GPUPROF_RETURN_IF_ERROR(conn.Exec(SchemaSql(SchemaPart::kAnalysisTables)));
    GPUPROF_RETURN_IF_ERROR(conn.Exec("BEGIN"));
    GPUPROF_RETURN_IF_ERROR(WriteStepTrace(conn, stats));
    GPUPROF_RETURN_IF_ERROR(WriteCommunication(conn, ops, local_rank));
    GPUPROF_RETURN_IF_ERROR(conn.Exec("COMMIT"));
    GPUPROF_RETURN_IF_ERROR(conn.Close());
  }
  return base::PublishDurably(partial, analysis_db_path,
                              std::filesystem::path(analysis_db_path).parent_path().string());
}

}  // namespace gpuprof::db
