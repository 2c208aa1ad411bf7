// cli/sanitizer_runtime.h on real files: this test's own executable, /bin/sh, an AddressSanitizer
// program built beside it, scripts that name it as their interpreter, and LD_PRELOAD values.
#include "cli/sanitizer_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuprof::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SanitizerRuntimeTest, ResolvesLikeExecvp) {
  EXPECT_EQ(ResolveLikeExecvp("sh", "/nonexistent:/bin:/usr/bin"), "/bin/sh");
  EXPECT_EQ(ResolveLikeExecvp("./relative/app", "/bin"), "./relative/app") << "a '/' means no lookup";
  EXPECT_EQ(ResolveLikeExecvp("gpuprof_no_such_program_xyz", "/bin:/usr/bin"), "");
  EXPECT_EQ(ResolveLikeExecvp("", "/bin"), "");
}

TEST(SanitizerRuntimeTest, AnOrdinaryProgramHasNone) {
  EXPECT_EQ(SanitizerRuntimeOf("/bin/sh", "/bin"), "");
  EXPECT_EQ(SanitizerRuntimeOf("/nonexistent/program", "/bin"), "");
  EXPECT_EQ(SanitizerRuntimeOf("/dev/null", "/bin"), "") << "not a regular file";
}

TEST(SanitizerRuntimeTest, PreloadedRuntimesAreFound) {
  EXPECT_EQ(SanitizerInPreload("/usr/lib/x86_64-linux-gnu/libasan.so.8"),
            "/usr/lib/x86_64-linux-gnu/libasan.so.8");
  EXPECT_EQ(SanitizerInPreload("libfoo.so:libclang_rt.tsan-x86_64.so"), "libclang_rt.tsan-x86_64.so");
  EXPECT_EQ(SanitizerInPreload("libfoo.so libtsan.so.2"), "libtsan.so.2");
  EXPECT_EQ(SanitizerInPreload("/opt/libasanity/libfoo.so:"), "") << "a folder's name is not the library's";
  EXPECT_EQ(SanitizerInPreload(""), "");
}

#ifdef GPUPROF_TEST_ASAN_APP
TEST(SanitizerRuntimeTest, AnAddressSanitizerProgramAndScriptsItRunsAreFound) {
  const std::string app = GPUPROF_TEST_ASAN_APP;
  // gcc links libasan.so (DT_NEEDED, named before the symbol); clang links its runtime in (the
  // __asan_init symbol).
#if defined(__clang__)
  EXPECT_THAT(SanitizerRuntimeOf(app, "/bin"),
              AnyOf(StartsWith("libclang_rt.asan"), StartsWith("__asan_init")));
#else
  EXPECT_THAT(SanitizerRuntimeOf(app, "/bin"), StartsWith("libasan."));
#endif
  const fs::path dir = fs::path(app).parent_path();
  const fs::path direct = dir / "sanitizer_runtime_test_direct.sh";
  const fs::path via_env = dir / "sanitizer_runtime_test_env.sh";
  std::ofstream(direct) << "#!" << app << " -x\necho\n";
  std::ofstream(via_env) << "#! /usr/bin/env -S " << fs::path(app).filename().string() << "\n";
  EXPECT_THAT(SanitizerRuntimeOf(direct, "/bin"), HasSubstr("asan"));
  EXPECT_THAT(SanitizerRuntimeOf(via_env, "/bin:" + dir.string()), HasSubstr("asan"));
  EXPECT_EQ(SanitizerRuntimeOf(via_env, "/bin"), "") << "not in PATH: nothing to examine";
  fs::remove(direct);
  fs::remove(via_env);
}
#else
TEST(SanitizerRuntimeTest, AnAddressSanitizerProgramAndScriptsItRunsAreFound) {
  GTEST_SKIP() << "no AddressSanitizer program here: the compiler cannot link one, or this build uses "
                  "ThreadSanitizer, whose flags exclude AddressSanitizer's (tests/unit/cli/CMakeLists.txt)";
}
#endif

}  // namespace
}  // namespace gpuprof::cli
