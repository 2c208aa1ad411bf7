// What `gpuprof run` finds beside itself and hands the application: the CUDA injection library,
// the gpuprof Python package, the NVTX entry point and the exec guard (with the sanitizer check
// that leaves it out). Paths are relative to the running executable, so a moved tree works too.
#pragma once

#include <iosfwd>
#include <string>

#include "gpuprof/status.h"

namespace gpuprof::cli {

class SettingOptions;

// The variable the NVTX loader reads: the library whose InitializeInjectionNvtx2 it calls.
inline constexpr const char* kNvtxInjectionEnv = "NVTX_INJECTION64_PATH";

// GPUPROF_INJECT_LIBRARY, else <exe dir>/../lib/, else <exe dir>/lib/ (an installed tree and the
// build tree both put gpuprof in bin/ beside lib/). NotFound names the paths tried and the fix.
StatusOr<std::string> ResolveInjectLibrary();

// The folder holding the gpuprof Python package (its gpuprof/__init__.py): $GPUPROF_PYTHON_DIR,
// else the installed tree's (<prefix>/bin/gpuprof, <prefix>/GPUPROF_INSTALL_PYTHONDIR; see
// cmake/GpuprofInstall.cmake), else python/ of the checkout the executable was built in
// (build/<preset>/bin/gpuprof). Empty when there is none.
std::string FindPythonPackageDir();

// True when `library` exports the NVTX injection entry point. Probed with dlopen(RTLD_LAZY |
// RTLD_LOCAL) and closed again: the injection library links no CUDA and starts nothing when
// loaded (InitializeInjection is what starts it), so the probe is cheap and has no effect.
bool ExportsNvtxEntryPoint(const std::string& library);

// --exec-guard / --no-exec-guard, else GPUPROF_EXEC_GUARD in gpuprof's environment, else on.
StatusOr<bool> ExecGuardWanted(const SettingOptions& settings);

// The LD_PRELOAD that adds the exec guard beside `inject_library` for the application `app`, or
// empty to leave LD_PRELOAD as it is: when there is no guard, when its path cannot go into
// LD_PRELOAD, and when a sanitizer runtime must come first (one info line on `report` says so:
// AddressSanitizer exits at start when a preloaded library comes before its runtime).
std::string ExecGuardPreload(const std::string& inject_library, const std::string& app, std::ostream& report);

}  // namespace gpuprof::cli
