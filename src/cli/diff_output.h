// `gpuprof diff A B`: db::DiffProfiles formatted as text, as a JSON document ("gpuprof.diff",
// version 1, docs/json_output.md) or as a self-contained HTML page (diff_html.cc). Formatting only.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "db/diff.h"

namespace gpuprof::cli {

inline constexpr int kDiffJsonVersion = 1;

void PrintDiff(std::ostream& out, const db::ProfileDiff& diff);
nlohmann::ordered_json DiffJson(const db::ProfileDiff& diff);
// The page for the pairs of DBs of A and B (as given by the user).
std::string RenderDiffHtml(const std::string& a, const std::string& b,
                           const std::vector<db::ProfileDiff>& pairs);

}  // namespace gpuprof::cli
