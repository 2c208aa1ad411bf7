#include "cupti/internal_work.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <utility>
#include <variant>

namespace gpuprof::cupti {
namespace {

thread_local std::uint64_t application_call = 0;
thread_local const ScopedNestedGraphLaunch::Tasks* nested_graph_tasks = nullptr;

std::uint64_t CorrelationOf(const trace::Record& record) {
  if (const auto* call = std::get_if<trace::ApiCall>(&record)) return call->correlation_id;
  if (const auto* task = std::get_if<trace::DeviceTask>(&record)) return task->correlation_id;
  return 0;
}

// The contexts held off now, each with its hold count. Leaked on purpose: CUPTI callbacks may ask
// during static destruction at exit.
struct HeldOffContexts {
  std::atomic<std::size_t> count{0};  // contexts in `held`: no lock when none is held off
  std::atomic<std::uint64_t> holds{0};
  std::mutex mu;
  std::vector<std::pair<const void*, std::uint32_t>> held;

  // The entry of `context` in `held` (end() when none); callers hold `mu`.
  auto Find(const void* context) {
    return std::find_if(held.begin(), held.end(), [context](const auto& e) { return e.first == context; });
  }
};
HeldOffContexts& HeldOff() {
  static auto* held = new HeldOffContexts;
  return *held;
}

}  // namespace

bool HoldOffKernelRecords(const void* context) noexcept {
  HeldOffContexts& h = HeldOff();
  try {
    std::lock_guard<std::mutex> lock(h.mu);
    auto it = h.Find(context);
    if (it != h.held.end()) {
      ++it->second;
    } else {
      h.held.emplace_back(context, 1);
      h.count.store(h.held.size(), std::memory_order_release);
    }
  } catch (...) {  // bad_alloc, or a lock error
    return false;
  }
  h.holds.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void ResumeKernelRecords(const void* context) noexcept {
  HeldOffContexts& h = HeldOff();
  try {
    std::lock_guard<std::mutex> lock(h.mu);
    auto it = h.Find(context);
    if (it == h.held.end() || --it->second != 0) return;
    h.held.erase(it);
    h.count.store(h.held.size(), std::memory_order_release);
  } catch (...) {
  }
}

bool KernelRecordsHeldOff(const void* context) noexcept {
  HeldOffContexts& h = HeldOff();
  if (h.count.load(std::memory_order_acquire) == 0) return false;
  try {
    std::lock_guard<std::mutex> lock(h.mu);
    return h.Find(context) != h.held.end();
  } catch (...) {
    return false;
  }
}

std::uint64_t KernelRecordHoldOffs() noexcept { return HeldOff().holds.load(std::memory_order_relaxed); }

ScopedApplicationCall::ScopedApplicationCall(std::uint64_t correlation_id) noexcept
    : previous_(application_call) {
  application_call = correlation_id;
}
ScopedApplicationCall::~ScopedApplicationCall() { application_call = previous_; }
std::uint64_t ScopedApplicationCall::Current() noexcept { return application_call; }

ScopedNestedGraphLaunch::ScopedNestedGraphLaunch(Tasks tasks) noexcept
    : tasks_(tasks), previous_(nested_graph_tasks) {
  nested_graph_tasks = &tasks_;
}
ScopedNestedGraphLaunch::~ScopedNestedGraphLaunch() { nested_graph_tasks = previous_; }
const ScopedNestedGraphLaunch::Tasks* ScopedNestedGraphLaunch::Current() noexcept {
  return nested_graph_tasks;
}

void InternalWorkFilter::MarkNested(std::uint64_t correlation_id, std::string_view function,
                                    bool kernel_records) noexcept {
  try {
    auto nested = nested_.wlock();
    if (nested->size() >= max_ids_) {
      overflowed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Nested& entry = (*nested)[correlation_id];
    ++entry.api[std::string(function)];
    constexpr auto kKernel = static_cast<std::size_t>(trace::TaskKind::kKernel);
    if (function.starts_with("cuLaunch") && kernel_records) ++entry.tasks[kKernel];
    if (function.starts_with("cuMemcpy")) ++entry.tasks[static_cast<int>(trace::TaskKind::kMemcpy)];
    if (function.starts_with("cuMemset")) ++entry.tasks[static_cast<int>(trace::TaskKind::kMemset)];
    if (function.starts_with("cuGraphLaunch")) {
      if (const ScopedNestedGraphLaunch::Tasks* graph = ScopedNestedGraphLaunch::Current()) {
        for (std::size_t kind = 0; kind < graph->size(); ++kind) {
          if (kind != kKernel || kernel_records) entry.tasks[kind] += (*graph)[kind];
        }
        entry.graph_passes = true;
      }
    }
    any_nested_.store(true, std::memory_order_release);
  } catch (...) {
    overflowed_.fetch_add(1, std::memory_order_relaxed);
  }
}

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

std::size_t InternalWorkFilter::Filter(std::vector<trace::Record>& records,
                                       std::vector<trace::DeviceTask>* graph_pass_kernels) {
  const bool any_internal = any_.load(std::memory_order_acquire);
  const bool any_nested = any_nested_.load(std::memory_order_acquire);
  if (!any_internal && !any_nested) return 0;
  auto ids = ids_.rlock();
  auto nested = nested_.wlock();
  // Whether `record` is a record MarkNested counted; uses one count up.
  auto nested_record = [&](const trace::Record& record, std::uint64_t correlation) {
    auto it = nested->find(correlation);
    if (it == nested->end()) return false;
    std::uint32_t* count = nullptr;
    if (const auto* call = std::get_if<trace::ApiCall>(&record)) {
      auto api = it->second.api.find(call->name);
      if (api != it->second.api.end()) count = &api->second;
    } else if (const auto* task = std::get_if<trace::DeviceTask>(&record)) {
      count = &it->second.tasks[static_cast<int>(task->kind)];
    }
    if (count == nullptr || *count == 0) return false;
    --*count;
    if (graph_pass_kernels != nullptr && it->second.graph_passes) {
      if (const auto* task = std::get_if<trace::DeviceTask>(&record);
          task != nullptr && task->kind == trace::TaskKind::kKernel && task->graph_node_id != 0) {
        graph_pass_kernels->push_back(*task);
      }
    }
    return true;
  };
  const auto first_removed = std::remove_if(records.begin(), records.end(), [&](const trace::Record& record) {
    const std::uint64_t correlation = CorrelationOf(record);
    if (correlation == 0) return false;
    if (any_internal && ids->count(correlation) != 0) return true;
    return any_nested && nested_record(record, correlation);
  });
  const auto removed = static_cast<std::size_t>(records.end() - first_removed);
  records.erase(first_removed, records.end());
  return removed;
}

std::size_t InternalWorkFilter::size() const { return ids_.rlock()->size(); }

std::uint64_t InternalWorkFilter::UnseenNestedKernels() const {
  std::uint64_t unseen = 0;
  for (const auto& [id, entry] : *nested_.rlock())
    unseen += entry.tasks[static_cast<int>(trace::TaskKind::kKernel)];
  return unseen;
}

}  // namespace gpuprof::cupti
