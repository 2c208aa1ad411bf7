// `gpuprof run [-o DIR] [--follow-children] [--] APP [ARGS...]`: runs an application with gpuprof's
// CUDA injection library configured, waits for it, and summarizes the profile DB(s) it wrote.
//
// The CLI never loads CUDA. It hands the application this environment (the contract with
// src/session and src/inject):
//   CUDA_INJECTION64_PATH    absolute path of libgpuprof_inject.so (the driver calls its
//                            InitializeInjection at cuInit)
//   GPUPROF_OUTPUT_DIR       absolute path of DIR (created first)
//   GPUPROF_RESULT_FILE      a file in a private temporary directory (named with gpuprof's pid, so
//                            a later run removes it should gpuprof be killed); each process appends
//                            "partial <path>" when its session creates a DB, "db <path>" when it
//                            finalized it, "failed pid N: why" when its start failed
//                            (db/output_layout.h's kResultLine*); the summary names only these
//   the declared settings (base/settings.h) this command offers, each as its variable: the value
//                            given on the command line, else the setting's default (cuda_trace:
//                            only when given; otherwise gpuprof's own environment passes through);
//                            `gpuprof replay` adds GPUPROF_REPLAY=1
//   GPUPROF_ROOT_PID         the application's pid, so a Session can tell the process gpuprof
//                            started from a child that initializes CUDA on its own after fork()
//   NVTX_INJECTION64_PATH    libgpuprof_inject.so as well, when it exports InitializeInjectionNvtx2
//                            (what the NVTX loader calls) and the user did not set the variable
//   LD_PRELOAD               the user's, then libgpuprof_exec_guard.so from beside the injection
//                            library (a program that calls exec finalizes its profile first);
//                            left as it was with --no-exec-guard / GPUPROF_EXEC_GUARD=0, and, with
//                            one line, when the program (resolved in PATH like execvp; a script's
//                            interpreter) or LD_PRELOAD carries a sanitizer runtime, which must be
//                            loaded first (cli/sanitizer_runtime.h); GPUPROF_EXEC_GUARD then says 0
// GPUPROF_WORKER_NAME, GPUPROF_LOG_LEVEL and everything else pass through unchanged.
//
// Exit status: the application's (128 + N when signal N killed it); 126/127 when it cannot be
// started (like a shell); 1 when gpuprof itself cannot set the run up; 2 for usage errors.
// Everything gpuprof prints goes to stderr: the application's stdout stays its own.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace gpuprof::cli {

class SettingOptions;

class RunCommand {
 public:
  // Registers `run` (or, with `replay`, `replay`: the same run with kernel replay configured) on
  // `app`; the object holds its flags, so it must outlive parsing and Run().
  explicit RunCommand(CLI::App& app, bool replay = false);
  ~RunCommand();
  RunCommand(const RunCommand&) = delete;
  RunCommand& operator=(const RunCommand&) = delete;

  // When argv is a `gpuprof run ...` (or `replay ...`) command line with a `--`, keeps what follows
  // the first `--` and returns its index: CLI11 parses the arguments before it. Otherwise returns
  // argc. The application's command line is then what CLI11 left unparsed (the subcommand is a
  // prefix command: parsing stops at the first argument that is not one of its options or their
  // values), followed by the kept arguments. So `gpuprof run python3 train.py -o x` passes `-o x` to
  // the application, and an application named like a gpuprof subcommand is still the application.
  int SplitArguments(int argc, char** argv);

  bool parsed() const;
  // Runs the application and reports on `report`; the exit status described above. With
  // `replay --query-metrics` runs nothing: prints the metrics on stdout (0; 1 when the counter
  // backend could not list its metrics, after the launch metrics).
  int Run(std::ostream& report) const;

 private:
  const char* name() const noexcept { return replay_ ? "replay" : "run"; }

  // `replay --query-metrics`.
  int QueryMetrics(std::ostream& report) const;
  // The application's command line: what CLI11 left, then what followed `--`.
  std::vector<std::string> ApplicationArguments() const;

  CLI::App* run_ = nullptr;
  bool replay_ = false;
  std::unique_ptr<SettingOptions> settings_;  // the declared settings this command offers
  bool separator_ = false;                    // argv had a `--` after the subcommand
  std::vector<std::string> after_separator_;
  // replay only: --query-metrics lists metrics instead of running an application.
  bool query_metrics_ = false;
  std::string chip_;
  int query_device_ = 0;
  bool json_ = false;
  bool csv_ = false;  // print the replayed launches' metric values as CSV after the run
};

}  // namespace gpuprof::cli
