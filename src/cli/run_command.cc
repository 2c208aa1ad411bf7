#include "cli/run_command.h"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <ostream>
#include <string_view>
#include <system_error>
#include <utility>

#include "base/errno_text.h"
#include "base/settings.h"
#include "cli/cli11.h"
#include "cli/did_you_mean.h"
#include "cli/exit_codes.h"
#include "cli/help_formatter.h"
#include "cli/live_line.h"
#include "cli/query_metrics.h"
#include "cli/result_file.h"
#include "cli/run_application.h"
#include "cli/run_help_text.h"
#include "cli/run_libraries.h"
#include "cli/run_summary.h"
#include "cli/setting_options.h"
#include "gpuprof/status.h"

namespace gpuprof::cli {
namespace {

namespace fs = std::filesystem;

// What `gpuprof replay`'s --from-script leaves to the program (and so excludes on the command line).
constexpr std::array<base::SettingId, 13> kReplaySelection = {base::SettingId::kReplayPasses,
                                                              base::SettingId::kReplayKernel,
                                                              base::SettingId::kReplaySkip,
                                                              base::SettingId::kReplayCount,
                                                              base::SettingId::kReplayCacheControl,
                                                              base::SettingId::kReplayRestore,
                                                              base::SettingId::kReplayStrict,
                                                              base::SettingId::kReplayPrintfKernels,
                                                              base::SettingId::kReplayMallocKernels,
                                                              base::SettingId::kReplayWithLiveArrays,
                                                              base::SettingId::kReplayMetrics,
                                                              base::SettingId::kReplaySection,
                                                              base::SettingId::kReplaySet};
constexpr const char* kSessionLibraryName = "libgpuprof.so";

int Fail(std::ostream& report, const Status& status) {
  report << "gpuprof: error: " << status.message() << "\n";
  return kExitFailure;
}

}  // namespace

RunCommand::RunCommand(CLI::App& app, bool replay) : replay_(replay) {
  using base::SettingId;
  run_ = app.add_subcommand(replay_ ? "replay" : "run", replay_ ? kReplayDescription : kRunDescription);
  // Parsing stops at the application: its arguments are never gpuprof's, whatever they look like.
  run_->prefix_command();
  settings_ = std::make_unique<SettingOptions>(*run_, replay_ ? base::kReplayCommand : base::kRunCommand);
  if (replay_) {
    CLI::Option* from_script = settings_->option(SettingId::kReplayFromScript);
    for (SettingId id : kReplaySelection) from_script->excludes(settings_->option(id));
    CLI::Option* query =
        run_->add_flag("--query-metrics", query_metrics_,
                       "List the metrics --metrics can name (the launch metrics, and the counter "
                       "metrics the GPU offers, through libgpuprof.so and CUPTI), then exit; "
                       "runs no application");
    run_->add_option("--chip", chip_,
                     "With --query-metrics: list the counter metrics of this chip (e.g. GH100) instead of a "
                     "device's")
        ->type_name("CHIP")
        ->needs(query);
    run_->add_option("--query-device", query_device_,
                     "With --query-metrics: the CUDA device whose counter metrics to list (default: 0)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("N")
        ->needs(query);
    run_->add_flag("--json", json_, "With --query-metrics: print one JSON object instead of tables")
        ->needs(query);
    run_->add_flag(
            "--csv", csv_,
            "After the run, print each replayed launch's metric values as CSV, as `gpuprof stats --csv "
            "DIR` does (rank,kernelId,kernel,launchIndex,metric,unit,value,passes), on stderr with gpuprof's "
            "other lines (stdout stays the application's)")
        ->excludes(query);
  }
  run_->footer(replay_ ? kReplayFooter : kRunFooter);
  if (auto help = std::dynamic_pointer_cast<HelpFormatter>(app.get_formatter())) {
    help->SetUsage(run_, replay_ ? kReplayUsage : kRunUsage);
  }
}

RunCommand::~RunCommand() = default;

int RunCommand::SplitArguments(int argc, char** argv) {
  // gpuprof's own flags (--help, --version) take no value, so the first other argument is the
  // subcommand.
  int i = 1;
  while (i < argc && argv[i][0] == '-') ++i;
  if (i >= argc || std::string_view(argv[i]) != name()) return argc;
  for (int j = i + 1; j < argc; ++j) {
    if (std::string_view(argv[j]) != "--") continue;
    separator_ = true;
    after_separator_.assign(argv + j + 1, argv + argc);
    return j;
  }
  return argc;
}

std::vector<std::string> RunCommand::ApplicationArguments() const {
  std::vector<std::string> app = run_->remaining();
  if (separator_) {
    // A `--` after the application's first argument is the application's own.
    if (!app.empty()) app.emplace_back("--");
    app.insert(app.end(), after_separator_.begin(), after_separator_.end());
  }
  return app;
}

bool RunCommand::parsed() const { return run_->parsed(); }

int RunCommand::QueryMetrics(std::ostream& report) const {
  QueryMetricsOptions options;
  options.device = query_device_;
  options.chip = chip_;
  options.json = json_;
  StatusOr<std::vector<replay::MetricInfo>> counters = UnavailableError("");
  // libgpuprof.so sits beside the injection library (<build or install>/lib).
  if (StatusOr<std::string> inject = ResolveInjectLibrary(); inject.ok()) {
    options.library = (fs::path(*inject).parent_path() / kSessionLibraryName).string();
    counters = QueryCounterMetrics(options);
  } else {
    counters = inject.status();
  }
  PrintMetrics(std::cout, options, counters);
  if (!counters.ok()) {
    report << "gpuprof: error: no counter metrics listed: " << counters.status().message() << "\n";
    return kExitFailure;
  }
  return 0;
}

int RunCommand::Run(std::ostream& report) const {
  using base::SettingId;
  if (replay_ && query_metrics_) return QueryMetrics(report);
  const std::vector<std::string> app_argv = ApplicationArguments();
  if (app_argv.empty()) {
    report << "gpuprof: error: no application given: gpuprof " << name() << " [flags] [--] APP [ARGS...]\n"
           << "run 'gpuprof " << name() << " --help' for the accepted flags and values\n";
    return kExitUsage;
  }
  // An unknown flag before the application ends parsing like the application would: say so rather
  // than try to run it.
  if (const std::string& first = app_argv.front();
      first.size() > 1 && first[0] == '-' && (!separator_ || !run_->remaining().empty())) {
    const std::string closest = ClosestWord(first.substr(0, first.find('=')), OptionNames(*run_));
    report << "gpuprof: error: " << first << " is not a flag of gpuprof " << name()
           << (closest.empty() ? "" : " (did you mean '" + closest + "'?)")
           << "; put the application after `--` if its name starts with '-'\n"
           << "run 'gpuprof " << name() << " --help' for the accepted flags and values\n";
    return kExitUsage;
  }

  if (Status range = base::CheckRangeSettings(
          settings_->value(SettingId::kReplayMode), settings_->value(SettingId::kReplayRange),
          settings_->value(SettingId::kReplayNvtxInclude), settings_->given(SettingId::kReplayMode));
      !range.ok()) {
    report << "gpuprof: error: " << range.message() << "\n"
           << "run 'gpuprof " << name() << " --help' for the accepted flags and values\n";
    return kExitUsage;
  }

  StatusOr<std::string> inject_library = ResolveInjectLibrary();
  if (!inject_library.ok()) return Fail(report, inject_library.status());

  std::error_code ec;
  fs::path out_dir = fs::absolute(fs::path(settings_->value(SettingId::kOutputDir)), ec).lexically_normal();
  if (!ec) fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) {
    return Fail(report, InternalError("cannot create the output directory " + out_dir.string() + ": " +
                                      (ec ? ec.message() : "a file of that name exists") +
                                      "; choose another with -o DIR"));
  }
  // DB paths are absolute even if the application changes directory.
  std::string out_dir_text = out_dir.string();
  while (out_dir_text.size() > 1 && out_dir_text.back() == '/') out_dir_text.pop_back();

  StatusOr<std::unique_ptr<ResultDir>> result_dir = ResultDir::Create();
  if (!result_dir.ok()) return Fail(report, result_dir.status());
  const std::string result_file = (*result_dir)->result_file();

  const bool from_script = replay_ && settings_->value(SettingId::kReplayFromScript) == "1";
  ChildEnvironment env;
  env.Set("CUDA_INJECTION64_PATH", *inject_library);
  // Every declared setting this command offers (base/settings.h); --from-script leaves the selection
  // to the program, so none is handed on.
  for (auto& [variable, value] : settings_->Environment(
           from_script ? std::vector<SettingId>(kReplaySelection.begin(), kReplaySelection.end())
                       : std::vector<SettingId>{})) {
    env.Set(std::move(variable), std::move(value));
  }
  env.Set(std::string(base::Spec(SettingId::kOutputDir).env), out_dir_text);  // absolute
  env.Set(std::string(base::Spec(SettingId::kResultFile).env), result_file);
  // A Python application that imports torch is profiled by the gpuprof package too (its ops,
  // memory and steps), through the sitecustomize in gpuprof/_autoload.
  if (std::string python_dir = FindPythonPackageDir(); !python_dir.empty()) {
    std::string path = python_dir + "/gpuprof/_autoload:" + python_dir;
    if (const char* existing = std::getenv("PYTHONPATH"); existing != nullptr && *existing != '\0') {
      path += std::string(":") + existing;
    }
    env.Set("PYTHONPATH", path);
    env.Set("GPUPROF_PYTHON_AUTORUN", "1");
    env.Set("GPUPROF_LIB_DIR", fs::path(*inject_library).parent_path().string());
  }
  if (replay_) {
    env.Set(std::string(base::Spec(SettingId::kReplay).env), "1");
    // One line per replayed launch is the progress report (info level), unless the user chose.
    const std::string level_env(base::Spec(SettingId::kLogLevel).env);
    if (const char* level = std::getenv(level_env.c_str()); level == nullptr || *level == '\0') {
      env.Set(level_env, "info");
    }
  }
  if (from_script) {
    report
        << "gpuprof: replay armed; the program chooses what to replay (gpuprof.profile(kernel_replay=...)); "
           "one line per replayed launch follows\n";
  } else if (replay_) {
    const std::string kernel = settings_->value(SettingId::kReplayKernel);
    const std::string count = settings_->value(SettingId::kReplayCount);
    const std::string nvtx = settings_->value(SettingId::kReplayNvtxInclude);
    const std::string range = settings_->value(SettingId::kReplayRange);
    const bool ranges = base::RangeReplayWanted(settings_->value(SettingId::kReplayMode), range, nvtx);
    const std::string unit = ranges ? "range" : "launch";
    const std::string units = ranges ? "ranges" : "launches";
    report << "gpuprof: replaying " << (kernel.empty() ? std::string("every kernel") : "'" + kernel + "'")
           << (!ranges           ? ""
               : !nvtx.empty()   ? " in each NVTX range '" + nvtx + "'"
               : range == "step" ? " in each training step"
                                 : " in each cudaProfilerStart/Stop range")
           << ", " << settings_->value(SettingId::kReplayPasses) << " passes per " << unit
           << (count != "0" ? ", at most " + count + " " + units : "")
           << "; one line per replayed launch follows\n";
  }
  // exec replaces the program without its exit handlers: the guard beside the injection library
  // lets the session finalize first (an install without it just goes without). The application
  // learns whether it is there (recorded in the DB).
  StatusOr<bool> exec_guard_wanted = ExecGuardWanted(*settings_);
  if (!exec_guard_wanted.ok()) {
    report << "gpuprof: error: " << exec_guard_wanted.status().message() << "\n";
    return kExitUsage;
  }
  std::string preload = *exec_guard_wanted ? ExecGuardPreload(*inject_library, app_argv.front(), report) : "";
  if (!preload.empty()) env.Set("LD_PRELOAD", std::move(preload));
  env.Set(std::string(base::Spec(SettingId::kExecGuard).env), env.Has("LD_PRELOAD") ? "1" : "0");
  // NVTX ranges reach a profiler only through the library NVTX_INJECTION64_PATH names. When the
  // injection library provides that entry point, name it (it forwards to the CUPTI the session
  // loads, so it works even when the application calls NVTX before initializing CUDA); otherwise
  // the session sets the variable itself when CUDA initializes. The user's own choice wins.
  if (const char* nvtx = std::getenv(kNvtxInjectionEnv);
      (nvtx == nullptr || *nvtx == '\0') && ExportsNvtxEntryPoint(*inject_library)) {
    env.Set(kNvtxInjectionEnv, *inject_library);
  }
  // The live line (--progress): the application's output scrolls above it. Without one, the
  // processes write no progress files.
  const bool show_progress = LiveLine::Wanted(settings_->value(SettingId::kProgress), STDERR_FILENO);
  if (!show_progress) env.Set(std::string(base::Spec(SettingId::kProgress).env), "off");
  env.Build();

  int wait_status = 0;
  // Held to the end, not just while the application runs: `timeout`, Slurm and group kills send
  // more than one signal, and one that arrives once the application has ended would otherwise
  // kill gpuprof mid-summary and replace the application's exit status with gpuprof's own death.
  SignalForwarding signals;
  {
    StatusOr<Started> started = StartApplication(app_argv, env, signals);
    if (!started.ok()) return Fail(report, started.status());
    pid_t pid = started->pid;
    LiveLine progress(STDERR_FILENO, show_progress, LinePlace::kBottomRow, std::string("gpuprof ") + name(),
                      [&] { return RunProgressText(result_file, replay_); });
    while (waitpid(pid, &wait_status, 0) < 0) {
      if (errno != EINTR) {
        int err = errno;
        ClearApplicationPid();
        progress.Stop();
        return Fail(report, InternalError("waiting for the application (pid " + std::to_string(pid) +
                                          ") failed: " + base::ErrnoText(err)));
      }
    }
    ClearApplicationPid();
    progress.Stop();
    if (started->exec_errno != 0) {
      report << "gpuprof: error: cannot run '" << app_argv.front()
             << "': " << base::ErrnoText(started->exec_errno) << "\n";
      return started->exec_errno == ENOENT ? kExitNotFound : kExitCannotExecute;
    }
  }
  const int exit_code = ShellExitCode(wait_status);
  PrintRunSummary(report, wait_status, result_file, out_dir_text, replay_, csv_);
  return exit_code;
}

}  // namespace gpuprof::cli
