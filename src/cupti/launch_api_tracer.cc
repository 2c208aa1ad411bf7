#include "cupti/launch_api_tracer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "base/clock.h"
#include "base/logging.h"
#include "cupti/activity_translator.h"

namespace gpuprof::cupti {
namespace {

constexpr std::string_view kRuntimePrefixes[] = {
    "cudaLaunch",
    "cudaGraphLaunch",
    "cudaMemcpy",
    "cudaMemset",
    "cudaMalloc",
    "cudaFree",
    "cudaHostAlloc",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaStreamWaitEvent",
};
constexpr std::string_view kDriverPrefixes[] = {
    "cuLaunch",           "cuGraphLaunch",     "cuMemcpy",
    "cuMemset",           "cuMemAlloc",        "cuMemFree",
    "cuMemHostAlloc",     "cuCtxSynchronize",  "cuStreamSynchronize",
    "cuEventSynchronize", "cuStreamWaitEvent",
};

// Enable() bumps this, so a thread's nesting state left by a tracer that was disabled in the middle
// of a call (its exit callback never came) does not carry over to the next one.
std::atomic<std::uint32_t> g_epoch{0};

struct ThreadState {
  std::uint32_t epoch = 0;
  int runtime_depth = 0;  // traced runtime calls running on this thread
  std::int64_t runtime_start_ns = 0;
  std::int64_t driver_start_ns = 0;
  std::uint32_t tid = 0;
};

constexpr int kMaxExternalDepth = 64;
struct ExternalIds {
  std::uint64_t ids[kMaxExternalDepth] = {};
  int depth = 0;  // may exceed kMaxExternalDepth; ids beyond it are not kept
};
thread_local ExternalIds t_external;

ThreadState& State() noexcept {
  thread_local ThreadState state;
  const std::uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (state.epoch != epoch) {
    state = ThreadState{};
    state.epoch = epoch;
  }
  if (state.tid == 0) state.tid = static_cast<std::uint32_t>(gettid());
  return state;
}

}  // namespace

bool IsTracedApi(CUpti_CallbackDomain domain, std::string_view name) {
  const auto starts = [name](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    for (std::string_view prefix : kRuntimePrefixes)
      if (starts(prefix)) return true;
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    for (std::string_view prefix : kDriverPrefixes)
      if (starts(prefix)) return true;
  }
  return false;
}

void PushExternalId(std::uint64_t id) noexcept {
  if (t_external.depth < kMaxExternalDepth) t_external.ids[t_external.depth] = id;
  ++t_external.depth;
}

void PopExternalId() noexcept {
  if (t_external.depth > 0) --t_external.depth;
}

std::uint64_t CurrentExternalId() noexcept {
  if (t_external.depth == 0) return 0;
  return t_external.ids[std::min(t_external.depth, kMaxExternalDepth) - 1];
}

Status LaunchApiTracer::Enable(CuptiApi& api, CUpti_SubscriberHandle handle) {
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  std::size_t traced = 0;
  std::size_t refused = 0;
  std::string first_refused;  // the first callback CUPTI refused, with its error
  const struct {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId size;
    CUpti_ActivityKind kind;
    std::vector<TracedCall>* calls;
  } domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_RUNTIME,
       &runtime_calls_},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_DRIVER, &driver_calls_},
  };
  for (const auto& d : domains) {
    d.calls->assign(d.size, TracedCall{});
    for (CUpti_CallbackId cbid = 1; cbid < d.size; ++cbid) {
      const char* raw = nullptr;
      if (api.GetCallbackName(d.domain, cbid, &raw) != CUPTI_SUCCESS || raw == nullptr) continue;
      if (!IsTracedApi(d.domain, raw)) continue;
      if (const CUptiResult r = api.EnableCallback(1, handle, d.domain, cbid); r != CUPTI_SUCCESS) {
        // One id CUPTI will not watch (e.g. retired in this CUDA) costs that call's rows, not the run.
        if (first_refused.empty()) first_refused = std::string(raw) + ": " + CuptiErrorString(api, r);
        ++refused;
        continue;
      }
      enabled_.emplace_back(d.domain, cbid);
      TracedCall& call = (*d.calls)[cbid];
      call.name = NormalizeApiName(d.kind, cbid, raw);
      call.launches_device_work = LaunchesDeviceWork(d.kind, cbid, call.name);
      ++traced;
    }
  }
  if (refused != 0) {
    GPUPROF_LOG(kWarning) << "cuda_trace launches: CUPTI refused the callbacks of " << refused
                          << " API call(s), which are missing from CANN_API (first: " << first_refused << ")";
  }
  if (traced == 0) {
    GPUPROF_LOG(kWarning)
        << "cuda_trace launches: no runtime or driver call could be traced, so CANN_API "
           "stays empty and ops reach kernels only by time; GPUPROF_CUDA_TRACE=runtime,driver,nvtx "
           "(gpuprof run --cuda-trace runtime,driver,nvtx) records every call instead";
  }
  return OkStatus();
}

Status LaunchApiTracer::Disable(CuptiApi& api, CUpti_SubscriberHandle handle) {
  Status first;
  for (const auto& [domain, cbid] : enabled_) {
    Status s = CuptiStatus(api, api.EnableCallback(0, handle, domain, cbid), "cuptiEnableCallback(0)");
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  enabled_.clear();
  return first;
}

bool LaunchApiTracer::Traced(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) const noexcept {
  const std::vector<TracedCall>& calls =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_calls_ : driver_calls_;
  return cbid < calls.size() && !calls[cbid].name.empty();
}

std::size_t LaunchApiTracer::OnApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const CUpti_CallbackData& call) noexcept {
  if (!Traced(domain, cbid)) return 0;
  ThreadState& state = State();
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const bool enter = call.callbackSite == CUPTI_API_ENTER;
  if (driver && state.runtime_depth > 0) return 0;  // the runtime's own driver call
  if (enter) {
    const std::int64_t now = base::EpochNowNs();
    if (driver) {
      state.driver_start_ns = now;
    } else {
      ++state.runtime_depth;
      state.runtime_start_ns = now;
    }
    return 0;
  }
  Completed done{};
  done.end_ns = base::EpochNowNs();
  if (driver) {
    done.start_ns = state.driver_start_ns;
  } else {
    if (state.runtime_depth > 0) --state.runtime_depth;
    done.start_ns = state.runtime_start_ns;
  }
  if (done.start_ns == 0 || done.start_ns > done.end_ns) done.start_ns = done.end_ns;  // entry not seen
  done.correlation_id = call.correlationId;
  done.tid = state.tid;
  done.cbid = cbid;
  done.driver = driver;
  done.external_id = CurrentExternalId();
  std::lock_guard lock(mutex_);
  try {
    completed_.push_back(done);
  } catch (...) {  // out of memory: the call is not recorded
    ++lost_;
  }
  return completed_.size();
}

std::vector<trace::Record> LaunchApiTracer::Take() noexcept {
  // The launch callbacks append to completed_ under the lock: hand them back a vector as large as
  // the last batch, so they do not grow it again from nothing after every Take.
  std::vector<Completed> next;
  try {
    next.reserve(last_batch_.load(std::memory_order_relaxed));
  } catch (...) {  // out of memory: the callbacks grow it as they go
  }
  std::vector<Completed> completed;
  {
    std::lock_guard lock(mutex_);
    completed.swap(completed_);
    completed_.swap(next);
  }
  last_batch_.store(completed.size(), std::memory_order_relaxed);
  std::vector<trace::Record> records;
  std::size_t taken = 0;  // calls fully turned into records
  try {
    records.reserve(completed.size() * 2);
    for (const Completed& c : completed) {
      trace::ApiCall api;
      api.start_ns = c.start_ns;
      api.end_ns = c.end_ns;
      api.pid = pid_;
      api.tid = c.tid;
      const TracedCall& traced = (c.driver ? driver_calls_ : runtime_calls_)[c.cbid];
      api.name = traced.name;
      api.correlation_id = c.correlation_id;
      api.launches_device_work = traced.launches_device_work;
      records.emplace_back(std::move(api));
      if (c.external_id != 0)
        records.emplace_back(trace::ExternalCorrelation{c.external_id, c.correlation_id});
      ++taken;
    }
  } catch (...) {  // out of memory: what was built goes out, the rest is counted
    std::lock_guard lock(mutex_);
    lost_ += completed.size() - taken;
  }
  return records;
}

std::uint64_t LaunchApiTracer::lost() const noexcept {
  std::lock_guard lock(mutex_);
  return lost_;
}

}  // namespace gpuprof::cupti
