// LaunchApiTracer: the runtime- and driver-API calls that put work on a device, move or allocate
// memory, or wait for the device, recorded by gpuprof's own CUPTI callbacks on just those
// callback ids, instead of CUPTI's RUNTIME and DRIVER activity kinds (which record every call).
//
//   LaunchApiTracer tracer(pid);
//   GPUPROF_RETURN_IF_ERROR(tracer.Enable(api, handle));   // after cuptiSubscribe
//   ... CUPTI calls tracer.OnApi(domain, cbid, data) from the subscriber's callback ...
//   std::vector<trace::Record> calls = tracer.Take();     // any thread, any time
//   tracer.Disable(api, handle);
//
// Why. A PyTorch step makes many more API calls than launches (cudaGetDevice, cudaGetLastError,
// stream-capture queries, ...). CUPTI's API activity records cost every one of them, and they were
// most of gpuprof's added time per training step when measured (bench/README.md, torch_overhead).
// The calls kept here are the ones the DB's consumers join on: each launch's CANN_API `runtime`
// and `node@launch` rows, copies, memsets, allocations, frees and synchronizations.
//
// Which calls: those whose CUPTI callback name (cuptiGetCallbackName) starts with one of
// TracedApiPrefixes (IsTracedApi). The set is read from CUPTI at Enable, so it follows the
// installed CUDA's callback ids.
//
// Nesting. The runtime calls the driver inside its own calls (cudaLaunchKernel -> cuLaunchKernel);
// a driver call made while a traced runtime call is running on the same thread is the runtime's
// own work and is not recorded, so one launch gives one row, as with CUPTI's activity records.
// A driver call made directly by the application (Triton, cuBLASLt, a CUDA driver program) is
// recorded.
//
// Cost on the calling thread: two clock reads and one uncontended mutex per traced call; the
// records are built later, in Take(). Untraced calls cost nothing (their callbacks are off),
// unless the API domains are enabled for another reason (replay's C1 filter), when OnApi returns
// after one table lookup.
//
// External ids. PushExternalId/PopExternalId keep a per-thread stack (the torch hooks push each
// op's id, as they push CUPTI's external correlation otherwise); each recorded call takes the id on
// top of its thread's stack, and Take() emits a trace::ExternalCorrelation{id, correlation} for it
// beside the ApiCall. So in this mode the op -> kernel links need neither CUPTI's
// EXTERNAL_CORRELATION records nor its push/pop calls (a thread-local write instead).
//
// Thread safety: OnApi may run on any thread at once; Take on any thread. Enable/Disable from the
// owner's thread, not concurrently with each other.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cupti/cupti_api.h"
#include "gpuprof/status.h"
#include "trace/records.h"

namespace gpuprof::cupti {

// True for the API names this tracer records (see the header comment); `name` is CUPTI's callback
// name, e.g. "cudaLaunchKernel_v7000" or "cuMemcpyHtoDAsync_v2".
bool IsTracedApi(CUpti_CallbackDomain domain, std::string_view name);

// The calling thread's external-id stack (see the header comment). Deeper than 64 ids, the extra
// ids are not kept and calls made there take the id at depth 64. noexcept, no allocation.
void PushExternalId(std::uint64_t id) noexcept;
void PopExternalId() noexcept;
// The id on top of the calling thread's stack; 0 when it is empty.
std::uint64_t CurrentExternalId() noexcept;

class LaunchApiTracer {
 public:
  explicit LaunchApiTracer(std::uint32_t pid) : pid_(pid) {}
  LaunchApiTracer(const LaunchApiTracer&) = delete;
  LaunchApiTracer& operator=(const LaunchApiTracer&) = delete;

  // Reads every runtime and driver callback name from CUPTI and enables the callbacks of the
  // traced ones. An id whose cuptiEnableCallback fails is skipped, with one warning naming the
  // first; with none traced at all, one more warning says what is missing. Kernels, copies and
  // memsets are collected either way, so this never fails the subscriber.
  Status Enable(CuptiApi& api, CUpti_SubscriberHandle handle);
  // Turns the callbacks Enable turned on off again. Returns the first failure, always completes.
  Status Disable(CuptiApi& api, CUpti_SubscriberHandle handle);

  // The subscriber's callback for a runtime- or driver-API entry or exit of the application.
  // Returns how many completed calls wait for Take (0 when this callback recorded nothing).
  std::size_t OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData& call) noexcept;

  // The calls completed since the last Take, as trace::ApiCall records in completion order, each
  // followed by its trace::ExternalCorrelation when its thread had an external id pushed.
  std::vector<trace::Record> Take() noexcept;
  std::uint64_t lost() const noexcept;  // calls dropped because Take could not allocate

 private:
  struct Completed {
    std::int64_t start_ns;
    std::int64_t end_ns;
    std::uint32_t correlation_id;
    std::uint32_t tid;
    std::uint32_t cbid;
    bool driver;
    std::uint64_t external_id;  // 0: none
  };
  bool Traced(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const noexcept;

  const std::uint32_t pid_;
  // What Take needs of a traced id, worked out once at Enable.
  struct TracedCall {
    std::string name;  // normalized (NormalizeApiName); empty: the id is not traced
    bool launches_device_work = false;
  };
  // Indexed by callback id.
  std::vector<TracedCall> runtime_calls_;
  std::vector<TracedCall> driver_calls_;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> enabled_;

  mutable std::mutex mutex_;
  std::vector<Completed> completed_;        // guarded by mutex_
  std::uint64_t lost_ = 0;                  // guarded by mutex_
  std::atomic<std::size_t> last_batch_{0};  // calls in the last Take: completed_'s next capacity
};

}  // namespace gpuprof::cupti
