#include "kernels/microaggregation/vmdav.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/microaggregation/grouping.h"
#include "tests/kernels/microaggregation/information_loss_support.h"
#include "tests/kernels/support/reference_data.h"

namespace sdc::microaggregation {
namespace {

using testing::columns_of;

NumericData clustered_records() {
  std::mt19937_64 engine(3);
  std::normal_distribution<double> noise(0.0, 0.05);
  std::vector<std::vector<double>> columns(2);
  for (int cluster = 0; cluster < 20; ++cluster) {
    const int members = 2 + cluster % 5;
    for (int m = 0; m < members; ++m) {
      columns[0].push_back(cluster * 3.0 + noise(engine));
      columns[1].push_back((cluster % 4) * 2.0 + noise(engine));
    }
  }
  return columns_of(columns);
}

TEST(AVmdav, KeepsEveryGroupAtLeastK) {
  const auto data = clustered_records();
  for (const int k : {2, 3, 5}) {
    for (const double gamma : {0.0, 0.2, 1.1}) {
      const auto histogram = group_size_histogram(vmdav(data.view(), k, gamma));
      for (std::size_t size = 0; size < static_cast<std::size_t>(k) && size < histogram.size(); ++size) {
        EXPECT_EQ(histogram[size], 0) << "k " << k << " gamma " << gamma << " size " << size;
      }
    }
  }
}

TEST(AVmdav, NeverExtendsAGroupWhenGammaIsZero) {
  const auto data = clustered_records();
  const Grouping grouping = vmdav(data.view(), 3, 0.0);
  const auto histogram = group_size_histogram(grouping);
  // Without extension only the rows left at the end can enlarge a group: at most k − 1 of them.
  std::int64_t larger = 0;
  for (std::size_t size = 4; size < histogram.size(); ++size)
    larger += histogram[size] * static_cast<std::int64_t>(size - 3);
  EXPECT_LE(larger, 2);
}

TEST(AVmdav, ExtendsGroupsOnClusteredData) {
  const auto data = clustered_records();
  const auto histogram = group_size_histogram(vmdav(data.view(), 2, 1.1));
  std::int64_t extended = 0;
  for (std::size_t size = 3; size < histogram.size(); ++size) extended += histogram[size];
  EXPECT_GT(extended, 0);
}

TEST(AVmdav, RejectsANegativeGainFactor) {
  const auto data = clustered_records();
  EXPECT_THROW(vmdav(data.view(), 3, -0.5), ParameterError);
}

TEST(AVmdav, KeepsGroupsAtLeastKOnTarragona) {
  const auto data = sdc::testing::read_reference_csv("Tarragona.csv");
  if (!data) GTEST_SKIP() << "shared reference data absent";
  const NumericData z = standardise(data->view(), population_moments(data->view()));
  const auto histogram = group_size_histogram(vmdav(z.view(), 3, 0.2));
  for (std::size_t size = 0; size < 3; ++size) EXPECT_EQ(histogram[size], 0);
}

}  // namespace
}  // namespace sdc::microaggregation
