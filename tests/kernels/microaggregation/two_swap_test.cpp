#include "kernels/microaggregation/two_swap.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <random>
#include <vector>

#include "kernels/microaggregation/grouping.h"
#include "kernels/microaggregation/mdav.h"
#include "tests/kernels/microaggregation/information_loss_support.h"
#include "tests/kernels/support/reference_data.h"

namespace sdc::microaggregation {
namespace {

using testing::columns_of;
using testing::rounded;

struct SwapOutcome {
  double il;
  std::int64_t swaps;
};

SwapOutcome swap_from_reference_mdav(const NumericData& data, int k) {
  const auto view = data.view();
  const NumericData z = standardise(view, population_moments(view));
  const MdavResult start = mdav(view, k, MdavMode::kCompat);
  const TwoSwapResult result = two_swap(z.view(), start.grouping, 1'000'000);
  return {100.0 * result.sse / total_sum_of_squares(z.view()), result.swaps};
}

TEST(ATwoSwap, ImprovesAPoorPartitionAndKeepsGroupSizes) {
  const auto data = columns_of({{0, 10, 1, 11, 2, 12}});
  Grouping start{{0, 0, 0, 1, 1, 1}, 2};
  const TwoSwapResult result = two_swap(data.view(), start, 100);
  EXPECT_EQ(result.grouping.group_of_record, (std::vector<std::int32_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_NEAR(result.sse, 4.0, 1e-12);
  EXPECT_EQ(group_size_histogram(result.grouping), group_size_histogram(start));
}

TEST(ATwoSwap, StopsAfterTheGivenNumberOfPasses) {
  const auto data = columns_of({{0, 10, 1, 11, 2, 12}});
  const TwoSwapResult result = two_swap(data.view(), Grouping{{0, 0, 0, 1, 1, 1}, 2}, 1);
  EXPECT_EQ(result.swaps, 1);
}

TEST(ATwoSwap, SwapsTheSameWayForOneAndTwoThreads) {
  std::mt19937_64 engine(5);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> columns(3, std::vector<double>(600));
  for (auto& column : columns) {
    for (auto& value : column) value = normal(engine);
  }
  const auto data = columns_of(columns);
  const Grouping start = mdav(data.view(), 3, MdavMode::kNative).grouping;
  TwoSwapResult one;
  TwoSwapResult two;
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    one = two_swap(data.view(), start, 40);
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    two = two_swap(data.view(), start, 40);
  }
  EXPECT_EQ(one.grouping.group_of_record, two.grouping.group_of_record);
  EXPECT_EQ(one.swaps, two.swaps);
}

TEST(ATwoSwap, ReproducesThePublishedResultsFromTheReferenceMdavOnTarragona) {
  const auto data = sdc::testing::read_reference_csv("Tarragona.csv");
  if (!data) GTEST_SKIP() << "shared reference data absent";
  const std::vector<std::tuple<int, double, std::int64_t>> expected = {
      {3, 15.0432, 161}, {5, 20.7384, 214}, {10, 30.7746, 334}};
  for (const auto& [k, il, swaps] : expected) {
    const SwapOutcome outcome = swap_from_reference_mdav(*data, k);
    EXPECT_EQ(rounded(outcome.il, 4), il) << "k = " << k;
    EXPECT_EQ(outcome.swaps, swaps) << "k = " << k;
  }
}

TEST(ATwoSwap, ReproducesThePublishedResultsFromTheReferenceMdavOnCensus) {
  const auto data = sdc::testing::read_reference_csv("CASCrefmicrodata.csv");
  if (!data) GTEST_SKIP() << "shared reference data absent";
  const std::vector<std::tuple<int, double, std::int64_t>> expected = {
      {3, 5.2906, 148}, {5, 8.1953, 202}, {10, 12.4565, 300}};
  for (const auto& [k, il, swaps] : expected) {
    const SwapOutcome outcome = swap_from_reference_mdav(*data, k);
    EXPECT_EQ(rounded(outcome.il, 4), il) << "k = " << k;
    EXPECT_EQ(outcome.swaps, swaps) << "k = " << k;
  }
}

}  // namespace
}  // namespace sdc::microaggregation
