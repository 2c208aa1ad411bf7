// `gpuprof diff A B`: db::DiffProfiles formatted as text or as a JSON document
// ("gpuprof.diff", version 1, docs/json_output.md). Formatting only.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "db/diff.h"

namespace gpuprof::cli {

inline constexpr int kDiffJsonVersion = 1;

void PrintDiff(std::ostream& out, const db::ProfileDiff& diff);
nlohmann::ordered_json DiffJson(const db::ProfileDiff& diff);

}  // namespace gpuprof::cli
