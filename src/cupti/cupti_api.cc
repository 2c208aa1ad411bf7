#include "cupti/cupti_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>
#include <utility>

#include "device/cuda/cuda_driver.h"

namespace gpuprof::cupti {
namespace {

// dlopen()s the first candidate that loads. RTLD_LOCAL keeps CUPTI's symbols out of the global
// namespace (the application may bring its own); RTLD_NOW makes a broken install fail here rather
// than at the first call under a CUDA callback.
struct OpenedLibrary {
  void* handle = nullptr;
  std::string name;
};

StatusOr<OpenedLibrary> OpenFirst(std::string_view what, const std::vector<std::string>& candidates) {
  if (candidates.empty()) return UnavailableError(std::string(what) + " unavailable: no library to try");
  std::string tried;
  for (const std::string& candidate : candidates) {
    dlerror();  // clear any stale error so the one we report is this call's
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return OpenedLibrary{handle, candidate};
    const char* error = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += error != nullptr ? error : candidate + ": dlopen failed";
  }
  return UnavailableError(std::string(what) + " unavailable: " + tried);
}

// Resolves `symbol` into `fn`; on failure appends the symbol to `missing`.
template <typename Fn>
void Resolve(void* handle, const char* symbol, Fn& fn, std::string& missing) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    if (!missing.empty()) missing += ", ";
    missing += symbol;
    fn = nullptr;
    return;
  }
  // POSIX guarantees a data pointer from dlsym converts to a function pointer.
  fn = reinterpret_cast<Fn>(address);
}

struct CuptiTable {
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiSubscribe_v2) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiGetCallbackName) get_callback_name = nullptr;
  decltype(&cuptiSetThreadIdType) set_thread_id_type = nullptr;
  decltype(&cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&cuptiActivityFlushPeriod) activity_flush_period = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push_external_correlation_id = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop_external_correlation_id = nullptr;
  // The counter group (optional; `counter_missing` names what this CUPTI lacks).
  decltype(&cuptiProfilerInitialize) profiler_initialize = nullptr;
  decltype(&cuptiDeviceGetChipName) device_get_chip_name = nullptr;
  decltype(&cuptiProfilerHostInitialize) host_initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) host_deinitialize = nullptr;
  decltype(&cuptiProfilerHostGetBaseMetrics) host_get_base_metrics = nullptr;
  decltype(&cuptiProfilerHostGetSubMetrics) host_get_sub_metrics = nullptr;
  decltype(&cuptiProfilerHostGetMetricProperties) host_get_metric_properties = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) host_config_add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) host_get_config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) host_get_config_image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) host_get_num_of_passes = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) host_evaluate_to_gpu_values = nullptr;
  decltype(&cuptiRangeProfilerEnable) range_enable = nullptr;
  decltype(&cuptiRangeProfilerDisable) range_disable = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataSize) range_get_counter_data_size = nullptr;
  decltype(&cuptiRangeProfilerCounterDataImageInitialize) range_counter_data_image_initialize = nullptr;
  decltype(&cuptiRangeProfilerSetConfig) range_set_config = nullptr;
  decltype(&cuptiRangeProfilerStart) range_start = nullptr;
  decltype(&cuptiGetStreamIdEx) get_stream_id_ex = nullptr;
  decltype(&cuptiRangeProfilerStop) range_stop = nullptr;
  decltype(&cuptiRangeProfilerPushRange) range_push_range = nullptr;
  decltype(&cuptiRangeProfilerPopRange) range_pop_range = nullptr;
  decltype(&cuptiRangeProfilerDecodeData) range_decode_data = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataInfo) range_get_counter_data_info = nullptr;
  decltype(&cuptiRangeProfilerCounterDataGetRangeInfo) range_counter_data_get_range_info = nullptr;
  decltype(&cuptiActivityEnableContext) activity_enable_context = nullptr;
  decltype(&cuptiActivityDisableContext) activity_disable_context = nullptr;
  std::string library;
  std::string counter_missing;
  decltype(&cuptiGetGraphNodeId) get_graph_node_id = nullptr;  // optional (issue 24)
  decltype(&cuptiGetGraphExecId) get_graph_exec_id = nullptr;
};

class LoadedCuptiApi final : public CuptiApi {
 public:
  explicit LoadedCuptiApi(const CuptiTable& table) : t_(table) {}

  CUptiResult GetResultString(CUptiResult result, const char** str) override {
    return t_.get_result_string(result, str);
  }
  CUptiResult GetVersion(std::uint32_t* version) override { return t_.get_version(version); }
  CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                        CUpti_SubscriberParams* params) override {
    return t_.subscribe(subscriber, callback, userdata, params);
  }
  CUptiResult Unsubscribe(CUpti_SubscriberHandle subscriber) override { return t_.unsubscribe(subscriber); }
  CUptiResult EnableCallback(std::uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) override {
    return t_.enable_callback(enable, subscriber, domain, cbid);
  }
  CUptiResult EnableDomain(std::uint32_t enable, CUpti_SubscriberHandle subscriber,
                           CUpti_CallbackDomain domain) override {
    return t_.enable_domain(enable, subscriber, domain);
  }
  CUptiResult GetCallbackName(CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) override {
    return t_.get_callback_name(domain, cbid, name);
  }
  CUptiResult SetThreadIdType(CUpti_ActivityThreadIdType type) override {
    return t_.set_thread_id_type(type);
  }
  CUptiResult GetTimestamp(std::uint64_t* timestamp) override { return t_.get_timestamp(timestamp); }
  CUptiResult ActivityEnable(CUpti_ActivityKind kind) override { return t_.activity_enable(kind); }
  CUptiResult ActivityDisable(CUpti_ActivityKind kind) override { return t_.activity_disable(kind); }
  CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed) override {
    return t_.activity_register_callbacks(requested, completed);
  }
  CUptiResult ActivityGetNextRecord(std::uint8_t* buffer, std::size_t valid_size,
                                    CUpti_Activity** record) override {
    return t_.activity_get_next_record(buffer, valid_size, record);
  }
  CUptiResult ActivityGetNumDroppedRecords(CUcontext context, std::uint32_t stream_id,
                                           std::size_t* dropped) override {
    return t_.activity_get_num_dropped_records(context, stream_id, dropped);
  }
  CUptiResult ActivityFlushAll(std::uint32_t flag) override { return t_.activity_flush_all(flag); }
  CUptiResult GetGraphNodeId(CUgraphNode node, std::uint64_t* id) override {
    return t_.get_graph_node_id != nullptr ? t_.get_graph_node_id(node, id) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult GetGraphExecId(CUgraphExec exec, std::uint32_t* id) override {
    return t_.get_graph_exec_id != nullptr ? t_.get_graph_exec_id(exec, id) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityFlushPeriod(std::uint32_t period_ms) override {
    return t_.activity_flush_period(period_ms);
  }
  CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                std::uint64_t id) override {
    return t_.push_external_correlation_id(kind, id);
  }
  CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                               std::uint64_t* last_id) override {
    return t_.pop_external_correlation_id(kind, last_id);
  }

  Status CounterApiStatus() override {
    if (t_.counter_missing.empty()) return OkStatus();
    return UnavailableError("hardware counters unavailable: " + t_.library + " lacks " + t_.counter_missing +
                            " (CUPTI's Profiler Host and Range Profiler APIs, CUDA 13)");
  }
  // Each counter entry is null only when CounterApiStatus() is not OK; callers check it first,
  // and a null entry still answers NOT_SUPPORTED rather than crashing.
  template <typename Fn, typename Params>
  static CUptiResult Call(Fn fn, Params* params) {
    return fn != nullptr ? fn(params) : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ProfilerInitialize(CUpti_Profiler_Initialize_Params* p) override {
    return Call(t_.profiler_initialize, p);
  }
  CUptiResult DeviceGetChipName(CUpti_Device_GetChipName_Params* p) override {
    return Call(t_.device_get_chip_name, p);
  }
  CUptiResult HostInitialize(CUpti_Profiler_Host_Initialize_Params* p) override {
    return Call(t_.host_initialize, p);
  }
  CUptiResult HostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) override {
    return Call(t_.host_deinitialize, p);
  }
  CUptiResult HostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params* p) override {
    return Call(t_.host_get_base_metrics, p);
  }
  CUptiResult HostGetSubMetrics(CUpti_Profiler_Host_GetSubMetrics_Params* p) override {
    return Call(t_.host_get_sub_metrics, p);
  }
  CUptiResult HostGetMetricProperties(CUpti_Profiler_Host_GetMetricProperties_Params* p) override {
    return Call(t_.host_get_metric_properties, p);
  }
  CUptiResult HostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) override {
    return Call(t_.host_config_add_metrics, p);
  }
  CUptiResult HostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) override {
    return Call(t_.host_get_config_image_size, p);
  }
  CUptiResult HostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) override {
    return Call(t_.host_get_config_image, p);
  }
  CUptiResult HostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) override {
    return Call(t_.host_get_num_of_passes, p);
  }
  CUptiResult HostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) override {
    return Call(t_.host_evaluate_to_gpu_values, p);
  }
  CUptiResult RangeProfilerEnable(CUpti_RangeProfiler_Enable_Params* p) override {
    return Call(t_.range_enable, p);
  }
  CUptiResult RangeProfilerDisable(CUpti_RangeProfiler_Disable_Params* p) override {
    return Call(t_.range_disable, p);
  }
  CUptiResult RangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) override {
    return Call(t_.range_get_counter_data_size, p);
  }
  CUptiResult RangeProfilerCounterDataImageInitialize(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params* p) override {
    return Call(t_.range_counter_data_image_initialize, p);
  }
  CUptiResult RangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) override {
    return Call(t_.range_set_config, p);
  }
  CUptiResult RangeProfilerStart(CUpti_RangeProfiler_Start_Params* p) override {
    return Call(t_.range_start, p);
  }
  CUptiResult GetStreamIdEx(CUcontext context, CUstream stream, std::uint8_t per_thread_stream,
                            std::uint32_t* stream_id) override {
    return t_.get_stream_id_ex != nullptr ? t_.get_stream_id_ex(context, stream, per_thread_stream, stream_id)
                                          : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult RangeProfilerStop(CUpti_RangeProfiler_Stop_Params* p) override {
    return Call(t_.range_stop, p);
  }
  CUptiResult RangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params* p) override {
    return Call(t_.range_push_range, p);
  }
  CUptiResult RangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params* p) override {
    return Call(t_.range_pop_range, p);
  }
  CUptiResult RangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) override {
    return Call(t_.range_decode_data, p);
  }
  CUptiResult RangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) override {
    return Call(t_.range_get_counter_data_info, p);
  }
  CUptiResult RangeProfilerCounterDataGetRangeInfo(
      CUpti_RangeProfiler_CounterData_GetRangeInfo_Params* p) override {
    return Call(t_.range_counter_data_get_range_info, p);
  }
  CUptiResult ActivityEnableContext(CUcontext context, CUpti_ActivityKind kind) override {
    return t_.activity_enable_context != nullptr ? t_.activity_enable_context(context, kind)
                                                 : CUPTI_ERROR_NOT_SUPPORTED;
  }
  CUptiResult ActivityDisableContext(CUcontext context, CUpti_ActivityKind kind) override {
    return t_.activity_disable_context != nullptr ? t_.activity_disable_context(context, kind)
                                                  : CUPTI_ERROR_NOT_SUPPORTED;
  }

 private:
  const CuptiTable t_;
};

// DriverApi over a table from device/cuda's loader (the one place that dlopens libcuda).
class LoadedDriverApi final : public DriverApi {
 public:
  explicit LoadedDriverApi(device::cuda::CudaDriver driver) : d_(std::move(driver)) {}

  CUresult DriverGetVersion(int* version) override { return d_.DriverGetVersion(version); }
  CUresult GetErrorString(CUresult error, const char** str) override { return d_.GetErrorString(error, str); }
  CUresult DeviceGetCount(int* count) override { return d_.DeviceGetCount(count); }
  CUresult DeviceGet(CUdevice* device, int ordinal) override { return d_.DeviceGet(device, ordinal); }
  CUresult DeviceGetName(char* name, int length, CUdevice device) override {
    return d_.DeviceGetName(name, length, device);
  }

 private:
  const device::cuda::CudaDriver d_;
};

void AppendIfSet(std::vector<std::string>& out, const char* env, std::string_view suffix) {
  const char* value = std::getenv(env);
  if (value == nullptr || *value == '\0') return;
  out.push_back(std::string(value) + std::string(suffix));
}

bool IsUnavailableCode(CUptiResult result) {
  switch (result) {
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_INVALID_DEVICE:
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED: return true;
    default: return false;
  }
}

}  // namespace

std::vector<std::string> DefaultCuptiCandidates() {
  std::vector<std::string> out;
  AppendIfSet(out, "GPUPROF_CUPTI_LIBRARY", "");
  out.emplace_back("libcupti.so.13");
  out.emplace_back("libcupti.so");
  AppendIfSet(out, "CUDA_HOME", "/lib64/libcupti.so.13");
  AppendIfSet(out, "CUDA_HOME", "/extras/CUPTI/lib64/libcupti.so.13");
  out.emplace_back("/usr/local/cuda/lib64/libcupti.so.13");
  out.emplace_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  return out;
}

std::vector<std::string> DefaultDriverCandidates() { return {device::cuda::kCudaDriverLibrary}; }

StatusOr<std::unique_ptr<CuptiApi>> LoadCuptiApi(const std::vector<std::string>& candidates) {
  GPUPROF_ASSIGN_OR_RETURN(OpenedLibrary lib, OpenFirst("CUPTI", candidates));
  CuptiTable t;
  std::string missing;
  Resolve(lib.handle, "cuptiGetResultString", t.get_result_string, missing);
  Resolve(lib.handle, "cuptiGetVersion", t.get_version, missing);
  Resolve(lib.handle, "cuptiSubscribe_v2", t.subscribe, missing);
  Resolve(lib.handle, "cuptiUnsubscribe", t.unsubscribe, missing);
  Resolve(lib.handle, "cuptiEnableCallback", t.enable_callback, missing);
  Resolve(lib.handle, "cuptiEnableDomain", t.enable_domain, missing);
  Resolve(lib.handle, "cuptiGetCallbackName", t.get_callback_name, missing);
  Resolve(lib.handle, "cuptiSetThreadIdType", t.set_thread_id_type, missing);
  Resolve(lib.handle, "cuptiGetTimestamp", t.get_timestamp, missing);
  Resolve(lib.handle, "cuptiActivityEnable", t.activity_enable, missing);
  Resolve(lib.handle, "cuptiActivityDisable", t.activity_disable, missing);
  Resolve(lib.handle, "cuptiActivityRegisterCallbacks", t.activity_register_callbacks, missing);
  Resolve(lib.handle, "cuptiActivityGetNextRecord", t.activity_get_next_record, missing);
  Resolve(lib.handle, "cuptiActivityGetNumDroppedRecords", t.activity_get_num_dropped_records, missing);
  Resolve(lib.handle, "cuptiActivityFlushAll", t.activity_flush_all, missing);
  Resolve(lib.handle, "cuptiActivityFlushPeriod", t.activity_flush_period, missing);
  Resolve(lib.handle, "cuptiActivityPushExternalCorrelationId", t.push_external_correlation_id, missing);
  Resolve(lib.handle, "cuptiActivityPopExternalCorrelationId", t.pop_external_correlation_id, missing);
  std::string graph_missing;  // graph ids are optional: without them graphs get gpuprof's own ids
  Resolve(lib.handle, "cuptiGetGraphNodeId", t.get_graph_node_id, graph_missing);
  Resolve(lib.handle, "cuptiGetGraphExecId", t.get_graph_exec_id, graph_missing);
  // Counters are optional: a CUPTI without them still traces (CounterApiStatus names the gap).
  t.library = lib.name;
  Resolve(lib.handle, "cuptiProfilerInitialize", t.profiler_initialize, t.counter_missing);
  Resolve(lib.handle, "cuptiDeviceGetChipName", t.device_get_chip_name, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostInitialize", t.host_initialize, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostDeinitialize", t.host_deinitialize, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostGetBaseMetrics", t.host_get_base_metrics, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostGetSubMetrics", t.host_get_sub_metrics, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostGetMetricProperties", t.host_get_metric_properties,
          t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostConfigAddMetrics", t.host_config_add_metrics, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostGetConfigImageSize", t.host_get_config_image_size, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostGetConfigImage", t.host_get_config_image, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostGetNumOfPasses", t.host_get_num_of_passes, t.counter_missing);
  Resolve(lib.handle, "cuptiProfilerHostEvaluateToGpuValues", t.host_evaluate_to_gpu_values,
          t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerEnable", t.range_enable, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerDisable", t.range_disable, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerGetCounterDataSize", t.range_get_counter_data_size,
          t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerCounterDataImageInitialize", t.range_counter_data_image_initialize,
          t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerSetConfig", t.range_set_config, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerStart", t.range_start, t.counter_missing);
  std::string optional_missing;  // without it re-issued passes keep the backend's own timing
  Resolve(lib.handle, "cuptiGetStreamIdEx", t.get_stream_id_ex, optional_missing);
  Resolve(lib.handle, "cuptiRangeProfilerStop", t.range_stop, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerPushRange", t.range_push_range, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerPopRange", t.range_pop_range, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerDecodeData", t.range_decode_data, t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerGetCounterDataInfo", t.range_get_counter_data_info,
          t.counter_missing);
  Resolve(lib.handle, "cuptiRangeProfilerCounterDataGetRangeInfo", t.range_counter_data_get_range_info,
          t.counter_missing);
  Resolve(lib.handle, "cuptiActivityEnableContext", t.activity_enable_context, t.counter_missing);
  Resolve(lib.handle, "cuptiActivityDisableContext", t.activity_disable_context, t.counter_missing);
  if (!missing.empty()) {
    // The handle stays open (see the header): another part of the process may share it.
    return UnavailableError("CUPTI unavailable: " + lib.name + " lacks " + missing +
                            " (CUDA 13 CUPTI required)");
  }
  std::uint32_t version = 0;
  if (t.get_version(&version) != CUPTI_SUCCESS) {
    return UnavailableError("CUPTI unavailable: cuptiGetVersion failed in " + lib.name);
  }
  // From CUDA 13 the version is xxyyzz; older CUPTIs report small integers (v28 = 12.9).
  const std::uint32_t major = version >= 10000 ? version / 10000 : 12;
  if (major != kCuptiMajorVersion) {
    std::ostringstream message;
    message << "CUPTI unavailable: " << lib.name << " has API version " << version << ", gpuprof reads CUDA "
            << kCuptiMajorVersion << " activity records (built against CUPTI " << CUPTI_API_VERSION
            << "); point GPUPROF_CUPTI_LIBRARY at a CUDA " << kCuptiMajorVersion << " libcupti.so";
    return UnavailableError(message.str());
  }
  return std::unique_ptr<CuptiApi>(std::make_unique<LoadedCuptiApi>(t));
}

StatusOr<std::unique_ptr<DriverApi>> LoadDriverApi(const std::vector<std::string>& candidates) {
  GPUPROF_ASSIGN_OR_RETURN(device::cuda::CudaDriver driver, device::cuda::CudaDriver::Load(candidates));
  // Only the entries DriverApi calls are required: a driver without a replay-only one still
  // names its devices.
  std::string missing;
  const std::pair<bool, const char*> needed[] = {
      {driver.DriverGetVersion != nullptr, "cuDriverGetVersion"},
      {driver.GetErrorString != nullptr, "cuGetErrorString"},
      {driver.DeviceGetCount != nullptr, "cuDeviceGetCount"},
      {driver.DeviceGet != nullptr, "cuDeviceGet"},
      {driver.DeviceGetName != nullptr, "cuDeviceGetName"},
  };
  for (const auto& [present, symbol] : needed) {
    if (present) continue;
    if (!missing.empty()) missing += ", ";
    missing += symbol;
  }
  if (!missing.empty()) {
    return UnavailableError("CUDA driver unavailable: " + driver.library + " lacks " + missing);
  }
  return std::unique_ptr<DriverApi>(std::make_unique<LoadedDriverApi>(std::move(driver)));
}

std::string CuptiErrorString(CuptiApi& api, CUptiResult result) {
  const char* text = nullptr;
  if (api.GetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

std::string DriverErrorString(DriverApi& api, CUresult result) {
  const char* text = nullptr;
  if (api.GetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) {
    return "CUDA error " + std::to_string(static_cast<int>(result));
  }
  return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
}

Status CuptiStatus(CuptiApi& api, CUptiResult result, std::string_view call, std::string_view context) {
  if (result == CUPTI_SUCCESS) return OkStatus();
  std::string message = std::string(call) + " failed: " + CuptiErrorString(api, result);
  if (!context.empty()) message += " (" + std::string(context) + ")";
  return IsUnavailableCode(result) ? UnavailableError(std::move(message)) : InternalError(std::move(message));
}

StatusOr<std::vector<std::pair<std::int32_t, std::string>>> ListDevices(DriverApi& api) {
  int count = 0;
  CUresult result = api.DeviceGetCount(&count);
  if (result != CUDA_SUCCESS) {
    return UnavailableError("cuDeviceGetCount failed: " + DriverErrorString(api, result));
  }
  std::vector<std::pair<std::int32_t, std::string>> devices;
  devices.reserve(static_cast<std::size_t>(count > 0 ? count : 0));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    result = api.DeviceGet(&device, ordinal);
    if (result != CUDA_SUCCESS) {
      return UnavailableError("cuDeviceGet(" + std::to_string(ordinal) +
                              ") failed: " + DriverErrorString(api, result));
    }
    char name[256] = {};
    result = api.DeviceGetName(name, static_cast<int>(sizeof(name) - 1), device);
    if (result != CUDA_SUCCESS) {
      return UnavailableError("cuDeviceGetName(" + std::to_string(ordinal) +
                              ") failed: " + DriverErrorString(api, result));
    }
    devices.emplace_back(ordinal, std::string(name, strnlen(name, sizeof(name))));
  }
  return devices;
}

}  // namespace gpuprof::cupti
