// The live progress line (cli/live_line.h) on a pseudo-terminal: where it draws, what it erases,
// and that it writes nothing where it is not wanted; the counts `gpuprof run` reads for it.
#include "cli/live_line.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "db/output_layout.h"

namespace gpuprof::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A pseudo-terminal of `rows` x `columns`: the line writes to `terminal`, the test reads `screen`.
class Pty {
 public:
  Pty(int rows, int columns) {
    screen = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (screen < 0 || ::grantpt(screen) != 0 || ::unlockpt(screen) != 0) return;
    terminal = ::open(::ptsname(screen), O_RDWR | O_NOCTTY);
    winsize size{};
    size.ws_row = static_cast<unsigned short>(rows);
    size.ws_col = static_cast<unsigned short>(columns);
    ::ioctl(terminal, TIOCSWINSZ, &size);
    ::fcntl(screen, F_SETFL, ::fcntl(screen, F_GETFL) | O_NONBLOCK);
  }
  ~Pty() {
    if (terminal >= 0) ::close(terminal);
    if (screen >= 0) ::close(screen);
  }
  bool ok() const { return screen >= 0 && terminal >= 0; }
  // Everything written so far (the terminal's output processing turns "\n" into "\r\n").
  std::string Read() const {
    std::string out;
    char buffer[4096];
    while (true) {
      const ssize_t n = ::read(screen, buffer, sizeof(buffer));
      if (n <= 0) break;
      out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
  }

  int screen = -1;
  int terminal = -1;
};

// Waits (up to 10 s; the line's own timing, so no assertion on wall time) for the first drawing.
bool WaitDrawn(const LiveLine& line) {
  for (int i = 0; i < 1000 && !line.drawn(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return line.drawn();
}

class TermGuard {
 public:
  explicit TermGuard(const char* value) {
    if (const char* old = std::getenv("TERM")) old_ = old;
    if (value != nullptr) {
      ::setenv("TERM", value, 1);
    } else {
      ::unsetenv("TERM");
    }
  }
  ~TermGuard() {
    if (old_.empty()) {
      ::unsetenv("TERM");
    } else {
      ::setenv("TERM", old_.c_str(), 1);
    }
  }

 private:
  std::string old_;
};

TEST(LiveLineTest, IsWantedOnlyOnATerminalThatDrawsAndWhenNotOff) {
  Pty pty(24, 80);
  ASSERT_TRUE(pty.ok());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  {
    TermGuard term("xterm");
    EXPECT_TRUE(LiveLine::Wanted("auto", pty.terminal));
    EXPECT_FALSE(LiveLine::Wanted("off", pty.terminal));
    EXPECT_FALSE(LiveLine::Wanted("auto", pipe_fds[1])) << "a pipe gets no live line";
  }
  {
    TermGuard term("dumb");
    EXPECT_FALSE(LiveLine::Wanted("auto", pty.terminal));
  }
  {
    TermGuard term(nullptr);
    EXPECT_FALSE(LiveLine::Wanted("auto", pty.terminal));
  }
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(LiveLineTest, BottomRowIsKeptOutOfTheScrollRegionAndGivenBackAtStop) {
  Pty pty(24, 80);
  ASSERT_TRUE(pty.ok());
  std::atomic<int> calls{0};
  LiveLine line(
      pty.terminal, true, LinePlace::kBottomRow, "gpuprof run",
      [&] { return "12 kernels, call " + std::to_string(++calls); }, std::chrono::milliseconds(0));
  ASSERT_TRUE(WaitDrawn(line));
  line.Stop();
  const std::string screen = pty.Read();
  // The scroll region is rows 1-23; the line is drawn on row 24 between a cursor save and restore.
  EXPECT_THAT(screen, HasSubstr("\x1b[1;23r"));
  EXPECT_THAT(screen, HasSubstr("\x1b"
                                "7\x1b[24;1H\x1b[2Kgpuprof run: 12 kernels, call 1, "));
  EXPECT_THAT(screen, HasSubstr(" s\x1b"
                                "8"))
      << "the elapsed time, then the cursor back";
  // Stop resets the region and clears the row, last.
  const std::size_t reset = screen.rfind("\x1b[r");
  ASSERT_NE(reset, std::string::npos) << screen;
  EXPECT_EQ(screen.substr(reset),
            "\x1b[r\x1b[24;1H\x1b[2K\x1b"
            "8");
  const int after_stop = calls.load();
  std::this_thread::sleep_for(LiveLine::kTick * 2);
  EXPECT_EQ(calls.load(), after_stop) << "the line's thread is gone";
  EXPECT_EQ(pty.Read(), "");
}

TEST(LiveLineTest, InPlaceLineIsCutToTheWidthWithControlBytesShownAndErasedAtStop) {
  Pty pty(24, 20);
  ASSERT_TRUE(pty.ok());
  LiveLine line(
      pty.terminal, true, LinePlace::kInPlace, "p",
      [] { return std::string("a\x1b[31mbcdefghijklmnopqrstuvwxyz"); }, std::chrono::milliseconds(0));
  ASSERT_TRUE(WaitDrawn(line));
  line.Stop();
  const std::string screen = pty.Read();
  // 19 columns (never the last one): "p: a?[31mbcdefghijk"; no escape byte from the text.
  EXPECT_THAT(screen, HasSubstr("\r\x1b[2Kp: a?[31mbcdefghijk"));
  EXPECT_THAT(screen, Not(HasSubstr("\x1b[31m")));
  EXPECT_THAT(screen, Not(HasSubstr("lmn")));
  EXPECT_EQ(screen.substr(screen.size() - 5), "\r\x1b[2K");
}

TEST(LiveLineTest, NothingIsWrittenWhenNotEnabledOrWhenTheWorkEndsBeforeTheDelay) {
  Pty pty(24, 80);
  ASSERT_TRUE(pty.ok());
  {
    LiveLine off(
        pty.terminal, false, LinePlace::kBottomRow, "p", [] { return std::string("x"); },
        std::chrono::milliseconds(0));
    std::this_thread::sleep_for(LiveLine::kTick * 2);
    EXPECT_FALSE(off.drawn());
  }
  {
    LiveLine quick(
        pty.terminal, true, LinePlace::kInPlace, "p", [] { return std::string("x"); }, std::chrono::hours(1));
  }
  EXPECT_EQ(pty.Read(), "");
}

TEST(ProgressCounterTest, ShowsTheContextTheStageAndItsRows) {
  ProgressCounter counter("DB 2 of 3");
  EXPECT_EQ(counter.Text(), "DB 2 of 3: starting");
  counter.Stage("device tasks (TASK)");
  counter.Advance(1234);
  counter.Advance(1);
  EXPECT_EQ(counter.Text(), "DB 2 of 3: device tasks (TASK), 1,235 rows");
  counter.Stage("marks");
  EXPECT_EQ(counter.Text(), "DB 2 of 3: marks") << "a stage restarts its count";
  EXPECT_EQ(ProgressCounter().Text(), "starting");
  EXPECT_EQ(GroupedNumber(0), "0");
  EXPECT_EQ(GroupedNumber(999), "999");
  EXPECT_EQ(GroupedNumber(1000), "1,000");
  EXPECT_EQ(GroupedNumber(18446744073709551615u), "18,446,744,073,709,551,615");
}

TEST(RunProgressTest, ALineRoundTripsAndACutOrForeignLineIsRefused) {
  db::RunProgress progress{5, 4, 3, 2, 1, 1};
  const std::string line = db::FormatRunProgress(progress);
  EXPECT_EQ(line, "launches=5 kernels=4 ops=3 replayed=2 declined=1 finalizing=1\n");
  db::RunProgress parsed;
  ASSERT_TRUE(db::ParseRunProgress(line, &parsed));
  EXPECT_EQ(parsed, progress);
  db::RunProgress untouched{9, 9, 9, 9, 9, 0};
  for (const char* bad :
       {"", "launches=5 kernels=4", "launches=5 kernels=\n", "launches=x\n", "launches\n"}) {
    EXPECT_FALSE(db::ParseRunProgress(bad, &untouched)) << bad;
  }
  EXPECT_EQ(untouched.launches, 9u);
  ASSERT_TRUE(db::ParseRunProgress("ops=7 later_field=3\n", &parsed))
      << "fields it does not know are skipped";
  EXPECT_EQ(parsed, (db::RunProgress{0, 0, 7, 0, 0, 0}));
  parsed += progress;
  EXPECT_EQ(parsed, (db::RunProgress{5, 4, 10, 2, 1, 1}));
}

}  // namespace
}  // namespace gpuprof::cli
