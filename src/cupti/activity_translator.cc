#include "cupti/activity_translator.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

#include "base/logging.h"

namespace gpuprof::cupti {
namespace {

constexpr std::size_t kMaxCachedKernelNames = std::size_t{1} << 16;

std::uint32_t ClampDim(std::int32_t value) { return value > 0 ? static_cast<std::uint32_t>(value) : 0; }

bool IsOpen(char c) { return c == '(' || c == '<' || c == '[' || c == '{'; }
bool IsClose(char c) { return c == ')' || c == '>' || c == ']' || c == '}'; }

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// With `s` ending in a closing bracket, the index of the bracket that opens it (any bracket kind
// counts toward the depth, so "<F(int)>" nests correctly); npos when unbalanced.
std::size_t MatchingOpen(std::string_view s) {
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (IsClose(s[i])) ++depth;
    if (IsOpen(s[i]) && --depth == 0) return i;
  }
  return std::string_view::npos;
}

// Removes one trailing bracketed group opened by `open` (and the spaces before it).
std::string_view StripTrailingGroup(std::string_view s, char close) {
  if (s.empty() || s.back() != close) return s;
  const std::size_t open = MatchingOpen(s);
  if (open == std::string_view::npos || open == 0) return s;
  return TrimSpaces(s.substr(0, open));
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool IsLaunchCbid(CUpti_ActivityKind kind, CUpti_CallbackId cbid) {
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: return true;
      default: return false;
    }
  }
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: return true;
      default: return false;
    }
  }
  return false;
}

// Fills the kernel fields that do not depend on the name.
trace::DeviceTask KernelTask(const CUpti_ActivityKernel10& kernel, const TimeConverter& time,
                             std::uint32_t pid) {
  trace::DeviceTask task;
  task.kind = trace::TaskKind::kKernel;
  task.start_ns = time.ToEpochNs(kernel.start);
  task.end_ns = time.ToEpochNs(kernel.end);
  task.device = static_cast<std::int32_t>(kernel.deviceId);
  task.stream = kernel.streamId;
  task.context = kernel.contextId;
  task.correlation_id = kernel.correlationId;
  task.pid = pid;
  task.grid[0] = ClampDim(kernel.gridX);
  task.grid[1] = ClampDim(kernel.gridY);
  task.grid[2] = ClampDim(kernel.gridZ);
  task.block[0] = ClampDim(kernel.blockX);
  task.block[1] = ClampDim(kernel.blockY);
  task.block[2] = ClampDim(kernel.blockZ);
  task.graph_node_id = kernel.graphNodeId;
  return task;
}

}  // namespace

std::string DemangleKernelName(std::string_view name) {
  if (!StartsWith(name, "_Z")) return std::string(name);
  std::string mangled(name);  // __cxa_demangle needs a terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || demangled == nullptr) return mangled;
  return {demangled.get()};
}

std::string ShortKernelName(std::string_view demangled) {
  std::string_view s = TrimSpaces(demangled);
  if (s.empty()) return std::string(demangled);
  s = StripTrailingGroup(s, ')');  // parameters
  s = StripTrailingGroup(s, '>');  // template arguments of the function
  // The return type ("void ") ends at the last space outside any brackets.
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (IsOpen(s[i])) ++depth;
    if (IsClose(s[i]) && depth > 0) --depth;
    if (depth == 0 && s[i] == ' ') begin = i + 1;
    if (depth == 0 && s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':') begin = i + 2;
  }
  const std::string_view short_name = TrimSpaces(s.substr(begin));
  return short_name.empty() ? std::string(demangled) : std::string(short_name);
}

std::uint32_t MemcpyOperationId(std::uint8_t copy_kind, std::uint8_t src_kind, std::uint8_t dst_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return kMemcpyHostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return kMemcpyDeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return kMemcpyDeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return kMemcpyHostToHost;
    default: break;
  }
  const auto managed = [](std::uint8_t kind) {
    return kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED || kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC;
  };
  return managed(src_kind) || managed(dst_kind) ? kMemcpyManaged : kMemcpyOther;
}

std::string NormalizeApiName(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::string_view raw) {
  if (raw.empty()) {
    return std::string(kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime" : "driver") + " cbid " +
           std::to_string(cbid);
  }
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    // "_v<version>" names the CUDA version that introduced the entry point (3020, 7000, 11060, ...);
    // real runtime names end at most in "_v2", which this keeps.
    const std::size_t at = raw.rfind("_v");
    if (at != std::string_view::npos && at > 0) {
      const std::string_view digits = raw.substr(at + 2);
      if (digits.size() >= 4 && IsDigits(digits)) raw = raw.substr(0, at);
    }
  }
  return std::string(raw);
}

bool LaunchesDeviceWork(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::string_view name) {
  if (IsLaunchCbid(kind, cbid)) return true;
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME)
    return StartsWith(name, "cudaMemcpy") || StartsWith(name, "cudaMemset");
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER) return StartsWith(name, "cuMemcpy") || StartsWith(name, "cuMemset");
  return false;
}

trace::DeviceTask TranslateKernel(const CUpti_ActivityKernel10& kernel, const TimeConverter& time,
                                  std::uint32_t pid) {
  trace::DeviceTask task = KernelTask(kernel, time, pid);
  if (kernel.name != nullptr) {
    task.name = DemangleKernelName(kernel.name);
    task.short_name = ShortKernelName(task.name);
  }
  return task;
}

namespace {

// The fields every copy and memset activity record shares (CUPTI repeats them per struct version).
template <typename Activity>
trace::DeviceTask TransferTask(const Activity& activity, trace::TaskKind kind, const TimeConverter& time,
                               std::uint32_t pid) {
  trace::DeviceTask task;
  task.kind = kind;
  task.start_ns = time.ToEpochNs(activity.start);
  task.end_ns = time.ToEpochNs(activity.end);
  task.device = static_cast<std::int32_t>(activity.deviceId);
  task.stream = activity.streamId;
  task.context = activity.contextId;
  task.correlation_id = activity.correlationId;
  task.pid = pid;
  task.bytes = activity.bytes;
  return task;
}

}  // namespace

trace::DeviceTask TranslateMemcpy(const CUpti_ActivityMemcpy6& copy, const TimeConverter& time,
                                  std::uint32_t pid) {
  trace::DeviceTask task = TransferTask(copy, trace::TaskKind::kMemcpy, time, pid);
  task.memcpy_operation = MemcpyOperationId(copy.copyKind, copy.srcKind, copy.dstKind);
  task.src_memory_kind = copy.srcKind;
  task.dst_memory_kind = copy.dstKind;
  return task;
}

trace::DeviceTask TranslatePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& copy, const TimeConverter& time,
                                      std::uint32_t pid) {
  trace::DeviceTask task = TransferTask(copy, trace::TaskKind::kMemcpy, time, pid);
  task.memcpy_operation = MemcpyOperationId(copy.copyKind, copy.srcKind, copy.dstKind);
  task.src_memory_kind = copy.srcKind;
  task.dst_memory_kind = copy.dstKind;
  return task;
}

trace::DeviceTask TranslateMemset(const CUpti_ActivityMemset4& set, const TimeConverter& time,
                                  std::uint32_t pid) {
  return TransferTask(set, trace::TaskKind::kMemset, time, pid);
}

trace::ApiCall TranslateApi(const CUpti_ActivityAPI& api, std::string name, const TimeConverter& time,
                            std::uint32_t pid) {
  trace::ApiCall call;
  call.start_ns = time.ToEpochNs(api.start);
  call.end_ns = time.ToEpochNs(api.end);
  call.pid = api.processId != 0 ? api.processId : pid;
  call.tid = api.threadId;
  call.correlation_id = api.correlationId;
  call.launches_device_work = LaunchesDeviceWork(api.kind, api.cbid, name);
  call.name = std::move(name);
  return call;
}

std::optional<trace::Mark> MarkerPairer::Add(const CUpti_ActivityMarker2& marker, const TimeConverter& time,
                                             std::uint32_t pid) {
  const auto flags = static_cast<std::uint32_t>(marker.flags);
  std::uint32_t marker_pid = pid;
  std::uint32_t marker_tid = 0;
  if (marker.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
      marker.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    if (marker.objectId.pt.processId != 0) marker_pid = marker.objectId.pt.processId;
    marker_tid = marker.objectId.pt.threadId;
  }
  const std::int64_t at = time.ToEpochNs(marker.timestamp);

  if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) != 0) {
    trace::Mark mark;
    mark.type = trace::Mark::Type::kMarkerEx;  // msprof's eventType 3, what mstx_sum reads
    mark.start_ns = at;
    mark.end_ns = at;
    mark.pid = marker_pid;
    mark.tid = marker_tid;
    mark.end_tid = marker_tid;
    mark.range_id = marker.id;
    mark.message = marker.name != nullptr ? marker.name : "";
    mark.domain = marker.domain != nullptr ? marker.domain : "default";
    return mark;
  }
  if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
    trace::Mark mark;
    mark.type = trace::Mark::Type::kStartEnd;
    mark.start_ns = at;
    mark.end_ns = at;
    mark.pid = marker_pid;
    mark.tid = marker_tid;
    mark.end_tid = marker_tid;
    mark.range_id = marker.id;
    mark.message = marker.name != nullptr ? marker.name : "";
    mark.domain = marker.domain != nullptr ? marker.domain : "default";
    open_.insert_or_assign(marker.id, std::move(mark));
    return std::nullopt;
  }
  if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0) {
    auto it = open_.find(marker.id);
    if (it == open_.end()) {
      ++unmatched_ends_;
      return std::nullopt;
    }
    trace::Mark mark = std::move(it->second);
    open_.erase(it);
    mark.end_ns = at;
    mark.end_tid = marker_tid;
    return mark;
  }
  return std::nullopt;  // sync-object markers
}

std::vector<trace::Mark> MarkerPairer::TakeOpenRanges() {
  std::vector<trace::Mark> out;
  out.reserve(open_.size());
  for (auto& [id, mark] : open_) out.push_back(std::move(mark));
  open_.clear();
  std::sort(out.begin(), out.end(), [](const trace::Mark& a, const trace::Mark& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.range_id < b.range_id;
  });
  return out;
}

ActivityTranslator::ActivityTranslator(CuptiApi* api, TimeConverter time, std::uint32_t pid)
    : api_(api), time_(time), pid_(pid) {}

const ActivityTranslator::KernelNames& ActivityTranslator::NamesFor(const char* mangled) {
  const std::string_view key = mangled != nullptr ? std::string_view(mangled) : std::string_view();
  if (auto it = kernel_names_.find(key); it != kernel_names_.end()) return it->second;
  // Bounded: a JIT-heavy program may produce unbounded distinct names; start over rather than grow.
  if (kernel_names_.size() >= kMaxCachedKernelNames) kernel_names_.clear();
  KernelNames names;
  names.name = DemangleKernelName(key);
  names.short_name = ShortKernelName(names.name);
  return kernel_names_.emplace(std::string(key), std::move(names)).first->second;
}

const std::string& ActivityTranslator::ApiName(CUpti_ActivityKind kind, CUpti_CallbackId cbid) {
  const std::uint64_t key = (std::uint64_t{static_cast<std::uint32_t>(kind)} << 32) | cbid;
  if (auto it = api_names_.find(key); it != api_names_.end()) return it->second;
  const char* raw = nullptr;
  if (api_ != nullptr) {
    const CUpti_CallbackDomain domain =
        kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    if (api_->GetCallbackName(domain, cbid, &raw) != CUPTI_SUCCESS) raw = nullptr;
  }
  return api_names_.emplace(key, NormalizeApiName(kind, cbid, raw != nullptr ? raw : "")).first->second;
}

void ActivityTranslator::CheckCorrelation(std::uint64_t correlation_id) {
  if (correlation_id < kCorrelationIdLimit) return;
  if (stats_.correlation_ids_over_limit++ == 0) {
    GPUPROF_LOG(kWarning) << "CUPTI correlation id " << correlation_id << " reached " << kCorrelationIdLimit
                          << " (5<<28), where the DB's framework connection ids start; links between "
                             "torch ops and device tasks may be ambiguous from here on";
  }
}

bool ActivityTranslator::Translate(const CUpti_Activity& record, std::vector<trace::Record>& out) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& kernel = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      trace::DeviceTask task = KernelTask(kernel, time_, pid_);
      const KernelNames& names = NamesFor(kernel.name);
      task.name = names.name;
      task.short_name = names.short_name;
      CheckCorrelation(task.correlation_id);
      out.emplace_back(std::move(task));
      ++stats_.kernels;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      out.emplace_back(TranslateMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record), time_, pid_));
      CheckCorrelation(std::get<trace::DeviceTask>(out.back()).correlation_id);
      ++stats_.memcpys;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      out.emplace_back(
          TranslatePeerMemcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record), time_, pid_));
      CheckCorrelation(std::get<trace::DeviceTask>(out.back()).correlation_id);
      ++stats_.memcpys;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      out.emplace_back(TranslateMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(record), time_, pid_));
      CheckCorrelation(std::get<trace::DeviceTask>(out.back()).correlation_id);
      ++stats_.memsets;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& api = reinterpret_cast<const CUpti_ActivityAPI&>(record);
      out.emplace_back(TranslateApi(api, ApiName(api.kind, api.cbid), time_, pid_));
      CheckCorrelation(api.correlationId);
      ++stats_.api_calls;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto mark = markers_.Add(reinterpret_cast<const CUpti_ActivityMarker2&>(record), time_, pid_);
      if (mark.has_value()) {
        out.emplace_back(std::move(*mark));
        ++stats_.marks;
      }
      return true;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& ext = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record);
      if (ext.externalKind != kGpuprofExternalKind) return true;  // another tool's ids
      CheckCorrelation(ext.correlationId);
      out.emplace_back(trace::ExternalCorrelation{ext.externalId, ext.correlationId});
      ++stats_.external_correlations;
      return true;
    }
    default: ++stats_.unsupported; return false;
  }
}

}  // namespace gpuprof::cupti
