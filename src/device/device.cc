#include "device/device.h"

#include "device/range.h"

namespace gpuprof::device {

std::string_view MemoryKindName(MemoryKind kind) noexcept {
  switch (kind) {
    case MemoryKind::kDeviceLocal: return "device-local";
    case MemoryKind::kHost: return "host";
    case MemoryKind::kHostMapped: return "host-mapped";
    case MemoryKind::kFineGrained: return "fine-grained";
    case MemoryKind::kManaged: return "managed";
    case MemoryKind::kKernelArgument: return "kernel-argument";
    case MemoryKind::kRuntimeInternal: return "runtime-internal";
    case MemoryKind::kIpcImported: return "ipc-imported";
    case MemoryKind::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view StorageTierName(StorageTier tier) noexcept {
  switch (tier) {
    case StorageTier::kDevice: return "device";
    case StorageTier::kPinnedHost: return "pinned-host";
    case StorageTier::kPageableHost: return "pageable-host";
    case StorageTier::kFile: return "file";
  }
  return "unknown";
}

std::string_view LaunchKindName(LaunchKind kind) noexcept {
  switch (kind) {
    case LaunchKind::kKernel: return "kernel";
    case LaunchKind::kCooperativeKernel: return "cooperative-kernel";
    case LaunchKind::kBatch: return "batch";
    case LaunchKind::kGraph: return "graph";
  }
  return "unknown";
}

std::string_view GraphNodeTypeName(GraphNodeType type) noexcept {
  switch (type) {
    case GraphNodeType::kKernel: return "kernel";
    case GraphNodeType::kMemcpy: return "memcpy";
    case GraphNodeType::kMemset: return "memset";
    case GraphNodeType::kEventRecord: return "event-record";
    case GraphNodeType::kEventWait: return "event-wait";
    case GraphNodeType::kEmpty: return "empty";
    case GraphNodeType::kMemAlloc: return "memory-allocation";
    case GraphNodeType::kMemFree: return "memory-free";
    case GraphNodeType::kHost: return "host";
    case GraphNodeType::kChildGraph: return "child-graph";
    case GraphNodeType::kConditional: return "conditional";
    case GraphNodeType::kExternalSemaphore: return "external-semaphore";
    case GraphNodeType::kOther: return "other";
  }
  return "unknown";
}

std::string_view ChunkOpName(ChunkOp op) noexcept {
  switch (op) {
    case ChunkOp::kCapture: return "capture";
    case ChunkOp::kRefreshChanged: return "refresh-changed";
    case ChunkOp::kRestoreChanged: return "restore-changed";
    case ChunkOp::kRestoreDiffering: return "restore-differing";
    case ChunkOp::kRestoreAll: return "restore-all";
    case ChunkOp::kHash: return "hash";
  }
  return "unknown";
}

StatusOr<RangePassTiming> Device::ReissueRange(std::span<const RangeOp> ops, int pass,
                                               const ReissueOptions& options) {
  static_cast<void>(ops);
  static_cast<void>(pass);
  static_cast<void>(options);
  return UnimplementedError("this backend does not re-issue recorded ranges");
}

StatusOr<std::shared_ptr<const RecordedLaunch>> LaunchExecutor::RecordForRange() {
  return UnimplementedError("this backend does not record launches for range replay");
}

}  // namespace gpuprof::device
