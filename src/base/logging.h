// Logging: one prefix ("[gpuprof] warning: "), one sink (stderr), level from GPUPROF_LOG_LEVEL.
//
//   GPUPROF_LOG(kWarning) << "replay declined for " << name << ": " << reason;
//
// GPUPROF_LOG_LEVEL is one of error, warning (default), info, debug, or off. The level is read
// once, on first use. Messages below the level cost one relaxed load and are not formatted.
// Thread-safe: each message is written with one call so lines never interleave. Tests may
// install a capturing sink with ScopedLogCapture.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace gpuprof::base {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

std::string_view LogLevelName(LogLevel level) noexcept;

// Parses "debug", "info", "warning"/"warn", "error", "off" (case-insensitive). Unknown text
// yields `fallback`.
LogLevel ParseLogLevel(std::string_view text, LogLevel fallback) noexcept;

// The active minimum level (from GPUPROF_LOG_LEVEL on first call, or SetLogLevel).
LogLevel CurrentLogLevel() noexcept;
void SetLogLevel(LogLevel level) noexcept;
inline bool LogEnabled(LogLevel level) noexcept { return level >= CurrentLogLevel(); }

// Writes one finished line to the sink: "[gpuprof] warning: text", or, while the level is debug,
// "[gpuprof] W file.cc:12] text" (source locations are for developers, never in a user's warning).
void EmitLogLine(LogLevel level, std::string_view file, int line, std::string_view text) noexcept;

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line) : level_(level), file_(file), line_(line) {}
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage() { EmitLogLine(level_, file_, line_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Captures every emitted line (regardless of the level filter's sink) for the lifetime of the
// object, for tests that assert a warning was printed once. Lines are still filtered by level.
class ScopedLogCapture {
 public:
  ScopedLogCapture();
  ~ScopedLogCapture();
  ScopedLogCapture(const ScopedLogCapture&) = delete;
  ScopedLogCapture& operator=(const ScopedLogCapture&) = delete;

  std::vector<std::string> lines() const;
  // Number of captured lines containing `needle`.
  int Count(std::string_view needle) const;

 private:
  friend void EmitLogLine(LogLevel, std::string_view, int, std::string_view) noexcept;
  void Append(std::string line);
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
  ScopedLogCapture* previous_;
};

}  // namespace gpuprof::base

#define GPUPROF_LOG(level)                                              \
  if (!::gpuprof::base::LogEnabled(::gpuprof::base::LogLevel::level)) { \
  } else                                                                \
    ::gpuprof::base::LogMessage(::gpuprof::base::LogLevel::level, __FILE__, __LINE__).stream()
