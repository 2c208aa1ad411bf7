// The `gpuprof` command line. Exit codes: 0 success, 1 failure (a library error, or results that
// do not match), 2 usage error (bad flags or option values).
#include <cstdint>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "base/settings.h"
#include "cli/build_info.h"
#include "cli/cli11.h"
#include "cli/db_commands.h"
#include "cli/demo.h"
#include "cli/did_you_mean.h"
#include "cli/escaping_stream.h"
#include "cli/exit_codes.h"
#include "cli/help_formatter.h"
#include "cli/run_command.h"
#include "cli/setting_options.h"
#include "gpuprof/replay.h"
#include "gpuprof/status.h"
#include "replay/controller.h"

#ifndef GPUPROF_VERSION_STRING
#error "GPUPROF_VERSION_STRING must be defined by the build (PROJECT_VERSION)"
#endif

namespace gpuprof::cli {
namespace {

// What a bug report needs: which source (the commit; "-dirty": with uncommitted changes; "unknown":
// built outside a git checkout) and which build (CUDA and the torch hooks are optional).
std::string VersionText() {
  return std::string("gpuprof ") + GPUPROF_VERSION_STRING + "\n" +  //
         "commit: " + GPUPROF_BUILD_COMMIT + "\n" +                 //
         "build type: " + GPUPROF_BUILD_TYPE + "\n" +               //
         "CUDA backend: " + GPUPROF_BUILD_CUDA + "\n" +             //
         "torch hooks: " + GPUPROF_BUILD_TORCH;
}

int UsageError(const std::string& message, const std::string& help_command) {
  std::cerr << "gpuprof: error: " << message << "\n"
            << "run '" << help_command << "' for the accepted flags and values\n";
  return kExitUsage;
}

int Failure(const Status& status) {
  std::cerr << "gpuprof: error: " << status.message() << "\n";
  return kExitFailure;
}

struct DemoFlags {
  std::uint64_t chunk_kib = 64;
  int devices = 2;
  std::string output_dir;
};

int RunDemoCommand(const DemoFlags& flags, const SettingOptions& settings) {
  DemoOptions options;
  // Both already checked against their declared rows (base/settings.h) by the options' checks.
  options.replay.passes = static_cast<int>(base::SettingInt(settings.value(base::SettingId::kReplayPasses)));
  if (!replay::ParseRestoreMode(settings.value(base::SettingId::kReplayRestore), &options.replay.restore)) {
    return UsageError("--restore must be auto, exact or full", "gpuprof demo --help");
  }
  options.replay.chunk_size = flags.chunk_kib * 1024;
  options.replay.graph_replay_offered = false;  // the demo's graph launches always run once
  options.devices = flags.devices;
  options.output_dir = flags.output_dir;
  if (Status valid = replay::Controller::ValidateOptions(options.replay); !valid.ok()) {
    return UsageError(valid.message(), "gpuprof demo --help");
  }
  StatusOr<DemoOutcome> outcome = RunDemo(options, std::cout, std::cerr);
  if (!outcome.ok()) {
    if (outcome.status().code() == StatusCode::kInvalidArgument) {
      return UsageError(outcome.status().message(), "gpuprof demo --help");
    }
    return Failure(outcome.status());
  }
  return outcome->results_match ? kExitOk : kExitFailure;
}

int Main(int argc, char** argv) {
  CLI::App app{"gpuprof: a CUDA/PyTorch profiler with kernel replay (device-memory snapshot and restore)",
               "gpuprof"};
  app.set_version_flag("--version", VersionText(), "Print the version, commit and build options, and exit");
  app.require_subcommand(0, 1);
  app.formatter(std::make_shared<HelpFormatter>());  // before the subcommands, which share it

  DemoFlags flags;
  CLI::App* demo = app.add_subcommand(
      "demo",
      "Replay a small workload on a simulated multi-device runtime; print per-pass timing, restore "
      "traffic and determinism");
  SettingOptions demo_settings(*demo, base::kDemoCommand);  // --passes, --restore
  demo->add_option("--chunk-kib", flags.chunk_kib, "Dirty-detection chunk size in KiB")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20))
      ->capture_default_str();
  demo->add_option("-o,--output", flags.output_dir,
                   "Also write the session and replay results into a profile database under this directory "
                   "(DIR/<host>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db)")
      ->type_name("DIR");
  demo->add_option("--devices", flags.devices,
                   "Simulated devices; device 0 runs most kernels, every other device one")
      ->check(CLI::Range(2, 16))
      ->capture_default_str();

  DbCommands db_commands(app);                      // stats, export, report, check
  RunCommand run_command(app);                      // run
  RunCommand replay_command(app, /*replay=*/true);  // replay
  // The application's own command line is not CLI11's to parse.
  int cli_argc = run_command.SplitArguments(argc, argv);
  if (cli_argc == argc) cli_argc = replay_command.SplitArguments(argc, argv);

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    std::string help = demo->parsed() ? "gpuprof demo --help" : db_commands.HelpCommand();
    if (run_command.parsed()) help = "gpuprof run --help";
    if (replay_command.parsed()) help = "gpuprof replay --help";
    // CLI11 lists unexpected words last first and suggests nothing: name the first unknown one
    // and the closest valid command or option instead.
    const std::string message = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr
                                    ? DescribeExtras(app, app.remaining(/*recurse=*/true))
                                    : std::string(e.what());
    return UsageError(message, help.empty() ? "gpuprof --help" : help);
  }

  if (demo->parsed()) return RunDemoCommand(flags, demo_settings);
  if (db_commands.parsed()) {
    // What a DB command prints carries text read from the DB: no control byte of it reaches the
    // terminal as is.
    EscapingOutput out(std::cout);
    EscapingOutput err(std::cerr);
    return db_commands.Run(out.stream(), err.stream());
  }
  if (run_command.parsed()) return run_command.Run(std::cerr);
  if (replay_command.parsed()) return replay_command.Run(std::cerr);

  std::cerr << app.help() << "gpuprof: no subcommand given; try 'gpuprof demo' (see the list above)\n";
  return kExitUsage;
}

}  // namespace
}  // namespace gpuprof::cli

int main(int argc, char** argv) {
  // Nothing below throws on purpose (library code returns Status); this is the one edge where a
  // stray exception (bad_alloc, a CLI11 internal error) becomes an error line instead of abort().
  try {
    return gpuprof::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpuprof: error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "gpuprof: error: unknown exception\n";
  }
  return 1;
}
