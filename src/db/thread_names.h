// The program's thread names (gpuprof_name_thread_v1: Python's threading names) as the DB keeps
// them: one META_DATA row, name gpuprof_thread_names, value a JSON object from the OS thread id (in
// decimal) to the name, e.g. {"4242": "MainThread", "4243": "Thread-1 (worker)"}
// (docs/db_gpuprof_tables.md). The writer encodes it at finalize; `gpuprof export` decodes it for
// the trace's thread_name metadata. A META_DATA row, not a table: readers that know nothing of it
// (msprof-analyze, `gpuprof check`) are unaffected.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "gpuprof/status.h"

namespace gpuprof::db {

inline constexpr std::string_view kMetaThreadNames = "gpuprof_thread_names";

using ThreadNames = std::map<std::uint32_t, std::string>;

std::string EncodeThreadNames(const ThreadNames& names);

// InvalidArgument naming what is wrong when `json` is not such an object.
StatusOr<ThreadNames> DecodeThreadNames(std::string_view json);

}  // namespace gpuprof::db
