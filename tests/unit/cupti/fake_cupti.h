// Test doubles for the CUPTI layer: a scriptable CuptiApi, a DriverApi, and helpers that build
// synthetic activity records (the real CUDA 13 structs, zero-filled, fields set by the test) and
// activity buffers in the layout the fake's cuptiActivityGetNextRecord walks.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cupti/cupti_api.h"

namespace gpuprof::cupti::testing {

// sizeof the CUDA 13 record struct for `kind` (0 for kinds the fake does not know).
std::size_t RecordSize(CUpti_ActivityKind kind);

// A zero-filled record of type T with `kind` set.
template <typename T>
T Zeroed(CUpti_ActivityKind kind) {
  T record;
  std::memset(&record, 0, sizeof(record));
  record.kind = kind;
  return record;
}

CUpti_ActivityKernel10 MakeKernel(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                  const char* name);
CUpti_ActivityMemcpy6 MakeMemcpy(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                 std::uint8_t copy_kind, std::uint64_t bytes);
CUpti_ActivityMemset4 MakeMemset(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                 std::uint64_t bytes);
CUpti_ActivityAPI MakeApi(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::uint32_t correlation,
                          std::uint64_t start, std::uint64_t end, std::uint32_t tid);
// flags: CUPTI_ACTIVITY_FLAG_MARKER_{INSTANTANEOUS,START,END}; name/domain may be null.
CUpti_ActivityMarker2 MakeMarker(std::uint32_t flags, std::uint32_t id, std::uint64_t timestamp,
                                 std::uint32_t tid, const char* name, const char* domain);
CUpti_ActivityExternalCorrelation MakeExternalCorrelation(CUpti_ExternalCorrelationKind kind,
                                                          std::uint64_t external_id,
                                                          std::uint32_t correlation);

// Records laid out back to back, each padded to 8 bytes, as FakeCuptiApi::ActivityGetNextRecord
// expects. 8-byte aligned storage.
class ActivityBuffer {
 public:
  template <typename T>
  ActivityBuffer& Add(const T& record) {
    const std::size_t at = used_;
    const std::size_t padded = (sizeof(T) + 7) / 8 * 8;
    words_.resize((at + padded) / 8, 0);
    std::memcpy(reinterpret_cast<unsigned char*>(words_.data()) + at, &record, sizeof(T));
    used_ = at + padded;
    return *this;
  }
  const std::uint8_t* data() const { return reinterpret_cast<const std::uint8_t*>(words_.data()); }
  std::size_t size() const { return used_; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t used_ = 0;
};

// A CuptiApi whose results are set by the test and whose calls are recorded. Not thread-safe.
class FakeCuptiApi final : public CuptiApi {
 public:
  // --- behaviour -------------------------------------------------------------------------
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  std::string holder_name;              // written to oldSubscriberName when subscribe_result is "slot taken"
  std::uint64_t timestamp = 1'000'000;  // GetTimestamp's value
  CUptiResult timestamp_result = CUPTI_SUCCESS;
  std::map<std::pair<int, std::uint32_t>, std::string> callback_names;  // (domain, cbid) -> name
  std::set<CUpti_ActivityKind> failing_kinds;  // ActivityEnable fails (CUPTI_ERROR_UNKNOWN)
  std::set<std::pair<int, std::uint32_t>>
      failing_callbacks;  // EnableCallback(1, ...) fails (INVALID_PARAMETER)
  std::set<std::pair<int, std::uint32_t>> failing_disables;  // EnableCallback(0, ...) fails (same)
  std::size_t dropped_per_call = 0;                          // ActivityGetNumDroppedRecords reports this
  std::function<void(std::uint32_t flag)> on_flush;          // runs inside ActivityFlushAll

  // --- what was called -------------------------------------------------------------------
  int subscribe_calls = 0;
  int unsubscribe_calls = 0;
  std::string subscriber_name;
  std::size_t params_struct_size = 0;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  CUpti_BuffersCallbackRequestFunc buffer_requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc buffer_completed = nullptr;
  std::vector<CUpti_ActivityKind> enabled_kinds;
  std::vector<CUpti_ActivityKind> disabled_kinds;
  std::set<int> enabled_domains;  // currently enabled
  std::set<std::pair<int, std::uint32_t>> enabled_callbacks;
  std::vector<std::uint32_t> flush_flags;
  int callback_name_calls = 0;
  int thread_id_type = -1;
  std::uint32_t flush_period_ms = 0;
  std::vector<std::string> calls;  // names of state-changing calls, in order

  // Delivers `records` the way CUPTI does: asks the registered request callback for a buffer,
  // copies the records in, and returns it through the completion callback. Returns false when
  // no buffer was handed out (the records are "dropped").
  bool Deliver(const ActivityBuffer& records);
  // Invokes the subscriber's callback as CUPTI would for an API entry (or exit) on this thread; the
  // call's functionName is its callback_names entry, else "fake".
  // `context`: the context current on the calling thread, as CUPTI reports it.
  void ApiCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::uint32_t correlation,
                   CUpti_ApiCallbackSite site = CUPTI_API_ENTER, CUcontext context = nullptr);
  void ResourceCallback(CUpti_CallbackId cbid, void* resource_descriptor = nullptr);

  // --- CuptiApi -----------------------------------------------------------------------------
  CUptiResult GetResultString(CUptiResult result, const char** str) override;
  CUptiResult GetVersion(std::uint32_t* version) override;
  CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) override;
  CUptiResult Unsubscribe(CUpti_SubscriberHandle subscriber) override;
  CUptiResult EnableCallback(std::uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) override;
  CUptiResult EnableDomain(std::uint32_t enable, CUpti_SubscriberHandle subscriber,
                           CUpti_CallbackDomain domain) override;
  CUptiResult GetCallbackName(CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) override;
  CUptiResult SetThreadIdType(CUpti_ActivityThreadIdType type) override;
  CUptiResult GetTimestamp(std::uint64_t* timestamp) override;
  CUptiResult ActivityEnable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityDisable(CUpti_ActivityKind kind) override;
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed) override;
  CUptiResult ActivityGetNextRecord(std::uint8_t* buffer, std::size_t valid_size,
                                    CUpti_Activity** record) override;
  CUptiResult ActivityGetNumDroppedRecords(CUcontext context, std::uint32_t stream_id,
                                           std::size_t* dropped) override;
  CUptiResult ActivityFlushAll(std::uint32_t flag) override;
  CUptiResult ActivityFlushPeriod(std::uint32_t period_ms) override;
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                std::uint64_t id) override;
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                               std::uint64_t* last_id) override;

 private:
  int handle_storage_ = 0;
};

// CUPTI callback ids of a few runtime and driver calls, for the launch-API tests: ones the tracer
// records (a launch, a copy, a wait, a driver launch) and queries it does not. A fixture inherits
// it to name them unqualified; NameAll gives a fake their CUPTI callback names.
struct LaunchApiIds {
  static constexpr CUpti_CallbackId kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  static constexpr CUpti_CallbackId kGetDevice = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
  static constexpr CUpti_CallbackId kCopy = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
  static constexpr CUpti_CallbackId kSync = CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020;
  static constexpr CUpti_CallbackId kDriverLaunch = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  static constexpr CUpti_CallbackId kDriverQuery = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;

  static void NameAll(FakeCuptiApi& api);
};

class FakeDriverApi final : public DriverApi {
 public:
  std::vector<std::string> device_names;
  CUresult count_result = CUDA_SUCCESS;

  CUresult DriverGetVersion(int* version) override;
  CUresult GetErrorString(CUresult error, const char** str) override;
  CUresult DeviceGetCount(int* count) override;
  CUresult DeviceGet(CUdevice* device, int ordinal) override;
  CUresult DeviceGetName(char* name, int length, CUdevice device) override;
};

}  // namespace gpuprof::cupti::testing
