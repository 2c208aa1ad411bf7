#include "unit/cupti/fake_cupti.h"

#include <algorithm>

namespace gpuprof::cupti::testing {

std::size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    default: return 0;
  }
}

CUpti_ActivityKernel10 MakeKernel(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                  const char* name) {
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.correlationId = correlation;
  k.start = start;
  k.end = end;
  k.name = name;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = k.blockY = k.blockZ = 1;
  return k;
}

CUpti_ActivityMemcpy6 MakeMemcpy(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                 std::uint8_t copy_kind, std::uint64_t bytes) {
  auto m = Zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.correlationId = correlation;
  m.start = start;
  m.end = end;
  m.copyKind = copy_kind;
  m.bytes = bytes;
  m.contextId = 1;
  m.streamId = 7;
  return m;
}

CUpti_ActivityMemset4 MakeMemset(std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
                                 std::uint64_t bytes) {
  auto m = Zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  m.correlationId = correlation;
  m.start = start;
  m.end = end;
  m.bytes = bytes;
  m.contextId = 1;
  m.streamId = 7;
  return m;
}

CUpti_ActivityAPI MakeApi(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::uint32_t correlation,
                          std::uint64_t start, std::uint64_t end, std::uint32_t tid) {
  auto a = Zeroed<CUpti_ActivityAPI>(kind);
  a.cbid = cbid;
  a.correlationId = correlation;
  a.start = start;
  a.end = end;
  a.processId = 4242;
  a.threadId = tid;
  return a;
}

CUpti_ActivityMarker2 MakeMarker(std::uint32_t flags, std::uint32_t id, std::uint64_t timestamp,
                                 std::uint32_t tid, const char* name, const char* domain) {
  auto m = Zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.id = id;
  m.timestamp = timestamp;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 4242;
  m.objectId.pt.threadId = tid;
  m.name = name;
  m.domain = domain;
  return m;
}

CUpti_ActivityExternalCorrelation MakeExternalCorrelation(CUpti_ExternalCorrelationKind kind,
                                                          std::uint64_t external_id,
                                                          std::uint32_t correlation) {
  auto e = Zeroed<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  e.externalKind = kind;
  e.externalId = external_id;
  e.correlationId = correlation;
  return e;
}

bool FakeCuptiApi::Deliver(const ActivityBuffer& records) {
  if (buffer_requested == nullptr || buffer_completed == nullptr) return false;
  std::uint8_t* buffer = nullptr;
  std::size_t size = 0;
  std::size_t max_records = 0;
  buffer_requested(&buffer, &size, &max_records);
  if (buffer == nullptr || size < records.size()) return false;
  if (records.size() != 0) std::memcpy(buffer, records.data(), records.size());
  buffer_completed(nullptr, 0, buffer, size, records.size());
  return true;
}

void FakeCuptiApi::ApiCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::uint32_t correlation,
                               CUpti_ApiCallbackSite site, CUcontext context) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.context = context;
  // CUPTI's name for the call when the test gave one (callback_names), as nested work is counted by it.
  auto named = callback_names.find({domain, cbid});
  data.functionName = named != callback_names.end() ? named->second.c_str() : "fake";
  data.correlationId = correlation;
  callback(userdata, domain, cbid, &data);
}

void FakeCuptiApi::ResourceCallback(CUpti_CallbackId cbid, void* resource_descriptor) {
  CUpti_ResourceData data{};
  data.resourceDescriptor = resource_descriptor;
  callback(userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

CUptiResult FakeCuptiApi::GetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    default: return CUPTI_ERROR_INVALID_PARAMETER;
  }
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::GetVersion(std::uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc cb, void* data,
                                    CUpti_SubscriberParams* params) {
  ++subscribe_calls;
  calls.emplace_back("subscribe");
  if (params != nullptr) {
    params_struct_size = params->structSize;
    subscriber_name = params->subscriberName != nullptr ? params->subscriberName : "";
  }
  if (subscribe_result != CUPTI_SUCCESS) {
    if (subscribe_result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params != nullptr &&
        params->oldSubscriberName != nullptr && params->oldSubscriberSize > 0) {
      const std::size_t n = std::min(holder_name.size(), params->oldSubscriberSize - 1);
      std::memcpy(params->oldSubscriberName, holder_name.data(), n);
      params->oldSubscriberName[n] = '\0';
    }
    return subscribe_result;
  }
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&handle_storage_);
  callback = cb;
  userdata = data;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::Unsubscribe(CUpti_SubscriberHandle) {
  ++unsubscribe_calls;
  calls.emplace_back("unsubscribe");
  enabled_domains.clear();
  enabled_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::EnableCallback(std::uint32_t enable, CUpti_SubscriberHandle,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (enable != 0) {
    if (failing_callbacks.count({domain, cbid}) != 0) return CUPTI_ERROR_INVALID_PARAMETER;
    enabled_callbacks.insert({domain, cbid});
  } else {
    if (failing_disables.count({domain, cbid}) != 0) return CUPTI_ERROR_INVALID_PARAMETER;
    enabled_callbacks.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::EnableDomain(std::uint32_t enable, CUpti_SubscriberHandle,
                                       CUpti_CallbackDomain domain) {
  if (enable != 0) {
    enabled_domains.insert(domain);
  } else {
    enabled_domains.erase(domain);
  }
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::GetCallbackName(CUpti_CallbackDomain domain, std::uint32_t cbid,
                                          const char** name) {
  ++callback_name_calls;
  auto it = callback_names.find({domain, cbid});
  if (it == callback_names.end()) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = it->second.c_str();
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::SetThreadIdType(CUpti_ActivityThreadIdType type) {
  thread_id_type = static_cast<int>(type);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::GetTimestamp(std::uint64_t* value) {
  if (timestamp_result != CUPTI_SUCCESS) return timestamp_result;
  *value = timestamp;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityEnable(CUpti_ActivityKind kind) {
  if (failing_kinds.count(kind) != 0) return CUPTI_ERROR_UNKNOWN;
  enabled_kinds.push_back(kind);
  calls.push_back("enable " + std::to_string(static_cast<int>(kind)));
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityDisable(CUpti_ActivityKind kind) {
  disabled_kinds.push_back(kind);
  calls.push_back("disable " + std::to_string(static_cast<int>(kind)));
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  buffer_requested = requested;
  buffer_completed = completed;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityGetNextRecord(std::uint8_t* buffer, std::size_t valid_size,
                                                CUpti_Activity** record) {
  std::size_t offset = 0;
  if (*record != nullptr) {
    const auto* current = reinterpret_cast<std::uint8_t*>(*record);
    const std::size_t size = RecordSize((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    offset = static_cast<std::size_t>(current - buffer) + (size + 7) / 8 * 8;
  }
  if (offset >= valid_size) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  if (RecordSize(next->kind) == 0) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityGetNumDroppedRecords(CUcontext, std::uint32_t, std::size_t* dropped) {
  *dropped = dropped_per_call;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityFlushAll(std::uint32_t flag) {
  flush_flags.push_back(flag);
  calls.push_back("flush " + std::to_string(flag));
  if (on_flush) on_flush(flag);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityFlushPeriod(std::uint32_t period_ms) {
  flush_period_ms = period_ms;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind, std::uint64_t) {
  return CUPTI_SUCCESS;
}

CUptiResult FakeCuptiApi::ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind,
                                                           std::uint64_t* last_id) {
  if (last_id != nullptr) *last_id = 0;
  return CUPTI_SUCCESS;
}

void LaunchApiIds::NameAll(FakeCuptiApi& api) {
  api.callback_names = {{{CUPTI_CB_DOMAIN_RUNTIME_API, kLaunch}, "cudaLaunchKernel_v7000"},
                        {{CUPTI_CB_DOMAIN_RUNTIME_API, kGetDevice}, "cudaGetDevice_v3020"},
                        {{CUPTI_CB_DOMAIN_RUNTIME_API, kCopy}, "cudaMemcpyAsync_v3020"},
                        {{CUPTI_CB_DOMAIN_RUNTIME_API, kSync}, "cudaStreamSynchronize_v3020"},
                        {{CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunch}, "cuLaunchKernel"},
                        {{CUPTI_CB_DOMAIN_DRIVER_API, kDriverQuery}, "cuCtxGetCurrent"}};
}

CUresult FakeDriverApi::DriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

CUresult FakeDriverApi::GetErrorString(CUresult error, const char** str) {
  *str = error == CUDA_ERROR_NOT_INITIALIZED ? "initialization error" : "unknown error";
  return CUDA_SUCCESS;
}

CUresult FakeDriverApi::DeviceGetCount(int* count) {
  if (count_result != CUDA_SUCCESS) return count_result;
  *count = static_cast<int>(device_names.size());
  return CUDA_SUCCESS;
}

CUresult FakeDriverApi::DeviceGet(CUdevice* device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult FakeDriverApi::DeviceGetName(char* name, int length, CUdevice device) {
  const std::string& value = device_names.at(static_cast<std::size_t>(device));
  const std::size_t n = std::min(value.size(), static_cast<std::size_t>(length - 1));
  std::memcpy(name, value.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

}  // namespace gpuprof::cupti::testing
