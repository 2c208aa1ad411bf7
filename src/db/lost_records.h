// Records lost before they reached the DB, per source, as the DB keeps them: one META_DATA row,
// name gpuprof_lost_records, value a JSON object from a source id to its count, e.g.
// {"cupti_activity_buffers": 0, "session_buffer": 12, "after_stop": 0, "writer_queue": 0}
// (docs/db_gpuprof_tables.md). The session counts them at its stop and the writer adds its own at
// Finalize; `gpuprof stats` and `gpuprof report` show the sources that lost any. A DB written before
// this row has none: nothing is known of its losses. A META_DATA row, not a table, as
// gpuprof_thread_names: readers that know nothing of it are unaffected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::db {

inline constexpr std::string_view kMetaLostRecords = "gpuprof_lost_records";

// The sources gpuprof counts. Other ids read back as they are (a newer writer's).
inline constexpr std::string_view kLostCuptiBuffers = "cupti_activity_buffers";  // CUPTI dropped them
inline constexpr std::string_view kLostSessionBuffer = "session_buffer";  // cap reached, or out of memory
inline constexpr std::string_view kLostAfterStop = "after_stop";          // arrived after the capture ended
inline constexpr std::string_view kLostWriterQueue = "writer_queue";      // queue full, or the writer failed

// (source id, records), in the order they were counted.
using LostRecords = std::vector<std::pair<std::string, std::uint64_t>>;

std::string EncodeLostRecords(const LostRecords& lost);

// InvalidArgument naming what is wrong when `json` is not such an object.
StatusOr<LostRecords> DecodeLostRecords(std::string_view json);

// What a source id means, for a reader of the profile ("CUPTI's activity buffers (...)"); an
// unknown id as it is.
std::string LostRecordsSourceText(std::string_view source);

}  // namespace gpuprof::db
