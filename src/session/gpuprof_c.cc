// The extern "C" entry points of gpuprof_c.h: each validates its arguments, delegates to
// ProcessSession and turns the result into a status code plus one error line that names the call
// and its arguments. Nothing escapes: every body runs under a catch-all.
#include "gpuprof/gpuprof_c.h"

#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "base/logging.h"
#include "base/settings.h"
#include "db/output_layout.h"
#include "session/config.h"
#include "session/process.h"
#include "session/session.h"

namespace gpuprof::session {
namespace {

thread_local std::string t_last_error;
// Set when the error line itself could not be stored (out of memory).
thread_local const char* t_static_error = nullptr;

// The first bytes of a message, quoted, for an error line.
std::string Excerpt(const char* message) {
  if (message == nullptr) return "NULL";
  constexpr std::size_t kMax = 48;
  const std::size_t n = strnlen(message, kMax + 1);
  std::string text = JsonQuote(std::string_view(message, n > kMax ? kMax : n));
  if (n > kMax) text += "...";
  return text;
}

// Runs `body` (returning CallResult); stores "<call>: <reason>" for gpuprof_last_error on failure.
template <typename Context, typename Body>
int Run(Context&& context, Body&& body) noexcept {
  t_static_error = nullptr;
  try {
    t_last_error.clear();
    CallResult result = body();
    if (!result.ok()) t_last_error = context() + ": " + result.message;
    return result.code;
  } catch (const std::bad_alloc&) {
    t_static_error = "gpuprof: out of memory";
  } catch (const std::exception& e) {
    try {
      t_last_error = context() + ": internal error: " + e.what();
    } catch (...) {
      t_static_error = "gpuprof: internal error";
    }
  } catch (...) {
    t_static_error = "gpuprof: internal error";
  }
  return GPUPROF_ERROR_INTERNAL;
}

CallResult CheckMessage(const char* message) {
  if (message == nullptr) return {GPUPROF_ERROR_INVALID_ARGUMENT, "message is NULL"};
  if (message[0] == '\0') return {GPUPROF_ERROR_INVALID_ARGUMENT, "message is empty"};
  if (strnlen(message, GPUPROF_MAX_MESSAGE_BYTES + 1) > GPUPROF_MAX_MESSAGE_BYTES) {
    return {GPUPROF_ERROR_INVALID_ARGUMENT, "message is longer than GPUPROF_MAX_MESSAGE_BYTES (" +
                                                std::to_string(GPUPROF_MAX_MESSAGE_BYTES) + ")"};
  }
  return {};
}

// A start that fails leaves the program unprofiled. The injection library ignores the code (it has
// nothing to add): for it (`log`), the warning is ours. An API caller reports gpuprof_last_error()
// itself (the Python package warns once), so a second line here would repeat it.
void NoteStartFailure(int code, bool log) noexcept {
  if (code == GPUPROF_OK) return;
  try {
    const std::string message = t_static_error != nullptr ? std::string(t_static_error) : t_last_error;
    if (log) {
      GPUPROF_LOG(kWarning) << "profiling is off for pid " << getpid() << ": " << message;
    }
    // Under `gpuprof run`, its last line names this failure instead of guessing. The variable is
    // read directly: a start can fail before (or because) the configuration parses.
    const char* result_file = std::getenv(std::string(base::Spec(base::SettingId::kResultFile).env).c_str());
    if (result_file != nullptr && result_file[0] == '/') {
      AppendResultLine(result_file, db::kResultLineFailed, "pid " + std::to_string(getpid()) + ": " + message)
          .IgnoreError();
    }
  } catch (...) {
  }
}

}  // namespace
}  // namespace gpuprof::session

using gpuprof::session::CallResult;
using gpuprof::session::CheckMessage;
using gpuprof::session::Excerpt;
using gpuprof::session::ProcessSession;
using gpuprof::session::Run;

namespace {

// Shared checks of a framework record struct: non-null, a size that covers the fields read.
template <typename T>
gpuprof::session::CallResult CheckRecord(const T* record, std::size_t needed, const char* type) {
  if (record == nullptr) return {GPUPROF_ERROR_INVALID_ARGUMENT, std::string(type) + " is NULL"};
  if (record->size < needed) {
    return {GPUPROF_ERROR_INVALID_ARGUMENT, std::string(type) + ".size is " + std::to_string(record->size) +
                                                ", smaller than the fields it must hold (" +
                                                std::to_string(needed) + " bytes): set it to sizeof(" + type +
                                                ")"};
  }
  return {};
}

gpuprof::session::CallResult CheckTimes(std::int64_t start_ns, std::int64_t end_ns) {
  if (start_ns <= 0) return {GPUPROF_ERROR_INVALID_ARGUMENT, "start_ns must be Unix-epoch nanoseconds (> 0)"};
  if (end_ns < start_ns) {
    return {GPUPROF_ERROR_INVALID_ARGUMENT,
            "end_ns " + std::to_string(end_ns) + " is before start_ns " + std::to_string(start_ns)};
  }
  return {};
}

}  // namespace

extern "C" {

GPUPROF_API int gpuprof_start(const char* config_json_or_null) noexcept {
  const int code = Run(
      [&] {
        return std::string("gpuprof_start(") +
               (config_json_or_null == nullptr ? "NULL" : Excerpt(config_json_or_null)) + ")";
      },
      [&] { return ProcessSession::Get().Start(config_json_or_null, "api"); });
  gpuprof::session::NoteStartFailure(code, /*log=*/false);
  return code;
}

GPUPROF_API int gpuprof_start_from_environment(void) noexcept {
  const int code = Run([] { return std::string("gpuprof_start_from_environment()"); },
                       [] { return ProcessSession::Get().Start(nullptr, "injection"); });
  gpuprof::session::NoteStartFailure(code, /*log=*/true);
  return code;
}

GPUPROF_API int gpuprof_stop(void) noexcept {
  return Run([] { return std::string("gpuprof_stop()"); }, [] { return ProcessSession::Get().Stop(); });
}

GPUPROF_API int gpuprof_flush(void) noexcept {
  return Run([] { return std::string("gpuprof_flush()"); }, [] { return ProcessSession::Get().Flush(); });
}

GPUPROF_API int gpuprof_window_begin_v1(const char* out_dir) noexcept {
  return Run([&] { return "gpuprof_window_begin_v1(" + Excerpt(out_dir) + ")"; },
             [&] {
               if (out_dir == nullptr || *out_dir == '\0')
                 return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "out_dir is NULL or empty"};
               return ProcessSession::Get().WindowBegin(out_dir);
             });
}

GPUPROF_API int gpuprof_window_end_v1(void) noexcept {
  return Run([] { return std::string("gpuprof_window_end_v1()"); },
             [] { return ProcessSession::Get().WindowEnd(); });
}

GPUPROF_API int gpuprof_window_db_v1(char* path, size_t path_size) noexcept {
  return Run([] { return std::string("gpuprof_window_db_v1()"); },
             [&] {
               if (path == nullptr || path_size == 0)
                 return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "path is NULL or path_size is 0"};
               return ProcessSession::Get().WindowDb(path, path_size);
             });
}

GPUPROF_API int gpuprof_add_signal_stop_hook_v1(void (*hook)(void)) noexcept {
  return Run([] { return std::string("gpuprof_add_signal_stop_hook_v1()"); },
             [&] { return ProcessSession::Get().AddSignalStopHook(hook); });
}

GPUPROF_API int gpuprof_mark(const char* message) noexcept {
  return Run([&] { return "gpuprof_mark(message=" + Excerpt(message) + ")"; },
             [&] {
               if (CallResult bad = CheckMessage(message); !bad.ok()) return bad;
               return ProcessSession::Get().Mark(message);
             });
}

GPUPROF_API int gpuprof_range_start(const char* message, uint64_t* range_id) noexcept {
  return Run([&] { return "gpuprof_range_start(message=" + Excerpt(message) + ")"; },
             [&] {
               if (CallResult bad = CheckMessage(message); !bad.ok()) return bad;
               if (range_id == nullptr) return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "range_id is NULL"};
               *range_id = 0;
               return ProcessSession::Get().RangeStart(message, range_id);
             });
}

namespace {

// gpuprof_mstx_v1's checks: the struct, its message and domain, and flags a marker or range takes.
CallResult CheckMstx(const gpuprof_mstx_v1* mstx, std::uint32_t allowed_flags) {
  if (auto bad =
          CheckRecord(mstx, offsetof(gpuprof_mstx_v1, stream) + sizeof(std::uint64_t), "gpuprof_mstx_v1");
      !bad.ok()) {
    return bad;
  }
  if (CallResult bad = CheckMessage(mstx->message); !bad.ok()) return bad;
  if (mstx->domain != nullptr && mstx->domain[0] != '\0') {
    if (CallResult bad = CheckMessage(mstx->domain); !bad.ok()) {
      bad.message = "domain: " + bad.message;
      return bad;
    }
  }
  if ((mstx->flags & ~allowed_flags) != 0) {
    return {GPUPROF_ERROR_INVALID_ARGUMENT,
            "flags " + std::to_string(mstx->flags) +
                (allowed_flags == 0 ? ": a marker takes none"
                                    : ": only GPUPROF_MSTX_DEVICE and GPUPROF_MSTX_STREAM")};
  }
  return {};
}

}  // namespace

GPUPROF_API int gpuprof_mark_v1(const gpuprof_mstx_v1* mark) noexcept {
  return Run(
      [&] { return "gpuprof_mark_v1(message=" + Excerpt(mark != nullptr ? mark->message : nullptr) + ")"; },
      [&] {
        if (CallResult bad = CheckMstx(mark, 0); !bad.ok()) return bad;
        return ProcessSession::Get().MarkV1(*mark);
      });
}

GPUPROF_API int gpuprof_range_start_v1(const gpuprof_mstx_v1* range, uint64_t* range_id) noexcept {
  return Run(
      [&] {
        return "gpuprof_range_start_v1(message=" + Excerpt(range != nullptr ? range->message : nullptr) + ")";
      },
      [&] {
        if (CallResult bad = CheckMstx(range, GPUPROF_MSTX_DEVICE | GPUPROF_MSTX_STREAM); !bad.ok())
          return bad;
        if (range_id == nullptr) return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "range_id is NULL"};
        *range_id = 0;
        return ProcessSession::Get().RangeStartV1(*range, range_id);
      });
}

GPUPROF_API int gpuprof_get_device_correlation_v1(gpuprof_device_correlation_v1* out) noexcept {
  return Run([] { return std::string("gpuprof_get_device_correlation_v1()"); },
             [&] {
               if (out == nullptr)
                 return gpuprof::session::CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "out is NULL"};
               return ProcessSession::Get().DeviceCorrelation(out);
             });
}

GPUPROF_API int gpuprof_configure_replay_v1(const gpuprof_replay_config_v1* config) noexcept {
  constexpr std::size_t kV1Size = offsetof(gpuprof_replay_config_v1, strict) + sizeof(uint32_t);
  return Run(
      [&] {
        return config != nullptr && config->size >= kV1Size
                   ? "gpuprof_configure_replay_v1(passes=" + std::to_string(config->passes) + ")"
                   : std::string("gpuprof_configure_replay_v1()");
      },
      [&] {
        if (config == nullptr) return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "config is NULL"};
        if (config->size < kV1Size) {
          return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT,
                            "config->size is " + std::to_string(config->size) + ", below the v1 struct's " +
                                std::to_string(kV1Size)};
        }
        return ProcessSession::Get().ConfigureReplay(*config);
      });
}

GPUPROF_API int gpuprof_configure_replay_settings_v1(const char* const* keys, const char* const* values,
                                                     size_t count) noexcept {
  return Run(
      [&] {
        std::string call = "gpuprof_configure_replay_settings_v1(";
        for (size_t i = 0; keys != nullptr && i < count && i < 3; ++i)
          call += (i > 0 ? ", " : "") + Excerpt(keys[i]);
        return call + (count > 3 ? ", ...)" : ")");
      },
      [&] {
        if (count != 0 && (keys == nullptr || values == nullptr))
          return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "keys or values is NULL while count is not 0"};
        return ProcessSession::Get().ConfigureReplaySettings(keys, values, count);
      });
}

GPUPROF_API int gpuprof_replay_step_boundary_v1(void) noexcept {
  return Run([] { return std::string("gpuprof_replay_step_boundary_v1()"); },
             [] { return ProcessSession::Get().ReplayStepBoundary(); });
}

GPUPROF_API int gpuprof_record_torch_op_v1(const gpuprof_torch_op_v1* op) noexcept {
  return Run(
      [&] {
        return std::string("gpuprof_record_torch_op_v1(") +
               (op != nullptr && op->size >= offsetof(gpuprof_torch_op_v1, sequence_number) &&
                        op->name != nullptr
                    ? Excerpt(op->name)
                    : "") +
               ")";
      },
      [&] {
        if (auto bad = CheckRecord(op, offsetof(gpuprof_torch_op_v1, correlation_count) + sizeof(uint32_t),
                                   "gpuprof_torch_op_v1");
            !bad.ok()) {
          return bad;
        }
        if (op->name == nullptr || op->name[0] == '\0') {
          return gpuprof::session::CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "name is NULL or empty"};
        }
        if (auto bad = CheckTimes(op->start_ns, op->end_ns); !bad.ok()) return bad;
        if (op->type < GPUPROF_TORCH_OP || op->type > GPUPROF_TORCH_MSTX) {
          return gpuprof::session::CallResult{
              GPUPROF_ERROR_INVALID_ARGUMENT,
              "type " + std::to_string(op->type) + " is not one of GPUPROF_TORCH_OP .. GPUPROF_TORCH_MSTX"};
        }
        if (op->call_stack == nullptr && op->call_stack_depth != 0) {
          return gpuprof::session::CallResult{GPUPROF_ERROR_INVALID_ARGUMENT,
                                              "call_stack is NULL but call_stack_depth is not 0"};
        }
        if (op->correlation_ids == nullptr && op->correlation_count != 0) {
          return gpuprof::session::CallResult{GPUPROF_ERROR_INVALID_ARGUMENT,
                                              "correlation_ids is NULL but correlation_count is not 0"};
        }
        return ProcessSession::Get().RecordTorchOp(*op);
      });
}

GPUPROF_API int gpuprof_record_allocator_event_v1(const gpuprof_allocator_event_v1* event) noexcept {
  return Run([] { return std::string("gpuprof_record_allocator_event_v1()"); },
             [&] {
               if (auto bad = CheckRecord(
                       event, offsetof(gpuprof_allocator_event_v1, component) + sizeof(const char*),
                       "gpuprof_allocator_event_v1");
                   !bad.ok()) {
                 return bad;
               }
               if (event->time_ns <= 0) {
                 return gpuprof::session::CallResult{GPUPROF_ERROR_INVALID_ARGUMENT,
                                                     "time_ns must be Unix-epoch nanoseconds (> 0)"};
               }
               if (event->action > GPUPROF_ALLOC_BLOCK_FREE) {
                 return gpuprof::session::CallResult{
                     GPUPROF_ERROR_INVALID_ARGUMENT,
                     "action " + std::to_string(event->action) + " is not a GPUPROF_ALLOC_* value"};
               }
               return ProcessSession::Get().RecordAllocatorEvent(*event);
             });
}

GPUPROF_API int gpuprof_record_gc_event_v1(const gpuprof_gc_event_v1* event) noexcept {
  return Run([] { return std::string("gpuprof_record_gc_event_v1()"); },
             [&] {
               if (auto bad = CheckRecord(event, offsetof(gpuprof_gc_event_v1, end_ns) + sizeof(int64_t),
                                          "gpuprof_gc_event_v1");
                   !bad.ok()) {
                 return bad;
               }
               if (auto bad = CheckTimes(event->start_ns, event->end_ns); !bad.ok()) return bad;
               return ProcessSession::Get().RecordGcEvent(*event);
             });
}

GPUPROF_API int gpuprof_record_range_v1(const gpuprof_range_v1* range) noexcept {
  return Run([] { return std::string("gpuprof_record_range_v1()"); },
             [&] {
               if (auto bad = CheckRecord(range, offsetof(gpuprof_range_v1, message) + sizeof(const char*),
                                          "gpuprof_range_v1");
                   !bad.ok()) {
                 return bad;
               }
               if (auto bad = CheckTimes(range->start_ns, range->end_ns); !bad.ok()) return bad;
               for (const auto& [text, field] :
                    {std::pair{range->domain, "domain"}, std::pair{range->message, "message"}}) {
                 if (CallResult bad = CheckMessage(text); !bad.ok()) {
                   bad.message = std::string(field) + ": " + bad.message;
                   return bad;
                 }
               }
               return ProcessSession::Get().RecordRange(*range);
             });
}

GPUPROF_API int gpuprof_name_thread_v1(uint64_t tid, const char* name) noexcept {
  return Run(
      [&] { return "gpuprof_name_thread_v1(" + std::to_string(tid) + ", " + Excerpt(name) + ")"; },
      [&] {
        if (tid == 0 || tid > UINT32_MAX) {
          return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "tid must be an OS thread id (1 to 2^32-1)"};
        }
        if (name == nullptr || name[0] == '\0') {
          return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT, "name is NULL or empty"};
        }
        if (strnlen(name, GPUPROF_MAX_THREAD_NAME_BYTES + 1) > GPUPROF_MAX_THREAD_NAME_BYTES) {
          return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT,
                            "name is longer than GPUPROF_MAX_THREAD_NAME_BYTES (" +
                                std::to_string(GPUPROF_MAX_THREAD_NAME_BYTES) + ")"};
        }
        return ProcessSession::Get().NameThread(static_cast<std::uint32_t>(tid), name);
      });
}

GPUPROF_API int gpuprof_range_end(uint64_t range_id) noexcept {
  return Run([&] { return "gpuprof_range_end(range_id=" + std::to_string(range_id) + ")"; },
             [&] {
               if (range_id == 0) {
                 return CallResult{GPUPROF_ERROR_INVALID_ARGUMENT,
                                   "0 is never a range id (gpuprof_range_start failed?)"};
               }
               return ProcessSession::Get().RangeEnd(range_id);
             });
}

GPUPROF_API const char* gpuprof_last_error(void) noexcept {
  if (gpuprof::session::t_static_error != nullptr) return gpuprof::session::t_static_error;
  return gpuprof::session::t_last_error.c_str();
}

GPUPROF_API const char* gpuprof_status_string(int status) noexcept {
  switch (status) {
    case GPUPROF_OK: return "GPUPROF_OK";
    case GPUPROF_ERROR_INVALID_ARGUMENT: return "GPUPROF_ERROR_INVALID_ARGUMENT";
    case GPUPROF_ERROR_INVALID_CONFIG: return "GPUPROF_ERROR_INVALID_CONFIG";
    case GPUPROF_ERROR_NOT_STARTED: return "GPUPROF_ERROR_NOT_STARTED";
    case GPUPROF_ERROR_RANGE_NOT_FOUND: return "GPUPROF_ERROR_RANGE_NOT_FOUND";
    case GPUPROF_ERROR_OUTPUT: return "GPUPROF_ERROR_OUTPUT";
    case GPUPROF_ERROR_RECORD_DROPPED: return "GPUPROF_ERROR_RECORD_DROPPED";
    case GPUPROF_ERROR_FORK_CHILD: return "GPUPROF_ERROR_FORK_CHILD";
    case GPUPROF_ERROR_INTERNAL: return "GPUPROF_ERROR_INTERNAL";
    case GPUPROF_ERROR_UNAVAILABLE: return "GPUPROF_ERROR_UNAVAILABLE";
    default: return "GPUPROF_UNKNOWN_STATUS";
  }
}

GPUPROF_API const char* gpuprof_settings_json_v1(void) noexcept {
  // Built once; the table is immutable. On failure to build it (out of memory) an empty list.
  static const char* const kJson = []() noexcept -> const char* {
    try {
      return (new std::string(gpuprof::base::SettingsJson()))->c_str();  // process lifetime
    } catch (...) {
      return "[]";
    }
  }();
  return kJson;
}

GPUPROF_API int gpuprof_check_setting_v1(const char* key, const char* text, char* out,
                                         size_t out_size) noexcept {
  using gpuprof::session::CallResult;
  return gpuprof::session::Run(
      [&] { return "gpuprof_check_setting_v1(" + gpuprof::session::Excerpt(key) + ")"; },
      [&]() -> CallResult {
        if (key == nullptr || text == nullptr || out == nullptr || out_size == 0) {
          return {GPUPROF_ERROR_INVALID_ARGUMENT, "key, text and out must not be NULL, out_size not 0"};
        }
        const gpuprof::base::SettingSpec* spec = gpuprof::base::FindSettingByKey(key);
        if (spec == nullptr) return {GPUPROF_ERROR_INVALID_ARGUMENT, gpuprof::base::UnknownSettingKey(key)};
        gpuprof::StatusOr<std::string> canonical =
            gpuprof::base::ParseSettingText(*spec, text, spec->json_key);
        if (!canonical.ok()) return {GPUPROF_ERROR_INVALID_ARGUMENT, canonical.status().message()};
        if (canonical->size() + 1 > out_size)
          return {GPUPROF_ERROR_INVALID_ARGUMENT, "the value is too long"};
        std::memcpy(out, canonical->c_str(), canonical->size() + 1);
        return {};
      });
}

GPUPROF_API int gpuprof_query_metrics_v1(int device, const char* chip, char* out, size_t out_size,
                                         size_t* out_required) noexcept {
  using gpuprof::session::CallResult;
  return gpuprof::session::Run(
      [&] {
        return "gpuprof_query_metrics_v1(" + std::to_string(device) +
               (chip != nullptr && *chip != '\0' ? ", " + gpuprof::session::Excerpt(chip) : std::string()) +
               ")";
      },
      [&]() -> CallResult {
        if (out == nullptr && out_size != 0)
          return {GPUPROF_ERROR_INVALID_ARGUMENT, "out is NULL but out_size is not 0"};
        if (device < 0 && (chip == nullptr || *chip == '\0'))
          return {GPUPROF_ERROR_INVALID_ARGUMENT, "device must be >= 0 (or a chip given)"};
        gpuprof::StatusOr<std::vector<gpuprof::replay::MetricInfo>> metrics =
            gpuprof::session::QueryDeviceMetrics(device, chip == nullptr ? "" : chip);
        if (!metrics.ok()) {
          return {metrics.status().code() == gpuprof::StatusCode::kUnavailable ? GPUPROF_ERROR_UNAVAILABLE
                                                                               : GPUPROF_ERROR_INTERNAL,
                  metrics.status().message()};
        }
        const std::string json = gpuprof::session::MetricsJson(*metrics);
        if (out_required != nullptr) *out_required = json.size() + 1;
        if (json.size() + 1 > out_size) {
          return {GPUPROF_ERROR_INVALID_ARGUMENT, "out holds " + std::to_string(out_size) +
                                                      " bytes; the list needs " +
                                                      std::to_string(json.size() + 1)};
        }
        std::memcpy(out, json.c_str(), json.size() + 1);
        return {};
      });
}

GPUPROF_API const gpuprof_session_v1* gpuprof_active_session_v1(void) noexcept {
  try {
    return ProcessSession::Get().ActiveTable();
  } catch (...) {  // first use, out of memory
    return nullptr;
  }
}

}  // extern "C"
