#include "device/device.h"

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

Status Device::RestoreRunsFromBacking(DevicePtr dst, const BackingBuffer& src, std::uint64_t src_offset,
                                      std::span<const ByteRange> runs) {
  for (const ByteRange& run : runs) {
    GPUPROF_RETURN_IF_ERROR(RestoreFromBacking(dst + run.offset, src, src_offset + run.offset, run.size));
  }
  return OkStatus();
}

Status Device::CompareChunks(DevicePtr, const BackingBuffer&, std::uint64_t, std::uint64_t, std::uint64_t,
                             std::span<std::uint8_t>) {
  return UnimplementedError("this device backend has no direct snapshot comparison");
}

}  // namespace gpuprof::device
