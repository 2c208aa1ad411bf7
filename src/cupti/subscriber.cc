#include "cupti/subscriber.h"

#include <generated_nvtx_meta.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "base/clock.h"
#include "base/logging.h"

namespace gpuprof::cupti {
namespace {

// LaunchApiTracer's calls ride along with each completed activity buffer; past this many waiting,
// the application thread that completes one hands them to the sink itself.
constexpr std::size_t kLaunchCallsEmittedInline = std::size_t{1} << 16;

// CUPTI requires 8-byte aligned activity buffers (ACTIVITY_RECORD_ALIGNMENT).
constexpr std::size_t kBufferAlignment = 8;

// The running subscriber, for the buffer callbacks (which carry no user pointer). Readers are the
// callbacks, for their whole body; the writer is Start/Stop, so Stop returns only once no callback
// is still using the subscriber. Leaked on purpose: CUPTI's worker thread may call back during
// static destruction at exit.
base::Synchronized<CuptiSubscriber*>& ActiveSlot() {
  static auto* slot = new base::Synchronized<CuptiSubscriber*>(std::in_place, nullptr);
  return *slot;
}

std::uint8_t* AllocateBuffer(std::size_t bytes) noexcept {
  return static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, bytes));
}
void FreeBuffer(std::uint8_t* buffer) noexcept { std::free(buffer); }

void CUPTIAPI BufferRequestedTrampoline(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  try {
    auto active = ActiveSlot().rlock();
    if (*active != nullptr) (*active)->OnBufferRequested(buffer, size, max_records);
  } catch (...) {  // a lock error: decline the buffer, CUPTI counts the records it drops
  }
}

void CUPTIAPI BufferCompletedTrampoline(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                                        std::size_t size, std::size_t valid_size) noexcept {
  try {
    auto active = ActiveSlot().rlock();
    if (*active != nullptr) {
      (*active)->OnBufferCompleted(context, stream_id, buffer, size, valid_size);
      return;
    }
  } catch (...) {
  }
  // A buffer handed out before Stop and returned after it: nobody wants its records.
  FreeBuffer(buffer);
}

void CUPTIAPI CallbackTrampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) noexcept {
  static_cast<CuptiSubscriber*>(userdata)->OnCallback(domain, cbid, data);
}

std::size_t CountKernels(const std::vector<trace::Record>& records) {
  return static_cast<std::size_t>(std::count_if(records.begin(), records.end(), [](const trace::Record& r) {
    const auto* task = std::get_if<trace::DeviceTask>(&r);
    return task != nullptr && task->kind == trace::TaskKind::kKernel;
  }));
}

struct KindSpec {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;  // Start fails without it; the others are warned about and skipped
};

}  // namespace

RecordSink SinkTo(trace::RecordCollector& collector) {
  return [&collector](std::vector<trace::Record>&& records) {
    for (trace::Record& record : records) (void)collector.Append(std::move(record));
  };
}

CuptiSubscriber::CuptiSubscriber(std::shared_ptr<CuptiApi> api, RecordSink sink, SubscriberOptions options,
                                 TimeConverter time, std::uint32_t pid)
    : api_(std::move(api)),
      sink_(std::move(sink)),
      options_(std::move(options)),
      time_(time),
      translator_(std::in_place, api_.get(), time, pid),
      launch_tracer_(pid) {}

StatusOr<std::unique_ptr<CuptiSubscriber>> CuptiSubscriber::Start(std::shared_ptr<CuptiApi> api,
                                                                  RecordSink sink,
                                                                  SubscriberOptions options) {
  if (api == nullptr) return InvalidArgumentError("CuptiSubscriber::Start: no CUPTI api");
  if (!sink) return InvalidArgumentError("CuptiSubscriber::Start: no record sink");
  if (options.buffer_bytes < 4096 || options.buffer_bytes % kBufferAlignment != 0) {
    return InvalidArgumentError(
        "CuptiSubscriber: buffer_bytes must be a multiple of 8 and at least 4096, got " +
        std::to_string(options.buffer_bytes));
  }
  if (options.max_buffers == 0) return InvalidArgumentError("CuptiSubscriber: max_buffers must be positive");
  if (options.subscriber_name.size() > CUPTI_SUBSCRIBER_NAME_MAX_LEN) {
    return InvalidArgumentError("CuptiSubscriber: subscriber_name longer than " +
                                std::to_string(CUPTI_SUBSCRIBER_NAME_MAX_LEN) + " bytes");
  }
  if (*ActiveSlot().rlock() != nullptr) {
    return AlreadyExistsError(
        "CuptiSubscriber::Start: a gpuprof CUPTI subscriber is already running in this "
        "process");
  }

  GPUPROF_ASSIGN_OR_RETURN(TimeConverter time, TimeConverter::Sample(*api));
  const std::uint32_t pid = options.pid != 0 ? options.pid : static_cast<std::uint32_t>(getpid());
  std::unique_ptr<CuptiSubscriber> self(
      new CuptiSubscriber(std::move(api), std::move(sink), std::move(options), time, pid));
  CuptiApi& cupti = *self->api_;

  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUpti_SubscriberParams params{};
  // CUpti_SubscriberParams_STRUCT_SIZE, spelled out (the macro's C cast trips -Wold-style-cast).
  params.structSize = offsetof(CUpti_SubscriberParams, oldSubscriberSize) + sizeof(params.oldSubscriberSize);
  params.subscriberName = self->options_.subscriber_name.c_str();
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
  const CUptiResult subscribed = cupti.Subscribe(&self->handle_, &CallbackTrampoline, self.get(), &params);
  if (subscribed == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    const std::string name(holder, strnlen(holder, sizeof(holder)));
    return UnavailableError("CUPTI is already in use by " +
                            (name.empty() ? std::string("another tool") : "'" + name + "'") +
                            "; gpuprof collects no GPU activity in this process (only one CUPTI subscriber "
                            "is allowed; start gpuprof first, or disable the other tool's GPU tracing)");
  }
  if (subscribed != CUPTI_SUCCESS) {
    // Whatever the code (without a driver CUPTI 13 answers CUPTI_ERROR_UNKNOWN), no subscription
    // means no GPU data, and the application runs on: Unavailable for the caller to log.
    return UnavailableError(
        "cuptiSubscribe_v2 failed: " + CuptiErrorString(cupti, subscribed) +
        "; gpuprof collects no GPU activity in this process (is a CUDA driver installed?)");
  }

  {
    auto active = ActiveSlot().wlock();
    if (*active != nullptr) {  // lost a race with another Start
      cupti.Unsubscribe(self->handle_);
      return AlreadyExistsError("CuptiSubscriber::Start: a gpuprof CUPTI subscriber is already running");
    }
    *active = self.get();
  }
  self->running_.store(true, std::memory_order_release);
  if (Status enabled = self->Enable(); !enabled.ok()) {
    self->DisableEverything().IgnoreError();  // best effort; the first failure is what we report
    *ActiveSlot().wlock() = nullptr;
    cupti.Unsubscribe(self->handle_);
    self->running_.store(false, std::memory_order_release);
    return enabled;
  }
  return self;
}

Status CuptiSubscriber::Enable() {
  CuptiApi& api = *api_;
  // CUPTI's default thread id is pthread_self(); the record model wants the OS tid (gettid).
  if (CUptiResult r = api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM); r != CUPTI_SUCCESS) {
    GPUPROF_LOG(kWarning) << "cuptiSetThreadIdType(SYSTEM) failed (" << CuptiErrorString(api, r)
                          << "); API thread ids are pthread ids, not OS tids";
  }
  GPUPROF_RETURN_IF_ERROR(
      CuptiStatus(api, api.ActivityRegisterCallbacks(&BufferRequestedTrampoline, &BufferCompletedTrampoline),
                  "cuptiActivityRegisterCallbacks"));
  if (options_.flush_period_ms != 0) {
    GPUPROF_RETURN_IF_ERROR(
        CuptiStatus(api, api.ActivityFlushPeriod(options_.flush_period_ms), "cuptiActivityFlushPeriod"));
  }

  GPUPROF_RETURN_IF_ERROR(CuptiStatus(
      api,
      api.EnableCallback(1, handle_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
      "cuptiEnableCallback", "RESOURCE_CONTEXT_DESTROY_STARTING"));
  if (options_.on_context_created) {
    GPUPROF_RETURN_IF_ERROR(CuptiStatus(
        api, api.EnableCallback(1, handle_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED),
        "cuptiEnableCallback", "RESOURCE_CONTEXT_CREATED"));
  }
  if (options_.on_module) {
    GPUPROF_RETURN_IF_ERROR(CuptiStatus(
        api, api.EnableCallback(1, handle_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED),
        "cuptiEnableCallback", "RESOURCE_MODULE_LOADED"));
    GPUPROF_RETURN_IF_ERROR(CuptiStatus(
        api,
        api.EnableCallback(1, handle_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING),
        "cuptiEnableCallback", "RESOURCE_MODULE_UNLOAD_STARTING"));
  }
  if (options_.filter_internal_work) {
    api_domains_enabled_ = true;  // before the calls: DisableEverything undoes a partial success
    GPUPROF_RETURN_IF_ERROR(CuptiStatus(api, api.EnableDomain(1, handle_, CUPTI_CB_DOMAIN_RUNTIME_API),
                                        "cuptiEnableDomain", "RUNTIME_API"));
    GPUPROF_RETURN_IF_ERROR(CuptiStatus(api, api.EnableDomain(1, handle_, CUPTI_CB_DOMAIN_DRIVER_API),
                                        "cuptiEnableDomain", "DRIVER_API"));
  }

  if (options_.launch_api_callbacks) {
    launch_tracing_.store(
        true, std::memory_order_release);  // before the calls: DisableEverything undoes a partial success
    GPUPROF_RETURN_IF_ERROR(launch_tracer_.Enable(api, handle_));
  }

  if (options_.nvtx) {
    // Optional: without them a range ended on another thread keeps its starting thread as end.
    bool watching = true;
    for (CUpti_CallbackId cbid : {CUPTI_CBID_NVTX_nvtxRangeEnd, CUPTI_CBID_NVTX_nvtxDomainRangeEnd}) {
      if (api.EnableCallback(1, handle_, CUPTI_CB_DOMAIN_NVTX, cbid) != CUPTI_SUCCESS) {
        GPUPROF_LOG(kWarning) << "cupti: cannot watch nvtxRangeEnd; NVTX ranges ended on another thread "
                                 "are recorded with their starting thread as the ending one";
        watching = false;
        break;
      }
    }
    nvtx_end_callbacks_.store(watching, std::memory_order_release);
    // Range replay's NVTX delimiter (replay hook): the range pushes, pops, starts and ends.
    if (options_.driver_api_observer != nullptr) {
      for (CUpti_CallbackId cbid :
           {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
            CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxRangeStartEx,
            CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop,
            CUPTI_CBID_NVTX_nvtxDomainRangeStartEx}) {
        if (api.EnableCallback(1, handle_, CUPTI_CB_DOMAIN_NVTX, cbid) != CUPTI_SUCCESS) {
          GPUPROF_LOG(kWarning)
              << "cupti: cannot watch NVTX ranges; range replay by NVTX range sees no ranges";
          break;
        }
      }
    }
  }

  std::vector<KindSpec> kinds = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true},
      {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false},
  };
  if (options_.runtime_api) kinds.push_back({CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true});
  if (options_.driver_api) kinds.push_back({CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", true});
  if (options_.nvtx) kinds.push_back({CUPTI_ACTIVITY_KIND_MARKER, "MARKER", false});
  if (options_.external_correlation) {
    kinds.push_back({CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", false});
  }
  for (const KindSpec& spec : kinds) {
    const CUptiResult r = api.ActivityEnable(spec.kind);
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(spec.kind);
      continue;
    }
    if (spec.required) {
      return CuptiStatus(api, r, "cuptiActivityEnable", std::string("CUPTI_ACTIVITY_KIND_") + spec.name);
    }
    GPUPROF_LOG(kWarning) << "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_" << spec.name
                          << ") failed: " << CuptiErrorString(api, r) << "; collecting without it";
  }
  return OkStatus();
}

Status CuptiSubscriber::DisableEverything() {
  CuptiApi& api = *api_;
  Status first;
  const auto keep = [&first](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  std::for_each(enabled_kinds_.rbegin(), enabled_kinds_.rend(), [&](CUpti_ActivityKind kind) {
    keep(CuptiStatus(api, api.ActivityDisable(kind), "cuptiActivityDisable"));
  });
  enabled_kinds_.clear();
  if (api_domains_enabled_) {
    keep(CuptiStatus(api, api.EnableDomain(0, handle_, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(0)"));
    keep(CuptiStatus(api, api.EnableDomain(0, handle_, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain(0)"));
    api_domains_enabled_ = false;
  }
  if (launch_tracing_.load(std::memory_order_acquire)) keep(launch_tracer_.Disable(api, handle_));
  return first;
}

CuptiSubscriber::~CuptiSubscriber() {
  Stop().IgnoreError();  // the owner that cares calls Stop itself and reads the status
  for (std::uint8_t* buffer : *free_buffers_.wlock()) FreeBuffer(buffer);
}

Status CuptiSubscriber::Flush(bool forced) {
  if (!running()) return FailedPreconditionError("CuptiSubscriber::Flush: not running");
  Status flushed = CuptiStatus(*api_, api_->ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0),
                               "cuptiActivityFlushAll");
  EmitLaunchApiCalls();
  return flushed;
}

Status CuptiSubscriber::Stop() {
  if (!running_.exchange(false, std::memory_order_acq_rel)) return OkStatus();
  CuptiApi& api = *api_;
  Status first = DisableEverything();
  // Buffers in flight reach the sink now, incomplete records included: this is the end.
  if (Status flushed = CuptiStatus(api, api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
                                   "cuptiActivityFlushAll(FORCED)");
      first.ok() && !flushed.ok()) {
    first = std::move(flushed);
  }
  EmitLaunchApiCalls();
  // Ranges held back for their end thread go out now, whatever was learned.
  if (std::vector<trace::Record> held = TakeHeldNvtxMarks(); !held.empty()) Emit(std::move(held));
  // NVTX ranges the application had not closed end where the capture ends.
  try {
    std::vector<trace::Mark> open = translator_.wlock()->TakeOpenRanges();
    if (!open.empty()) {
      const std::int64_t now = base::EpochNowNs();
      std::vector<trace::Record> records;
      records.reserve(open.size());
      for (trace::Mark& mark : open) {
        NvtxEnd end;
        if (LookUpNvtxEnd(mark.range_id, &end)) {
          // The range did end (on `end.tid`); only its END marker never reached us.
          mark.end_ns = end.time_ns > mark.start_ns ? end.time_ns : mark.start_ns;
          mark.end_tid = end.tid;
        } else {
          mark.end_ns = now > mark.start_ns ? now : mark.start_ns;
        }
        records.emplace_back(std::move(mark));
      }
      Emit(std::move(records));
    }
  } catch (...) {
  }
  // Wait for callbacks still running on other threads, then let late buffers be freed unread.
  *ActiveSlot().wlock() = nullptr;
  if (Status unsubscribed = CuptiStatus(api, api.Unsubscribe(handle_), "cuptiUnsubscribe");
      first.ok() && !unsubscribed.ok()) {
    first = std::move(unsubscribed);
  }
  handle_ = nullptr;

  // Where kernel records went (issue 40: were they lost in CUPTI or here?); GPUPROF_LOG_LEVEL=debug.
  if (base::LogEnabled(base::LogLevel::kDebug)) {
    const SubscriberStats s = stats();
    GPUPROF_LOG(kDebug) << "cupti: kernel records: " << s.translator.kernels << " from CUPTI, "
                        << s.internal_kernels_dropped << " of them gpuprof's own (C1), "
                        << s.translator.kernels - s.internal_kernels_dropped << " to the trace; "
                        << s.nested_kernels_unseen << " expected for gpuprof's nested launches never came; "
                        << "kernel tracing held off " << KernelRecordHoldOffs() << " time(s)";
  }
  const std::uint64_t dropped = cupti_dropped_records_.load(std::memory_order_relaxed);
  if (dropped != 0) {
    GPUPROF_LOG(kWarning) << "CUPTI dropped " << dropped
                          << " activity records for lack of buffer space; the profile is missing that GPU "
                             "activity (raise the activity buffer size or count)";
  }
  return first;
}

SubscriberStats CuptiSubscriber::stats() const {
  SubscriberStats s;
  s.buffers_requested = buffers_requested_.load(std::memory_order_relaxed);
  s.buffers_refused = buffers_refused_.load(std::memory_order_relaxed);
  s.buffers_completed = buffers_completed_.load(std::memory_order_relaxed);
  s.records_parsed = records_parsed_.load(std::memory_order_relaxed);
  s.records_emitted = records_emitted_.load(std::memory_order_relaxed);
  s.internal_records_dropped = internal_records_dropped_.load(std::memory_order_relaxed);
  s.internal_kernels_dropped = internal_kernels_dropped_.load(std::memory_order_relaxed);
  s.nested_kernels_unseen = filter_.UnseenNestedKernels();
  s.cupti_dropped_records = cupti_dropped_records_.load(std::memory_order_relaxed);
  s.records_lost = records_lost_.load(std::memory_order_relaxed);
  s.parse_errors = parse_errors_.load(std::memory_order_relaxed);
  s.internal_ids_overflowed = filter_.overflowed();
  s.launch_api_calls_lost = launch_tracer_.lost();
  translator_.WithRLock([&s](const ActivityTranslator& t) {
    s.translator = t.stats();
    s.unmatched_range_ends = t.unmatched_range_ends();
  });
  return s;
}

void CuptiSubscriber::OnBufferRequested(std::uint8_t** buffer, std::size_t* size,
                                        std::size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;  // fill the buffer
  buffers_requested_.fetch_add(1, std::memory_order_relaxed);
  if (outstanding_buffers_.fetch_add(1, std::memory_order_acq_rel) >= options_.max_buffers) {
    outstanding_buffers_.fetch_sub(1, std::memory_order_acq_rel);
    buffers_refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::uint8_t* out = nullptr;
  try {
    auto pool = free_buffers_.wlock();
    if (!pool->empty()) {
      out = pool->back();
      pool->pop_back();
    }
  } catch (...) {
  }
  if (out == nullptr) out = AllocateBuffer(options_.buffer_bytes);
  if (out == nullptr) {
    outstanding_buffers_.fetch_sub(1, std::memory_order_acq_rel);
    buffers_refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *buffer = out;
  *size = options_.buffer_bytes;
}

void CuptiSubscriber::ReleaseBuffer(std::uint8_t* buffer) noexcept {
  if (buffer == nullptr) return;
  outstanding_buffers_.fetch_sub(1, std::memory_order_acq_rel);
  try {
    auto pool = free_buffers_.wlock();
    if (pool->size() < options_.pooled_buffers) {
      pool->push_back(buffer);
      return;
    }
  } catch (...) {
  }
  FreeBuffer(buffer);
}

void CuptiSubscriber::EmitLaunchApiCalls() noexcept {
  if (!launch_tracing_.load(std::memory_order_acquire)) return;
  std::vector<trace::Record> calls = launch_tracer_.Take();
  if (!calls.empty()) Emit(std::move(calls));
}

void CuptiSubscriber::Emit(std::vector<trace::Record>&& records) noexcept {
  const std::size_t count = records.size();
  if (count == 0) return;
  try {
    sink_(std::move(records));
    records_emitted_.fetch_add(count, std::memory_order_relaxed);
  } catch (...) {
    records_lost_.fetch_add(count, std::memory_order_relaxed);
  }
}

void CuptiSubscriber::ApplyNvtxEndThreads(std::vector<trace::Record>& records) noexcept {
  if (!nvtx_end_callbacks_.load(std::memory_order_acquire)) return;
  try {
    auto ends = nvtx_ends_.wlock();
    // Marks held back by the previous buffer go out now: their end callbacks have run by now.
    std::vector<trace::Mark> previously_held = std::move(ends->held);
    ends->held.clear();
    auto resolve = [&](trace::Mark& mark) {
      auto it = ends->end_tids.find(mark.range_id);
      if (it == ends->end_tids.end()) return false;
      mark.end_tid = it->second.tid;
      ends->end_tids.erase(it);
      return true;
    };
    std::vector<trace::Record> kept;
    kept.reserve(records.size() + previously_held.size());
    for (trace::Mark& mark : previously_held) {
      resolve(mark);
      kept.emplace_back(std::move(mark));
    }
    for (trace::Record& record : records) {
      auto* mark = std::get_if<trace::Mark>(&record);
      if (mark != nullptr && mark->type == trace::Mark::Type::kStartEnd && !resolve(*mark)) {
        ends->held.push_back(std::move(*mark));
        continue;
      }
      kept.push_back(std::move(record));
    }
    records = std::move(kept);
  } catch (...) {  // out of memory: the marks keep the thread CUPTI gave them
  }
}

bool CuptiSubscriber::LookUpNvtxEnd(std::uint64_t range_id, NvtxEnd* end) noexcept {
  try {
    auto ends = nvtx_ends_.wlock();
    auto it = ends->end_tids.find(range_id);
    if (it == ends->end_tids.end()) return false;
    *end = it->second;
    ends->end_tids.erase(it);
    return true;
  } catch (...) {
    return false;
  }
}

std::vector<trace::Record> CuptiSubscriber::TakeHeldNvtxMarks() noexcept {
  std::vector<trace::Record> records;
  try {
    auto ends = nvtx_ends_.wlock();
    for (trace::Mark& mark : ends->held) {
      if (auto it = ends->end_tids.find(mark.range_id); it != ends->end_tids.end()) {
        mark.end_tid = it->second.tid;
        ends->end_tids.erase(it);
      }
      records.emplace_back(std::move(mark));
    }
    ends->held.clear();
  } catch (...) {
  }
  return records;
}

void CuptiSubscriber::OnBufferCompleted(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                                        std::size_t /*size*/, std::size_t valid_size) noexcept {
  buffers_completed_.fetch_add(1, std::memory_order_relaxed);
  std::vector<trace::Record> records;
  std::uint64_t parsed = 0;
  try {
    if (buffer != nullptr && valid_size > 0) {
      auto translator = translator_.wlock();
      CUpti_Activity* record = nullptr;
      for (;;) {
        const CUptiResult r = api_->ActivityGetNextRecord(buffer, valid_size, &record);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;  // end of the valid bytes
        if (r != CUPTI_SUCCESS || record == nullptr) {
          parse_errors_.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        ++parsed;
        translator->Translate(*record, records);
      }
    }
  } catch (...) {  // bad_alloc while translating: the rest of this buffer is lost, counted
    parse_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  records_parsed_.fetch_add(parsed, std::memory_order_relaxed);
  ReleaseBuffer(buffer);
  ApplyNvtxEndThreads(records);

  std::size_t dropped = 0;
  if (api_->ActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS && dropped != 0) {
    cupti_dropped_records_.fetch_add(dropped, std::memory_order_relaxed);
  }

  std::size_t internal = 0;
  try {
    std::vector<trace::DeviceTask> graph_pass_kernels;
    const std::size_t kernels = CountKernels(records);
    std::vector<trace::ReplayRangeTask> range_pass_kernels = range_tags_.Take(records);
    internal = filter_.Filter(records, &graph_pass_kernels);
    for (trace::ReplayRangeTask& task : range_pass_kernels) records.emplace_back(task);
    if (internal != 0) {
      internal_kernels_dropped_.fetch_add(kernels - CountKernels(records), std::memory_order_relaxed);
    }
    for (const trace::DeviceTask& task : graph_pass_kernels) {
      records.emplace_back(trace::ReplayGraphNodeTask{
          task.correlation_id, task.graph_node_id, task.name,
          task.end_ns > task.start_ns ? static_cast<std::uint64_t>(task.end_ns - task.start_ns) : 0});
    }
  } catch (...) {
  }
  internal_records_dropped_.fetch_add(internal, std::memory_order_relaxed);
  Emit(std::move(records));
  EmitLaunchApiCalls();
}

void CuptiSubscriber::TagRangePassLaunch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  CUstream stream = nullptr;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      if (call.functionParams == nullptr) return;
      stream = static_cast<const cuLaunchKernel_params*>(call.functionParams)->hStream;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      if (call.functionParams == nullptr) return;
      const CUlaunchConfig* config = static_cast<const cuLaunchKernelEx_params*>(call.functionParams)->config;
      if (config == nullptr) return;
      stream = config->hStream;
      break;
    }
    default: return;  // only a launch takes the name its re-issue gave it
  }
  const std::optional<RangePassLaunch> launch = RangePassTags::TakePending();
  if (!launch.has_value()) return;
  std::uint32_t stream_id = 0;
  if (api_->GetStreamIdEx(call.context, stream, 0, &stream_id) != CUPTI_SUCCESS) return;
  range_tags_.Tag(call.correlationId, stream_id, *launch);
}

void CuptiSubscriber::OnCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void* data) noexcept {
  if (data == nullptr) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_RUNTIME_API:
    case CUPTI_CB_DOMAIN_DRIVER_API: {
      // The hot path: every API entry and exit of every thread lands here while C1 filtering is on.
      const auto* call = static_cast<const CUpti_CallbackData*>(data);
      if (!ScopedInternalWork::Active()) {
        // Bounded without a completed activity buffer to ride on (e.g. only API calls for a long while).
        if (launch_tracing_.load(std::memory_order_acquire) &&
            launch_tracer_.OnApi(domain, cbid, *call) >= kLaunchCallsEmittedInline) {
          EmitLaunchApiCalls();
        }
        if (domain == CUPTI_CB_DOMAIN_DRIVER_API && options_.driver_api_observer != nullptr) {
          ScopedApplicationCall application(call->correlationId);
          options_.driver_api_observer->OnDriverApi(cbid, *call);
        } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && options_.driver_api_observer != nullptr &&
                   (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000 ||
                    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)) {
          // Range replay's default delimiter, from the runtime as from the driver (a program may call
          // either). Handed on as the driver's call (neither has parameters); where the runtime's call
          // reaches the driver's too, the second is a no-op (W1: a delimiter inside an open range, or
          // an end outside one, is not a range).
          ScopedApplicationCall application(call->correlationId);
          options_.driver_api_observer->OnDriverApi(cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                                                        ? CUPTI_DRIVER_TRACE_CBID_cuProfilerStart
                                                        : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
                                                    *call);
        }
        return;
      }
      if (call->callbackSite != CUPTI_API_ENTER) return;
      if (domain == CUPTI_CB_DOMAIN_DRIVER_API) TagRangePassLaunch(cbid, *call);
      // gpuprof's call inside an application call's callback carries the application's id.
      if (call->correlationId != 0 && call->correlationId == ScopedApplicationCall::Current()) {
        // A launch on a context whose kernel records gpuprof holds off (counter passes) gets none.
        filter_.MarkNested(call->correlationId, call->functionName != nullptr ? call->functionName : "",
                           !KernelRecordsHeldOff(call->context));
      } else {
        filter_.MarkInternal(call->correlationId);
      }
      return;
    }
    case CUPTI_CB_DOMAIN_NVTX: {
      const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
      if (nvtx->functionParams == nullptr) return;
      if (options_.driver_api_observer != nullptr) options_.driver_api_observer->OnNvtx(cbid, *nvtx);
      std::uint64_t id = 0;
      if (cbid == CUPTI_CBID_NVTX_nvtxRangeEnd) {
        id = static_cast<const nvtxRangeEnd_params*>(nvtx->functionParams)->id;
      } else if (cbid == CUPTI_CBID_NVTX_nvtxDomainRangeEnd) {
        id = static_cast<const nvtxDomainRangeEnd_params*>(nvtx->functionParams)->core.id;
      } else {
        return;
      }
      try {
        auto ends = nvtx_ends_.wlock();
        // Bounded: ends whose markers never arrive (MARKER kind off) must not grow without limit.
        if (ends->end_tids.size() >= (std::size_t{1} << 20)) ends->end_tids.clear();
        ends->end_tids[id] = NvtxEnd{static_cast<std::uint32_t>(gettid()), base::EpochNowNs()};
      } catch (...) {
      }
      return;
    }
    case CUPTI_CB_DOMAIN_RESOURCE: {
      const auto* resource = static_cast<const CUpti_ResourceData*>(data);
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        if (options_.on_context_created) {
          try {
            options_.on_context_created(resource->context);
          } catch (...) {
          }
        }
        return;
      }
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        if (options_.on_context_destroy) {
          try {
            options_.on_context_destroy(resource->context);
          } catch (...) {
          }
        }
        // The context's records must leave CUPTI before the context does.
        (void)api_->ActivityFlushAll(0);
        return;
      }
      if ((cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED || cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) &&
          options_.on_module) {
        const auto* module = static_cast<const CUpti_ModuleResourceData*>(resource->resourceDescriptor);
        if (module == nullptr) return;
        ModuleEvent event;
        event.kind = cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ? ModuleEvent::Kind::kLoaded
                                                               : ModuleEvent::Kind::kUnloadStarting;
        event.module_id = module->moduleId;
        event.context = resource->context;
        event.cubin = module->pCubin;
        event.cubin_size = module->cubinSize;
        try {
          options_.on_module(event);
        } catch (...) {
        }
      }
      return;
    }
    default: return;
  }
}

}  // namespace gpuprof::cupti
