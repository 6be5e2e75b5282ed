#include "engine/progress.h"

#include <gtest/gtest.h>

namespace sdc::engine {
namespace {

TEST(AProgressLine, GivesCountsRateAndTimeLeft) {
  EXPECT_EQ(Progress::describe(1500000, 3000000, 3.0), "1.50M/3.00M records (50%) in 0:03, 500k/s, 0:03 left");
  EXPECT_EQ(Progress::describe(3000000, 3000000, 6.0), "3.00M/3.00M records (100%) in 0:06, 500k/s");
  EXPECT_EQ(Progress::describe(0, 100, 0.0), "0/100 records (0%) in 0:00");
  EXPECT_EQ(Progress::describe(50, 100, 4000.0), "50/100 records (50%) in 1:06:40, 0/s, 1:06:40 left");
}

TEST(AProgress, StaysSilentWhenNotWanted) {
  testing::internal::CaptureStderr();
  {
    Progress progress("test", 10, false);
    progress.update(5);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(progress_wanted(false, true));
  EXPECT_TRUE(progress_wanted(true, true));
}

TEST(AProgress, WritesOneFinalLineWhenForced) {
  testing::internal::CaptureStderr();
  {
    Progress progress("generate census", 10, true);
    progress.update(10);
  }
  const std::string text = testing::internal::GetCapturedStderr();
  EXPECT_NE(text.find("generate census: 10/10 records (100%)"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace sdc::engine
