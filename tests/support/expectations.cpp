#include "tests/support/expectations.h"

#include <gtest/gtest.h>

namespace sdc::testing {

void expect_all_near(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "record " << i + 1;
}

}  // namespace sdc::testing
