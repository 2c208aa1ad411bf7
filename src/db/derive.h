// Derived tables (DB_SPEC §3.4, §3.7, §3.9), computed in C++ from compact indexes the writer keeps
// while it streams rows. Pure functions: no SQLite, deterministic output order, unit-tested with
// synthetic inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "db/db_constants.h"
#include "trace/records.h"

namespace gpuprof::db {

// kFrameworkConnectionBase (fwd/bwd and task-queue ids) and DB_INVALID_VALUE: db_constants.h.
inline constexpr std::uint64_t kInvalidId = kDbInvalidValue;

// One PYTORCH_API row as the derivations need it.
struct OpSpan {
  std::uint64_t api_row = 0;  // rowid of the PYTORCH_API row (1-based, insertion order)
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::int64_t sequence_number = -1;
  std::uint64_t fwd_thread_id = 0;
  std::uint64_t name_id = 0;                   // STRING_IDS id of the op name
  std::int64_t step_number = -1;               // N of a "ProfilerStep#N" op, else -1
  std::vector<std::uint64_t> correlation_ids;  // external-correlation links to device launches
  std::uint64_t external_id = 0;               // the CUPTI external id the op pushed (0: none)
  trace::TorchOp::Type type = trace::TorchOp::Type::kOp;
  bool communication = false;  // a collective's work op, its c10d:: dispatcher op or record_param_comms
};

// One `node`/`launch` row of CANN_API (a host call that launched device work), or a host-only
// range (a host-only mark is not: its mstx op claims its id, see RowSink::WriteRecord(Mark)).
struct LaunchSpan {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t tid = 0;
  std::uint64_t correlation_id = 0;
};

struct ConnectionRow {
  std::uint64_t id = 0;             // CONNECTION_IDS.id (= PYTORCH_API.connectionId)
  std::uint64_t connection_id = 0;  // CONNECTION_IDS.connectionId
  friend bool operator==(const ConnectionRow&, const ConnectionRow&) = default;
};

struct Connections {
  // (api_row, index) for every op that has at least one link; index counts from 0 in api_row order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> api_index;
  std::vector<ConnectionRow>
      rows;                        // by index; within an op its fwd/bwd id first, then device links ascending
  std::uint64_t tagged_links = 0;  // op -> launch links from external correlation
  std::uint64_t contained_links = 0;  // op -> launch links from time containment on the thread
};

// fwd/bwd pairs (shared (5<<28)+n on both ops; per sequence number the last forward and the last
// backward op), and op->device-task links: an op's external-correlation ids first; launches no op
// claimed go to the innermost op on the same thread whose [start, end] contains the launch.
// `external`: CUPTI external id -> the launches' correlation ids made under it; an op's
// external_id adds those launches to its correlation_ids (step 1, before time containment).
Connections DeriveConnections(
    const std::vector<OpSpan>& ops, const std::vector<LaunchSpan>& launches,
    const std::unordered_map<std::uint64_t, std::vector<std::uint64_t>>& external = {});

struct StepRow {
  std::int64_t id = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  friend bool operator==(const StepRow&, const StepRow&) = default;
};

// Root-level (not nested in another op of the same thread) ProfilerStep#N ops, by start time.
std::vector<StepRow> DeriveSteps(const std::vector<OpSpan>& ops);

struct OpMemoryRow {
  std::uint64_t name_id = kInvalidId;
  std::uint64_t size = 0;
  std::int64_t allocation_time = 0;
  std::optional<std::int64_t> release_time;
  std::optional<std::int64_t> active_release_time;
  std::optional<std::int64_t> duration;
  std::optional<std::int64_t> active_duration;
  std::uint64_t allocation_total_allocated = 0;
  std::uint64_t allocation_total_reserved = 0;
  std::optional<std::uint64_t> allocation_total_active;
  std::optional<std::uint64_t> release_total_allocated;
  std::optional<std::uint64_t> release_total_reserved;
  std::optional<std::uint64_t> release_total_active;
  std::uint64_t stream_ptr = 0;
  std::int32_t device = 0;
  friend bool operator==(const OpMemoryRow&, const OpMemoryRow&) = default;
};

// §3.7: per ptr, each MALLOC with up to one FREE and one BLOCK_FREE after it; attributed to the
// innermost op on the allocating thread whose window contains the allocation time.
std::vector<OpMemoryRow> DeriveOpMemory(const std::vector<trace::AllocatorEvent>& events,
                                        const std::vector<OpSpan>& ops);

// ---- Collectives (COMMUNICATION_OP, DB_SPEC §7) ----------------------------------------------

// A torch.distributed collective as the ProcessGroup's work records it: a RecordFunction named
// "<backend>:<collective>" ("gloo:all_reduce", "nccl:all_gather", "mpi:broadcast", ...; torch 1.13
// and 2.x, DDP's own collectives too). The "c10d::*" dispatcher ops and record_param_comms are not
// collectives here: each collective has exactly one such work op.
struct CollectiveName {
  std::string backend;  // "gloo", "nccl", "mpi", "ucc"
  std::string op_type;  // normalized: "allreduce", "allgather", "broadcast", "reducescatter", "barrier", ...
};
std::optional<CollectiveName> ParseCollectiveName(std::string_view op_name);

// The collective's name as HCCL spells it in torch_npu's COMMUNICATION_OP, which msprof-analyze
// parses (opType "hcom_allReduce_", opName "hcom_allReduce__<tag>_<n>_1"): "allreduce" ->
// "allReduce", "allgatherbase" -> "allGather", "reducescatter" -> "reduceScatter", "recv" ->
// "receive" (its bubble rule looks for hcom_receive), ...; an unknown type stays as it is.
std::string HcclOpType(std::string_view op_type);
// msprof-analyze's hash of a communication group's name (its double_hash: two 32-bit polynomial
// hashes, primes 29 and 131, side by side): analysis.db's group_name is its decimal text, and
// msprof-analyze matches it to META_DATA parallel_group_info's keys through the same hash.
std::uint64_t GroupNameHash(std::string_view group_name);
// The three-digit group tag of an HCCL op name: the last three digits of GroupNameHash, as
// msprof-analyze's hccl_sum reads a group's id back from it; the same in every rank's DB.
std::string HcclGroupTag(std::string_view group_name);

// The element count of the first input in a PYTORCH_API inputShapes string ("16,4;\r\n..."): the
// product of its dims; nullopt when there is none (shapes not recorded, or a TensorList input).
std::optional<std::uint64_t> FirstInputElements(std::string_view input_shapes);

// ENUM_HCCL_DATA_TYPE id of the first input's torch dtype name ("float" -> 4 FP32, "c10::Half"
// -> 3 FP16, ...); 65534 (N/A) when unknown or absent.
std::uint32_t HcclDataTypeOf(std::string_view input_dtypes);

// Whether a PYTORCH_API name is an op that wraps a collective's work op and launches its device
// work: the "c10d::*" dispatcher op, or torch 2.x's "record_param_comms". (A collective's host
// side is these plus the work op itself, ParseCollectiveName.)
bool IsCommunicationLauncherName(std::string_view op_name);
struct CollectiveSpan {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::string op_name;  // the PYTORCH_API name, e.g. "gloo:all_reduce"
  CollectiveName name;
  std::optional<std::uint64_t> count;
  std::uint32_t data_type = 65534;
};

// The collectives in the order their ids are handed out (kCommunicationConnectionBase + index):
// by start time, ties in recording order.
std::vector<CollectiveSpan> CollectivesInIdOrder(const std::vector<CollectiveSpan>& collectives);

// The device launches (correlation ids) of each collective, as (index into `collectives`,
// correlation id): those linked (`connections`, from CUPTI external correlation or time) to the
// innermost communication op (OpSpan::communication) on the collective's thread that contains its
// start, else to communication ops that start inside it. NCCL's kernels are launched inside
// record_param_comms / c10d::* around the work op; gloo's collectives launch nothing.
std::vector<std::pair<std::size_t, std::uint64_t>> CollectiveLaunches(
    const std::vector<CollectiveSpan>& collectives, const std::vector<OpSpan>& ops,
    const Connections& connections);

}  // namespace gpuprof::db
