// libgpuprof_torch.so: PyTorch's RecordFunction and memory-reporting hooks, feeding the process's
// Session through libgpuprof.so's C API (gpuprof_c.h). The Python package loads it with ctypes
// (python/gpuprof/_native.py), so it needs neither pybind11 nor Python.h, and one source builds
// against torch 1.13 and 2.x.
#include "torch/torch_hooks.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpuprof/gpuprof_c.h"

namespace gpuprof::torch_hooks {
namespace {

std::int64_t EpochNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint32_t OsTid() {
  thread_local const auto tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
  return tid;
}

// DB_SPEC 3.3: per input "d0,d1,..." (scalars: empty) and the dtype name, joined by ";\r\n".
void DescribeInputs(const at::RecordFunction& fn, std::string* shapes, std::string* dtypes) {
  constexpr const char* kSeparator = ";\r\n";
  bool first = true;
  for (const c10::IValue& input : fn.inputs()) {
    if (!first) {
      shapes->append(kSeparator);
      dtypes->append(kSeparator);
    }
    first = false;
    if (input.isTensor()) {
      const at::Tensor& tensor = input.toTensor();
      if (tensor.defined()) {
        bool first_dim = true;
        for (std::int64_t d : tensor.sizes()) {
          if (!first_dim) shapes->push_back(',');
          first_dim = false;
          shapes->append(std::to_string(d));
        }
        dtypes->append(std::string(tensor.dtype().name()));
      } else {
        dtypes->append("None");
      }
    } else if (input.isTensorList()) {
      dtypes->append("TensorList");
    } else if (input.isScalar()) {
      dtypes->append("Scalar");
    } else if (input.isList()) {
      dtypes->append("ScalarList");
    } else {
      dtypes->append("None");
    }
  }
}

struct OpContext final : at::ObserverContext {
  std::int64_t start_ns = 0;
  std::uint32_t tid = 0;
  std::string shapes;
  std::string dtypes;
};

std::atomic<std::uint64_t> g_ops_dropped{0};
std::atomic<bool> g_record_shapes{false};

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  auto context = std::make_unique<OpContext>();
  context->tid = OsTid();
  if (g_record_shapes.load(std::memory_order_relaxed) && fn.needsInputs()) {
    try {
      DescribeInputs(fn, &context->shapes, &context->dtypes);
    } catch (...) {
      context->shapes.clear();
      context->dtypes.clear();
    }
  }
  context->start_ns = EpochNs();
  return context;
}

void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext* raw) {
  auto* context = static_cast<OpContext*>(raw);
  if (context == nullptr) return;
  const char* name = fn.name();
  if (name == nullptr || *name == '\0') return;
  gpuprof_torch_op_v1 op{};
  op.size = sizeof(op);
  op.tid = context->tid;
  op.start_ns = context->start_ns;
  op.end_ns = EpochNs();
  if (op.end_ns < op.start_ns) op.end_ns = op.start_ns;
  op.name = name;
  op.sequence_number = fn.seqNr();
  op.fwd_thread_id = fn.forwardThreadId();
  op.input_shapes = context->shapes.empty() && context->dtypes.empty() ? nullptr : context->shapes.c_str();
  op.input_dtypes = context->dtypes.empty() ? nullptr : context->dtypes.c_str();
  op.type = GPUPROF_TORCH_OP;
  if (gpuprof_record_torch_op_v1(&op) != GPUPROF_OK) g_ops_dropped.fetch_add(1, std::memory_order_relaxed);
}

// Torch's own profiler reports memory through the same thread-local slot (PROFILER_STATE). The
// totals' integer type differs: int64_t in torch 1.13, size_t in 2.x; it is read off the virtual
// function's own signature, so no version macro can disagree with the headers in use.
template <typename Method>
struct TotalsOf;
template <typename Class, typename Allocated, typename Reserved>
struct TotalsOf<void (Class::*)(void*, int64_t, Allocated, Reserved, c10::Device)> {
  using allocated = Allocated;
  using reserved = Reserved;
};
using ReportMethod = decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage);

class MemoryReporter final : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* ptr, int64_t alloc_size, TotalsOf<ReportMethod>::allocated total_allocated,
                         TotalsOf<ReportMethod>::reserved total_reserved, c10::Device device) override {
    gpuprof_allocator_event_v1 event{};
    event.size = sizeof(event);
    event.tid = OsTid();
    event.time_ns = EpochNs();
    event.device = device.is_cpu() ? -1 : device.index();
    event.action = alloc_size >= 0 ? GPUPROF_ALLOC_MALLOC : GPUPROF_ALLOC_FREE;
    event.ptr = reinterpret_cast<std::uintptr_t>(ptr);
    event.bytes = static_cast<std::uint64_t>(alloc_size >= 0 ? alloc_size : -alloc_size);
    event.total_allocated = static_cast<std::uint64_t>(total_allocated);
    event.total_reserved = static_cast<std::uint64_t>(total_reserved);
    event.total_active = -1;  // this path carries no active figure
    (void)gpuprof_record_allocator_event_v1(&event);
  }
  bool memoryProfilingEnabled() const override { return true; }
};

// Nested profiles (a script's gpuprof.profile inside `gpuprof run`'s) share the hooks: each enable
// is released by one disable, and the inputs are recorded while any user asked for shapes.
std::mutex g_mu;
at::CallbackHandle g_callback = 0;  // guarded by g_mu
bool g_callback_has_inputs = false;
int g_users = 0;
int g_shape_users = 0;
int g_memory_users = 0;
std::vector<std::pair<bool, bool>> g_requests;  // (record_shapes, profile_memory) per enable, LIFO

void InstallCallback() {  // under g_mu
  const bool inputs = g_shape_users > 0;
  g_record_shapes.store(inputs, std::memory_order_relaxed);
  if (g_callback != 0 && g_callback_has_inputs == inputs) return;
  if (g_callback != 0) at::removeCallback(g_callback);
  g_callback = 0;
  at::RecordFunctionCallback callback(&OnOpStart, &OnOpEnd);
  callback.needsInputs(inputs);
  g_callback = at::addGlobalCallback(callback);
  g_callback_has_inputs = inputs;
}

}  // namespace
}  // namespace gpuprof::torch_hooks

using namespace gpuprof::torch_hooks;

extern "C" {

GPUPROF_TORCH_API int gpuprof_torch_enable_v1(int record_shapes, int profile_memory) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    g_requests.emplace_back(record_shapes != 0, profile_memory != 0);
    ++g_users;
    if (record_shapes != 0) ++g_shape_users;
    InstallCallback();
    if (profile_memory != 0 && g_memory_users++ == 0) {
      // On this thread and on those that inherit its thread-local state (autograd's workers).
      c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<MemoryReporter>());
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

GPUPROF_TORCH_API int gpuprof_torch_disable_v1(void) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_requests.empty()) return 0;
    const auto [shapes, memory] = g_requests.back();
    g_requests.pop_back();
    --g_users;
    if (shapes) --g_shape_users;
    if (memory && --g_memory_users == 0) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    if (g_users == 0) {
      at::removeCallback(g_callback);
      g_callback = 0;
    } else {
      InstallCallback();
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

GPUPROF_TORCH_API uint64_t gpuprof_torch_ops_dropped_v1(void) noexcept {
  return g_ops_dropped.load(std::memory_order_relaxed);
}

}  // extern "C"
