#include "cupti/internal_work.h"

#include <algorithm>
#include <new>
#include <variant>

namespace gpuprof::cupti {
namespace {

// Depth, not a bool, so nested scopes (a snapshot inside a replay window) restore correctly.
thread_local int internal_depth = 0;

std::uint64_t CorrelationOf(const trace::Record& record) {
  if (const auto* call = std::get_if<trace::ApiCall>(&record)) return call->correlation_id;
  if (const auto* task = std::get_if<trace::DeviceTask>(&record)) return task->correlation_id;
  return 0;
}

}  // namespace

ScopedInternalWork::ScopedInternalWork() noexcept { ++internal_depth; }
ScopedInternalWork::~ScopedInternalWork() { --internal_depth; }
bool ScopedInternalWork::Active() noexcept { return internal_depth > 0; }

void InternalWorkFilter::MarkInternal(std::uint64_t correlation_id) noexcept {
  try {
    auto ids = ids_.wlock();
    if (ids->size() >= max_ids_) {
      overflowed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    ids->insert(correlation_id);
    any_.store(true, std::memory_order_release);
  } catch (...) {  // bad_alloc, or a lock error: the record reaches the trace, counted
    overflowed_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool InternalWorkFilter::OnApiEnter(std::uint64_t correlation_id) noexcept {
  if (!ScopedInternalWork::Active()) return false;
  MarkInternal(correlation_id);
  return true;
}

bool InternalWorkFilter::IsInternal(std::uint64_t correlation_id) const {
  if (!any_.load(std::memory_order_acquire)) return false;
  return ids_.rlock()->count(correlation_id) != 0;
}

std::size_t InternalWorkFilter::Filter(std::vector<trace::Record>& records) const {
  if (!any_.load(std::memory_order_acquire)) return 0;
  auto ids = ids_.rlock();
  const auto first_removed = std::remove_if(records.begin(), records.end(), [&](const trace::Record& record) {
    const std::uint64_t correlation = CorrelationOf(record);
    return correlation != 0 && ids->count(correlation) != 0;
  });
  const auto removed = static_cast<std::size_t>(records.end() - first_removed);
  records.erase(first_removed, records.end());
  return removed;
}

std::size_t InternalWorkFilter::size() const { return ids_.rlock()->size(); }

}  // namespace gpuprof::cupti
