#include "cli/live_line.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

namespace gpuprof::cli {
namespace {

// The terminal's size, or {0, 0} when `fd` has none.
struct TerminalSize {
  int rows = 0;
  int columns = 0;
};

TerminalSize SizeOf(int fd) {
  winsize size{};
  if (::ioctl(fd, TIOCGWINSZ, &size) != 0) return {};
  return {size.ws_row, size.ws_col};
}

std::string Elapsed(std::chrono::steady_clock::duration elapsed) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
  if (seconds < 60) return std::to_string(seconds) + " s";
  const auto rest = seconds % 60;
  return std::to_string(seconds / 60) + " min " + (rest < 10 ? "0" : "") + std::to_string(rest) + " s";
}

// `text` with control bytes as '?', cut to `columns` characters (UTF-8 sequences kept whole).
std::string Fitted(std::string_view text, int columns) {
  std::string out;
  int shown = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const bool continuation = (byte & 0xC0) == 0x80;
    if (!continuation) {
      if (shown >= columns) break;
      ++shown;
    }
    out.push_back(byte < 0x20 || byte == 0x7F ? '?' : static_cast<char>(byte));
  }
  return out;
}

}  // namespace

bool LiveLine::Wanted(std::string_view setting, int fd) {
  if (setting != "auto" || ::isatty(fd) != 1) return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && *term != '\0' && std::string_view(term) != "dumb";
}

LiveLine::LiveLine(int fd, bool enabled, LinePlace place, std::string prefix,
                   std::function<std::string()> text, std::chrono::milliseconds delay)
    : fd_(fd),
      place_(place),
      prefix_(std::move(prefix)),
      text_(std::move(text)),
      delay_(delay),
      start_(std::chrono::steady_clock::now()) {
  if (!enabled) return;
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error&) {
    // No thread, no line: progress is cosmetic and never stops the work.
  }
}

void LiveLine::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (drawn()) Erase();
}

void LiveLine::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, delay_, [&] { return stop_; })) return;
  std::string last;
  while (true) {
    lock.unlock();
    std::string line = prefix_ + ": ";
    try {
      line += text_();
    } catch (const std::exception&) {
      line += "working";
    }
    line += ", " + Elapsed(std::chrono::steady_clock::now() - start_);
    if (line != last) {
      Draw(line);
      last = std::move(line);
    }
    lock.lock();
    if (cv_.wait_for(lock, kTick, [&] { return stop_; })) return;
  }
}

void LiveLine::Write(const std::string& bytes) const {
  // One write() per update: the terminal gets it whole, between the application's own writes.
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a terminal gone away: nothing to show on
    done += static_cast<std::size_t>(n);
  }
}

void LiveLine::Draw(const std::string& line) {
  const TerminalSize size = SizeOf(fd_);
  const int columns = size.columns > 1 ? size.columns - 1 : 79;  // never the last column: no wrap
  if (place_ == LinePlace::kInPlace) {
    Write("\r\x1b[2K" + Fitted(line, columns));
    drawn_.store(true, std::memory_order_release);
    return;
  }
  if (size.rows < 3) return;  // no room to keep a row apart
  std::string bytes;
  if (size.rows != region_rows_) {
    // A new line below the cursor (scrolling the screen up when it is at the bottom), then the
    // scroll region above the last row, and the cursor back inside the region.
    bytes +=
        "\n\x1b"
        "7\x1b[1;" +
        std::to_string(size.rows - 1) +
        "r\x1b"
        "8\x1b[1A";
    region_rows_ = size.rows;
  }
  bytes +=
      "\x1b"
      "7\x1b[" +
      std::to_string(size.rows) + ";1H\x1b[2K" + Fitted(line, columns) +
      "\x1b"
      "8";
  Write(bytes);
  drawn_.store(true, std::memory_order_release);
}

void LiveLine::Erase() {
  if (place_ == LinePlace::kInPlace) {
    Write("\r\x1b[2K");
    return;
  }
  if (region_rows_ == 0) return;
  // The whole screen scrolls again; the last row is cleared; the cursor stays where the output is.
  Write(
      "\x1b"
      "7\x1b[r\x1b[" +
      std::to_string(region_rows_) +
      ";1H\x1b[2K\x1b"
      "8");
  region_rows_ = 0;
}

void ProgressCounter::Stage(std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  stage_ = std::string(what);
  rows_.store(0, std::memory_order_relaxed);
}

std::string ProgressCounter::Text() const {
  std::string text = context_.empty() ? "" : context_ + ": ";
  {
    std::lock_guard<std::mutex> lock(mu_);
    text += stage_.empty() ? std::string("starting") : stage_;
  }
  const std::uint64_t rows = rows_.load(std::memory_order_relaxed);
  if (rows > 0) text += ", " + GroupedNumber(rows) + " rows";
  return text;
}

std::string GroupedNumber(std::uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace gpuprof::cli
