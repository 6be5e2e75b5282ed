#include "kernels/microaggregation/univariate_optimal.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kernels/microaggregation/grouping.h"
#include "kernels/microaggregation/mdav.h"
#include "tests/kernels/microaggregation/information_loss_support.h"
#include "tests/kernels/support/reference_data.h"

namespace sdc::microaggregation {
namespace {

using testing::columns_of;
using testing::information_loss;
using testing::rounded;
using testing::single_variable;

double optimal_il(const NumericData& one) {
  const auto view = one.view();
  const Grouping grouping = univariate_optimal(view.columns[0], view.row_ids, 3);
  return information_loss(view, aggregate(view, grouping, Aggregation::kMean), population_moments(view)).il();
}

TEST(AnOptimalUnivariateMicroaggregation, SplitsTwoClustersWhereTheyPart) {
  const auto data = columns_of({{10, 1, 11, 2, 12, 3}});
  const auto view = data.view();
  const Grouping grouping = univariate_optimal(view.columns[0], view.row_ids, 3);
  EXPECT_EQ(grouping.group_count, 2);
  EXPECT_EQ(grouping.group_of_record, (std::vector<std::int32_t>{1, 0, 1, 0, 1, 0}));
}

TEST(AnOptimalUnivariateMicroaggregation, KeepsEveryGroupBetweenKAndTwoKMinusOne) {
  std::vector<double> values(101);
  std::iota(values.begin(), values.end(), 0.0);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = values[i] * values[i] * 0.01;
  const auto data = columns_of({values});
  const auto view = data.view();
  const auto histogram = group_size_histogram(univariate_optimal(view.columns[0], view.row_ids, 4));
  for (std::size_t size = 0; size < histogram.size(); ++size) {
    if (size < 4 || size > 7) {
      EXPECT_EQ(histogram[size], 0) << "size " << size;
    }
  }
}

TEST(AnOptimalUnivariateMicroaggregation, NeverLosesMoreThanMdav) {
  const auto data = columns_of({{5, 1, 9, 2, 2, 8, 7, 3, 15, 4, 4, 11, 0, 6}});
  const auto view = data.view();
  const Moments moments = population_moments(view);
  const NumericData z = standardise(view, moments);
  const double optimal = within_group_sse(z.view(), univariate_optimal(view.columns[0], view.row_ids, 3));
  const double heuristic = within_group_sse(z.view(), mdav(view, 3, MdavMode::kCompat).grouping);
  EXPECT_LE(optimal, heuristic + 1e-12);
}

TEST(AnOptimalUnivariateMicroaggregation, ReproducesThePublishedLossesOnTarragona) {
  const auto data = sdc::testing::read_reference_csv("Tarragona.csv");
  if (!data) GTEST_SKIP() << "shared reference data absent";
  const std::vector<double> expected = {7.14095, 0.55260, 0.50964, 1.48615, 1.68754, 0.47314, 1.91953,
                                        0.26456, 1.28545, 1.74606, 2.54015, 4.13548, 4.95108};
  for (std::size_t j = 0; j < expected.size(); ++j) {
    EXPECT_NEAR(optimal_il(single_variable(*data, j)), expected[j], 5e-6) << data->names[j];
  }
}

TEST(AnOptimalUnivariateMicroaggregation, ReproducesThePublishedLossesOnCensus) {
  const auto data = sdc::testing::read_reference_csv("CASCrefmicrodata.csv");
  if (!data) GTEST_SKIP() << "shared reference data absent";
  const std::vector<double> expected = {0.13076, 0.00083, 0.00751, 0.00408, 0.02345, 0.02922, 0.00123,
                                        0.43188, 0.69120, 0.00305, 0.00748, 0.00348, 0.00375};
  for (std::size_t j = 0; j < expected.size(); ++j) {
    EXPECT_NEAR(optimal_il(single_variable(*data, j)), expected[j], 5e-6) << data->names[j];
  }
}

TEST(AnOptimalSegmentation, EqualsTheUnivariateOptimumOnTheSortedOrder) {
  const auto data = columns_of({{5, 1, 9, 2, 2, 8, 7, 3, 15, 4, 4, 11, 0, 6}});
  const auto view = data.view();
  const NumericData z = standardise(view, population_moments(view));
  std::vector<std::int64_t> order(14);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return view.columns[0][static_cast<std::size_t>(a)] < view.columns[0][static_cast<std::size_t>(b)];
  });
  const Grouping segmented = optimal_segmentation(z.view(), order, 3);
  const Grouping univariate = univariate_optimal(view.columns[0], view.row_ids, 3);
  EXPECT_NEAR(within_group_sse(z.view(), segmented), within_group_sse(z.view(), univariate), 1e-12);
}

}  // namespace
}  // namespace sdc::microaggregation
