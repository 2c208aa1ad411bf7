#include "cupti/range_calls.h"

#include <algorithm>
#include <iterator>

namespace gpuprof::cupti {

namespace {

device::StreamId StreamIdOf(CUstream stream) noexcept { return reinterpret_cast<device::StreamId>(stream); }

// The per-thread default stream, where the _ptds forms of synchronous calls run.
const device::StreamId kPerThreadStream = StreamIdOf(CU_STREAM_PER_THREAD);

RangeCall Copy(device::DevicePtr dst, device::DevicePtr src, std::size_t bytes, device::StreamId stream,
               bool asynchronous) {
  RangeCall call;
  call.kind = RangeCall::Kind::kTransfer;
  call.transfer.kind = device::TransferKind::kCopy;
  call.transfer.dst = dst;
  call.transfer.src = src;
  call.transfer.bytes = bytes;
  call.transfer.stream = stream;
  call.transfer.asynchronous = asynchronous;
  return call;
}

device::DevicePtr HostAddress(const void* p) noexcept {
  return static_cast<device::DevicePtr>(reinterpret_cast<std::uintptr_t>(p));
}

// A memset of `count` elements of `element_bytes` each to `value`: recorded as a byte memset when
// every byte of the value is the same (cudaMemset may reach the driver as a D32 memset), declined
// otherwise.
template <typename T>
RangeCall Memset(device::DevicePtr dst, T value, std::size_t count, device::StreamId stream,
                 bool asynchronous, const char* name) {
  const auto byte = static_cast<std::uint8_t>(value & 0xFF);
  for (std::size_t i = 1; i < sizeof(T); ++i) {
    if (static_cast<std::uint8_t>((value >> (8 * i)) & 0xFF) != byte) {
      RangeCall call;
      call.kind = RangeCall::Kind::kDecline;
      call.detail = std::string(name) + " of a value whose bytes differ (only byte patterns are re-issued)";
      return call;
    }
  }
  RangeCall call;
  call.kind = RangeCall::Kind::kTransfer;
  call.transfer.kind = device::TransferKind::kMemset;
  call.transfer.dst = dst;
  call.transfer.value = byte;
  call.transfer.bytes = static_cast<std::uint64_t>(count) * sizeof(T);
  call.transfer.stream = stream;
  call.transfer.asynchronous = asynchronous;
  return call;
}

RangeCall Event(device::EventOpKind kind, CUevent event, CUstream stream) {
  RangeCall call;
  call.kind = RangeCall::Kind::kEvent;
  call.event.kind = kind;
  call.event.stream = StreamIdOf(stream);
  call.event.event = reinterpret_cast<std::uint64_t>(event);
  return call;
}

RangeCall Decline(std::string detail) {
  RangeCall call;
  call.kind = RangeCall::Kind::kDecline;
  call.detail = std::move(detail);
  return call;
}

}  // namespace

RangeCall ClassifyRangeCall(CUpti_CallbackId cbid, const void* params) {
  // The delimiters take no parameters, so CUPTI hands their callbacks no parameter block.
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart || cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
    RangeCall call;
    call.kind = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ? RangeCall::Kind::kProfilerStart
                                                                : RangeCall::Kind::kProfilerStop;
    return call;
  }
  if (params == nullptr) return {};
  // The _ptds/_ptsz forms have the same parameters as the plain ones.
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds: {
      auto* a = static_cast<const cuMemcpyHtoD_v2_params*>(params);
      return Copy(a->dstDevice, HostAddress(a->srcHost), a->ByteCount,
                  cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2 ? kLegacyStream : kPerThreadStream, false);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
      auto* a = static_cast<const cuMemcpyHtoDAsync_v2_params*>(params);
      return Copy(a->dstDevice, HostAddress(a->srcHost), a->ByteCount, StreamIdOf(a->hStream), true);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
      auto* a = static_cast<const cuMemcpyDtoH_v2_params*>(params);
      return Copy(HostAddress(a->dstHost), a->srcDevice, a->ByteCount,
                  cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2 ? kLegacyStream : kPerThreadStream, false);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
      auto* a = static_cast<const cuMemcpyDtoHAsync_v2_params*>(params);
      return Copy(HostAddress(a->dstHost), a->srcDevice, a->ByteCount, StreamIdOf(a->hStream), true);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds: {
      auto* a = static_cast<const cuMemcpyDtoD_v2_params*>(params);
      return Copy(a->dstDevice, a->srcDevice, a->ByteCount,
                  cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2 ? kLegacyStream : kPerThreadStream, false);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
      auto* a = static_cast<const cuMemcpyDtoDAsync_v2_params*>(params);
      return Copy(a->dstDevice, a->srcDevice, a->ByteCount, StreamIdOf(a->hStream), true);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: {
      auto* a = static_cast<const cuMemcpy_params*>(params);
      return Copy(a->dst, a->src, a->ByteCount,
                  cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy ? kLegacyStream : kPerThreadStream, false);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
      auto* a = static_cast<const cuMemcpyAsync_params*>(params);
      return Copy(a->dst, a->src, a->ByteCount, StreamIdOf(a->hStream), true);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds: {
      auto* a = static_cast<const cuMemsetD8_v2_params*>(params);
      return Memset(a->dstDevice, a->uc, a->N,
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2 ? kLegacyStream : kPerThreadStream, false,
                    "cuMemsetD8");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
      auto* a = static_cast<const cuMemsetD8Async_params*>(params);
      return Memset(a->dstDevice, a->uc, a->N, StreamIdOf(a->hStream), true, "cuMemsetD8Async");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds: {
      auto* a = static_cast<const cuMemsetD16_v2_params*>(params);
      return Memset(a->dstDevice, a->us, a->N,
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2 ? kLegacyStream : kPerThreadStream, false,
                    "cuMemsetD16");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: {
      auto* a = static_cast<const cuMemsetD16Async_params*>(params);
      return Memset(a->dstDevice, a->us, a->N, StreamIdOf(a->hStream), true, "cuMemsetD16Async");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: {
      auto* a = static_cast<const cuMemsetD32_v2_params*>(params);
      return Memset(a->dstDevice, a->ui, a->N,
                    cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2 ? kLegacyStream : kPerThreadStream, false,
                    "cuMemsetD32");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
      auto* a = static_cast<const cuMemsetD32Async_params*>(params);
      return Memset(a->dstDevice, a->ui, a->N, StreamIdOf(a->hStream), true, "cuMemsetD32Async");
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      auto* a = static_cast<const cuEventRecord_params*>(params);
      return Event(device::EventOpKind::kRecord, a->hEvent, a->hStream);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      auto* a = static_cast<const cuEventRecordWithFlags_params*>(params);
      return Event(device::EventOpKind::kRecord, a->hEvent, a->hStream);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      auto* a = static_cast<const cuStreamWaitEvent_params*>(params);
      return Event(device::EventOpKind::kWait, a->hEvent, a->hStream);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz: return Decline("a host function");
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz:
      return Decline("a 2D, 3D or batched copy (only linear copies are re-issued)");
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz:
      return Decline("a 2D memset (only linear memsets are re-issued)");
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz:
      return Decline("a peer copy (another device's memory is not in the range's snapshot)");
    default: return {};
  }
}

std::optional<LaunchCall> LaunchCallOf(CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return std::nullopt;
  LaunchCall call;
  auto shape = [&call](const auto& p) {
    const device::LaunchShape launch = ShapeOf(p);
    std::copy(std::begin(launch.grid), std::end(launch.grid), call.grid);
    std::copy(std::begin(launch.block), std::end(launch.block), call.block);
    call.shared_bytes = static_cast<unsigned>(launch.dynamic_shared_bytes);
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      auto* a = static_cast<const cuLaunchKernel_params*>(params);
      shape(*a);
      call.function = a->f;
      call.stream = a->hStream;
      call.kernel_params = a->kernelParams;
      call.extra = a->extra;
      return call;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      auto* a = static_cast<const cuLaunchCooperativeKernel_params*>(params);
      shape(*a);
      call.function = a->f;
      call.stream = a->hStream;
      call.kernel_params = a->kernelParams;
      call.cooperative = true;
      return call;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      auto* a = static_cast<const cuLaunchKernelEx_params*>(params);
      if (a->config == nullptr) return std::nullopt;
      shape(*a->config);
      call.function = a->f;
      call.stream = a->config->hStream;
      call.kernel_params = a->kernelParams;
      call.extra = a->extra;
      call.attributes = a->config->attrs;
      call.attribute_count = a->config->numAttrs;
      return call;
    }
    default: return std::nullopt;
  }
}

}  // namespace gpuprof::cupti
