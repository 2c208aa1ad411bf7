#include "cli/run_libraries.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <system_error>

#include "base/settings.h"
#include "base/utf8.h"
#include "cli/sanitizer_runtime.h"
#include "cli/setting_options.h"

namespace gpuprof::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInjectLibraryName = "libgpuprof_inject.so";
constexpr const char* kInjectLibraryEnv = "GPUPROF_INJECT_LIBRARY";
// Preloaded so that a program that calls exec finalizes its profile first (src/inject/exec_guard.cc).
constexpr const char* kExecGuardLibraryName = "libgpuprof_exec_guard.so";
// What the NVTX loader looks up in the library NVTX_INJECTION64_PATH names.
constexpr const char* kNvtxEntryPoint = "InitializeInjectionNvtx2";

// The directory of the running gpuprof executable.
StatusOr<fs::path> ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return InternalError("cannot find gpuprof's own path (/proc/self/exe): " + ec.message());
  return exe.parent_path();
}

bool IsReadableFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && access(path.c_str(), R_OK) == 0;
}

}  // namespace

StatusOr<std::string> ResolveInjectLibrary() {
  if (const char* from_env = std::getenv(kInjectLibraryEnv); from_env != nullptr && *from_env != '\0') {
    fs::path path(from_env);
    if (!IsReadableFile(path)) {
      std::error_code ec;
      std::string why = fs::exists(path, ec) ? "is not a readable file" : "does not exist";
      return NotFoundError(std::string(kInjectLibraryEnv) + "=" + from_env +
                           " names the injection library, but " + path.string() + " " + why + "; point " +
                           kInjectLibraryEnv + " at a built " + kInjectLibraryName +
                           ", or unset it to use the one beside gpuprof");
    }
    return fs::absolute(path).lexically_normal().string();
  }
  GPUPROF_ASSIGN_OR_RETURN(fs::path exe_dir, ExecutableDir());
  const fs::path candidates[] = {(exe_dir / ".." / "lib" / kInjectLibraryName).lexically_normal(),
                                 (exe_dir / "lib" / kInjectLibraryName).lexically_normal()};
  std::string tried;
  for (const fs::path& candidate : candidates) {
    if (IsReadableFile(candidate)) return candidate.string();
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  return NotFoundError(std::string("cannot find gpuprof's CUDA injection library ") + kInjectLibraryName +
                       " (tried " + tried +
                       "); build it with GPUPROF_ENABLE_CUDA=ON (e.g. `cmake --preset gpu && cmake --build "
                       "--preset gpu`), or set " +
                       kInjectLibraryEnv + " to its path");
}

std::string FindPythonPackageDir() {
  std::vector<fs::path> candidates;
  if (const char* from_env = std::getenv("GPUPROF_PYTHON_DIR"); from_env != nullptr && *from_env != '\0') {
    candidates.emplace_back(from_env);
  }
  if (StatusOr<fs::path> exe_dir = ExecutableDir(); exe_dir.ok()) {
#ifdef GPUPROF_INSTALL_PYTHONDIR
    candidates.push_back(*exe_dir / ".." / GPUPROF_INSTALL_PYTHONDIR);
#endif
    candidates.push_back(*exe_dir / ".." / ".." / ".." / "python");
    candidates.push_back(*exe_dir / ".." / "python");
  }
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(candidate / "gpuprof" / "__init__.py", ec)) {
      return fs::absolute(candidate, ec).lexically_normal().string();
    }
  }
  return {};
}

bool ExportsNvtxEntryPoint(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  const bool found = dlsym(handle, kNvtxEntryPoint) != nullptr;
  dlclose(handle);
  return found;
}

StatusOr<bool> ExecGuardWanted(const SettingOptions& settings) {
  const base::SettingSpec& spec = base::Spec(base::SettingId::kExecGuard);
  if (settings.given(spec.id)) return settings.value(spec.id) == "1";
  const std::string variable(spec.env);
  const char* text = std::getenv(variable.c_str());
  if (text == nullptr || *text == '\0') return spec.default_value == "1";
  if (const std::optional<bool> on = base::ParseBoolText(text)) return *on;
  return base::ParseSettingText(spec, text, variable).status();  // the row's own words
}

std::string ExecGuardPreload(const std::string& inject_library, const std::string& app,
                             std::ostream& report) {
  const fs::path guard = fs::path(inject_library).parent_path() / kExecGuardLibraryName;
  if (!IsReadableFile(guard) || guard.string().find_first_of(": ") != std::string::npos) {
    return {};  // LD_PRELOAD splits at ':' and ' '
  }
  const char* existing = std::getenv("LD_PRELOAD");
  const std::string user_preload = existing != nullptr ? existing : "";
  std::string runtime = SanitizerInPreload(user_preload);
  if (runtime.empty()) {
    // execvpe's own default when PATH is unset.
    const char* path = std::getenv("PATH");
    const std::string executable = ResolveLikeExecvp(app, path != nullptr ? path : "/bin:/usr/bin");
    if (!executable.empty())
      runtime = SanitizerRuntimeOf(executable, path != nullptr ? path : "/bin:/usr/bin");
  }
  if (!runtime.empty()) {
    report << "gpuprof: " << base::PrintableText(app) << " runs with a sanitizer ("
           << base::PrintableText(runtime)
           << "), whose runtime must be the first library loaded: the exec guard is off (a process that "
              "calls exec leaves its DB unfinished)\n";
    return {};
  }
  // After the user's own (a sanitizer's runtime must stay first).
  return user_preload.empty() ? guard.string() : user_preload + ":" + guard.string();
}

}  // namespace gpuprof::cli
