// gpuprof's own background threads (the record drains, the DB writer and its side files) yield the
// CPU to the application's threads: each calls LowerThisThreadsPriority() once, at its start.
//
//   std::thread([this] { base::LowerThisThreadsPriority(); Loop(); });
//
// The thread runs ten nice levels below the thread that made it (at most nice 19; Linux keeps a
// nice value per thread). Where every core is busy, the scheduler then gives the profiled program
// the CPU first and gpuprof's work what is left, instead of an equal share; on a machine with idle
// cores nothing changes. Header-only, so the PyTorch hooks (built apart, tools/build_torch_hooks.sh)
// use it too. It never fails the caller: where the kernel refuses, the thread keeps its priority.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace gpuprof::base {

inline constexpr int kBackgroundNiceLevels = 10;
inline constexpr int kLowestNice = 19;

// Returns the calling thread's nice value afterwards.
inline int LowerThisThreadsPriority() noexcept {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, tid);
  if (current == -1 && errno != 0) return 0;
  const int lowered =
      current + kBackgroundNiceLevels > kLowestNice ? kLowestNice : current + kBackgroundNiceLevels;
  return setpriority(PRIO_PROCESS, tid, lowered) == 0 ? lowered : current;
}

}  // namespace gpuprof::base
