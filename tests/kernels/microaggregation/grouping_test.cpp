#include "kernels/microaggregation/grouping.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "tests/kernels/microaggregation/information_loss_support.h"

namespace sdc::microaggregation {
namespace {

using testing::columns_of;

TEST(AGrouping, AggregatesByMeanAndMedianKeepingMissingValues) {
  auto data = columns_of({{1, 2, 9, 4, 5, 6}});
  data.columns[0][1] = std::numeric_limits<double>::quiet_NaN();
  const Grouping grouping{{0, 0, 0, 1, 1, 1}, 2};
  const auto means = aggregate(data.view(), grouping, Aggregation::kMean);
  EXPECT_EQ(means[0][0], 5.0);
  EXPECT_TRUE(std::isnan(means[0][1]));
  EXPECT_EQ(means[0][3], 5.0);
  const auto medians = aggregate(data.view(), grouping, Aggregation::kMedian);
  EXPECT_EQ(medians[0][2], 5.0);
  EXPECT_EQ(medians[0][4], 5.0);
}

TEST(AGrouping, CountsGroupSizes) {
  const Grouping grouping{{0, 0, 0, 1, 1, 1, 1, 2, 2, 2}, 3};
  EXPECT_EQ(group_size_histogram(grouping), (std::vector<std::int64_t>{0, 0, 0, 2, 1}));
}

TEST(AGrouping, GivesAPairTheHalfOfItsSquaredDistance) {
  const auto data = columns_of({{0, 3}, {0, 4}});
  EXPECT_DOUBLE_EQ(within_group_sse(data.view(), Grouping{{0, 0}, 1}), 12.5);
}

TEST(AStandardisation, GivesSstEqualToRecordsTimesVariables) {
  const auto data = columns_of({{1, 5, 2, 8, 3}, {4, 4, 4, 4, 4}, {10, -3, 7, 2, 0}});
  const NumericData z = standardise(data.view(), population_moments(data.view()));
  EXPECT_NEAR(total_sum_of_squares(z.view()), 10.0, 1e-12);
  for (const double value : z.columns[1]) EXPECT_EQ(value, 0.0);
}

}  // namespace
}  // namespace sdc::microaggregation
