// ProcessSession's calls on a running session (process.h): flush, marks and ranges, framework
// records (torch ops, allocator and GC events), window DBs, device correlation and replay's
// configuration. Each runs on this copy's Session, or forwards to the copy that owns the running
// session through its table. Starting, stopping, exit and fork stay in process.cc.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "session/config.h"
#include "session/process.h"
#include "session/replay_settings.h"

namespace gpuprof::session {
namespace {

// What a Session error means to a C caller.
CallResult FromStatus(const Status& status) {
  if (status.ok()) return {};
  switch (status.code()) {
    case StatusCode::kInvalidArgument: return {GPUPROF_ERROR_INVALID_ARGUMENT, status.message()};
    case StatusCode::kFailedPrecondition: return {GPUPROF_ERROR_NOT_STARTED, status.message()};
    case StatusCode::kNotFound: return {GPUPROF_ERROR_RANGE_NOT_FOUND, status.message()};
    case StatusCode::kResourceExhausted: return {GPUPROF_ERROR_RECORD_DROPPED, status.message()};
    default: return {GPUPROF_ERROR_INTERNAL, status.message()};
  }
}

}  // namespace

CallResult ProcessSession::Running(Target* target) {
  auto state = state_.wlock();
  if (state->attached == nullptr && state->session == nullptr) return NotStarted(*state);
  target->session = state->session;
  target->attached = state->attached;
  return {};
}

CallResult ProcessSession::Flush() {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  const std::shared_ptr<Session>& session = target.session;
  const gpuprof_session_v1* attached = target.attached;
  if (attached != nullptr) return Forwarded(attached, attached->flush());
  return FromStatus(session->Flush());
}

CallResult ProcessSession::Mark(const char* message) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  const std::shared_ptr<Session>& session = target.session;
  const gpuprof_session_v1* attached = target.attached;
  if (attached != nullptr) return Forwarded(attached, attached->mark(message));
  return FromStatus(session->Mark(message));
}

template <typename Forward>
CallResult ProcessSession::Record(trace::Record&& record, Forward forward) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  const std::shared_ptr<Session>& session = target.session;
  const gpuprof_session_v1* attached = target.attached;
  if (attached != nullptr) return forward(attached);
  if (!session->Append(std::move(record))) {
    return {GPUPROF_ERROR_RECORD_DROPPED, "the session's record buffer is full or the session is stopping"};
  }
  return {};
}

namespace {

// Whether another copy's table has `entry` set: tables only ever grow, so a copy built before an
// entry was appended has a `size` that stops short of it.
template <typename Entry>
bool Has(const gpuprof_session_v1* table, Entry gpuprof_session_v1::*entry) {
  static const gpuprof_session_v1 probe{};
  const auto end = static_cast<std::size_t>(reinterpret_cast<const char*>(&(probe.*entry)) -
                                            reinterpret_cast<const char*>(&probe)) +
                   sizeof(Entry);
  return table->size >= end && table->*entry != nullptr;
}

CallResult OlderCopy(std::string_view what = "takes no framework records") {
  return {GPUPROF_ERROR_INTERNAL,
          "the running session belongs to an older copy of libgpuprof.so that " + std::string(what)};
}

// Calls another copy's `entry` with `record`, or says that copy is too old to have it.
template <typename Arg>
CallResult ForwardRecord(const gpuprof_session_v1* table, int (*gpuprof_session_v1::*entry)(const Arg*),
                         const Arg& record) {
  if (!Has(table, entry)) return OlderCopy();
  return Forwarded(table, (table->*entry)(&record));
}

std::string TextOrEmpty(const char* text) { return text != nullptr ? std::string(text) : std::string(); }

// getpid() is a system call on glibc 2.36 (no cache): framework records, one per torch op and
// allocator event, take the pid from here instead, refreshed in every fork child.
std::atomic<std::uint32_t> g_record_pid{0};
void RefreshRecordPid() noexcept {
  g_record_pid.store(static_cast<std::uint32_t>(getpid()), std::memory_order_relaxed);
}
std::uint32_t RecordPid() noexcept {
  static const bool armed = [] {
    RefreshRecordPid();
    return pthread_atfork(nullptr, nullptr, &RefreshRecordPid) == 0;
  }();
  if (!armed) return static_cast<std::uint32_t>(getpid());  // no fork handler: ask every time
  return g_record_pid.load(std::memory_order_relaxed);
}

// A window's errors: FailedPrecondition is the session's state (NOT_STARTED), the rest the window
// DB's file (OUTPUT).
CallResult FromWindowStatus(const Status& status) {
  if (status.ok() || status.code() == StatusCode::kFailedPrecondition) return FromStatus(status);
  return {GPUPROF_ERROR_OUTPUT, status.message()};
}

}  // namespace

CallResult ProcessSession::WindowBegin(const char* out_dir) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (const gpuprof_session_v1* table = target.attached; table != nullptr) {
    if (!Has(table, &gpuprof_session_v1::window_begin)) return OlderCopy("writes no window DB");
    return Forwarded(table, table->window_begin(out_dir));
  }
  return FromWindowStatus(target.session->WindowBegin(out_dir));
}

CallResult ProcessSession::WindowEnd() {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (const gpuprof_session_v1* table = target.attached; table != nullptr) {
    if (!Has(table, &gpuprof_session_v1::window_end)) return OlderCopy("writes no window DB");
    return Forwarded(table, table->window_end());
  }
  return FromWindowStatus(target.session->WindowEnd());
}

CallResult ProcessSession::WindowDb(char* path, std::size_t path_size) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (const gpuprof_session_v1* table = target.attached; table != nullptr) {
    if (!Has(table, &gpuprof_session_v1::window_db)) return OlderCopy("writes no window DB");
    return Forwarded(table, table->window_db(path, path_size));
  }
  StatusOr<std::string> written = target.session->WindowDb();
  if (!written.ok()) return FromWindowStatus(written.status());
  if (written->size() + 1 > path_size) {
    return {GPUPROF_ERROR_INVALID_ARGUMENT, "the window DB " + *written + " does not fit in path_size " +
                                                std::to_string(path_size) + " bytes"};
  }
  std::memcpy(path, written->c_str(), written->size() + 1);
  return {};
}

CallResult ProcessSession::DeviceCorrelation(gpuprof_device_correlation_v1* out) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (target.attached != nullptr) {
    const gpuprof_session_v1* table = target.attached;
    if (!Has(table, &gpuprof_session_v1::get_device_correlation)) {
      return {
          GPUPROF_ERROR_NOT_STARTED,
          "the running session belongs to an older copy of libgpuprof.so that cannot tag device work; its "
          "ops are linked to kernels by time instead"};
    }
    return Forwarded(table, table->get_device_correlation(out));
  }
  const DeviceCollector::CorrelationFunctions functions = target.session->DeviceCorrelation();
  if (functions.push == nullptr || functions.pop == nullptr) {
    return {GPUPROF_ERROR_NOT_STARTED, "the session collects no device activity: there is nothing to tag"};
  }
  out->push = functions.push;
  out->pop = functions.pop;
  return {};
}

CallResult ProcessSession::ConfigureReplaySettings(std::span<const NamedSetting> named,
                                                   const ForwardReplay& forward) {
  // Parsed on top of the replay settings this process started with (those of the session this
  // copy runs; the declared defaults otherwise, so a bad value is refused before any session).
  const std::shared_ptr<Session> own = current();
  StatusOr<ReplaySettings> settings =
      ProgramReplaySettings(own != nullptr ? own->config() : SessionConfig(), named);
  // Each setting was checked by its row; the collector expands them once (ReplayOptionsFrom), and the
  // controller's Reconfigure holds the engine's own invariants.
  if (!settings.ok()) return FromStatus(settings.status());

  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (target.attached != nullptr) return forward(target.attached);
  return FromStatus(target.session->ConfigureReplay(*settings));
}

CallResult ProcessSession::ConfigureReplaySettings(const char* const* keys, const char* const* values,
                                                   std::size_t count) {
  std::vector<NamedSetting> named;
  named.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (keys[i] == nullptr || values[i] == nullptr) {
      return {GPUPROF_ERROR_INVALID_ARGUMENT,
              "keys[" + std::to_string(i) + "] or values[" + std::to_string(i) + "] is NULL"};
    }
    const std::size_t value_length = strnlen(values[i], GPUPROF_MAX_MESSAGE_BYTES);
    if (value_length == GPUPROF_MAX_MESSAGE_BYTES) {
      return {GPUPROF_ERROR_INVALID_ARGUMENT, "values[" + std::to_string(i) + "] is longer than " +
                                                  std::to_string(GPUPROF_MAX_MESSAGE_BYTES - 1) + " bytes"};
    }
    named.push_back({{keys[i], strnlen(keys[i], GPUPROF_MAX_MESSAGE_BYTES)}, {values[i], value_length}});
  }
  return ConfigureReplaySettings(named, [&](const gpuprof_session_v1* table) -> CallResult {
    if (!Has(table, &gpuprof_session_v1::configure_replay_settings))
      return OlderCopy("cannot configure replay by setting names");
    return Forwarded(table, table->configure_replay_settings(keys, values, count));
  });
}

CallResult ProcessSession::ConfigureReplay(const gpuprof_replay_config_v1& config) {
  // The first C API of program-chosen replay: its fields become the settings they always stood for,
  // and go the one way settings by name go. A field the caller's size stops short of is not named,
  // so the process's own value (the declared default, or the command line's) applies.
  const auto covers = [&](const auto gpuprof_replay_config_v1::*field) {
    static const gpuprof_replay_config_v1 probe{};
    const auto end = static_cast<std::size_t>(reinterpret_cast<const char*>(&(probe.*field)) -
                                              reinterpret_cast<const char*>(&probe)) +
                     sizeof(probe.*field);
    return config.size >= end;
  };
  static_assert(offsetof(gpuprof_replay_config_v1, printf_kernels) == 48,
                "the C2 fields start after the 48 bytes of the first struct (its padding is `reserved`)");
  static_assert(offsetof(gpuprof_replay_config_v1, metrics) == 64, "the counter fields follow reserved2");
  static_assert(offsetof(gpuprof_replay_config_v1, clock_control) == 88, "clock_control follows set");
  const auto flag = [](std::uint32_t value) { return std::string(value != 0 ? "1" : "0"); };
  const auto text = [](const char* value) {
    return value != nullptr ? std::string(value, strnlen(value, GPUPROF_MAX_MESSAGE_BYTES)) : std::string();
  };
  std::vector<std::pair<std::string, std::string>> fields = {
      {"replay_passes", std::to_string(config.passes)},
      {"replay_kernel", text(config.kernel)},
      {"replay_skip", std::to_string(config.skip)},
      {"replay_count", std::to_string(config.count)},
      {"replay_cache_control", config.flush_l2 != 0 ? "all" : "none"},
      {"replay_restore", config.restore_full == 1   ? "full"
                         : config.restore_full == 2 ? "exact"
                                                    : "auto"},
      {"replay_strict", flag(config.strict)}};
  if (covers(&gpuprof_replay_config_v1::with_live_arrays)) {
    fields.insert(fields.end(), {{"replay_printf_kernels", flag(config.printf_kernels)},
                                 {"replay_malloc_kernels", flag(config.malloc_kernels)},
                                 {"replay_with_live_arrays", flag(config.with_live_arrays)}});
  }
  if (covers(&gpuprof_replay_config_v1::set)) {
    const std::string set = text(config.set);
    fields.insert(fields.end(), {{"replay_metrics", text(config.metrics)},
                                 {"replay_section", text(config.section)},
                                 {"replay_set", set.empty() ? "none" : set}});
  }
  if (covers(&gpuprof_replay_config_v1::clock_control) && !text(config.clock_control).empty())
    fields.emplace_back("replay_clock_control", text(config.clock_control));
  if (config.kernel != nullptr &&
      strnlen(config.kernel, GPUPROF_MAX_MESSAGE_BYTES) == GPUPROF_MAX_MESSAGE_BYTES) {
    return {GPUPROF_ERROR_INVALID_ARGUMENT,
            "kernel is longer than " + std::to_string(GPUPROF_MAX_MESSAGE_BYTES - 1) + " bytes"};
  }
  std::vector<NamedSetting> named;
  for (const auto& [key, value] : fields) named.push_back({key, value});
  return ConfigureReplaySettings(named, [&](const gpuprof_session_v1* table) -> CallResult {
    if (!Has(table, &gpuprof_session_v1::configure_replay)) {
      return {GPUPROF_ERROR_NOT_STARTED,
              "the running session belongs to an older copy of libgpuprof.so that cannot configure replay"};
    }
    return Forwarded(table, table->configure_replay(&config));
  });
}

CallResult ProcessSession::ReplayStepBoundary() {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (const gpuprof_session_v1* table = target.attached; table != nullptr) {
    if (!Has(table, &gpuprof_session_v1::replay_step_boundary)) return OlderCopy("has no range replay");
    return Forwarded(table, table->replay_step_boundary());
  }
  target.session->ReplayStepBoundary();
  return {};
}

CallResult ProcessSession::RecordTorchOp(const gpuprof_torch_op_v1& op) {
  trace::TorchOp record;
  record.start_ns = op.start_ns;
  record.end_ns = op.end_ns;
  record.pid = RecordPid();
  record.tid = op.tid;
  record.name = op.name;
  record.sequence_number = op.sequence_number;
  record.fwd_thread_id = op.fwd_thread_id;
  record.input_dtypes = TextOrEmpty(op.input_dtypes);
  record.input_shapes = TextOrEmpty(op.input_shapes);
  for (std::uint32_t i = 0; op.call_stack != nullptr && i < op.call_stack_depth; ++i) {
    record.call_stack.push_back(TextOrEmpty(op.call_stack[i]));
  }
  if (op.correlation_ids != nullptr) {
    record.correlation_ids.assign(op.correlation_ids, op.correlation_ids + op.correlation_count);
  }
  if (op.size >= offsetof(gpuprof_torch_op_v1, external_id) + sizeof(op.external_id)) {
    record.external_id = op.external_id;
  }
  record.type = static_cast<trace::TorchOp::Type>(op.type);
  return Record(std::move(record), [&op](const gpuprof_session_v1* table) {
    return ForwardRecord(table, &gpuprof_session_v1::record_torch_op, op);
  });
}

CallResult ProcessSession::RecordAllocatorEvent(const gpuprof_allocator_event_v1& event) {
  trace::AllocatorEvent record;
  record.time_ns = event.time_ns;
  record.device = event.device;
  record.pid = RecordPid();
  record.tid = event.tid;
  record.ptr = event.ptr;
  record.bytes = event.bytes;
  record.action = static_cast<trace::AllocatorEvent::Action>(event.action);
  record.total_allocated = event.total_allocated;
  record.total_reserved = event.total_reserved;
  if (event.total_active >= 0) record.total_active = static_cast<std::uint64_t>(event.total_active);
  record.stream_ptr = event.stream_ptr;
  if (event.component != nullptr && *event.component != '\0') record.component = event.component;
  return Record(std::move(record), [&event](const gpuprof_session_v1* table) {
    return ForwardRecord(table, &gpuprof_session_v1::record_allocator_event, event);
  });
}

CallResult ProcessSession::RecordGcEvent(const gpuprof_gc_event_v1& event) {
  trace::GcEvent record;
  record.start_ns = event.start_ns;
  record.end_ns = event.end_ns;
  record.pid = RecordPid();
  return Record(std::move(record), [&event](const gpuprof_session_v1* table) {
    return ForwardRecord(table, &gpuprof_session_v1::record_gc_event, event);
  });
}

CallResult ProcessSession::RecordRange(const gpuprof_range_v1& range) {
  trace::Mark record;
  record.type = trace::Mark::Type::kStartEnd;
  record.start_ns = range.start_ns;
  record.end_ns = range.end_ns;
  record.pid = RecordPid();
  record.tid = range.tid != 0 ? range.tid : static_cast<std::uint32_t>(gettid());
  record.end_tid = record.tid;
  record.range_id = NewRangeId();
  record.domain = range.domain;
  record.message = range.message;
  return Record(std::move(record), [&range](const gpuprof_session_v1* table) -> CallResult {
    if (!Has(table, &gpuprof_session_v1::record_range)) return OlderCopy();
    return Forwarded(table, table->record_range(&range));
  });
}

CallResult ProcessSession::NameThread(std::uint32_t tid, const char* name) {
  trace::ThreadName record;
  record.tid = tid;
  record.name = name;
  return Record(std::move(record), [&](const gpuprof_session_v1* table) -> CallResult {
    if (!Has(table, &gpuprof_session_v1::name_thread)) return OlderCopy();
    return Forwarded(table, table->name_thread(tid, name));
  });
}

CallResult ProcessSession::RangeStart(const char* message, std::uint64_t* range_id) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  const std::shared_ptr<Session>& session = target.session;
  const gpuprof_session_v1* attached = target.attached;
  if (attached != nullptr) return Forwarded(attached, attached->range_start(message, range_id));
  StatusOr<std::uint64_t> id = session->RangeStart(message);
  if (!id.ok()) return FromStatus(id.status());
  *range_id = *id;
  return {};
}

namespace {
std::string_view DomainOf(const gpuprof_mstx_v1& mstx) {
  return mstx.domain != nullptr && mstx.domain[0] != '\0' ? std::string_view(mstx.domain) : "default";
}
}  // namespace

CallResult ProcessSession::MarkV1(const gpuprof_mstx_v1& mark) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (const gpuprof_session_v1* attached = target.attached; attached != nullptr) {
    if (!Has(attached, &gpuprof_session_v1::mark_v1)) return OlderCopy("takes no mstx domains");
    return Forwarded(attached, attached->mark_v1(&mark));
  }
  return FromStatus(target.session->Mark(mark.message, DomainOf(mark)));
}

CallResult ProcessSession::RangeStartV1(const gpuprof_mstx_v1& range, std::uint64_t* range_id) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  if (const gpuprof_session_v1* attached = target.attached; attached != nullptr) {
    if (!Has(attached, &gpuprof_session_v1::range_start_v1)) return OlderCopy("takes no mstx domains");
    return Forwarded(attached, attached->range_start_v1(&range, range_id));
  }
  Session::RangeOptions options;
  options.domain = DomainOf(range);
  options.device = (range.flags & (GPUPROF_MSTX_DEVICE | GPUPROF_MSTX_STREAM)) != 0;
  if ((range.flags & GPUPROF_MSTX_STREAM) != 0) options.stream = range.stream;
  StatusOr<std::uint64_t> id = target.session->RangeStart(range.message, options);
  if (!id.ok()) return FromStatus(id.status());
  *range_id = *id;
  return {};
}

CallResult ProcessSession::RangeEnd(std::uint64_t range_id) {
  Target target;
  if (CallResult running = Running(&target); !running.ok()) return running;
  const std::shared_ptr<Session>& session = target.session;
  const gpuprof_session_v1* attached = target.attached;
  if (attached != nullptr) return Forwarded(attached, attached->range_end(range_id));
  return FromStatus(session->RangeEnd(range_id));
}

}  // namespace gpuprof::session
