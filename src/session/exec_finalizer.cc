#include "session/exec_finalizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>

#include "base/errno_text.h"
#include "base/logging.h"
#include "inject/exec_guard.h"

namespace gpuprof::session {
namespace {

std::atomic<ExecFinalizer::Finalize> g_finalize{nullptr};
std::atomic<bool> g_finalized{false};  // by an exec call of this process that then failed

void OnExec(int phase, int error) noexcept {
  ExecFinalizer::Finalize finalize = g_finalize.load();
  if (finalize == nullptr) return;
  if (phase == inject::kExecHookBefore) {
    if (g_finalized.exchange(true)) return;  // an earlier exec failed: already written
    GPUPROF_LOG(kInfo) << "pid " << getpid() << " calls exec: finalizing its profile before the new program "
                       << "replaces it";
    finalize();
    return;
  }
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    GPUPROF_LOG(kWarning) << "pid " << getpid() << ": exec failed (" << base::ErrnoText(error)
                          << ") after its profile was finalized; the program goes on, and the rest of "
                          << "its run is not recorded";
  }
}

}  // namespace

void ExecFinalizer::Install(Finalize finalize) noexcept {
  using Register = void (*)(inject::ExecHook) noexcept;
  // Looked up once: a fork child registers again from the fork handler, where dlsym may not be
  // called (the loader's lock may have been held by another thread of the parent).
  static const auto register_hook =
      reinterpret_cast<Register>(dlsym(RTLD_DEFAULT, inject::kExecGuardRegisterSymbol));
  if (register_hook == nullptr) return;  // not preloaded: nothing to guard
  g_finalize.store(finalize);
  g_finalized.store(false);
  register_hook(&OnExec);
}

}  // namespace gpuprof::session
