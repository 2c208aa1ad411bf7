// The args of the trace `export` writes, in the shapes torch's own Chrome trace gives them, so a
// trace from gpuprof reads like one from torch.profiler (and tools written for those work on it):
//
//   DB (DB_SPEC 3.3)            "Input Dims" / "Input type" in the trace
//   "64,10;\r\n10,512"          [[64, 10], [10, 512]]
//   "8;\r\n;\r\n"               [[8], [], []]           (a scalar input: no dims)
//   "float;\r\nc10::Half"       ["float", "c10::Half"]
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuprof::db {

// Inputs are split at ";\r\n" (the DB's separator) or ";" (torch_npu's C++ side, before its
// Python rewrite).
//
// "Input Dims" as a JSON array of arrays of integers; nullopt when an entry is not a list of
// integers (the caller then writes the text as it is).
std::optional<std::string> InputDimsJson(std::string_view encoded);
// "Input type" as a JSON array of strings.
std::string InputTypesJson(std::string_view encoded);

}  // namespace gpuprof::db
