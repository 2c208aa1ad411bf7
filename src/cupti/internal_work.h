// gpuprof's own GPU work stays out of the profile (REPLAY_SPEC C1).
//
// ScopedInternalWork (device/cuda/scoped_internal_work.h) marks the calling thread as doing gpuprof
// work for its lifetime. The CUPTI subscriber's API-entry callback asks Active() on the calling
// thread and, when it is, hands the call's correlation id to InternalWorkFilter::MarkInternal.
// Activity records that carry a marked correlation id (the API call itself and the kernels, copies
// and memsets it launched) are then dropped from the trace, whichever buffer they arrive in: the
// id is known at call time, before any of its records exist, so the order in which CUPTI completes
// its per-thread buffers does not matter.
//
// Work nested inside an application call. CUPTI gives driver calls made inside another call's
// callback the enclosing call's correlation id (the replay hook works inside the application's
// cuLaunchKernel and cuMemAlloc callbacks). Marking that id would drop the application's own
// records, so the subscriber brackets each application callback with ScopedApplicationCall and,
// for internal calls carrying that id, calls MarkNested instead: it counts the API record and the
// device task each such call will produce, and Filter drops exactly that many records of that id
// (the API record by function name; device tasks by kind, the earliest first: gpuprof's nested
// work finishes before the application's own launch starts).
//
// This header has no CUDA types; its target (gpuprof::cupti_guard) links base, trace and the
// guard. ScopedApplicationCall's state is one thread_local, as the guard's: link the target into
// exactly one shared object (libgpuprof.so), or each copy would see its own.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/synchronized.h"
#include "device/cuda/scoped_internal_work.h"
#include "trace/records.h"

namespace gpuprof::cupti {

// The guard lives below cupti (device/cuda marks its own calls with it); cupti's code and tests
// name it as part of this layer.
using device::cuda::ScopedInternalWork;

// The application API call whose CUPTI callback is running on this thread (0: none). RAII, nests.
class ScopedApplicationCall {
 public:
  explicit ScopedApplicationCall(std::uint64_t correlation_id) noexcept;
  ~ScopedApplicationCall();
  ScopedApplicationCall(const ScopedApplicationCall&) = delete;
  ScopedApplicationCall& operator=(const ScopedApplicationCall&) = delete;
  static std::uint64_t Current() noexcept;

 private:
  std::uint64_t previous_;
};

// gpuprof's own cuGraphLaunch inside an application call (a whole-graph replay pass, issue 24):
// the device tasks it will produce, by trace::TaskKind (one per kernel, memcpy and memset node),
// which MarkNested counts for it while this lives on the calling thread. RAII, nests.
class ScopedNestedGraphLaunch {
 public:
  using Tasks = std::array<std::uint32_t, 3>;
  explicit ScopedNestedGraphLaunch(Tasks tasks) noexcept;
  ~ScopedNestedGraphLaunch();
  ScopedNestedGraphLaunch(const ScopedNestedGraphLaunch&) = delete;
  ScopedNestedGraphLaunch& operator=(const ScopedNestedGraphLaunch&) = delete;
  static const Tasks* Current() noexcept;

 private:
  Tasks tasks_;
  const Tasks* previous_;
};

// Contexts on which gpuprof holds CUPTI's kernel records off (cuptiActivityDisableContext of
// CONCURRENT_KERNEL around its counter passes: RangeProfilerOptions::hold_off_kernel_activity),
// as opaque CUcontext values. CUPTI writes no record for a kernel launched there, so MarkNested
// must not count one for such a launch: the count would wait for a record that never comes and
// take the application's own kernel record, which carries the same correlation id, instead (every
// replayed kernel lost its TASK row that way on the H200, 2026-12-02). Process-wide, as CUPTI's
// switch is; holds of one context nest. Hold returns false when it could not note the context
// (out of memory): the caller then leaves the records on.
bool HoldOffKernelRecords(const void* context) noexcept;
void ResumeKernelRecords(const void* context) noexcept;
bool KernelRecordsHeldOff(const void* context) noexcept;
// Holds taken in this process so far (the subscriber's closing debug line).
std::uint64_t KernelRecordHoldOffs() noexcept;

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

  // gpuprof's call `function` (e.g. "cuMemcpyDtoHAsync_v2") made inside the application call
  // `correlation_id` (see above): one ApiCall record of that name under the id is gpuprof's, and,
  // for cuLaunch*, cuMemcpy* and cuMemset* calls, one kernel, memcpy or memset task; for
  // cuGraphLaunch*, the tasks of the ScopedNestedGraphLaunch around it. Without `kernel_records`
  // (the call's context is held off: KernelRecordsHeldOff) CUPTI writes no kernel record for the
  // call, so none is counted. noexcept (allocation failure counts as an overflow).
  void MarkNested(std::uint64_t correlation_id, std::string_view function,
                  bool kernel_records = true) noexcept;

  bool IsInternal(std::uint64_t correlation_id) const;
  // Removes every ApiCall and DeviceTask whose correlation id is internal, and the records
  // MarkNested counted (other records and correlation id 0 are kept), preserving order. Returns
  // how many were removed. The kernels of nested graph launches (whole-graph replay passes) that
  // it removes, those with a graph node id, are copied into `graph_pass_kernels` when given, in the
  // order they came (gpuprof's own snapshot kernels nested in the same call are not).
  std::size_t Filter(std::vector<trace::Record>& records,
                     std::vector<trace::DeviceTask>* graph_pass_kernels = nullptr);

  std::size_t size() const;
  // Kernel records MarkNested counted that Filter has not met yet: after the final flush, records
  // CUPTI never wrote for gpuprof's nested launches (the subscriber's closing debug line).
  std::uint64_t UnseenNestedKernels() const;
  std::uint64_t overflowed() const noexcept { return overflowed_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_ids_;
  std::atomic<bool> any_{false};
  std::atomic<std::uint64_t> overflowed_{0};
  base::Synchronized<std::unordered_set<std::uint64_t>> ids_;
  // Records still to drop per application correlation id (MarkNested).
  struct Nested {
    std::unordered_map<std::string, std::uint32_t> api;  // by function name
    std::uint32_t tasks[3] = {0, 0, 0};                  // by trace::TaskKind
    bool graph_passes = false;                           // a nested cuGraphLaunch counted tasks here
  };
  std::atomic<bool> any_nested_{false};
  base::Synchronized<std::unordered_map<std::uint64_t, Nested>> nested_;
};

}  // namespace gpuprof::cupti
