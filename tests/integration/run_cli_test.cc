// Runs `gpuprof run` (GPUPROF_CLI_PATH) on ordinary programs (/bin/sh), with no GPU: exit status
// pass-through (codes and signals), the shell-style errors for an application that cannot be
// started, usage errors, the injection library's lookup and its errors, the environment the
// application receives, signal forwarding, and the summary of DBs a session reports through
// GPUPROF_RESULT_FILE (a fixture DB stands in for a session's).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.h"

#ifdef GPUPROF_RUN_TEST_FIXTURES
#include "unit/db/fixture_db.h"
#endif

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using gpuprof::testing::CliResult;
using gpuprof::testing::RunShell;
using gpuprof::testing::ShellQuote;

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gpuprof_run_cli_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    // No CUDA program runs here, so any readable file serves as the injection library: the
    // driver would load it only if the application initialized CUDA.
    inject_ = dir_ + "/libgpuprof_inject.so";
    std::ofstream(inject_) << "not a library\n";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Runs `<env> gpuprof <args>` through /bin/sh with stdout and stderr captured separately.
  // GPUPROF_INJECT_LIBRARY is the stand-in unless `env` sets it.
  CliResult Run(const std::string& args, const std::string& env = "",
                const std::string& cli = GPUPROF_CLI_PATH) const {
    const std::string err_path = dir_ + "/stderr.txt";
    const std::string command = "cd " + ShellQuote(dir_) +
                                " && GPUPROF_INJECT_LIBRARY=" + ShellQuote(inject_) + " " + env + " " +
                                ShellQuote(cli) + " " + args + " 2>" + ShellQuote(err_path);
    CliResult result = RunShell(command, err_path);
    return result;
  }

  std::string dir_;
  std::string inject_;
};

TEST_F(RunCommandTest, ExitCodeOfApplicationIsReturnedAndNoCudaIsExplained) {
  CliResult r = Run("run -o out -- /bin/sh -c 'exit 3'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("gpuprof: no profile was recorded: the application exited with status 3 before "
                        "any profile started"));
  EXPECT_TRUE(fs::is_directory(dir_ + "/out")) << "the output directory is created before the run";
  r = Run("run -o out -- /bin/sh -c 'exit 0'");
  EXPECT_THAT(r.err, HasSubstr("gpuprof: no CUDA activity was collected: the application did not initialize "
                               "CUDA (a CPU-only run?)"));
}

TEST_F(RunCommandTest, SuccessfulCpuOnlyRunExitsZero) {
  CliResult r = Run("run -- /bin/sh -c 'echo hello'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n") << "the application's stdout is its own: gpuprof writes to stderr";
  EXPECT_THAT(r.err, HasSubstr("no CUDA activity was collected"));
  EXPECT_TRUE(fs::is_directory(dir_ + "/gpuprof_output")) << "default output directory";
}

TEST_F(RunCommandTest, MissingApplicationExits127LikeAShell) {
  CliResult r = Run("run -- gpuprof_no_such_program_xyz --flag");
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("gpuprof: error: cannot run 'gpuprof_no_such_program_xyz': No such file or "
                               "directory"));
  EXPECT_THAT(r.err, Not(HasSubstr("no CUDA activity")));
}

TEST_F(RunCommandTest, NonExecutableApplicationExits126) {
  std::ofstream(dir_ + "/not_executable.sh") << "#!/bin/sh\nexit 0\n";
  CliResult r = Run("run -- ./not_executable.sh");
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_THAT(r.err, HasSubstr("cannot run './not_executable.sh': Permission denied"));
}

TEST_F(RunCommandTest, NoApplicationIsAUsageError) {
  for (const char* args : {"run", "run --", "run -o out", "run --follow-children --"}) {
    CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_THAT(r.err, HasSubstr("no application given")) << args;
    EXPECT_THAT(r.err, HasSubstr("gpuprof run --help")) << args;
  }
}

TEST_F(RunCommandTest, UnknownFlagBeforeTheApplicationIsAUsageError) {
  CliResult r = Run("run --no-such-flag -- /bin/true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--no-such-flag"));
  EXPECT_THAT(r.err, HasSubstr("gpuprof run --help"));
}

TEST_F(RunCommandTest, HelpDescribesTheContract) {
  CliResult r = Run("run --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"--follow-children", "-o,--output", "CUDA_INJECTION64_PATH",
                           "GPUPROF_INJECT_LIBRARY", "128+N", "127", "SIGINT", "APP [ARGS...]"}) {
    EXPECT_THAT(r.out, HasSubstr(text));
  }
}

TEST_F(RunCommandTest, InjectLibraryVariableNamingNoFileIsAnError) {
  CliResult r = Run("run -- /bin/true", "GPUPROF_INJECT_LIBRARY=/nonexistent/libgpuprof_inject.so");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("GPUPROF_INJECT_LIBRARY=/nonexistent/libgpuprof_inject.so"));
  EXPECT_THAT(r.err, HasSubstr("does not exist"));
  EXPECT_THAT(r.err, HasSubstr("unset it"));
}

TEST_F(RunCommandTest, MissingInjectLibraryNamesThePathsTried) {
  // A copy of gpuprof in a directory with no lib/ beside it or under it.
  const std::string bin = dir_ + "/lonely/bin";
  fs::create_directories(bin);
  fs::copy_file(GPUPROF_CLI_PATH, bin + "/gpuprof");
  fs::permissions(bin + "/gpuprof", fs::perms::owner_all);
  CliResult r = Run("run -- /bin/true", "GPUPROF_INJECT_LIBRARY=", bin + "/gpuprof");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot find gpuprof's CUDA injection library libgpuprof_inject.so"));
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/lonely/lib/libgpuprof_inject.so"));
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/lonely/bin/lib/libgpuprof_inject.so"));
  EXPECT_THAT(r.err, HasSubstr("GPUPROF_ENABLE_CUDA=ON"));
}

TEST_F(RunCommandTest, InjectLibraryBesideTheExecutableIsFound) {
  const std::string root = dir_ + "/tree";
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/lib");
  fs::copy_file(GPUPROF_CLI_PATH, root + "/bin/gpuprof");
  fs::permissions(root + "/bin/gpuprof", fs::perms::owner_all);
  std::ofstream(root + "/lib/libgpuprof_inject.so") << "stand-in\n";
  CliResult r = Run("run -- /bin/sh -c 'echo \"$CUDA_INJECTION64_PATH\"'",
                    "GPUPROF_INJECT_LIBRARY=", root + "/bin/gpuprof");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, root + "/lib/libgpuprof_inject.so\n");
}

// `gpuprof replay` is `gpuprof run` with kernel replay configured: its flags reach the injected
// session as GPUPROF_REPLAY_* variables (cupti/replay_hook.h reads them).
TEST_F(RunCommandTest, ReplayFlagsReachTheApplicationAsVariables) {
  CliResult r = Run(
      "replay --passes 4 -k regex:gemm -s 2 -c 3 --cache-control none --restore full --strict "
      "--no-replay-printf-kernels --replay-malloc-kernels --replay-with-live-arrays=1 --device-reserve 512 "
      "-o out -- "
      "/bin/sh -c 'echo "
      "\"$GPUPROF_REPLAY_PASSES|$GPUPROF_REPLAY_KERNEL|$GPUPROF_REPLAY_SKIP|$GPUPROF_REPLAY_COUNT|"
      "$GPUPROF_REPLAY_CACHE_CONTROL|$GPUPROF_REPLAY_RESTORE|$GPUPROF_REPLAY_STRICT|$GPUPROF_LOG_LEVEL|"
      "$GPUPROF_REPLAY_PRINTF_KERNELS|$GPUPROF_REPLAY_MALLOC_KERNELS|$GPUPROF_REPLAY_WITH_LIVE_ARRAYS|"
      "$GPUPROF_REPLAY_DEVICE_RESERVE_MIB|$GPUPROF_OUTPUT_DIR\"'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "4|regex:gemm|2|3|none|full|1|info|0|1|1|512|" + dir_ + "/out\n");
  EXPECT_THAT(r.err, HasSubstr("gpuprof: replaying 'regex:gemm', 4 passes per launch, at most 3 launches"));
}

TEST_F(RunCommandTest, ReplayDefaultsAndTheUsersLogLevel) {
  CliResult r =
      Run("replay -- /bin/sh -c 'echo \"$GPUPROF_REPLAY_PASSES|$GPUPROF_REPLAY_KERNEL|"
          "$GPUPROF_REPLAY_CACHE_CONTROL|$GPUPROF_REPLAY_RESTORE|$GPUPROF_LOG_LEVEL|"
          "$GPUPROF_REPLAY_PRINTF_KERNELS|$GPUPROF_REPLAY_MALLOC_KERNELS|$GPUPROF_REPLAY_WITH_LIVE_ARRAYS|"
          "$GPUPROF_REPLAY_DEVICE_RESERVE_MIB\"; exit 5'",
          "GPUPROF_LOG_LEVEL=warning");
  EXPECT_EQ(r.exit_code, 5) << "the application's exit status, as for run";
  EXPECT_EQ(r.out, "5||all|auto|warning|1|0|0|2048\n");
  EXPECT_THAT(r.err, HasSubstr("replaying every kernel"));
}

TEST_F(RunCommandTest, ReplayUsageErrorsNameTheFlag) {
  CliResult no_app = Run("replay --passes 3");
  EXPECT_EQ(no_app.exit_code, 2);
  EXPECT_THAT(no_app.err, HasSubstr("no application given: gpuprof replay"));
  EXPECT_THAT(no_app.err, HasSubstr("gpuprof replay --help"));
  CliResult one_pass = Run("replay --passes 1 -- /bin/true");
  EXPECT_EQ(one_pass.exit_code, 2);
  EXPECT_THAT(one_pass.err, HasSubstr("--passes"));
  EXPECT_THAT(one_pass.err, HasSubstr("gpuprof replay --help"));
  CliResult cache = Run("replay --cache-control some -- /bin/true");
  EXPECT_EQ(cache.exit_code, 2);
  EXPECT_THAT(cache.err, HasSubstr("--cache-control"));
}

// Issue 40: range replay's flags (Nsight Compute's --replay-mode and --nvtx-include, and --range) reach
// the application; the ones that do not go together are usage errors naming both flags.
TEST_F(RunCommandTest, ReplayRangeFlagsReachTheApplicationAndConflictsAreUsageErrors) {
  CliResult step = Run(
      "replay --replay-mode range --range step -c 2 --max-range-operations 900 --max-range-host-mib 64 -- "
      "/bin/sh -c 'echo \"$GPUPROF_REPLAY_MODE|$GPUPROF_REPLAY_RANGE|$GPUPROF_REPLAY_NVTX_INCLUDE|"
      "$GPUPROF_REPLAY_MAX_RANGE_OPERATIONS|$GPUPROF_REPLAY_MAX_RANGE_HOST_MIB|$GPUPROF_REPLAY_COUNT\"'");
  ASSERT_EQ(step.exit_code, 0) << step.err;
  EXPECT_EQ(step.out, "range|step||900|64|2\n");
  EXPECT_THAT(step.err,
              HasSubstr("replaying every kernel in each training step, 5 passes per range, at most 2 "
                        "ranges"));
  CliResult nvtx = Run(
      "replay --replay-mode range --nvtx-include train -- /bin/sh -c 'echo $GPUPROF_REPLAY_NVTX_INCLUDE'");
  ASSERT_EQ(nvtx.exit_code, 0) << nvtx.err;
  EXPECT_EQ(nvtx.out, "train\n");
  EXPECT_THAT(nvtx.err, HasSubstr("in each NVTX range 'train'"));

  CliResult conflict = Run("replay --replay-mode range --range step --nvtx-include train -- /bin/true");
  EXPECT_EQ(conflict.exit_code, 2);
  EXPECT_THAT(conflict.err,
              HasSubstr("--nvtx-include (replay_nvtx_include) \"train\" delimits ranges by an NVTX "
                        "range, but --range (replay_range) step delimits them by training step"));
  EXPECT_THAT(conflict.err, HasSubstr("gpuprof replay --help"));
  CliResult kernel_mode = Run("replay --replay-mode kernel --range step -- /bin/true");
  EXPECT_EQ(kernel_mode.exit_code, 2);
  EXPECT_THAT(kernel_mode.err, HasSubstr("but --replay-mode (replay_mode) is kernel: drop one of them"));
  CliResult implied = Run("replay --range step -- /bin/true");
  EXPECT_EQ(implied.exit_code, 0) << implied.err;
  EXPECT_THAT(implied.err, HasSubstr("in each training step")) << "--range step implies --replay-mode range";
  CliResult bad = Run("replay --replay-mode ranges -- /bin/true");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--replay-mode"));
  EXPECT_THAT(bad.err, HasSubstr("kernel"));
}

TEST_F(RunCommandTest, ReplayHelpDescribesSelectionAndDeclines) {
  CliResult r = Run("replay --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text :
       {"--passes", "-k,--kernel-name", "regex:PATTERN", "-s,--launch-skip", "-c,--launch-count",
        "--cache-control", "--restore", "--strict", "--replay-printf-kernels", "--no-replay-printf-kernels",
        "--replay-malloc-kernels", "--replay-with-live-arrays", "Declined launches", "--replay-mode",
        "--range", "--nvtx-include", "--max-range-operations", "--max-range-host-mib", "count ranges"}) {
    EXPECT_THAT(r.out, HasSubstr(text));
  }
}

TEST_F(RunCommandTest, EnvironmentReachesTheApplication) {
  CliResult r =
      Run("run -o out -- /bin/sh -c 'echo \"$CUDA_INJECTION64_PATH\"; echo \"$GPUPROF_OUTPUT_DIR\"; "
          "echo \"$GPUPROF_RESULT_FILE\"; echo \"$GPUPROF_FOLLOW_CHILDREN\"; echo \"$GPUPROF_ROOT_PID\" $$; "
          "echo \"$NVTX_INJECTION64_PATH\"; echo \"$GPUPROF_LOG_LEVEL\"; echo \"$GPUPROF_WORKER_NAME\"; "
          "test -f \"$GPUPROF_RESULT_FILE\" && echo result-file-exists'",
          "GPUPROF_LOG_LEVEL=debug GPUPROF_WORKER_NAME=w0 GPUPROF_ROOT_PID=1 GPUPROF_FOLLOW_CHILDREN=1 "
          "GPUPROF_OUTPUT_DIR=/elsewhere");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream stream(r.out);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 9u) << r.out;
  EXPECT_EQ(lines[0], inject_);
  EXPECT_EQ(lines[1], dir_ + "/out") << "absolute, so it holds when the application changes directory";
  EXPECT_THAT(lines[2], Not(HasSubstr(dir_))) << "the result file lives in a private temporary directory";
  EXPECT_FALSE(fs::exists(lines[2])) << "and is removed after the run";
  EXPECT_EQ(lines[3], "0") << "gpuprof's flag decides, not an inherited variable";
  std::istringstream pids(lines[4]);
  std::string root_pid, shell_pid;
  pids >> root_pid >> shell_pid;
  EXPECT_EQ(root_pid, shell_pid) << "GPUPROF_ROOT_PID is the application's own pid";
  EXPECT_EQ(lines[5], "") << "not set: the stand-in library has no NVTX entry point";
  EXPECT_EQ(lines[6], "debug") << "GPUPROF_LOG_LEVEL passes through";
  EXPECT_EQ(lines[7], "w0") << "GPUPROF_WORKER_NAME passes through";
  EXPECT_EQ(lines[8], "result-file-exists");
}

// The application's environment holds each variable once: getenv (the session) reads the first
// of two entries, a shell the last, so a duplicate could hand the session the relative -o.
TEST_F(RunCommandTest, EachVariableReachesTheApplicationOnce) {
  CliResult r = Run("run -o out -- /usr/bin/env");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream stream(r.out);
  int output_dirs = 0;
  for (std::string line; std::getline(stream, line);) {
    if (line.rfind("GPUPROF_OUTPUT_DIR=", 0) == 0) {
      ++output_dirs;
      EXPECT_EQ(line, "GPUPROF_OUTPUT_DIR=" + dir_ + "/out");
    }
  }
  EXPECT_EQ(output_dirs, 1) << r.out;
}

TEST_F(RunCommandTest, FollowChildrenFlagIsPassedOn) {
  CliResult r = Run("run --follow-children -- /bin/sh -c 'echo \"$GPUPROF_FOLLOW_CHILDREN\"'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

TEST_F(RunCommandTest, CudaTraceReachesTheApplicationAndBadListsAreUsageErrors) {
  const std::string echo = " -- /bin/sh -c 'echo \"[$GPUPROF_CUDA_TRACE]\"'";
  CliResult unset = Run("run" + echo, "GPUPROF_CUDA_TRACE=");
  EXPECT_EQ(unset.exit_code, 0) << unset.err;
  EXPECT_EQ(unset.out, "[]\n") << "no flag: the session's default";
  CliResult list = Run("run --cuda-trace runtime,nvtx" + echo);
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, "[runtime,nvtx]\n");
  CliResult none = Run("run --cuda-trace none" + echo);
  EXPECT_EQ(none.out, "[none]\n");
  CliResult no_dashes = Run("run --cuda-trace driver /bin/sh -c 'echo \"[$GPUPROF_CUDA_TRACE]\"'");
  EXPECT_EQ(no_dashes.out, "[driver]\n") << "the flag takes one value; the application follows";
  EXPECT_EQ(Run("run --cuda-trace launches,nvtx" + echo).out, "[launches,nvtx]\n");
  for (const char* bad : {"kernel", "runtime,runtime", "none,driver", "launches,runtime"}) {
    CliResult r = Run(std::string("run --cuda-trace ") + bad + " -- /bin/true");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--cuda-trace")) << bad;
  }
  // The session's own check and words (base/settings.h), not a second copy in the CLI.
  EXPECT_THAT(Run("run --cuda-trace runtime,runtime -- /bin/true").err,
              HasSubstr("\"runtime\" is given twice"));
  EXPECT_THAT(
      Run("run --cuda-trace driver,launches -- /bin/true").err,
      HasSubstr(
          "\"launches\" records the launching calls of the runtime and driver APIs, \"driver\" every call "
          "of the driver; give one of them"));
  EXPECT_THAT(Run("run --help").out, HasSubstr("--cuda-trace"));
}

TEST_F(RunCommandTest, ReplayFromScriptArmsTheChildAndFollowsChildrenWhenAsked) {
  CliResult r =
      Run("replay --from-script --follow-children -- /bin/sh -c "
          "'echo \"$GPUPROF_REPLAY_FROM_SCRIPT|$GPUPROF_FOLLOW_CHILDREN|$GPUPROF_REPLAY_PASSES|"
          "$GPUPROF_REPLAY_PRINTF_KERNELS\"'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1|1||\n") << "armed, children followed, no command-line selection";
  EXPECT_THAT(r.err, HasSubstr("replay armed; the program chooses what to replay"));
  CliResult both = Run("replay --from-script -k gemm -- /bin/true");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_THAT(both.err, HasSubstr("--from-script excludes --kernel-name"));
  CliResult malloc_kernels = Run("replay --from-script --replay-malloc-kernels -- /bin/true");
  EXPECT_NE(malloc_kernels.exit_code, 0) << "gpuprof.KernelReplay(malloc_kernels=...) decides";
  EXPECT_THAT(malloc_kernels.err, HasSubstr("--from-script excludes --replay-malloc-kernels"));
}

TEST_F(RunCommandTest, NvtxInjectionNamesAnInjectionLibraryWithTheNvtxEntryPoint) {
  const std::string echo = "run -- /bin/sh -c 'echo \"$NVTX_INJECTION64_PATH\"'";
  const std::string stub = std::string("GPUPROF_INJECT_LIBRARY=") + ShellQuote(GPUPROF_NVTX_STUB_LIBRARY);
  CliResult with_entry = Run(echo, stub);
  EXPECT_EQ(with_entry.exit_code, 0) << with_entry.err;
  EXPECT_EQ(with_entry.out, std::string(GPUPROF_NVTX_STUB_LIBRARY) + "\n");
  CliResult users = Run(echo, stub + " NVTX_INJECTION64_PATH=/opt/tool/libnvtx_tool.so");
  EXPECT_EQ(users.out, "/opt/tool/libnvtx_tool.so\n") << "the user's choice wins";
  CliResult without_entry = Run(echo);
  EXPECT_EQ(without_entry.out, "\n") << "a library without InitializeInjectionNvtx2 is not named";
}

TEST_F(RunCommandTest, TheExecGuardIsPreloadedUnlessTurnedOff) {
  // The real guard beside the stand-in injection library, as in a build tree.
  fs::copy_file(GPUPROF_EXEC_GUARD_LIBRARY, dir_ + "/libgpuprof_exec_guard.so");
  const std::string echo = "-- /bin/sh -c 'echo \"$LD_PRELOAD|$GPUPROF_EXEC_GUARD\"'";
  CliResult on = Run("run " + echo, "LD_PRELOAD=");
  EXPECT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(on.out, dir_ + "/libgpuprof_exec_guard.so|1\n");
  CliResult flag = Run("run --no-exec-guard " + echo, "LD_PRELOAD=");
  EXPECT_EQ(flag.out, "|0\n") << flag.err;
  EXPECT_THAT(flag.err, Not(HasSubstr("exec guard"))) << "asked for: no line";
  CliResult variable = Run("replay " + echo, "LD_PRELOAD= GPUPROF_EXEC_GUARD=off");
  EXPECT_EQ(variable.out, "|0\n") << variable.err;
  CliResult flag_wins = Run("run --exec-guard " + echo, "LD_PRELOAD= GPUPROF_EXEC_GUARD=0");
  EXPECT_EQ(flag_wins.out, dir_ + "/libgpuprof_exec_guard.so|1\n") << flag_wins.err;
  CliResult bad = Run("run " + echo, "GPUPROF_EXEC_GUARD=maybe");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("GPUPROF_EXEC_GUARD"));
  // A sanitizer runtime the user preloads must stay first: the guard is left out, with one line.
  CliResult preloaded = Run("run " + echo, "LD_PRELOAD=/nonexistent/libasan.so.8");
  EXPECT_EQ(preloaded.out, "/nonexistent/libasan.so.8|0\n") << preloaded.err;
  EXPECT_THAT(preloaded.err, HasSubstr("runs with a sanitizer (/nonexistent/libasan.so.8)"));
}

#ifdef GPUPROF_TEST_ASAN_APP
TEST_F(RunCommandTest, AnAddressSanitizerProgramRunsWithoutTheExecGuard) {
  fs::copy_file(GPUPROF_EXEC_GUARD_LIBRARY, dir_ + "/libgpuprof_exec_guard.so");
  // Preloaded before its runtime, the guard made it exit at start: "ASan runtime does not come
  // first in initial library list".
  CliResult r = Run(std::string("run -- ") + ShellQuote(GPUPROF_TEST_ASAN_APP), "LD_PRELOAD=");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "asan app ran\n") << r.err;
  EXPECT_THAT(r.err, HasSubstr("the exec guard is off"));
  // Found through PATH, as execvp finds it.
  const fs::path app(GPUPROF_TEST_ASAN_APP);
  CliResult by_name = Run("run -- " + app.filename().string(),
                          "LD_PRELOAD= PATH=" + ShellQuote(app.parent_path().string()) + ":\"$PATH\"");
  EXPECT_EQ(by_name.exit_code, 0) << by_name.err;
  EXPECT_EQ(by_name.out, "asan app ran\n") << by_name.err;
  EXPECT_THAT(by_name.err, HasSubstr("the exec guard is off"));
}
#else
TEST_F(RunCommandTest, AnAddressSanitizerProgramRunsWithoutTheExecGuard) {
  GTEST_SKIP() << "no AddressSanitizer program here: the compiler cannot link one, or this build uses "
                  "ThreadSanitizer, whose flags exclude AddressSanitizer's (tests/unit/cli/CMakeLists.txt)";
}
#endif

TEST_F(RunCommandTest, ArgumentsAfterTheApplicationBelongToIt) {
  // No `--`: the application starts at the first argument that is not one of run's flags.
  CliResult r = Run("run -o out /bin/sh -c 'echo \"$*\"' sh -o --help --follow-children run");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "-o --help --follow-children run\n");
  // An application named like a gpuprof subcommand is still the application.
  CliResult named = Run("run -- stats");
  EXPECT_EQ(named.exit_code, 127);
  EXPECT_THAT(named.err, HasSubstr("cannot run 'stats'"));
}

TEST_F(RunCommandTest, ApplicationKilledBySignalGives128PlusSignal) {
  CliResult r = Run("run -- /bin/sh -c 'kill -TERM $$'");
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_THAT(r.err, HasSubstr("killed by signal 15"));
  EXPECT_THAT(r.err, HasSubstr("no profile DB was written"));
}

TEST_F(RunCommandTest, SigtermSentToGpuprofIsForwardedToTheApplication) {
  const std::string ready = dir_ + "/ready";
  const std::string script =
      "trap 'exit 7' TERM; touch " + ShellQuote(ready) + "; while :; do sleep 0.05; done";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("GPUPROF_INJECT_LIBRARY", inject_.c_str(), 1);
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDERR_FILENO);
    std::string out_dir = dir_ + "/out";
    execl(GPUPROF_CLI_PATH, "gpuprof", "run", "-o", out_dir.c_str(), "--", "/bin/sh", "-c", script.c_str(),
          static_cast<char*>(nullptr));
    _exit(99);
  }
  for (int i = 0; i < 400 && !fs::exists(ready); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(fs::exists(ready)) << "the application never started";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "gpuprof itself must not die of the signal";
  EXPECT_EQ(WEXITSTATUS(status), 7) << "the application's trap ran and its exit code came back";
}

TEST_F(RunCommandTest, UnfinishedDbIsReported) {
  CliResult r = Run(
      "run -o out -- /bin/sh -c 'd=\"$GPUPROF_OUTPUT_DIR/h_1_2_ascend_pt/ASCEND_PROFILER_OUTPUT\"; "
      "mkdir -p \"$d\" && echo x > \"$d/ascend_pytorch_profiler.db.partial\"; "
      "echo \"partial $d/ascend_pytorch_profiler.db.partial\" >> \"$GPUPROF_RESULT_FILE\"; kill -KILL $$'");
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_THAT(r.err, HasSubstr("no profile DB was finalized"));
  EXPECT_THAT(r.err, HasSubstr("ascend_pytorch_profiler.db.partial"));
  EXPECT_THAT(r.err, HasSubstr("signal 9"));
}

TEST_F(RunCommandTest, AResultDirLeftByAKilledGpuprofIsRemovedByTheNextRun) {
  const std::string tmp = dir_ + "/tmp";
  fs::create_directories(tmp);
  // gpuprof killed with SIGKILL cannot remove its private folder: it stays behind.
  CliResult killed = Run("run -- sleep 2 & g=$!; sleep 0.5; kill -KILL $g; wait $g; ls " + ShellQuote(tmp),
                         "TMPDIR=" + ShellQuote(tmp));
  ASSERT_THAT(killed.out, HasSubstr("gpuprof-run-")) << "the killed run's folder was expected to be left";
  // A folder of a live gpuprof (this test's pid) is not touched.
  const std::string live = tmp + "/gpuprof-run-" + std::to_string(getpid()) + "-abcdef";
  fs::create_directories(live);
  CliResult next = Run("run -- true; ls " + ShellQuote(tmp), "TMPDIR=" + ShellQuote(tmp));
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, "gpuprof-run-" + std::to_string(getpid()) + "-abcdef\n");
}

TEST_F(RunCommandTest, AnotherRunsUnfinishedDbInTheSameOutputIsNotClaimed) {
  // A live (or dead) run's .partial beside this run's: only the files this run's processes
  // reported are this run's. Before, every recent .partial under -o was named as this run's.
  const std::string other = dir_ + "/out/h_9_2_ascend_pt/ASCEND_PROFILER_OUTPUT";
  fs::create_directories(other);
  ASSERT_TRUE(std::ofstream(other + "/ascend_pytorch_profiler_0.db.partial") << "x");
  CliResult r = Run("run -o out -- /bin/sh -c 'kill -KILL $$'");
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_THAT(r.err, Not(HasSubstr("ascend_pytorch_profiler_0.db.partial")));
  EXPECT_THAT(r.err, Not(HasSubstr("no profile DB was finalized")));
  EXPECT_THAT(r.err, HasSubstr("no profile DB was written: the application was killed by signal 9"));
}

TEST_F(RunCommandTest, AFailedStartIsNamedInTheLastLine) {
  // What a session that cannot start appends (session::AppendResultLine from gpuprof_start).
  CliResult r =
      Run("run -o out -- /bin/sh -c 'echo \"failed pid 77: cannot create the output directory /x: Permission "
          "denied\" >> \"$GPUPROF_RESULT_FILE\"'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.err,
              HasSubstr("gpuprof: no profile was recorded: profiling could not start in pid 77: cannot "
                        "create the output directory /x: Permission denied; the application ran "
                        "unprofiled"));
  EXPECT_THAT(r.err, Not(HasSubstr("did not initialize CUDA")));
}

#ifdef GPUPROF_RUN_TEST_FIXTURES
namespace fixture = gpuprof::db::fixture;

TEST_F(RunCommandTest, ReportedDbIsSummarized) {
  // The application plays a session: it "finalizes" a fixture DB and reports it the way the
  // session does, one "db <path>" line appended to GPUPROF_RESULT_FILE (plus a line gpuprof
  // does not know, which it must ignore).
  gpuprof::StatusOr<std::string> db = fixture::WriteFixtureRun(dir_ + "/out", "node0_4242_20240101");
  ASSERT_TRUE(db.ok()) << db.status().message();
  CliResult r = Run(
      "run -o out -- /bin/sh -c 'echo \"future-line x\" >> \"$GPUPROF_RESULT_FILE\"; "
      "echo \"db " +
      *db + "\" >> \"$GPUPROF_RESULT_FILE\"; echo \"db " + *db + "\" >> \"$GPUPROF_RESULT_FILE\"; exit 0'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gpuprof: profile DB: " + *db));
  // 4 kernel launches of 3 kernels (fixture_db.h), 250 µs of device time; gemm_kernel<float>
  // and gemm_bwd_kernel (100 µs each) lead.
  EXPECT_THAT(r.err,
              HasSubstr("Top kernels by total time (4 launches of 3 kernels, 0.250 ms on the device)"));
  EXPECT_THAT(r.err, HasSubstr("gemm_kernel<float>"));
  EXPECT_THAT(r.err, HasSubstr("relu_kernel"));
  EXPECT_THAT(r.err, HasSubstr("Device tasks:"));
  EXPECT_THAT(r.err, HasSubstr("KERNEL"));
  // Runtime rows: 4 cudaLaunchKernel (30 µs) + 1 cudaMemcpyAsync (10 µs).
  EXPECT_THAT(r.err, HasSubstr("CUDA API: 5 calls of 2 functions, 0.040 ms in total"));
  EXPECT_THAT(r.err, HasSubstr("cudaLaunchKernel"));
  EXPECT_THAT(r.err, HasSubstr("cudaMemcpyAsync"));
  EXPECT_THAT(r.err, Not(HasSubstr("no CUDA activity")));
  // Listed twice, summarized once.
  std::size_t first = r.err.find("gpuprof: profile DB:");
  EXPECT_EQ(r.err.find("gpuprof: profile DB:", first + 1), std::string::npos) << r.err;
}

TEST_F(RunCommandTest, UnreadableReportedDbIsAWarningNotAFailure) {
  const std::string bogus = dir_ + "/bogus.db";
  std::ofstream(bogus) << "this is not sqlite, and long enough to be looked at as a file header....\n";
  CliResult r = Run("run -- /bin/sh -c 'echo \"db " + bogus + "\" >> \"$GPUPROF_RESULT_FILE\"; exit 4'");
  EXPECT_EQ(r.exit_code, 4) << "the application's exit code, whatever the DB";
  EXPECT_THAT(r.err, HasSubstr("gpuprof: profile DB: " + bogus));
  EXPECT_THAT(r.err, HasSubstr("gpuprof: warning: cannot summarize it"));
}
#endif

}  // namespace
