// The CUDA replay hook's host-side parts (no GPU): kernel names as users select them (C4) and the
// GPUPROF_REPLAY_* variables `gpuprof replay` sets.
#include "cupti/replay_hook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

namespace gpuprof::cupti {
namespace {

using ::testing::HasSubstr;

TEST(KernelFunctionNameTest, DemangledWithoutParameters) {
  EXPECT_EQ(KernelFunctionName("_Z15in_place_updatePji"), "in_place_update");
  EXPECT_EQ(KernelFunctionName("_Z12scale_kernelIfEvPT_S0_i"), "scale_kernel<float>");
  // A kernel in an anonymous namespace keeps its qualifier and loses only its parameters.
  EXPECT_EQ(KernelFunctionName("_ZN12_GLOBAL__N_120softmax_warp_forwardEPf"),
            "(anonymous namespace)::softmax_warp_forward");
  EXPECT_EQ(KernelFunctionName("_ZN2at6native12_GLOBAL__N_16reduceEPf"), "at::native::(anonymous namespace)::reduce");
}

TEST(KernelFunctionNameTest, PlainNamesStayAsTheyAre) {
  EXPECT_EQ(KernelFunctionName("gpuprof_hash_chunks"), "gpuprof_hash_chunks");
  EXPECT_EQ(KernelFunctionName("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n"), "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n");
}

class ReplayEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"GPUPROF_REPLAY_PASSES", "GPUPROF_REPLAY_KERNEL", "GPUPROF_REPLAY_SKIP",
                             "GPUPROF_REPLAY_COUNT", "GPUPROF_REPLAY_CACHE_CONTROL", "GPUPROF_REPLAY_RESTORE",
                             "GPUPROF_REPLAY_STRICT", "GPUPROF_REPLAY_DEVICE_RESERVE_MIB"}) {
      unsetenv(name);
    }
  }
};

TEST_F(ReplayEnvironmentTest, UnsetMeansOnePassAndTheDefaults) {
  auto settings = ReplaySettingsFromEnvironment();
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->options.passes, 1);
  EXPECT_TRUE(settings->flush_l2) << "L2 flushed before each pass by default (B7)";
  EXPECT_EQ(settings->options.restore, replay::RestoreMode::kAuto);
  EXPECT_EQ(settings->device.device_reserve_bytes, std::uint64_t{2} << 30) << "B2's default reserve: 2 GiB";
}

TEST_F(ReplayEnvironmentTest, ReadsWhatGpuprofReplaySets) {
  setenv("GPUPROF_REPLAY_PASSES", "4", 1);
  setenv("GPUPROF_REPLAY_KERNEL", "regex:gemm", 1);
  setenv("GPUPROF_REPLAY_SKIP", "2", 1);
  setenv("GPUPROF_REPLAY_COUNT", "3", 1);
  setenv("GPUPROF_REPLAY_CACHE_CONTROL", "none", 1);
  setenv("GPUPROF_REPLAY_RESTORE", "full", 1);
  setenv("GPUPROF_REPLAY_STRICT", "1", 1);
  setenv("GPUPROF_REPLAY_DEVICE_RESERVE_MIB", "512", 1);
  auto settings = ReplaySettingsFromEnvironment();
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  const replay::ReplayOptions* options = &settings->options;
  EXPECT_EQ(options->passes, 4);
  EXPECT_EQ(options->selector.name, "regex:gemm");
  EXPECT_EQ(options->selector.skip, 2u);
  EXPECT_EQ(options->selector.count, 3u);
  EXPECT_FALSE(settings->flush_l2);
  EXPECT_EQ(options->restore, replay::RestoreMode::kFull);
  EXPECT_TRUE(options->strict);
  EXPECT_EQ(settings->device.device_reserve_bytes, std::uint64_t{512} << 20);
}

TEST_F(ReplayEnvironmentTest, BadValuesNameTheVariable) {
  setenv("GPUPROF_REPLAY_PASSES", "three", 1);
  auto passes = ReplaySettingsFromEnvironment();
  ASSERT_FALSE(passes.ok());
  EXPECT_THAT(passes.status().message(), HasSubstr("GPUPROF_REPLAY_PASSES=three"));
  unsetenv("GPUPROF_REPLAY_PASSES");
  setenv("GPUPROF_REPLAY_CACHE_CONTROL", "some", 1);
  auto cache = ReplaySettingsFromEnvironment();
  ASSERT_FALSE(cache.ok());
  EXPECT_THAT(cache.status().message(), HasSubstr("expected all or none"));
  unsetenv("GPUPROF_REPLAY_CACHE_CONTROL");
  setenv("GPUPROF_REPLAY_DEVICE_RESERVE_MIB", "-1", 1);
  auto reserve = ReplaySettingsFromEnvironment();
  ASSERT_FALSE(reserve.ok());
  EXPECT_THAT(reserve.status().message(), HasSubstr("GPUPROF_REPLAY_DEVICE_RESERVE_MIB=-1"));
}

}  // namespace
}  // namespace gpuprof::cupti
