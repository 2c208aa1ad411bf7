// How NVML's answers reach the clock lock (--clock-control base, C3): the codes the lock tells
// apart and the call named in its message. No NVML call is made: these tests never touch a clock.
#include "cupti/nvml_clock_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "device/cuda/nvml.h"

namespace gpuprof::cupti {
namespace {

using replay::ClockCallCode;
using ::testing::HasSubstr;

TEST(ClockCallFromNvmlTest, SuccessIsOk) {
  EXPECT_TRUE(
      ClockCallFromNvml(device::cuda::nvml::kSuccess, "nvmlDeviceSetGpuLockedClocks", "Success").ok());
}

TEST(ClockCallFromNvmlTest, NoPermissionAndNotSupportedAreToldApart) {
  const replay::ClockCallResult denied = ClockCallFromNvml(
      device::cuda::nvml::kErrorNoPermission, "nvmlDeviceSetGpuLockedClocks", "Insufficient Permissions");
  EXPECT_EQ(denied.code, ClockCallCode::kNoPermission);
  EXPECT_THAT(denied.message, HasSubstr("nvmlDeviceSetGpuLockedClocks: Insufficient Permissions"));
  EXPECT_EQ(ClockCallFromNvml(device::cuda::nvml::kErrorNotSupported, "nvmlDeviceSetMemoryLockedClocks",
                              "Not Supported")
                .code,
            ClockCallCode::kNotSupported);
}

TEST(ClockCallFromNvmlTest, AnyOtherCodeIsAnErrorNamingTheCall) {
  const replay::ClockCallResult failed =
      ClockCallFromNvml(999, "nvmlDeviceResetGpuLockedClocks", "Unknown Error");
  EXPECT_EQ(failed.code, ClockCallCode::kError);
  EXPECT_THAT(failed.message, HasSubstr("nvmlDeviceResetGpuLockedClocks"));
}

}  // namespace
}  // namespace gpuprof::cupti
