// Which application launch and pass each of range replay's re-issued kernels is (REPLAY_SPEC W6):
// passes 2..N are timed by CUPTI's kernel records of gpuprof's own launches, as pass 1 is by the
// application's.
//
// Right before a re-issued launch, the issuing thread names it (SetPending: the application's
// launch, by CUPTI correlation id, and the pass). The launch's API-entry callback takes the name
// and files it under the call's correlation id and CUPTI stream id (Tag). A re-issue made inside an
// application call's callback gives every one of its launches that call's correlation id, so the
// stream tells them apart: on one stream the kernels run, and their records come, in issue order.
// Take turns each kernel record so filed into a trace::ReplayRangeTask, in that order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "base/synchronized.h"
#include "trace/records.h"

namespace gpuprof::cupti {

struct RangePassLaunch {
  std::uint64_t application_correlation_id = 0;
  int pass = 0;
};

class RangePassTags {
 public:
  // Past this many filed launches without their records, the oldest are forgotten (their records
  // then time nothing; the pass keeps the backend's own timing).
  explicit RangePassTags(std::size_t max_pending = std::size_t{1} << 20) : max_pending_(max_pending) {}

  // The calling thread's next launch is `launch` (replaces any name not yet taken).
  static void SetPending(const RangePassLaunch& launch) noexcept;
  // The calling thread's pending name, cleared; none when no re-issue named its launch.
  static std::optional<RangePassLaunch> TakePending() noexcept;

  // Files `launch` under the launch call's correlation id and CUPTI stream id. noexcept: runs in a
  // CUPTI callback (an allocation failure forgets the launch).
  void Tag(std::uint64_t correlation_id, std::uint32_t stream_id, const RangePassLaunch& launch) noexcept;

  // One ReplayRangeTask per kernel record of `records` that was filed, in record order; the
  // records themselves stay (the internal-work filter drops them).
  std::vector<trace::ReplayRangeTask> Take(const std::vector<trace::Record>& records);

  std::size_t pending() const;

 private:
  using Key = std::pair<std::uint64_t, std::uint32_t>;  // correlation id, CUPTI stream id
  struct State {
    std::map<Key, std::deque<RangePassLaunch>> filed;
    std::size_t count = 0;
  };
  const std::size_t max_pending_;
  base::Synchronized<State> state_;
};

}  // namespace gpuprof::cupti
