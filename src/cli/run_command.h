// `gpuprof run [-o DIR] [--follow-children] [--] APP [ARGS...]`: runs an application with gpuprof's
// CUDA injection library configured, waits for it, and summarizes the profile DB(s) it wrote.
//
// The CLI never loads CUDA. It hands the application this environment (the contract with
// src/session and src/inject):
//   CUDA_INJECTION64_PATH    absolute path of libgpuprof_inject.so (the driver calls its
//                            InitializeInjection at cuInit)
//   GPUPROF_OUTPUT_DIR       absolute path of DIR (created first)
//   GPUPROF_RESULT_FILE      a file in a private temporary directory; each Session appends one
//                            "db <path>" line per DB it finalized
//   GPUPROF_FOLLOW_CHILDREN  0 or 1
//   GPUPROF_ROOT_PID         the application's pid, so a Session can tell the process gpuprof
//                            started from a child that initializes CUDA on its own after fork()
//   NVTX_INJECTION64_PATH    libgpuprof_inject.so as well, when it exports InitializeInjectionNvtx2
//                            (what the NVTX loader calls) and the user did not set the variable
// GPUPROF_WORKER_NAME, GPUPROF_LOG_LEVEL and everything else pass through unchanged.
//
// Exit status: the application's (128 + N when signal N killed it); 126/127 when it cannot be
// started (like a shell); 1 when gpuprof itself cannot set the run up; 2 for usage errors.
// Everything gpuprof prints goes to stderr: the application's stdout stays its own.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace gpuprof::cli {

class RunCommand {
 public:
  // Registers `run` (or, with `replay`, `replay`: the same run with kernel replay configured) on
  // `app`; the object holds its flags, so it must outlive parsing and Run().
  explicit RunCommand(CLI::App& app, bool replay = false);
  RunCommand(const RunCommand&) = delete;
  RunCommand& operator=(const RunCommand&) = delete;

  // When argv is a `gpuprof run ...` command line, keeps the application's command line (from the
  // first argument after `--`, or else from the first argument that is neither one of run's flags
  // nor a flag's value) and returns how many leading arguments CLI11 should parse; otherwise
  // returns argc. So `gpuprof run python3 train.py -o x` passes `-o x` to the application, and an
  // application named like a gpuprof subcommand is still the application.
  int SplitArguments(int argc, char** argv);

  bool parsed() const;
  // Runs the application and reports on `report`; the exit status described above.
  int Run(std::ostream& report) const;

 private:
  const char* name() const noexcept { return replay_ ? "replay" : "run"; }

  CLI::App* run_ = nullptr;
  bool replay_ = false;
  std::string output_dir_ = "gpuprof_output";
  // replay (C4): passes, kernel selection, cache and restore policy.
  int passes_ = 5;
  std::string kernel_;
  std::uint64_t skip_ = 0;
  std::uint64_t count_ = 0;
  std::string cache_control_ = "all";
  std::string restore_ = "auto";
  bool strict_ = false;
  bool from_script_ = false;  // replay: --from-script
  bool with_modules_ = false;
  std::uint64_t device_reserve_mib_ = 2048;  // B2: device memory snapshots leave free
  bool follow_children_ = false;
  bool record_shapes_ = true;   // PyTorch scripts (python/gpuprof/_autorun.py)
  bool profile_memory_ = true;
  bool with_stack_ = false;
  std::vector<std::string> cuda_trace_;  // run: --cuda-trace (empty: the session's default)
  std::vector<std::string> app_argv_;
};

}  // namespace gpuprof::cli
