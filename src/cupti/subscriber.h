// CuptiSubscriber: gpuprof's one CUPTI subscriber per process.
//
//   GPUPROF_ASSIGN_OR_RETURN(auto api, cupti::LoadCuptiApi());              // dlopen; may be Unavailable
//   auto sub = cupti::CuptiSubscriber::Start(std::move(api), cupti::SinkTo(collector));
//   if (!sub.ok()) { GPUPROF_LOG(kWarning) << sub.status().message(); }  // app runs on, no GPU data
//   ...
//   (*sub)->Flush();   // optional, e.g. at a step boundary: hands completed buffers to the sink
//   (*sub)->Stop();    // at session end: disables kinds, forced flush, unsubscribes
//
// What it does. Start subscribes with cuptiSubscribe_v2 under the name "gpuprof". CUPTI allows one
// subscriber per process (docs/architecture.md): when another tool holds the slot, Start returns
// Unavailable with one message naming the holder (CUpti_SubscriberParams::oldSubscriberName); the
// caller logs it and the application runs without GPU data. Otherwise it enables the activity
// kinds CONCURRENT_KERNEL (never KERNEL, which serializes kernels), MEMCPY, MEMCPY2, MEMSET,
// RUNTIME, DRIVER, MARKER (NVTX) and EXTERNAL_CORRELATION, registers the buffer callbacks and the
// resource callbacks (context destruction flushes; module load/unload reaches `on_module`, the
// hook replay's module indexing will use), and, for REPLAY_SPEC C1, the runtime/driver API entry
// callbacks that record the correlation ids of calls made under a ScopedInternalWork.
//
// Records. Each completed buffer is parsed with cuptiActivityGetNextRecord, translated
// (ActivityTranslator; timestamps mapped to epoch ns with the TimeConverter sampled at Start),
// stripped of gpuprof's internal work (InternalWorkFilter) and handed to the sink as one vector.
// Records CUPTI dropped for want of buffer space are counted (stats().cupti_dropped_records) and
// reported in one warning line at Stop. NVTX ranges still open at Stop are emitted closed at the
// stop time. External correlations are not records: TakeExternalCorrelations() hands them out.
//
// Threads and callbacks. The buffer callbacks run on CUPTI's worker thread or on the thread that
// calls Flush/Stop (or destroys a CUDA context); translation is serialized, the sink is not
// (it may run on two threads at once, e.g. SinkTo's RecordCollector::Append is fine). Callbacks
// are noexcept and never throw into CUDA: a failing sink or allocation drops the buffer's records
// and counts them. CUPTI's buffer callbacks carry no user pointer, so the active subscriber is
// published in one process-wide slot (the only global state here, forced by the CUPTI API).
//
// Lifetime. Start/Flush/Stop/destructor are called from the owner's thread, never from the sink
// or a CUPTI callback (Stop waits for callbacks in flight). The destructor stops a running
// subscriber. After Stop the subscriber can only report stats; a new one may Start afterwards.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/synchronized.h"
#include "cupti/activity_translator.h"
#include "cupti/cupti_api.h"
#include "cupti/internal_work.h"
#include "cupti/launch_api_tracer.h"
#include "cupti/range_pass_tags.h"
#include "cupti/time_converter.h"
#include "gpuprof/status.h"
#include "trace/records.h"
#include "trace/trace_buffer.h"

namespace gpuprof::cupti {

// Receives each completed buffer's records. Runs under CUPTI callbacks: must be cheap, must not
// block on the application, must not call Start/Flush/Stop. Exceptions are caught and counted.
using RecordSink = std::function<void(std::vector<trace::Record>&&)>;

// A sink that appends every record to `collector` (which must outlive the subscriber's Stop).
// Records the collector refuses are counted by the collector (RecordCollector::dropped()).
RecordSink SinkTo(trace::RecordCollector& collector);

// A module load or unload seen by the resource callback. The cubin is valid only during the call.
struct ModuleEvent {
  enum class Kind : std::uint8_t { kLoaded, kUnloadStarting };
  Kind kind = Kind::kLoaded;
  std::uint32_t module_id = 0;
  CUcontext context = nullptr;  // the context the module is (un)loaded in
  const void* cubin = nullptr;
  std::size_t cubin_size = 0;
};

// Sees every driver-API entry and exit that is not gpuprof's own work (ScopedInternalWork), on the
// calling thread, under the CUPTI callback: noexcept, and it must not call back into the subscriber.
class DriverApiObserver {
 public:
  virtual ~DriverApiObserver() = default;
  virtual void OnDriverApi(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept = 0;
  // NVTX range pushes, pops, starts and ends (range replay's NVTX delimiter), when SubscriberOptions::nvtx
  // is on; same rules.
  virtual void OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData& data) noexcept {
    static_cast<void>(cbid);
    static_cast<void>(data);
  }
};

struct SubscriberOptions {
  std::string subscriber_name = "gpuprof";  // CUPTI shows "CUPTI for gpuprof" to a later tool
  std::uint32_t pid = 0;                    // 0: getpid()
  // Activity buffers handed to CUPTI: `buffer_bytes` each; up to `pooled_buffers` completed ones
  // are kept for reuse; beyond `max_buffers` outstanding, requests are refused (CUPTI then drops
  // records and counts them).
  std::size_t buffer_bytes = std::size_t{8} << 20;
  std::size_t pooled_buffers = 4;
  std::size_t max_buffers = 64;
  // cuptiActivityFlushPeriod in ms (0: CUPTI's default, buffers are delivered when full or on
  // Flush/Stop).
  std::uint32_t flush_period_ms = 0;
  bool runtime_api = true;
  bool driver_api = true;
  bool nvtx = true;  // needs NVTX_INJECTION64_PATH pointing at libcupti in the application
  bool external_correlation = true;
  // The launching, copying, allocating and synchronizing runtime/driver calls through gpuprof's own
  // callbacks (LaunchApiTracer), a cheaper alternative to runtime_api/driver_api (which then stay
  // off: the caller chooses one or the other).
  bool launch_api_callbacks = false;
  // C1: enables the runtime- and driver-API callback domains (one callback per API entry/exit,
  // a thread_local read when no ScopedInternalWork is active). Off only when gpuprof does no
  // CUDA work of its own in this process while collecting (the session's collector turns it off
  // unless replay is configured).
  bool filter_internal_work = true;
  // Called on module load / unload start (under the resource callback; noexcept by contract,
  // exceptions are caught). Empty: the module callbacks are not enabled.
  std::function<void(const ModuleEvent&)> on_module;
  // Called when a context's destruction starts (under the resource callback, before the context's
  // records are flushed; noexcept by contract, exceptions are caught). May be empty.
  std::function<void(CUcontext)> on_context_destroy;
  // Called when a context has been created (under the resource callback: the driver is initialized
  // and outside cuInit; noexcept by contract, exceptions are caught). Empty: the callback is off.
  std::function<void(CUcontext)> on_context_created;
  // The replay hook (replay_hook.h); null: none. Needs filter_internal_work (the API domains).
  DriverApiObserver* driver_api_observer = nullptr;
};

struct SubscriberStats {
  std::uint64_t buffers_requested = 0;
  std::uint64_t buffers_refused = 0;  // over max_buffers or out of memory
  std::uint64_t buffers_completed = 0;
  std::uint64_t records_parsed = 0;            // CUPTI records read from buffers
  std::uint64_t records_emitted = 0;           // trace records handed to the sink
  std::uint64_t internal_records_dropped = 0;  // C1
  std::uint64_t internal_kernels_dropped = 0;  // of those, kernel records
  std::uint64_t nested_kernels_unseen = 0;     // InternalWorkFilter::UnseenNestedKernels
  std::uint64_t cupti_dropped_records = 0;     // cuptiActivityGetNumDroppedRecords, summed
  std::uint64_t records_lost = 0;              // translated but lost to a throwing sink
  std::uint64_t parse_errors = 0;              // buffers whose parsing stopped early (a CUPTI error from
                                               // cuptiActivityGetNextRecord, or out of memory)
  std::uint64_t unmatched_range_ends = 0;
  std::uint64_t internal_ids_overflowed = 0;
  std::uint64_t launch_api_calls_lost = 0;  // LaunchApiTracer: out of memory
  TranslatorStats translator;
};

class CuptiSubscriber {
 public:
  // Errors: Unavailable when the CUPTI slot is taken (naming the holder) or cuptiSubscribe_v2 fails
  // otherwise (no driver: CUPTI_ERROR_UNKNOWN); AlreadyExists when a CuptiSubscriber is already running in
  // this process; InvalidArgument for bad options; Internal for other CUPTI failures. On error nothing stays
  // enabled or subscribed.
  static StatusOr<std::unique_ptr<CuptiSubscriber>> Start(std::shared_ptr<CuptiApi> api, RecordSink sink,
                                                          SubscriberOptions options = {});

  ~CuptiSubscriber();
  CuptiSubscriber(const CuptiSubscriber&) = delete;
  CuptiSubscriber& operator=(const CuptiSubscriber&) = delete;

  // cuptiActivityFlushAll: completed buffers (all buffers with `forced`, incomplete records
  // included) reach the sink before it returns.
  Status Flush(bool forced = false);
  // Disables the activity kinds, force-flushes, closes open NVTX ranges, waits for callbacks in
  // flight, unsubscribes. Idempotent. Returns the first failure but always completes the sequence.
  Status Stop();

  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  SubscriberStats stats() const;
  // The CUPTI table (e.g. for external-correlation pushes by the framework hooks).
  const std::shared_ptr<CuptiApi>& api() const noexcept { return api_; }
  const TimeConverter& time() const noexcept { return time_; }
  InternalWorkFilter& internal_work_filter() noexcept { return filter_; }

  // The callback bodies. CUPTI reaches them through static trampolines; they are public so tests
  // can drive them with synthetic buffers and callback data.
  void OnBufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) noexcept;
  void OnBufferCompleted(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                         std::size_t valid_size) noexcept;
  void OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) noexcept;
  // gpuprof's own launch `call` (API entry) named by a range replay pass: filed for its record.
  void TagRangePassLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;

 private:
  CuptiSubscriber(std::shared_ptr<CuptiApi> api, RecordSink sink, SubscriberOptions options,
                  TimeConverter time, std::uint32_t pid);

  Status Enable();             // everything after subscribing; records what it enabled
  Status DisableEverything();  // undoes Enable
  void Emit(std::vector<trace::Record>&& records) noexcept;
  void ReleaseBuffer(std::uint8_t* buffer) noexcept;

  const std::shared_ptr<CuptiApi> api_;
  const RecordSink sink_;
  const SubscriberOptions options_;
  const TimeConverter time_;
  CUpti_SubscriberHandle handle_ = nullptr;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
  bool api_domains_enabled_ = false;
  std::atomic<bool> running_{false};

  base::Synchronized<ActivityTranslator> translator_;
  // NVTX range id -> the thread that ended it. CUPTI's END marker carries the starting thread, so a
  // range ended on another thread would otherwise get the wrong endGlobalTid; the nvtxRangeEnd
  // callback runs on the ending thread before the marker is delivered.
  // Start/end marks whose end callback had not been seen when their buffer arrived (CUPTI can
  // deliver the END marker first) wait for one more buffer, or for Stop, before they are emitted.
  struct NvtxEnd {
    std::uint32_t tid = 0;
    std::int64_t time_ns = 0;  // epoch ns of the nvtxRangeEnd call
  };
  struct NvtxEnds {
    std::unordered_map<std::uint64_t, NvtxEnd> end_tids;
    std::vector<trace::Mark> held;
  };
  base::Synchronized<NvtxEnds> nvtx_ends_;
  std::atomic<bool> nvtx_end_callbacks_{false};
  void ApplyNvtxEndThreads(std::vector<trace::Record>& records) noexcept;
  std::vector<trace::Record> TakeHeldNvtxMarks() noexcept;
  // For a range whose END marker never arrived: its end as the nvtxRangeEnd callback saw it.
  bool LookUpNvtxEnd(std::uint64_t range_id, NvtxEnd* end) noexcept;
  base::Synchronized<std::vector<std::uint8_t*>> free_buffers_;
  std::atomic<std::size_t> outstanding_buffers_{0};
  InternalWorkFilter filter_;
  RangePassTags range_tags_;  // range replay's re-issued launches, by call (W6)
  LaunchApiTracer launch_tracer_;
  std::atomic<bool> launch_tracing_{false};
  void EmitLaunchApiCalls() noexcept;

  std::atomic<std::uint64_t> buffers_requested_{0};
  std::atomic<std::uint64_t> buffers_refused_{0};
  std::atomic<std::uint64_t> buffers_completed_{0};
  std::atomic<std::uint64_t> records_parsed_{0};
  std::atomic<std::uint64_t> records_emitted_{0};
  std::atomic<std::uint64_t> internal_records_dropped_{0};
  std::atomic<std::uint64_t> internal_kernels_dropped_{0};
  std::atomic<std::uint64_t> cupti_dropped_records_{0};
  std::atomic<std::uint64_t> records_lost_{0};
  std::atomic<std::uint64_t> parse_errors_{0};
};

}  // namespace gpuprof::cupti
