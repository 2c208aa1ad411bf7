// The CUDA replay hook's host-side parts (no GPU): kernel names as users select them (C4). The
// GPUPROF_REPLAY_* variables are parsed by session/config (config_test.cc).
#include "cupti/replay_hook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuprof::cupti {
namespace {

TEST(KernelFunctionNameTest, DemangledWithoutParameters) {
  EXPECT_EQ(KernelFunctionName("_Z15in_place_updatePji"), "in_place_update");
  EXPECT_EQ(KernelFunctionName("_Z12scale_kernelIfEvPT_S0_i"), "scale_kernel<float>");
  // A kernel in an anonymous namespace keeps its qualifier and loses only its parameters.
  EXPECT_EQ(KernelFunctionName("_ZN12_GLOBAL__N_120softmax_warp_forwardEPf"),
            "(anonymous namespace)::softmax_warp_forward");
  EXPECT_EQ(KernelFunctionName("_ZN2at6native12_GLOBAL__N_16reduceEPf"),
            "at::native::(anonymous namespace)::reduce");
}

TEST(KernelFunctionNameTest, PlainNamesStayAsTheyAre) {
  EXPECT_EQ(KernelFunctionName("gpuprof_hash_chunks"), "gpuprof_hash_chunks");
  EXPECT_EQ(KernelFunctionName("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n"),
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n");
}

}  // namespace
}  // namespace gpuprof::cupti
