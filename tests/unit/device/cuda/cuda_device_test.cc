// CudaDevice's pieces that run without a GPU: the driver table reports a missing driver as one
// Unavailable naming libcuda.so.1, and the SM clock reads 0 (never crashes) where NVML or the
// device is absent. The GPU behaviour is tested by tests/gpu (label gpu).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <dlfcn.h>

#include "device/cuda/cuda_driver.h"
#include "device/cuda/sm_clock.h"

namespace gpuprof::device::cuda {
namespace {

TEST(SmClockTest, UnknownOrEmptyDeviceReadsZero) {
  EXPECT_EQ(SmClock("").ReadKhz(), 0u);
  // No GPU has this bus id (and this machine may have no NVML at all).
  EXPECT_EQ(SmClock("ffff:ff:1f.7").ReadKhz(), 0u);
}

TEST(CudaDriverTest, MissingDriverIsUnavailableNamingTheLibrary) {
  void* present = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (present == nullptr) present = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (present != nullptr) GTEST_SKIP() << "this machine has a CUDA driver";
  StatusOr<const CudaDriver*> driver = CudaDriver::Get();
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(), ::testing::HasSubstr("libcuda.so.1"));
}

}  // namespace
}  // namespace gpuprof::device::cuda
