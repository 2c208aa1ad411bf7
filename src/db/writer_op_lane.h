// The op lane: the framework side of the writer's stream (TorchOp -> PYTORCH_API), on the op thread
// beside the SQLite thread (writer_threads.cc). It interns op names, shapes, dtypes and call-stack
// frames in the framework id space (string_table.h; nothing else uses that space), assigns
// PYTORCH_CALLCHAINS ids, and keeps the compact indexes the derivations (derive.h) and the
// deferred PYTORCH_API rows (writer_derived.cc) need. It owns no SQLite state: the STRING_IDS and
// PYTORCH_CALLCHAINS rows it creates are handed to the SQLite thread through TakeRows.
//
// Thread-safety: Process runs on the op thread only; TakeRows from any thread; the accessors only
// after the op thread has been joined. Private to src/db.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/derive.h"
#include "db/string_table.h"
#include "trace/records.h"

namespace gpuprof::db::internal {

// Sentinel for "NULL" in OpIds (no interned id is ever this large).
constexpr std::uint64_t kNullId = ~0ull;

// The interned ids of one PYTORCH_API row that OpSpan does not carry.
struct OpIds {
  std::uint64_t dtypes = kNullId;
  std::uint64_t shapes = kNullId;
  std::uint64_t callchain = kNullId;
};

// STRING_IDS and PYTORCH_CALLCHAINS rows the op lane created and the SQLite thread still has to
// write. The views point into the lane's string arena, which lives as long as the writer.
struct LaneRows {
  std::vector<std::pair<std::uint64_t, std::string_view>> strings;
  std::vector<std::array<std::uint64_t, 3>> callchains;  // (id, stack, stackDepth)
};

class OpLane {
 public:
  // Throws std::bad_alloc.
  void Process(std::vector<trace::TorchOp>& batch);

  LaneRows TakeRows();

  const std::vector<OpSpan>& ops() const { return ops_; }
  const std::vector<OpIds>& op_ids() const { return op_ids_; }
  const std::vector<CollectiveSpan>& collectives() const { return collectives_; }
  bool any_step() const { return any_step_; }
  std::uint64_t overflowed() const { return strings_.overflowed(); }

 private:
  static void Append(LaneRows&& from, LaneRows* to);

  std::uint64_t Id(std::string_view value);
  std::uint64_t IdOrNull(std::string_view value) { return value.empty() ? kNullId : Id(value); }

  // PYTORCH_CALLCHAINS id of a stack (innermost frame first); identical stacks share one id.
  std::uint64_t CallchainId(const std::vector<std::string>& frames);

  void Add(trace::TorchOp& op);

  StringTable strings_;  // the framework space
  std::unordered_map<std::string, std::uint64_t> callchain_ids_;
  std::vector<std::uint64_t> frame_ids_;  // scratch, reused per stack
  std::uint64_t next_callchain_id_ = 0;
  std::vector<OpSpan> ops_;
  std::vector<OpIds> op_ids_;                // parallel to ops_
  std::vector<CollectiveSpan> collectives_;  // the torch.distributed collectives among the ops
  bool any_step_ = false;                    // some op is a ProfilerStep#N
  LaneRows local_;                           // rows of the batch being processed (op thread only)

  std::mutex mu_;
  LaneRows shared_;  // guarded by mu_: rows waiting for the SQLite thread
};

}  // namespace gpuprof::db::internal
