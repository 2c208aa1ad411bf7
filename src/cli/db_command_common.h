// What the profile-database subcommands (db_commands.h) and their CSV writers (stats_csv.h) share:
// resolving PATH with its notes, and the error line. Private to src/cli.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>

#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::cli {

// "gpuprof: error: <message>" on `err`.
void PrintError(std::ostream& err, const Status& status);

// The live line's context for the i-th of n DBs: "" for a single DB.
std::string DbOfN(std::size_t i, std::size_t n);

// Resolves PATH, printing the error or the partial-DB note; nullopt on error.
std::optional<db::ResolvedProfiles> Resolve(const std::string& path, std::ostream& err);

}  // namespace gpuprof::cli
