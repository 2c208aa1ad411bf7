#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"

namespace gpuprof::base {
namespace {

TEST(ScopedLogCaptureTest, LinesFromManyThreadsAreCapturedWhole) {
  constexpr int kThreads = 4;
  constexpr int kLinesPerThread = 100;
  LogLevel saved = CurrentLogLevel();
  SetLogLevel(LogLevel::kInfo);
  {
    ScopedLogCapture capture;
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([t] {
        for (int i = 0; i < kLinesPerThread; ++i) {
          GPUPROF_LOG(kInfo) << "thread " << t << " line " << i << " end";
        }
      });
    }
    for (std::thread& thread : threads) thread.join();

    std::vector<std::string> lines = capture.lines();
    ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kLinesPerThread));
    for (const std::string& line : lines) {
      EXPECT_EQ(line.rfind("[gpuprof] info: ", 0), 0u) << line;
      EXPECT_EQ(line.substr(line.size() - 4), " end") << line;
    }
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(capture.Count("thread " + std::to_string(t) + " line "), kLinesPerThread);
    }
  }
  SetLogLevel(saved);
}

// Captures installed and removed while another thread logs: every line lands whole in at most one
// capture, and the sanitizer builds see no race or use-after-free on the capture pointer.
TEST(ScopedLogCaptureTest, CapturesComingAndGoingWhileAnotherThreadLogs) {
  constexpr int kLines = 500;
  LogLevel saved = CurrentLogLevel();
  SetLogLevel(LogLevel::kError);
  std::atomic<bool> done{false};
  std::thread logger([&done] {
    for (int i = 0; i < kLines; ++i) GPUPROF_LOG(kError) << "background " << i << " end";
    done = true;
  });
  int captured = 0;
  while (!done.load()) {
    ScopedLogCapture capture;
    std::this_thread::yield();
    for (const std::string& line : capture.lines()) {
      EXPECT_EQ(line.rfind("[gpuprof] error: ", 0), 0u) << line;
      EXPECT_EQ(line.substr(line.size() - 4), " end") << line;
      ++captured;
    }
  }
  logger.join();
  SetLogLevel(saved);
  EXPECT_LE(captured, kLines);
}

}  // namespace
}  // namespace gpuprof::base
