// The nice values of this process's threads (Linux keeps one per thread), for the tests of the
// threads that call base::LowerThisThreadsPriority.
//
//   const int ours = thread_nice::ThisThreadsNice();
//   EXPECT_TRUE(thread_nice::WaitForThreadsBelow(ours, 1));   // some other thread runs at a higher nice
//   value
#pragma once

#include <dirent.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace gpuprof::thread_nice {

inline int ThisThreadsNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

// How many threads of this process run at a nice value above `nice` (a lower priority).
inline int ThreadsBelow(int nice) {
  int count = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return 0;
  while (dirent* entry = readdir(tasks)) {
    const long tid = std::strtol(entry->d_name, nullptr, 10);
    if (tid <= 0) continue;
    errno = 0;
    const int value = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (errno == 0 && value > nice) ++count;  // a thread that ended meanwhile sets errno
  }
  closedir(tasks);
  return count;
}

// True once at least `count` threads run below `nice` (threads lower themselves when they
// start, so a thread just made may not have yet); false after about 5 s.
inline bool WaitForThreadsBelow(int nice, int count) {
  for (int i = 0; i < 500; ++i) {
    if (ThreadsBelow(nice) >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace gpuprof::thread_nice
