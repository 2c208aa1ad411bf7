// Publishing a file so that its final name only ever holds the complete file, across a crash:
// write it under a temporary name, then PublishDurably (fsync the file, rename it to the final
// name, fsync the directory so that the rename itself survives). The profile DB, analysis.db and
// profiler_info json go out this way (src/db).
//
// Thread-safety: free functions over paths; safe from any thread. Errors: DataLoss naming the path
// and the failed call.
#pragma once

#include <string>

#include "gpuprof/status.h"

namespace gpuprof::base {

// fsync(2) of a file, or of a directory (`directory` true), by path.
Status SyncPath(const std::string& path, bool directory);

// fsync `temp_path`, rename it to `final_path`, fsync `directory` (the one holding both).
Status PublishDurably(const std::string& temp_path, const std::string& final_path,
                      const std::string& directory);

}  // namespace gpuprof::base
