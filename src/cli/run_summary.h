// What `gpuprof run` prints once the application ended: how it ended, each DB's path with its top
// kernels, device tasks and CUDA API time (and, for replay, the replay tables), and, when no DB
// was finalized, why in one line. Everything it says about a DB comes from db's reader.
#pragma once

#include <iosfwd>
#include <string>

namespace gpuprof::cli {

// `wait_status` is the application's waitpid status; `result_file` what its processes reported
// (result_file.h); `out_dir` the absolute output directory. `replay` adds the replay tables, `csv`
// the replayed launches' metric values as `gpuprof stats --csv` prints them. A DB that cannot be
// read is reported and skipped: it never changes run's exit status, which is the application's.
void PrintRunSummary(std::ostream& report, int wait_status, const std::string& result_file,
                     const std::string& out_dir_text, bool replay, bool csv);

}  // namespace gpuprof::cli
