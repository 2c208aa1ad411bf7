// What was collected beside the ops and kernels, for `gpuprof stats` and `gpuprof report`: the
// records lost before the DB (per source), the Python call stacks of the top host ops (with_stack),
// and the time of each nn.Module by its path in the model (with_modules): its forward ranges on the
// host and the device time of the kernels its ops launched.
//
// Streaming, like stats.h: the module sweep holds one stack per thread and one entry per module
// name; the stacks are grouped by SQLite. Thread-safety: none (a ProfileReader is single-threaded).
// Errors: the reader's Status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "db/profile_reader.h"
#include "db/string_lookup.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

struct LostRecordsStat {
  std::string source;  // db/lost_records.h's id
  std::string text;    // what the source is, for the reader
  std::uint64_t records = 0;
};

// The call stack of one top host op: the costliest of its stacks (the most time over its calls).
struct OpStackStat {
  std::string op;                   // as the op tables name it (OpDisplayName)
  std::uint64_t op_calls = 0;       // the op's calls that have a stack
  std::uint64_t calls = 0;          // of them, those with this stack
  std::int64_t total_ns = 0;        // their time
  std::vector<std::string> frames;  // "train.py:42 step", innermost first: the program's own frames
                                    // (library and interpreter frames left out; all when none is left)
};

// One module name (its path in the model and its class, e.g. "layers.3.mlp.fc1 (Linear)"), over
// its forward calls.
struct ModuleStat {
  std::string name;
  std::uint64_t calls = 0;
  std::int64_t host_ns = 0;  // its forward ranges, summed (nested modules included)
  std::int64_t gpu_ns = 0;   // device time of the tasks launched by the ops that started inside them
  std::uint64_t tasks = 0;
};

struct CollectedStats {
  // Records lost per source, the sources that lost any; `lost_counted` false for a DB with no count
  // (written before it was kept, or by another tool); `lost_problem` when the count is unreadable.
  std::vector<LostRecordsStat> lost;
  bool lost_counted = false;
  std::string lost_problem;

  std::vector<OpStackStat> op_stacks;  // in the order of the top ops given
  std::string stacks_absent;           // why there are none ("" when there are)

  std::uint64_t module_names = 0;
  std::vector<ModuleStat> top_modules;  // by host time
  bool module_gpu = false;              // device tasks are linked to ops: gpu_ns is known
  std::string modules_absent;
};

struct CollectedOptions {
  std::vector<std::string> top_ops;  // the ops whose stacks to show, by their display names
  std::size_t top_modules = 15;
  std::optional<std::int64_t> session_start_ns;  // the plausible spans (plausible.h)
  std::optional<std::int64_t> session_end_ns;
};

StatusOr<CollectedStats> ComputeCollected(const ProfileReader& reader, StringLookup& strings,
                                          const CollectedOptions& options);

// "/home/u/train.py(42): step" (the DB's frame) -> "train.py:42 step"; other text unchanged.
std::string ShortFrame(std::string_view frame);
// True for a frame of the interpreter, the standard library or an installed package (torch).
bool LibraryFrame(std::string_view frame);

}  // namespace gpuprof::db
