// The CUPTI and CUDA driver entry points gpuprof calls, resolved at run time.
//
// No gpuprof binary links libcupti or libcuda: a process without a GPU driver (CI, the CLI, a
// CPU-only PyTorch run) must load libgpuprof.so and its tests. LoadCuptiApi() dlopens
// libcupti.so.13 (then libcupti.so, then the toolkit's copy); LoadDriverApi() takes libcuda.so.1
// from device/cuda's loader (CudaDriver::Load, the one place that dlopens the driver). Every
// symbol is resolved up front; a missing library or symbol is one Unavailable status that names
// the library and dlerror(), and the caller carries on without GPU data.
//
// CuptiApi and DriverApi are the seams: the subscriber and translator call only these virtual
// methods, so tests substitute fakes that feed synthetic records. The toolkit headers are used for
// types only; the methods mirror the C functions one to one (same arguments, same CUptiResult).
//
// Lifetime: a loaded library is never dlclosed. CUPTI keeps worker threads and callbacks pointing
// into itself after unsubscribing, and the driver is shared with the application, so the handle
// lives for the process; destroying the returned object only drops gpuprof's table.
// Thread-safety: the loaded implementations hold an immutable table after loading and are
// callable from any thread (the C functions' own rules apply, e.g. cuptiEnableCallback calls of
// one subscriber must be serialized).
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::cupti {

// The CUPTI major version whose record layouts this build reads (CUpti_ActivityKernel10, ...).
inline constexpr std::uint32_t kCuptiMajorVersion = CUPTI_API_VERSION / 10000;

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;

  virtual CUptiResult GetResultString(CUptiResult result, const char** str) = 0;
  virtual CUptiResult GetVersion(std::uint32_t* version) = 0;
  virtual CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                void* userdata, CUpti_SubscriberParams* params) = 0;  // _v2
  virtual CUptiResult Unsubscribe(CUpti_SubscriberHandle subscriber) = 0;
  virtual CUptiResult EnableCallback(std::uint32_t enable, CUpti_SubscriberHandle subscriber,
                                     CUpti_CallbackDomain domain, CUpti_CallbackId cbid) = 0;
  virtual CUptiResult EnableDomain(std::uint32_t enable, CUpti_SubscriberHandle subscriber,
                                   CUpti_CallbackDomain domain) = 0;
  virtual CUptiResult GetCallbackName(CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) = 0;
  virtual CUptiResult SetThreadIdType(CUpti_ActivityThreadIdType type) = 0;
  virtual CUptiResult GetTimestamp(std::uint64_t* timestamp) = 0;
  virtual CUptiResult ActivityEnable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult ActivityDisable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult ActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                CUpti_BuffersCallbackCompleteFunc completed) = 0;
  virtual CUptiResult ActivityGetNextRecord(std::uint8_t* buffer, std::size_t valid_size,
                                            CUpti_Activity** record) = 0;
  virtual CUptiResult ActivityGetNumDroppedRecords(CUcontext context, std::uint32_t stream_id,
                                                   std::size_t* dropped) = 0;
  virtual CUptiResult ActivityFlushAll(std::uint32_t flag) = 0;
  virtual CUptiResult ActivityFlushPeriod(std::uint32_t period_ms) = 0;
  // For the torch layer (one external id per framework op, CuptiSubscriber::PushExternalCorrelation).
  virtual CUptiResult ActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                        std::uint64_t id) = 0;
  virtual CUptiResult ActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                       std::uint64_t* last_id) = 0;

  // --- Graph ids (issue 24), as CUPTI's kernel records carry them. Optional: the defaults (and a
  // CUPTI without them) answer CUPTI_ERROR_NOT_SUPPORTED.
  virtual CUptiResult GetGraphNodeId(CUgraphNode, std::uint64_t*) { return CUPTI_ERROR_NOT_SUPPORTED; }
  virtual CUptiResult GetGraphExecId(CUgraphExec, std::uint32_t*) { return CUPTI_ERROR_NOT_SUPPORTED; }

  // --- Hardware counters (issue 19): the Profiler Host API (cupti_profiler_host.h), the Range
  // Profiler (cupti_range_profiler.h) and the two target calls they need. An optional group: a
  // CUPTI that lacks any of them still traces, and CounterApiStatus() says why counters are off.
  // The defaults (for fakes that do not profile) answer CUPTI_ERROR_NOT_SUPPORTED.
  virtual Status CounterApiStatus() { return UnavailableError("hardware counters: not in this CUPTI table"); }
  virtual CUptiResult ProfilerInitialize(CUpti_Profiler_Initialize_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult DeviceGetChipName(CUpti_Device_GetChipName_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostInitialize(CUpti_Profiler_Host_Initialize_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostGetSubMetrics(CUpti_Profiler_Host_GetSubMetrics_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostGetMetricProperties(CUpti_Profiler_Host_GetMetricProperties_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult HostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerEnable(CUpti_RangeProfiler_Enable_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerDisable(CUpti_RangeProfiler_Disable_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerCounterDataImageInitialize(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerStart(CUpti_RangeProfiler_Start_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  // CUPTI's id of `stream` (the streamId of its kernel records), for range replay's re-issued
  // launches (RangePassTags); optional.
  virtual CUptiResult GetStreamIdEx(CUcontext, CUstream, std::uint8_t /*per_thread_stream*/,
                                    std::uint32_t* /*stream_id*/) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerStop(CUpti_RangeProfiler_Stop_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerPushRange(CUpti_RangeProfiler_PushRange_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerPopRange(CUpti_RangeProfiler_PopRange_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult RangeProfilerCounterDataGetRangeInfo(
      CUpti_RangeProfiler_CounterData_GetRangeInfo_Params*) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  // Per-context activity switches, over the global ones (cuptiActivityEnableContext/DisableContext):
  // the counter passes hold kernel activity off on the replayed launch's context (issue 19, 5).
  virtual CUptiResult ActivityEnableContext(CUcontext, CUpti_ActivityKind) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  virtual CUptiResult ActivityDisableContext(CUcontext, CUpti_ActivityKind) {
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
};

class DriverApi {
 public:
  virtual ~DriverApi() = default;

  virtual CUresult DriverGetVersion(int* version) = 0;
  virtual CUresult GetErrorString(CUresult error, const char** str) = 0;
  virtual CUresult DeviceGetCount(int* count) = 0;
  virtual CUresult DeviceGet(CUdevice* device, int ordinal) = 0;
  virtual CUresult DeviceGetName(char* name, int length, CUdevice device) = 0;
};

// Libraries tried in order; the first that dlopens is used (and must export every symbol). A bare
// soname comes first so a copy the process already loaded (e.g. PyTorch's libcupti) is reused:
// one CUPTI per process. Default: $GPUPROF_CUPTI_LIBRARY when set, libcupti.so.13, libcupti.so,
// then lib64/ and extras/CUPTI/lib64/ under $CUDA_HOME and /usr/local/cuda.
std::vector<std::string> DefaultCuptiCandidates();
std::vector<std::string> DefaultDriverCandidates();  // {"libcuda.so.1"}

// Unavailable when no candidate loads ("CUPTI unavailable: libcupti.so.13: <dlerror>; ..."), when
// the loaded library lacks a symbol (naming library and symbol), or when its CUPTI major version
// differs from kCuptiMajorVersion (record layouts change between majors).
StatusOr<std::unique_ptr<CuptiApi>> LoadCuptiApi(
    const std::vector<std::string>& candidates = DefaultCuptiCandidates());
// Unavailable when libcuda.so.1 does not load or lacks a symbol.
StatusOr<std::unique_ptr<DriverApi>> LoadDriverApi(
    const std::vector<std::string>& candidates = DefaultDriverCandidates());

// "CUPTI_ERROR_...: <description>" for messages; never null, tolerates unknown codes.
std::string CuptiErrorString(CuptiApi& api, CUptiResult result);
std::string DriverErrorString(DriverApi& api, CUresult result);

// OK for CUPTI_SUCCESS; otherwise Unavailable for CUPTI_ERROR_NOT_INITIALIZED and friends (no
// driver, no device, CUPTI not supported here) and Internal for the rest, with the message
// "<call> failed: <error string>[ (<context>)]".
Status CuptiStatus(CuptiApi& api, CUptiResult result, std::string_view call, std::string_view context = {});

// The devices the driver reports, as (ordinal, name) for the DB's NPU_INFO. The driver must be
// initialized (cuInit ran); Unavailable otherwise or when it is the toolkit's stub library. Its
// driver calls are gpuprof's own work: run it under a ScopedInternalWork so they stay out of the
// profile.
StatusOr<std::vector<std::pair<std::int32_t, std::string>>> ListDevices(DriverApi& api);

}  // namespace gpuprof::cupti
