// CudaDevice's pieces that run without a GPU: the driver table reports a missing driver as one
// Unavailable naming libcuda.so.1, the one libcuda loader (CudaDriver::Load, which cupti's
// DriverApi uses too) names what it could not open or resolve, and the SM clock reads 0 (never
// crashes) where NVML or the device is absent. The GPU behaviour is tested by tests/gpu (label gpu).
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

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

TEST(CudaDriverTest, LoadTriesEveryCandidateAndNamesEach) {
  StatusOr<CudaDriver> driver =
      CudaDriver::Load({"/nonexistent/a/libcuda.so.1", "/nonexistent/b/libcuda.so.1"});
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(driver.status().message(), ::testing::HasSubstr("CUDA driver unavailable"));
  EXPECT_THAT(driver.status().message(), ::testing::HasSubstr("/nonexistent/a/libcuda.so.1"));
  EXPECT_THAT(driver.status().message(), ::testing::HasSubstr("/nonexistent/b/libcuda.so.1"));
  EXPECT_EQ(CudaDriver::Load({}).status().code(), StatusCode::kUnavailable);
}

// A library without the driver's symbols loads; the table says what it lacks, under the exported
// (versioned) names, and leaves those entries null for the caller to judge.
TEST(CudaDriverTest, LoadLeavesWhatTheLibraryLacksNullAndNamesIt) {
  StatusOr<CudaDriver> driver = CudaDriver::Load({"libm.so.6"});
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  EXPECT_EQ(driver->library, "libm.so.6");
  EXPECT_THAT(driver->missing, ::testing::HasSubstr("cuDriverGetVersion, cuGetErrorString"));
  EXPECT_THAT(driver->missing, ::testing::HasSubstr("cuMemAlloc_v2"));
  EXPECT_EQ(driver->DeviceGetCount, nullptr);
  EXPECT_EQ(driver->LaunchKernel, nullptr);
}

// The toolkit's stub libcuda exports CUDA 13's driver API: every entry resolves under the name
// the loader asks for.
TEST(CudaDriverTest, ToolkitStubDriverResolvesEveryEntry) {
  const std::string path = std::string(GPUPROF_TEST_CUDA_LIBRARY_DIR) + "/stubs/libcuda.so";
  if (access(path.c_str(), R_OK) != 0) GTEST_SKIP() << path << " not installed";
  StatusOr<CudaDriver> driver = CudaDriver::Load({path});
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  EXPECT_EQ(driver->missing, "");
  EXPECT_NE(driver->DriverGetVersion, nullptr);
  EXPECT_NE(driver->LibraryGetGlobal, nullptr);
  // Range replay's entries; cuFuncGetParamInfo is optional, but CUDA 13 has it.
  EXPECT_NE(driver->StreamDestroy, nullptr);
  EXPECT_NE(driver->FuncGetParamInfo, nullptr);
}

}  // namespace
}  // namespace gpuprof::device::cuda
