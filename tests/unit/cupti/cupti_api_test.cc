#include "cupti/cupti_api.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cupti/subscriber.h"
#include "unit/cupti/fake_cupti.h"

namespace gpuprof::cupti {
namespace {

using ::testing::HasSubstr;

bool Exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }
const std::string kLibDir = GPUPROF_TEST_CUDA_LIBRARY_DIR;

// ---- the "CUPTI unavailable" fallback ---------------------------------------------------------

TEST(LoadCuptiApiTest, MissingLibraryIsUnavailableNamingItAndDlerror) {
  auto api = LoadCuptiApi({"/nonexistent/libcupti.so.13"});
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(api.status().message(), HasSubstr("CUPTI unavailable"));
  EXPECT_THAT(api.status().message(), HasSubstr("/nonexistent/libcupti.so.13"));
  EXPECT_THAT(api.status().message(), HasSubstr("No such file"));  // dlerror()
}

TEST(LoadCuptiApiTest, EveryCandidateIsTriedAndReported) {
  auto api = LoadCuptiApi({"/nonexistent/a/libcupti.so.13", "/nonexistent/b/libcupti.so"});
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(api.status().message(), HasSubstr("/nonexistent/a/libcupti.so.13"));
  EXPECT_THAT(api.status().message(), HasSubstr("/nonexistent/b/libcupti.so"));
}

TEST(LoadCuptiApiTest, NoCandidatesIsUnavailable) {
  auto api = LoadCuptiApi({});
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
}

TEST(LoadCuptiApiTest, LibraryWithoutTheSymbolsIsUnavailableNamingThem) {
  auto api = LoadCuptiApi({"libm.so.6"});
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(api.status().message(), HasSubstr("libm.so.6 lacks cuptiGetResultString"));
  EXPECT_THAT(api.status().message(), HasSubstr("cuptiSubscribe_v2"));
}

TEST(LoadCuptiApiTest, DefaultCandidatesPreferTheSonameThenTheToolkit) {
  const std::vector<std::string> candidates = DefaultCuptiCandidates();
  ASSERT_GE(candidates.size(), 3u);
  const auto soname = std::find(candidates.begin(), candidates.end(), "libcupti.so.13");
  const auto toolkit =
      std::find(candidates.begin(), candidates.end(), "/usr/local/cuda/lib64/libcupti.so.13");
  ASSERT_NE(soname, candidates.end());
  ASSERT_NE(toolkit, candidates.end());
  EXPECT_LT(soname, toolkit);
}

// The toolkit's real libcupti loads without a driver (it opens libcuda lazily): every symbol
// gpuprof uses exists in CUDA 13's CUPTI, and the version check passes.
TEST(LoadCuptiApiTest, ToolkitCuptiResolvesEverySymbol) {
  const std::string path = kLibDir + "/libcupti.so.13";
  if (!Exists(path)) GTEST_SKIP() << path << " not installed";
  auto api = LoadCuptiApi({path});
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  std::uint32_t version = 0;
  ASSERT_EQ((*api)->GetVersion(&version), CUPTI_SUCCESS);
  EXPECT_EQ(version / 10000, kCuptiMajorVersion);
  EXPECT_THAT(CuptiErrorString(**api, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
              HasSubstr("MULTIPLE_SUBSCRIBERS"));
  // Callback names carry the runtime's version suffix, which NormalizeApiName strips.
  const char* name = nullptr;
  ASSERT_EQ((*api)->GetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
                                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &name),
            CUPTI_SUCCESS);
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, "cudaLaunchKernel_v7000");
}

// The whole fallback with the real CUPTI on a machine without a driver (CI): the library loads,
// subscribing fails, and the caller gets one Unavailable status to log; nothing crashes.
TEST(LoadCuptiApiTest, RealCuptiWithoutADriverMakesStartUnavailable) {
  const std::string path = kLibDir + "/libcupti.so.13";
  if (!Exists(path)) GTEST_SKIP() << path << " not installed";
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr)
    GTEST_SKIP() << "a CUDA driver is installed here";
  auto api = LoadCuptiApi({path});
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  auto subscriber = CuptiSubscriber::Start(std::shared_ptr<CuptiApi>(std::move(api).value()),
                                           [](std::vector<trace::Record>&&) {});
  ASSERT_FALSE(subscriber.ok());
  EXPECT_EQ(subscriber.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(subscriber.status().message(), HasSubstr("no GPU activity"));
}

TEST(LoadDriverApiTest, MissingLibcudaIsUnavailable) {
  auto api = LoadDriverApi({"/nonexistent/libcuda.so.1"});
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(api.status().message(), HasSubstr("CUDA driver unavailable"));
  EXPECT_THAT(api.status().message(), HasSubstr("/nonexistent/libcuda.so.1"));
}

TEST(LoadDriverApiTest, DefaultLoadFailsCleanlyWithoutADriver) {
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr)
    GTEST_SKIP() << "a CUDA driver is installed here";
  auto api = LoadDriverApi();
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(api.status().message(), HasSubstr("libcuda.so.1"));
}

// The toolkit's stub libcuda.so exports the symbols but every call fails: a clean Unavailable.
TEST(LoadDriverApiTest, StubDriverListsNoDevices) {
  const std::string path = kLibDir + "/stubs/libcuda.so";
  if (!Exists(path)) GTEST_SKIP() << path << " not installed";
  auto api = LoadDriverApi({path});
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  auto devices = ListDevices(**api);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(devices.status().message(), HasSubstr("cuDeviceGetCount"));
}

// ---- status mapping and device listing ----------------------------------------------------------

TEST(CuptiStatusTest, NamesTheCallTheErrorAndTheContext) {
  testing::FakeCuptiApi api;
  EXPECT_TRUE(CuptiStatus(api, CUPTI_SUCCESS, "cuptiActivityEnable").ok());
  const Status unavailable = CuptiStatus(api, CUPTI_ERROR_NOT_INITIALIZED, "cuptiActivityEnable", "MEMCPY");
  EXPECT_EQ(unavailable.code(), StatusCode::kUnavailable);
  EXPECT_EQ(unavailable.message(), "cuptiActivityEnable failed: CUPTI_ERROR_NOT_INITIALIZED (MEMCPY)");
  EXPECT_EQ(CuptiStatus(api, CUPTI_ERROR_UNKNOWN, "cuptiActivityFlushAll").code(), StatusCode::kInternal);
  // An error string CUPTI cannot give still yields a message with the number.
  EXPECT_THAT(CuptiStatus(api, CUPTI_ERROR_HARDWARE, "x").message(), HasSubstr("CUPTI error 9"));
}

TEST(ListDevicesTest, ReturnsOrdinalsAndNames) {
  testing::FakeDriverApi api;
  api.device_names = {"NVIDIA H200", "NVIDIA H200"};
  auto devices = ListDevices(api);
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].first, 1);
  EXPECT_EQ((*devices)[1].second, "NVIDIA H200");
}

TEST(ListDevicesTest, UninitializedDriverIsUnavailable) {
  testing::FakeDriverApi api;
  api.count_result = CUDA_ERROR_NOT_INITIALIZED;
  auto devices = ListDevices(api);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(devices.status().message(), HasSubstr("initialization error"));
}

}  // namespace
}  // namespace gpuprof::cupti
