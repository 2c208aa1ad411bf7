#include "cupti/time_converter.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "base/clock.h"
#include "unit/cupti/fake_cupti.h"

namespace gpuprof::cupti {
namespace {

TEST(TimeConverterTest, FixedOffsetMapsCuptiToEpoch) {
  const TimeConverter time = TimeConverter::WithOffset(1'000'000);
  EXPECT_EQ(time.ToEpochNs(5), 1'000'005);
  EXPECT_EQ(time.offset_ns(), 1'000'000);
  EXPECT_EQ(time.uncertainty_ns(), 0);
}

TEST(TimeConverterTest, UnknownTimestampStaysZero) {
  EXPECT_EQ(TimeConverter::WithOffset(123).ToEpochNs(0), 0);
}

TEST(TimeConverterTest, NegativeOffsetWorks) {
  // CUPTI's clock may run ahead of the epoch (e.g. a realtime-based CUPTI clock sampled late).
  EXPECT_EQ(TimeConverter::WithOffset(-10).ToEpochNs(100), 90);
}

TEST(TimeConverterTest, SampleAnchorsTheCuptiClockToTheEpochClock) {
  testing::FakeCuptiApi api;
  api.timestamp = 5'000'000'000;  // CUPTI says "5 s" at the moment of sampling
  const std::int64_t before = base::EpochNowNs();
  auto time = TimeConverter::Sample(api);
  const std::int64_t after = base::EpochNowNs();
  ASSERT_TRUE(time.ok()) << time.status().ToString();
  // The sampled CUPTI instant maps into the window in which sampling happened.
  EXPECT_GE(time->ToEpochNs(api.timestamp), before);
  EXPECT_LE(time->ToEpochNs(api.timestamp), after);
  EXPECT_GE(time->uncertainty_ns(), 0);
  EXPECT_LE(time->uncertainty_ns(), after - before);
  // Later CUPTI times keep their distance.
  EXPECT_EQ(time->ToEpochNs(api.timestamp + 1234) - time->ToEpochNs(api.timestamp), 1234);
}

TEST(TimeConverterTest, SampleFailureNamesTheCall) {
  testing::FakeCuptiApi api;
  api.timestamp_result = CUPTI_ERROR_NOT_INITIALIZED;
  auto time = TimeConverter::Sample(api);
  ASSERT_FALSE(time.ok());
  EXPECT_EQ(time.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(time.status().message().find("cuptiGetTimestamp"), std::string::npos);
  EXPECT_NE(time.status().message().find("CUPTI_ERROR_NOT_INITIALIZED"), std::string::npos);
}

}  // namespace
}  // namespace gpuprof::cupti
