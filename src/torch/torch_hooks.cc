// libgpuprof_torch.so: PyTorch's RecordFunction and memory-reporting hooks, feeding the process's
// Session through libgpuprof.so's C API (gpuprof_c.h). The Python package loads it with ctypes
// (python/gpuprof/_native.py), so it needs neither pybind11 nor Python.h, and one source builds
// against torch 1.13 and 2.x.
#include "gpuprof/gpuprof_torch.h"

// torch's release builds (pip wheels, Debian) define NDEBUG, and its headers depend on it: without
// it at::RecordFunction gains a debug-only member (inputs_valid_) that libtorch's objects lack, so
// this code would read the fields after it at the wrong offsets, and inputs() would assert on a
// byte of padding (throwing c10::Error, with a backtrace, on many ops: their shapes are lost and
// each costs hundreds of times more). Build with -DNDEBUG (src/torch/CMakeLists.txt,
// tools/build_torch_hooks.sh).
#ifndef NDEBUG
#error "libgpuprof_torch must be compiled with -DNDEBUG, as torch's release libraries are (see above)"
#endif

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpuprof/gpuprof_c.h"
#include "torch/op_buffer.h"

namespace gpuprof::torch_hooks {
namespace {

std::int64_t EpochNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint32_t OsTid() {
  thread_local const auto tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
  return tid;
}

using InputWords = c10::SmallVector<std::int64_t, 32>;

// The op's inputs as OpBuffer's encoded words (op_buffer.h); formatted later, off the hot path.
void EncodeInputs(const at::RecordFunction& fn, InputWords* words) {
  for (const c10::IValue& input : fn.inputs()) {
    if (input.isTensor()) {
      const at::Tensor& tensor = input.toTensor();
      if (!tensor.defined()) {
        words->push_back(EncodeInputHeader(InputKind::kNone, 0, 0));
        continue;
      }
      const c10::IntArrayRef sizes = tensor.sizes();
      words->push_back(EncodeInputHeader(InputKind::kTensor, static_cast<std::uint8_t>(tensor.scalar_type()),
                                         static_cast<std::uint32_t>(sizes.size())));
      words->append(sizes.begin(), sizes.end());
    } else if (input.isTensorList()) {
      words->push_back(EncodeInputHeader(InputKind::kTensorList, 0, 0));
    } else if (input.isScalar()) {
      words->push_back(EncodeInputHeader(InputKind::kScalar, 0, 0));
    } else if (input.isList()) {
      words->push_back(EncodeInputHeader(InputKind::kScalarList, 0, 0));
    } else {
      words->push_back(EncodeInputHeader(InputKind::kNone, 0, 0));
    }
  }
}

// DB_SPEC 3.3: per input "d0,d1,..." (scalars: empty) and its dtype's TypeMeta name (or None,
// TensorList, Scalar, ScalarList), joined by ";\r\n".
void FormatInputs(std::span<const std::int64_t> words, std::string* shapes, std::string* dtypes) {
  constexpr const char* kSeparator = ";\r\n";
  bool first = true;
  for (std::size_t i = 0; i < words.size();) {
    const std::int64_t header = words[i++];
    if (!first) {
      shapes->append(kSeparator);
      dtypes->append(kSeparator);
    }
    first = false;
    switch (HeaderKind(header)) {
      case InputKind::kTensor: {
        const std::uint32_t rank = HeaderRank(header);
        for (std::uint32_t d = 0; d < rank && i < words.size(); ++d, ++i) {
          if (d > 0) shapes->push_back(',');
          shapes->append(std::to_string(words[i]));
        }
        const auto type = static_cast<c10::ScalarType>(HeaderDtype(header));
        dtypes->append(std::string(c10::scalarTypeToTypeMeta(type).name()));
        break;
      }
      case InputKind::kTensorList: dtypes->append("TensorList"); break;
      case InputKind::kScalar: dtypes->append("Scalar"); break;
      case InputKind::kScalarList: dtypes->append("ScalarList"); break;
      default: dtypes->append("None"); break;
    }
  }
}

// The Python call stack of the calling thread, for with_stack (DB_SPEC 3.5: "file(line): function",
// innermost first). CPython's C API is taken from the running interpreter with dlsym, so the
// library needs no Python.h and works with any Python 3.9+ that loaded torch. Threads without a
// Python thread state (autograd's workers: backward ops) get no stack.
class PythonStacks {
 public:
  using Object = void;
  bool Load() {
    auto sym = [](const char* name) { return dlsym(RTLD_DEFAULT, name); };
    this_thread_state_ = reinterpret_cast<void* (*)()>(sym("PyGILState_GetThisThreadState"));
    ensure_ = reinterpret_cast<int (*)()>(sym("PyGILState_Ensure"));
    release_ = reinterpret_cast<void (*)(int)>(sym("PyGILState_Release"));
    current_frame_ = reinterpret_cast<Object* (*)()>(sym("PyEval_GetFrame"));
    frame_back_ = reinterpret_cast<Object* (*)(Object*)>(sym("PyFrame_GetBack"));
    frame_code_ = reinterpret_cast<Object* (*)(Object*)>(sym("PyFrame_GetCode"));
    frame_line_ = reinterpret_cast<int (*)(Object*)>(sym("PyFrame_GetLineNumber"));
    get_attr_ = reinterpret_cast<Object* (*)(Object*, const char*)>(sym("PyObject_GetAttrString"));
    as_utf8_ = reinterpret_cast<const char* (*)(Object*)>(sym("PyUnicode_AsUTF8"));
    dec_ref_ = reinterpret_cast<void (*)(Object*)>(sym("Py_DecRef"));
    inc_ref_ = reinterpret_cast<void (*)(Object*)>(sym("Py_IncRef"));
    err_clear_ = reinterpret_cast<void (*)()>(sym("PyErr_Clear"));
    loaded_ = this_thread_state_ && ensure_ && release_ && current_frame_ && frame_back_ && frame_code_ &&
              frame_line_ && get_attr_ && as_utf8_ && dec_ref_ && inc_ref_ && err_clear_;
    return loaded_;
  }

  // Appends the frames to `frames`; nothing on a thread that never ran Python.
  void Capture(std::vector<std::string>* frames) const {
    if (!loaded_ || this_thread_state_() == nullptr) return;
    const int gil = ensure_();
    Object* frame = current_frame_();  // borrowed
    if (frame != nullptr) inc_ref_(frame);
    constexpr int kMaxDepth = 128;
    for (int depth = 0; frame != nullptr && depth < kMaxDepth; ++depth) {
      Object* code = frame_code_(frame);
      if (code != nullptr) {
        std::string text = Text(code, "co_filename");
        text += "(" + std::to_string(frame_line_(frame)) + "): ";
        text += Text(code, "co_name");
        frames->push_back(std::move(text));
        dec_ref_(code);
      }
      Object* back = frame_back_(frame);
      dec_ref_(frame);
      frame = back;
    }
    if (frame != nullptr) dec_ref_(frame);
    err_clear_();
    release_(gil);
  }

 private:
  std::string Text(Object* code, const char* attribute) const {
    Object* value = get_attr_(code, attribute);
    if (value == nullptr) return "?";
    const char* utf8 = as_utf8_(value);
    std::string text = utf8 != nullptr ? utf8 : "?";
    dec_ref_(value);
    return text;
  }

  bool loaded_ = false;
  void* (*this_thread_state_)() = nullptr;
  int (*ensure_)() = nullptr;
  void (*release_)(int) = nullptr;
  Object* (*current_frame_)() = nullptr;
  Object* (*frame_back_)(Object*) = nullptr;
  Object* (*frame_code_)(Object*) = nullptr;
  int (*frame_line_)(Object*) = nullptr;
  Object* (*get_attr_)(Object*, const char*) = nullptr;
  const char* (*as_utf8_)(Object*) = nullptr;
  void (*dec_ref_)(Object*) = nullptr;
  void (*inc_ref_)(Object*) = nullptr;
  void (*err_clear_)() = nullptr;
};

PythonStacks g_python_stacks;  // loaded once, under g_mu, before g_with_stack turns on
std::atomic<bool> g_with_stack{false};

// Per running op. Allocated from a per-thread free list: an op costs no malloc.
struct OpContext final : at::ObserverContext {
  std::int64_t start_ns = 0;
  std::uint32_t tid = 0;
  std::uint64_t external_id = 0;  // pushed at start, popped at end (same thread)
  InputWords inputs;
  std::vector<std::string> stack;

  static void* operator new(std::size_t size) {
    if (size == sizeof(OpContext) && !free_list().empty()) {
      void* p = free_list().back();
      free_list().pop_back();
      return p;
    }
    return ::operator new(size);
  }
  static void operator delete(void* p, std::size_t size) noexcept {
    constexpr std::size_t kKeep = 256;
    if (size == sizeof(OpContext) && free_list().size() < kKeep) {
      try {
        free_list().push_back(p);
        return;
      } catch (...) {
      }
    }
    ::operator delete(p);
  }

 private:
  struct FreeList {
    std::vector<void*> blocks;
    ~FreeList() {
      for (void* p : blocks) ::operator delete(p);
    }
  };
  static std::vector<void*>& free_list() {
    thread_local FreeList list;
    return list.blocks;
  }
};

std::atomic<bool> g_record_shapes{false};
// Device correlation (gpuprof_get_device_correlation_v1): set at enable while the session collects
// device activity; the functions stay valid for the life of the process once set.
std::atomic<int (*)(std::uint64_t)> g_correlation_push{nullptr};
// Set when a finalizing signal stopped the hooks (FlushBeforeSignalStop): ops and memory events
// that still arrive are dropped, so the buffer's last flush ends.
std::atomic<bool> g_signal_stopped{false};
std::atomic<int (*)()> g_correlation_pop{nullptr};
std::atomic<std::uint64_t> g_next_external_id{1};
// Created at the first enable; never destroyed (callbacks may still run at process exit).
OpBuffer* g_buffer = nullptr;

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  auto context = std::make_unique<OpContext>();
  context->tid = OsTid();
  if (g_record_shapes.load(std::memory_order_relaxed) && fn.needsInputs()) {
    try {
      EncodeInputs(fn, &context->inputs);
    } catch (...) {
      context->inputs.clear();
    }
  }
  // As torch's profiler: autograd's backward functions get no Python stack.
  if (g_with_stack.load(std::memory_order_relaxed) && fn.scope() != at::RecordScope::BACKWARD_FUNCTION) {
    try {
      g_python_stacks.Capture(&context->stack);
    } catch (...) {
      context->stack.clear();
    }
  }
  // Kernels this op launches are tagged with its id (async ops may end on another thread: none).
  if (auto push = g_correlation_push.load(std::memory_order_relaxed); push != nullptr && !fn.isAsync()) {
    const std::uint64_t id = g_next_external_id.fetch_add(1, std::memory_order_relaxed);
    if (push(id) == 0) context->external_id = id;
  }
  context->start_ns = EpochNs();
  return context;
}

void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext* raw) {
  auto* context = static_cast<OpContext*>(raw);
  if (context == nullptr) return;
  if (context->external_id != 0) {
    if (auto pop = g_correlation_pop.load(std::memory_order_relaxed); pop != nullptr) pop();
  }
  if (g_buffer == nullptr || g_signal_stopped.load(std::memory_order_relaxed)) return;
  const char* name = fn.name();
  if (name == nullptr || *name == '\0') return;
  OpEntry op;
  op.start_ns = context->start_ns;
  op.end_ns = EpochNs();
  op.sequence_number = fn.seqNr();
  op.fwd_thread_id = fn.forwardThreadId();
  op.tid = context->tid;
  op.external_id = context->external_id;
  g_buffer->AddOp(op, name, std::span<const std::int64_t>(context->inputs.data(), context->inputs.size()),
                  context->stack);
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
using ReportMethod =
    decltype(&c10::MemoryReportingInfoBase::reportMemoryUsage);  // ProfilerStateBase keeps it

// torch reads the PROFILER_STATE slot as a torch::profiler::impl::ProfilerStateBase (e.g.
// profilerEnabled() reads its config), so the reporter is one: with a Disabled config, torch's
// code sees no profiler running; only the memory reports come here.
class MemoryReporter final : public torch::profiler::impl::ProfilerStateBase {
 public:
  MemoryReporter()
      : ProfilerStateBase(
            torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::Disabled)) {}
  torch::profiler::impl::ActiveProfilerType profilerType() override {
    return torch::profiler::impl::ActiveProfilerType::NONE;
  }
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
    if (g_buffer != nullptr && !g_signal_stopped.load(std::memory_order_relaxed)) g_buffer->AddMemory(event);
  }
  bool memoryProfilingEnabled() const override { return true; }
};

// The reporter while any enable asked for memory (guarded by g_mu). torch's own profiler (a
// script's torch.profiler) takes the same thread-local slot and refuses to start while anything
// holds it ("Profiler is already enabled on this thread"), so the reporter steps aside on a thread
// for as long as torch's profiler runs there (gpuprof_torch_memory_step_aside_v1).
std::shared_ptr<MemoryReporter> g_memory_reporter;
thread_local bool t_memory_stepped_aside = false;

// Any reporter of ours, a stale one too (left on a thread when the last disable ran on another).
bool ThreadHoldsReporter() {  // under g_mu
  return dynamic_cast<MemoryReporter*>(c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) !=
         nullptr;
}

// Nested profiles (a script's gpuprof.profile inside `gpuprof run`'s) share the hooks: each enable
// is released by one disable, and the inputs are recorded while any user asked for shapes.
std::mutex g_mu;
at::CallbackHandle g_callback = 0;  // guarded by g_mu
bool g_callback_has_inputs = false;
int g_users = 0;
int g_shape_users = 0;
int g_memory_users = 0;
int g_stack_users = 0;
struct Request {
  bool shapes;
  bool memory;
  bool stack;
};
std::vector<Request> g_requests;  // per enable, LIFO

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

// The process is about to end: stop taking ops (a Flush alone never ends while the program's
// threads keep filling the buffer) and hand over what is buffered. The requests stay counted;
// nothing runs in this process after the signal but its end.
void FlushBeforeSignalStop() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_buffer == nullptr || g_users == 0) return;
  g_signal_stopped.store(true, std::memory_order_relaxed);
  if (g_callback != 0) {
    at::removeCallback(g_callback);
    g_callback = 0;
  }
  g_correlation_push.store(nullptr, std::memory_order_relaxed);
  g_buffer->Stop();
}

}  // namespace
}  // namespace gpuprof::torch_hooks

using namespace gpuprof::torch_hooks;

extern "C" {

GPUPROF_TORCH_API int gpuprof_torch_enable_v1(int record_shapes, int profile_memory,
                                              int with_stack) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    if (with_stack != 0 && !g_python_stacks.Load()) return 2;
    if (g_buffer == nullptr) {
      // A SIGTERM (and its kind) finalizes the profile from gpuprof's own thread: the ops still in
      // the buffer go first (the session's exit path is not taken then).
      gpuprof_add_signal_stop_hook_v1(&FlushBeforeSignalStop);
      OpBufferSinks sinks;
      sinks.op = [](const gpuprof_torch_op_v1& op) { return gpuprof_record_torch_op_v1(&op); };
      sinks.memory = [](const gpuprof_allocator_event_v1& event) {
        return gpuprof_record_allocator_event_v1(&event);
      };
      sinks.format_inputs = &FormatInputs;
      g_buffer = new OpBuffer(std::move(sinks));
    }
    if (g_users == 0) {
      g_buffer->Start();
    } else {
      // What the earlier users' ops left buffered reaches the session now, before the joining
      // profile opens its window DB (gpuprof_window_begin_v1): ops before it stay out of it.
      g_buffer->Flush();
    }
    // GPUPROF_TORCH_DEVICE_CORRELATION=0: no per-op push/pop; the writer links ops to kernels by
    // time on the launching thread instead (bench/torch_overhead.py --breakdown measures the cost).
    const char* tagging = std::getenv("GPUPROF_TORCH_DEVICE_CORRELATION");
    const bool tag_ops = tagging == nullptr || std::strcmp(tagging, "0") != 0;
    gpuprof_device_correlation_v1 correlation{};
    if (tag_ops && gpuprof_get_device_correlation_v1(&correlation) == GPUPROF_OK) {
      g_correlation_pop.store(correlation.pop, std::memory_order_relaxed);
      g_correlation_push.store(correlation.push, std::memory_order_relaxed);
    }
    g_requests.push_back({record_shapes != 0, profile_memory != 0, with_stack != 0});
    ++g_users;
    if (record_shapes != 0) ++g_shape_users;
    if (with_stack != 0 && g_stack_users++ == 0) g_with_stack.store(true, std::memory_order_relaxed);
    InstallCallback();
    if (profile_memory != 0 && g_memory_users++ == 0) {
      // On this thread and on those that inherit its thread-local state (autograd's workers).
      // Not while torch's own profiler holds this thread's slot: the reporter comes when it ends.
      g_memory_reporter = std::make_shared<MemoryReporter>();
      if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) == nullptr) {
        c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, g_memory_reporter);
      } else {
        t_memory_stepped_aside = true;
      }
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
    const Request request = g_requests.back();
    g_requests.pop_back();
    --g_users;
    if (request.shapes) --g_shape_users;
    if (request.stack && --g_stack_users == 0) g_with_stack.store(false, std::memory_order_relaxed);
    const bool memory = request.memory;
    if (memory && --g_memory_users == 0) {
      // Only the reporter itself: the slot may be torch's profiler's now (stepped aside).
      if (ThreadHoldsReporter()) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
      g_memory_reporter.reset();
    }
    if (g_users == 0) {
      at::removeCallback(g_callback);
      g_callback = 0;
      g_correlation_push.store(nullptr, std::memory_order_relaxed);  // pops of ops in flight still run
      g_buffer->Stop();  // every record reaches the session before the caller stops it
    } else {
      InstallCallback();
      g_buffer->Flush();
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

GPUPROF_TORCH_API int gpuprof_torch_memory_step_aside_v1(void) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!ThreadHoldsReporter()) return 0;
    // Throws when something else was pushed above the reporter: then it stays (torch's profiler
    // refuses to start, as it would have).
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    t_memory_stepped_aside = true;
    return 1;
  } catch (...) {
    return -1;
  }
}

GPUPROF_TORCH_API int gpuprof_torch_memory_resume_v1(void) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!t_memory_stepped_aside) return 0;
    if (g_memory_reporter == nullptr) {  // the last memory user stopped meanwhile
      t_memory_stepped_aside = false;
      return 0;
    }
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE) != nullptr)
      return 0;  // still taken
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, g_memory_reporter);
    t_memory_stepped_aside = false;
    return 1;
  } catch (...) {
    return -1;
  }
}

GPUPROF_TORCH_API uint64_t gpuprof_torch_ops_dropped_v1(void) noexcept {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_buffer == nullptr) return 0;
  const OpBufferStats stats = g_buffer->stats();
  return stats.sink_refusals + stats.dropped_entries;
}

}  // extern "C"
