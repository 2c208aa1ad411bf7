#include "base/logging.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace gpuprof::base {
namespace {

constexpr int kUnset = -1;
std::atomic<int> g_level{kUnset};
std::atomic<ScopedLogCapture*> g_capture{nullptr};
std::mutex g_capture_mu;  // serializes capture install/uninstall against Append

LogLevel LevelFromEnvironment() noexcept {
  const char* text = std::getenv("GPUPROF_LOG_LEVEL");
  if (text == nullptr || *text == '\0') return LogLevel::kWarning;
  LogLevel level = ParseLogLevel(text, LogLevel::kWarning);
  return level;
}

char LevelLetter(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug: return 'D';
    case LogLevel::kInfo: return 'I';
    case LogLevel::kWarning: return 'W';
    case LogLevel::kError: return 'E';
    case LogLevel::kOff: return '-';
  }
  return '?';
}

std::string_view BaseName(std::string_view path) noexcept {
  size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string_view LogLevelName(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "unknown";
}

LogLevel ParseLogLevel(std::string_view text, LogLevel fallback) noexcept {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warning" || lower == "warn") return LogLevel::kWarning;
  if (lower == "error") return LogLevel::kError;
  if (lower == "off" || lower == "none") return LogLevel::kOff;
  return fallback;
}

LogLevel CurrentLogLevel() noexcept {
  int level = g_level.load(std::memory_order_relaxed);
  if (level == kUnset) {
    level = static_cast<int>(LevelFromEnvironment());
    int expected = kUnset;
    if (!g_level.compare_exchange_strong(expected, level, std::memory_order_relaxed)) level = expected;
  }
  return static_cast<LogLevel>(level);
}

void SetLogLevel(LogLevel level) noexcept {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void EmitLogLine(LogLevel level, std::string_view file, int line, std::string_view text) noexcept {
  try {
    // A user reads "[gpuprof] warning: text"; where in gpuprof's source it came from is for the
    // developer who asked for debug output, and only then shown.
    std::string out = "[gpuprof] ";
    if (CurrentLogLevel() == LogLevel::kDebug) {
      out += LevelLetter(level);
      out += ' ';
      out += BaseName(file);
      out += ':';
      out += std::to_string(line);
      out += "] ";
    } else {
      out += LogLevelName(level);
      out += ": ";
    }
    out += text;
    if (g_capture.load(std::memory_order_acquire) != nullptr) {
      std::lock_guard<std::mutex> lock(g_capture_mu);
      if (ScopedLogCapture* capture = g_capture.load(std::memory_order_relaxed)) capture->Append(out);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stderr);
  } catch (...) {
    // Logging must never throw into a caller (callbacks are noexcept); drop the line.
  }
}

ScopedLogCapture::ScopedLogCapture() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  previous_ = g_capture.exchange(this, std::memory_order_acq_rel);
}

ScopedLogCapture::~ScopedLogCapture() {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  g_capture.store(previous_, std::memory_order_release);
}

void ScopedLogCapture::Append(std::string line) {
  std::lock_guard<std::mutex> lock(mu_);
  lines_.push_back(std::move(line));
}

std::vector<std::string> ScopedLogCapture::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

int ScopedLogCapture::Count(std::string_view needle) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
    return l.find(needle) != std::string::npos;
  }));
}

}  // namespace gpuprof::base
