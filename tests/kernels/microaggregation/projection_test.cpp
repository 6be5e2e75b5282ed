#include "kernels/microaggregation/projection.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/core/error.h"
#include "kernels/microaggregation/grouping.h"
#include "tests/kernels/microaggregation/information_loss_support.h"

namespace sdc::microaggregation {
namespace {

using testing::columns_of;

const NumericData kTwoDimensions =
    columns_of({{1, 2, 3, 10, 11, 12, 20, 21, 22, 30, 31}, {5, 3, 4, 8, 9, 7, 1, 2, 0, 6, 6}});

TEST(AProjectionOnOneVariable, GivesTheRemainderToTheLastGroup) {
  const auto view = kTwoDimensions.view();
  const Grouping grouping = projection(view, 3, Projection::kSingleVariable, 1);
  const auto means = aggregate(view, grouping, Aggregation::kMean);
  const std::vector<double> a = {2, 2, 2, 18.8, 18.8, 18.8, 21, 21, 21, 18.8, 18.8};
  const std::vector<double> b = {4, 4, 4, 7.2, 7.2, 7.2, 1, 1, 1, 7.2, 7.2};
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(means[0][i], a[i]) << "record " << i + 1;
    EXPECT_DOUBLE_EQ(means[1][i], b[i]) << "record " << i + 1;
  }
  EXPECT_EQ(grouping.group_of_record[8], 0);
}

TEST(AnIndividualRanking, ReproducesTheReferenceOnTwoDimensions) {
  const auto means = individual_ranking(kTwoDimensions.view(), 3);
  const std::vector<double> a = {2, 2, 2, 11, 11, 11, 24.8, 24.8, 24.8, 24.8, 24.8};
  const std::vector<double> b = {4, 4, 4, 7.2, 7.2, 7.2, 1, 1, 1, 7.2, 7.2};
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_DOUBLE_EQ(means[0][i], a[i]) << "record " << i + 1;
    EXPECT_DOUBLE_EQ(means[1][i], b[i]) << "record " << i + 1;
  }
}

TEST(AProjection, RejectsFewerThanTwoKRecords) {
  const auto data = columns_of({{1, 2, 3, 4, 5}});
  EXPECT_THROW(projection(data.view(), 3, Projection::kZScoreSum, 0), ParameterError);
  EXPECT_THROW(projection(kTwoDimensions.view(), 3, Projection::kSingleVariable, 2), ParameterError);
}

TEST(AProjectionOnTheFirstPrincipalComponent, OrdersAlongTheDominantDirection) {
  // Two strongly correlated variables: PC1 loads both positively, so the score follows a.
  const auto data = columns_of({{1, 2, 3, 4, 5, 6, 7}, {1.1, 2.3, 2.9, 4.2, 5.1, 5.8, 7.3}});
  const Grouping grouping = projection(data.view(), 3, Projection::kFirstPrincipalComponent, 0);
  EXPECT_EQ(grouping.group_of_record, (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 1}));
  const Grouping zsum = projection(data.view(), 3, Projection::kZScoreSum, 0);
  EXPECT_EQ(zsum.group_of_record, grouping.group_of_record);
}

TEST(AProjectionOnZScores, RejectsAMissingValue) {
  auto data = columns_of({{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}});
  data.columns[1][3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(projection(data.view(), 3, Projection::kZScoreSum, 0), InvalidInput);
}

}  // namespace
}  // namespace sdc::microaggregation
