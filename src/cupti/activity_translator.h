// Translation of CUPTI activity records into trace records (DB_SPEC.md §7).
//
//   CONCURRENT_KERNEL (and KERNEL)  CUpti_ActivityKernel10     -> DeviceTask kKernel
//   MEMCPY                          CUpti_ActivityMemcpy6      -> DeviceTask kMemcpy
//   MEMCPY2 (peer to peer)          CUpti_ActivityMemcpyPtoP4  -> DeviceTask kMemcpy (device to device)
//   MEMSET                          CUpti_ActivityMemset4      -> DeviceTask kMemset
//   RUNTIME, DRIVER                 CUpti_ActivityAPI          -> ApiCall
//   MARKER (NVTX)                   CUpti_ActivityMarker2      -> Mark (a range once its end arrives)
//   EXTERNAL_CORRELATION            CUpti_ActivityExternalCorrelation of kind CUSTOM0 (gpuprof's
//                                   torch hooks push their op ids as that kind) -> ExternalCorrelation;
//                                   the DB writer ties the op to the launch. Other kinds: skipped.
//
// These are the record versions CUPTI 13.0 delivers for those kinds (cupti_activity.h names them
// per kind; older versions live in cupti_activity_deprecated.h). LoadCuptiApi refuses a CUPTI of
// another major version, whose layouts may differ.
//
// The free functions are pure: a record, the run's TimeConverter and pid in, a trace value out.
// ActivityTranslator adds the state translation needs across records: a cache of demangled kernel
// names and API names, NVTX start markers waiting for their end, and the external correlations.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupti/cupti_api.h"
#include "cupti/time_converter.h"
#include "trace/records.h"

namespace gpuprof::cupti {

// ENUM_MEMCPY_OPERATION ids (DB_SPEC.md "Exact DDL").
inline constexpr std::uint32_t kMemcpyHostToHost = 0;
inline constexpr std::uint32_t kMemcpyHostToDevice = 1;
inline constexpr std::uint32_t kMemcpyDeviceToHost = 2;
inline constexpr std::uint32_t kMemcpyDeviceToDevice = 3;
inline constexpr std::uint32_t kMemcpyManaged = 4;
inline constexpr std::uint32_t kMemcpyOther = 65535;

// CUPTI correlation ids must stay below the framework connection-id space (DB_SPEC: 5 << 28).
inline constexpr std::uint64_t kCorrelationIdLimit = std::uint64_t{5} << 28;

// The Itanium-ABI demangled form of `name` (abi::__cxa_demangle); `name` itself when it is not a
// mangled C++ name (extern "C" kernels) or does not demangle.
std::string DemangleKernelName(std::string_view name);

// The kernel's function name without namespaces, template arguments, parameters or return type:
// "void at::native::vectorized_elementwise_kernel<4, F>(int, F)" -> "vectorized_elementwise_kernel".
// Used as COMPUTE_TASK_INFO.opType. Returns the input when it has no such structure.
std::string ShortKernelName(std::string_view demangled);

// CUpti_ActivityMemcpyKind -> ENUM_MEMCPY_OPERATION id. HtoD/HtoA 1, DtoH/AtoH 2, DtoD/DtoA/AtoD/
// AtoA/PtoP 3, HtoH 0; an unknown kind is 4 (managed memory) when either side is managed memory,
// else 65535 (other).
std::uint32_t MemcpyOperationId(std::uint8_t copy_kind, std::uint8_t src_kind, std::uint8_t dst_kind);

// CUPTI's callback name with the runtime's version suffix removed: "cudaLaunchKernel_v7000" ->
// "cudaLaunchKernel" (driver names keep theirs: cuMemAlloc_v2 is the real symbol). Empty `raw`
// yields "<runtime|driver> cbid <n>".
std::string NormalizeApiName(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::string_view raw);

// Whether the API call enqueues device work that CUPTI reports as a kernel, memcpy or memset with
// the call's correlation id: kernel and graph launches (by callback id), and every cudaMemcpy* /
// cudaMemset* / cuMemcpy* / cuMemset* call (by name, so cbids added by later CUDA versions count).
bool LaunchesDeviceWork(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::string_view name);

trace::DeviceTask TranslateKernel(const CUpti_ActivityKernel10& kernel, const TimeConverter& time,
                                  std::uint32_t pid);
trace::DeviceTask TranslateMemcpy(const CUpti_ActivityMemcpy6& copy, const TimeConverter& time,
                                  std::uint32_t pid);
trace::DeviceTask TranslatePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& copy, const TimeConverter& time,
                                      std::uint32_t pid);
trace::DeviceTask TranslateMemset(const CUpti_ActivityMemset4& set, const TimeConverter& time,
                                  std::uint32_t pid);
// `name` is the API's name (see NormalizeApiName). pid: the record's processId, or `pid` when 0.
trace::ApiCall TranslateApi(const CUpti_ActivityAPI& api, std::string name, const TimeConverter& time,
                            std::uint32_t pid);

// The external-correlation kind gpuprof's framework hooks push (SessionDeviceCollector) and the
// translator keeps; other tools' kinds are not gpuprof's ops.
inline constexpr CUpti_ExternalCorrelationKind kGpuprofExternalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// Pairs NVTX start and end markers (CUPTI gives both the same id) into one Mark.
//   instantaneous marker          -> Mark kMarkerEx (start == end, msprof eventType 3), emitted at once
//   start marker                  -> held until its end arrives (nothing emitted)
//   end marker with a held start  -> Mark kStartEnd: start's time, name, domain and thread; end's
//                                    time and thread (end_tid; a range may end on another thread)
//   end marker without a start    -> dropped, counted in unmatched_ends()
// CUPTI reports nvtxRangePush/Pop and nvtxRangeStart/End alike (START/END flags with an id), so
// every range is written as start/end (ENUM_MSTX_EVENT_TYPE 2), keeping its id as rangeId. The
// null domain is "default". Sync-object markers (NVTX sync user) are ignored.
class MarkerPairer {
 public:
  std::optional<trace::Mark> Add(const CUpti_ActivityMarker2& marker, const TimeConverter& time,
                                 std::uint32_t pid);
  std::size_t open_ranges() const noexcept { return open_.size(); }
  std::uint64_t unmatched_ends() const noexcept { return unmatched_ends_; }
  // Ranges whose end never arrived (e.g. collection stopped inside them), removed from the
  // pairer, with end_ns == start_ns.
  std::vector<trace::Mark> TakeOpenRanges();

 private:
  std::unordered_map<std::uint32_t, trace::Mark> open_;  // by CUPTI marker id
  std::uint64_t unmatched_ends_ = 0;
};

struct TranslatorStats {
  std::uint64_t kernels = 0;
  std::uint64_t memcpys = 0;
  std::uint64_t memsets = 0;
  std::uint64_t api_calls = 0;
  std::uint64_t marks = 0;
  std::uint64_t external_correlations = 0;       // of gpuprof's kind, emitted
  std::uint64_t unsupported = 0;                 // kinds not translated (skipped)
  std::uint64_t correlation_ids_over_limit = 0;  // >= kCorrelationIdLimit
};

// Not thread-safe: one thread translates at a time (the subscriber serializes buffers).
class ActivityTranslator {
 public:
  // `api` resolves API callback names and must outlive the translator; null gives names of the
  // form "runtime cbid 211" (tests). `pid` fills DeviceTask.pid and records without a process id.
  ActivityTranslator(CuptiApi* api, TimeConverter time, std::uint32_t pid);

  // Appends what `record` translates to (0 or 1 records) to `out`. Returns false when the kind is
  // not one this translator handles (the record is skipped and counted). May throw bad_alloc.
  bool Translate(const CUpti_Activity& record, std::vector<trace::Record>& out);

  // NVTX ranges still waiting for their end (see MarkerPairer::TakeOpenRanges).
  std::vector<trace::Mark> TakeOpenRanges() { return markers_.TakeOpenRanges(); }

  const TranslatorStats& stats() const noexcept { return stats_; }
  std::uint64_t unmatched_range_ends() const noexcept { return markers_.unmatched_ends(); }
  std::size_t open_ranges() const noexcept { return markers_.open_ranges(); }
  const TimeConverter& time() const noexcept { return time_; }

 private:
  struct KernelNames {
    std::string name;
    std::string short_name;
  };
  struct StringHash {
    using is_transparent = void;  // NOLINT(readability-identifier-naming): the standard's name
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };

  const KernelNames& NamesFor(const char* mangled);
  const std::string& ApiName(CUpti_ActivityKind kind, CUpti_CallbackId cbid);
  void CheckCorrelation(std::uint64_t correlation_id);

  CuptiApi* api_;
  TimeConverter time_;
  std::uint32_t pid_;
  std::unordered_map<std::string, KernelNames, StringHash, std::equal_to<>> kernel_names_;
  std::unordered_map<std::uint64_t, std::string> api_names_;  // (kind << 32) | cbid
  MarkerPairer markers_;
  TranslatorStats stats_;
};

}  // namespace gpuprof::cupti
