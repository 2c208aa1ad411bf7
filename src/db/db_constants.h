// The format's numbers that more than one part of db writes or reads (DB_SPEC.md "Decisions",
// §3.1, §3.4, §7): defined here once, so the writer, the derivations and the read side cannot
// drift apart. Header-only, no SQLite: every db library includes it.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace gpuprof::db {

// DB_INVALID_VALUE: msprof's "no value" in id columns (an empty string's STRING_IDS id, a task
// without a model, a host-only mark's connectionId).
inline constexpr std::uint64_t kDbInvalidValue = 4294967295ull;
// A time (epoch ns) beyond this (year 2116) or below 0 is no clock reading, and sums over such
// times overflow: `check` flags them and `stats` leaves their rows out.
inline constexpr std::int64_t kMaxPlausibleTimeNs = std::int64_t{1} << 62;
// A memory figure (MEMORY_RECORD's totals, bytes) above this (1 PiB) or below 0 is no allocator's
// reading: `check` flags it and `stats` and `report` leave its rows out (plausible.h).
inline constexpr std::int64_t kMaxPlausibleBytes = std::int64_t{1} << 50;

// ENUM_API_TYPE ids of the CANN_API rows gpuprof writes.
inline constexpr std::int64_t kApiTypeRuntime = 5000;        // "runtime": the host API call
inline constexpr std::int64_t kApiTypeCommunication = 5500;  // "communication": a collective
inline constexpr std::int64_t kApiTypeNode = 10000;          // "node": the `launch` row of a launch

// Connection id spaces. CANN_API.connectionId is the table's primary key:
//   - a launch's `node`/`launch` row carries the CUPTI correlation id (TASK.connectionId joins it);
//   - framework ids (fwd/bwd pairs, task-queue links in CONNECTION_IDS) start at 5 << 28, so
//     CUPTI correlation ids stay below it;
//   - the `runtime` row of the same call gets the correlation id shifted past every 32-bit
//     correlation id, so both rows fit the key;
//   - collectives (CANN_API `communication` and COMMUNICATION_OP) start at 3 << 32, above both;
//   - host-only marks (MSTX_EVENTS, linked to their op through CONNECTION_IDS) at 4 << 32.
inline constexpr std::uint64_t kFrameworkConnectionBase = 5ull << 28;
inline constexpr std::uint64_t kRuntimeConnectionOffset = 1ull << 32;
inline constexpr std::uint64_t kCommunicationConnectionBase = 3ull << 32;
inline constexpr std::uint64_t kMstxConnectionBase = 4ull << 32;

// TASK.taskType of a device-linked mstx range's task (writer_mstx_device.cc): the span of the
// device work its thread launched inside it, read by msprof-analyze's mstx_sum, not device work
// itself (device_work.h leaves it out).
inline constexpr std::string_view kMstxRangeTaskType = "MSTX_RANGE";

// COMMUNICATION_OP.groupName of every collective: the work ops do not say which process group
// they ran on (docs/db_gpuprof_tables.md).
inline constexpr std::string_view kDefaultGroupName = "default_pg";

// globalTid = (pid << 32) | tid (OS tid); GC rows use the pid as tid.
constexpr std::int64_t GlobalTid(std::uint32_t pid, std::uint32_t tid) noexcept {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(pid) << 32) | tid);
}

// GPUPROF_COPY_MEMORY.srcKind / dstKind: CUPTI's CUpti_ActivityMemoryKind values.
inline constexpr std::int64_t kCopyMemoryPageable = 1;
inline constexpr std::int64_t kCopyMemoryPinned = 2;

// Bytes per element of an ENUM_HCCL_DATA_TYPE id (4 FP32 -> 4); none for N/A and unknown ids.
inline std::optional<std::uint32_t> HcclDataTypeBytes(std::int64_t data_type) {
  // ENUM_HCCL_DATA_TYPE (schema.sql's msprof rows): INT8, INT16, INT32, FP16, FP32, INT64, UINT64,
  // UINT8, UINT16, UINT32, FP64, BFP16, INT128.
  constexpr std::uint32_t kBytes[] = {1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2, 16};
  if (data_type < 0 || data_type >= static_cast<std::int64_t>(std::size(kBytes))) return std::nullopt;
  return kBytes[data_type];
}

}  // namespace gpuprof::db
