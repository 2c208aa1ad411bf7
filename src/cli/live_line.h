// Progress on a terminal: one line, redrawn by its own thread while long work runs (--progress).
//
//   ProgressCounter counter;                                  // a base::Progress for the db layer
//   LiveLine line(STDERR_FILENO, LiveLine::Wanted(setting), LinePlace::kInPlace, "gpuprof stats",
//                 [&] { return counter.Text(); });
//   db::ComputeStats(reader, {top, &counter});
//   line.Stop();                                              // erased before anything is printed
//
// The line shows only where `fd` is a terminal (and TERM is not "dumb"), and only once the work
// has taken longer than `delay`, so short commands and pipes get nothing. It reads
// "<prefix>: <text>, <elapsed>", cut to the terminal's width, control bytes shown as '?'.
//   kInPlace: the line is the cursor's line ("\r", erase); for work that prints nothing meanwhile.
//   kBottomRow: the terminal's last row, kept out of the scroll region, so the output of a program
//     running meanwhile (`gpuprof run`'s application) scrolls above it (as apt shows its progress).
//     Stop gives the row back. A gpuprof killed with SIGKILL leaves the region set: `reset` fixes it.
//
// Thread-safety: Stop and the destructor from the thread that made the line; `text` runs on the
// line's thread. ProgressCounter: Stage/Advance from one working thread, Text from any.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "base/progress.h"

namespace gpuprof::cli {

enum class LinePlace : std::uint8_t { kInPlace, kBottomRow };

class LiveLine {
 public:
  static constexpr std::chrono::milliseconds kDefaultDelay{1000};
  static constexpr std::chrono::milliseconds kTick{200};

  // Whether the --progress value asks for a line on `fd`: "auto" and `fd` is a terminal whose
  // TERM is set and not "dumb".
  static bool Wanted(std::string_view setting, int fd);

  // Starts the line's thread when `enabled`; otherwise does nothing at all.
  LiveLine(int fd, bool enabled, LinePlace place, std::string prefix, std::function<std::string()> text,
           std::chrono::milliseconds delay = kDefaultDelay);
  ~LiveLine() { Stop(); }
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;

  // Joins the thread and erases the line (for kBottomRow, resets the scroll region). Idempotent.
  void Stop();
  // Whether the line was drawn at least once (for tests).
  bool drawn() const noexcept { return drawn_.load(std::memory_order_acquire); }

 private:
  void Loop();
  void Draw(const std::string& line);
  void Erase();
  void Write(const std::string& bytes) const;

  int fd_;
  LinePlace place_;
  std::string prefix_;
  std::function<std::string()> text_;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
  std::atomic<bool> drawn_{false};
  int region_rows_ = 0;  // kBottomRow: the terminal's rows when the region was set; 0: not set
};

// A base::Progress for a live line: "<context>: <stage>, <n> rows" (the context once set, the rows
// once counted).
class ProgressCounter final : public base::Progress {
 public:
  // What the stages belong to ("DB 2 of 3"); empty: nothing.
  explicit ProgressCounter(std::string context = "") : context_(std::move(context)) {}
  void Stage(std::string_view what) override;
  void Advance(std::uint64_t units) override { rows_.fetch_add(units, std::memory_order_relaxed); }
  std::string Text() const;

 private:
  const std::string context_;
  mutable std::mutex mu_;
  std::string stage_;  // guarded by mu_
  std::atomic<std::uint64_t> rows_{0};
};

// The live line of work in this process that prints nothing meanwhile (stats, export, check), on
// stderr, showing `counter`; erased when the object goes.
class WorkProgress {
 public:
  WorkProgress(std::string_view setting, std::string prefix, std::string context = "")
      : counter_(std::move(context)),
        line_(kFd, LiveLine::Wanted(setting, kFd), LinePlace::kInPlace, std::move(prefix),
              [this] { return counter_.Text(); }) {}
  base::Progress* progress() noexcept { return &counter_; }

 private:
  static constexpr int kFd = 2;  // stderr
  ProgressCounter counter_;      // before line_: the line's thread reads it
  LiveLine line_;
};

// 1234567 as "1,234,567".
std::string GroupedNumber(std::uint64_t value);

}  // namespace gpuprof::cli
