// What was collected beside the ops and kernels, as `gpuprof stats` prints it and its JSON carries
// it (db/collected.h): the records lost per source, the call stacks of the top ops, the time per
// nn.Module by its path. Formatting only. Internal to the CLI.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "db/collected.h"

namespace gpuprof::cli {

// "Records lost before the profile" with one row per source that lost any; nothing when none did.
void PrintLostRecords(std::ostream& out, const db::CollectedStats& collected);
// The costliest call stack of each top op; one "no data" line without stacks.
void PrintOpStacks(std::ostream& out, const db::CollectedStats& collected);
// The top modules by host time, with their device time; one "no data" line without module ranges.
void PrintModules(std::ostream& out, const db::CollectedStats& collected);

// The same as stats JSON's "lost_records", "op_stacks" and "modules" (docs/json_output.md), added
// to `profile`.
void AddCollectedJson(nlohmann::ordered_json* profile, const db::CollectedStats& collected);

}  // namespace gpuprof::cli
