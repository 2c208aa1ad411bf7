// gpuprof's own GPU work stays out of the profile (REPLAY_SPEC C1).
//
// ScopedInternalWork marks the calling thread as doing gpuprof work (snapshot copies, hash
// kernels, cache flushes, replay passes 2..N, device queries) for its lifetime:
//
//   { cupti::ScopedInternalWork internal;  // CUDA calls below are gpuprof's, not the app's
//     device.CopyToBackingBuffer(...); }
//
// The CUPTI subscriber's API-entry callback asks Active() on the calling thread and, when it is,
// hands the call's correlation id to InternalWorkFilter::MarkInternal. Activity records that carry
// a marked correlation id (the API call itself and the kernels, copies and memsets it launched)
// are then dropped from the trace, whichever buffer they arrive in: the id is known at call time,
// before any of its records exist, so the order in which CUPTI completes its per-thread buffers
// does not matter.
//
// This header has no CUDA types and its target (gpuprof::cupti_guard) links only base and trace,
// so device/cuda and the replay controller use the guard without depending on the CUPTI layer.
// The guard's state is one thread_local: link the target into exactly one shared object
// (libgpuprof.so), or each copy would see its own flag.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "base/synchronized.h"
#include "trace/records.h"

namespace gpuprof::cupti {

// RAII; nests (a depth counter). Cheap: one thread_local increment. Not movable: it belongs to the
// thread and scope that made it.
class ScopedInternalWork {
 public:
  ScopedInternalWork() noexcept;
  ~ScopedInternalWork();
  ScopedInternalWork(const ScopedInternalWork&) = delete;
  ScopedInternalWork& operator=(const ScopedInternalWork&) = delete;

  // True while any ScopedInternalWork lives on the calling thread.
  static bool Active() noexcept;
};

// The correlation ids of gpuprof's own CUDA calls, and the filter that drops their records.
// Thread-safe: MarkInternal runs on the threads doing internal work (inside the CUPTI API
// callback), IsInternal/Filter on the thread that completes an activity buffer. When nothing was
// ever marked, IsInternal costs one relaxed load and takes no lock.
class InternalWorkFilter {
 public:
  // Ids are kept until the filter dies (a graph launch may complete many device tasks under one
  // id, so none can be forgotten after its first match). Past `max_ids` new ids are not stored
  // and counted in overflowed(); their records then reach the trace.
  explicit InternalWorkFilter(std::size_t max_ids = std::size_t{1} << 22) : max_ids_(max_ids) {}

  // Records `correlation_id` as internal. noexcept: runs under a CUPTI callback (allocation
  // failure counts as an overflow).
  void MarkInternal(std::uint64_t correlation_id) noexcept;
  // From the API-entry callback: marks the id only when the calling thread is inside a
  // ScopedInternalWork. Returns whether it did.
  bool OnApiEnter(std::uint64_t correlation_id) noexcept;

  bool IsInternal(std::uint64_t correlation_id) const;
  // Removes every ApiCall and DeviceTask whose correlation id is internal (other records and
  // correlation id 0 are kept), preserving order. Returns how many were removed.
  std::size_t Filter(std::vector<trace::Record>& records) const;

  std::size_t size() const;
  std::uint64_t overflowed() const noexcept { return overflowed_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_ids_;
  std::atomic<bool> any_{false};
  std::atomic<std::uint64_t> overflowed_{0};
  base::Synchronized<std::unordered_set<std::uint64_t>> ids_;
};

}  // namespace gpuprof::cupti
