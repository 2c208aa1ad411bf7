#include "cupti/range_pass_tags.h"

namespace gpuprof::cupti {

namespace {

thread_local std::optional<RangePassLaunch> t_pending;

}  // namespace

void RangePassTags::SetPending(const RangePassLaunch& launch) noexcept { t_pending = launch; }

std::optional<RangePassLaunch> RangePassTags::TakePending() noexcept {
  std::optional<RangePassLaunch> taken = t_pending;
  t_pending.reset();
  return taken;
}

void RangePassTags::Tag(std::uint64_t correlation_id, std::uint32_t stream_id,
                        const RangePassLaunch& launch) noexcept {
  try {
    auto state = state_.wlock();
    if (state->count >= max_pending_) {
      state->filed.clear();
      state->count = 0;
    }
    state->filed[{correlation_id, stream_id}].push_back(launch);
    ++state->count;
  } catch (...) {
  }
}

std::vector<trace::ReplayRangeTask> RangePassTags::Take(const std::vector<trace::Record>& records) {
  std::vector<trace::ReplayRangeTask> out;
  auto state = state_.wlock();
  if (state->count == 0) return out;
  for (const trace::Record& record : records) {
    const auto* task = std::get_if<trace::DeviceTask>(&record);
    if (task == nullptr || task->kind != trace::TaskKind::kKernel) continue;
    auto it = state->filed.find({task->correlation_id, task->stream});
    if (it == state->filed.end()) continue;
    const RangePassLaunch launch = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) state->filed.erase(it);
    --state->count;
    out.push_back(
        {launch.application_correlation_id, launch.pass,
         task->end_ns > task->start_ns ? static_cast<std::uint64_t>(task->end_ns - task->start_ns) : 0});
  }
  return out;
}

std::size_t RangePassTags::pending() const { return state_.rlock()->count; }

}  // namespace gpuprof::cupti
