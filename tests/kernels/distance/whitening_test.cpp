#include "kernels/distance/whitening.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::distance {
namespace {

NumericData random_data(std::size_t n, std::size_t p, double offset, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> draw;
  NumericData data;
  data.columns.assign(p, std::vector<double>(n));
  for (std::size_t j = 0; j < p; ++j) data.names.push_back("v" + std::to_string(j + 1));
  for (std::size_t i = 0; i < n; ++i) {
    const double common = draw(engine);
    for (std::size_t j = 0; j < p; ++j) data.columns[j][i] = offset + common + 0.5 * draw(engine);
    data.row_ids.push_back(static_cast<std::int64_t>(i));
  }
  return data;
}

NumericData rows(const NumericData& data, std::size_t begin, std::size_t end) {
  NumericData part;
  part.names = data.names;
  for (const auto& column : data.columns)
    part.columns.emplace_back(column.begin() + static_cast<std::ptrdiff_t>(begin),
                              column.begin() + static_cast<std::ptrdiff_t>(end));
  part.row_ids.assign(data.row_ids.begin() + static_cast<std::ptrdiff_t>(begin),
                      data.row_ids.begin() + static_cast<std::ptrdiff_t>(end));
  return part;
}

TEST(MomentsOfAFile, AreTheSameBitsForAnySplitAndMergeOrder) {
  const auto data = random_data(1000, 3, 1e6, 3);
  const auto whole = moments_finalize(moments_local(data.view()));
  auto forward = moments_local(rows(data, 0, 333).view());
  moments_merge(forward, moments_local(rows(data, 333, 800).view()));
  moments_merge(forward, moments_local(rows(data, 800, 1000).view()));
  MomentsPartial backward;
  moments_merge(backward, moments_local(rows(data, 800, 1000).view()));
  moments_merge(backward, moments_local(rows(data, 0, 333).view()));
  moments_merge(backward, moments_local(rows(data, 333, 800).view()));
  for (const auto& total : {forward, backward}) {
    const auto merged = moments_finalize(total);
    EXPECT_EQ(merged.count, 1000);
    EXPECT_TRUE((merged.mean.array() == whole.mean.array()).all());
    EXPECT_TRUE((merged.covariance.array() == whole.covariance.array()).all());
  }
}

TEST(MomentsOfAFile, KeepTheirDigitsWhenTheMeanIsLargeAgainstTheSpread) {
  // Values 1e9 + {1, 2, 3, 4}: variance 5/3 with divisor n − 1.
  NumericData data;
  data.names = {"v"};
  data.columns = {{1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4}};
  data.row_ids = {0, 1, 2, 3};
  const auto moments = moments_finalize(moments_local(data.view()));
  EXPECT_EQ(moments.covariance(0, 0), 5.0 / 3.0);
  EXPECT_EQ(moments.mean[0], 1e9 + 2.5);
}

TEST(AStandardisation, GivesZeroMeanAndUnitSdWithItsOwnMoments) {
  const auto data = random_data(500, 2, 50.0, 5);
  const auto points = standardise_own(data.view());
  const auto moments = moments_finalize(moments_local(data.view()));
  for (Eigen::Index j = 0; j < 2; ++j) {
    const auto column = points.coordinates.col(j);
    EXPECT_NEAR(column.mean(), 0.0, 1e-12);
    EXPECT_NEAR((column.array() - column.mean()).square().sum() / 499.0, 1.0, 1e-12);
    EXPECT_EQ(points.coordinates(0, j),
              (data.columns[static_cast<std::size_t>(j)][0] - moments.mean[j]) / std::sqrt(moments.covariance(j, j)));
  }
}

TEST(AWhitening, TurnsTheCovarianceIntoTheIdentity) {
  const auto data = random_data(2000, 3, 10.0, 7);
  const auto moments = moments_finalize(moments_local(data.view()));
  const auto whitening = whitening_finalize(moments.covariance, moments.mean);
  EXPECT_EQ(whitening.epsilon, 0.0);
  const auto points = whiten(data.view(), whitening);
  const Eigen::MatrixXd centred = points.coordinates.rowwise() - points.coordinates.colwise().mean();
  const Eigen::MatrixXd covariance = centred.transpose() * centred / 1999.0;
  EXPECT_TRUE(covariance.isIdentity(1e-10)) << covariance;
}

TEST(AWhitening, RegularisesASingularCovarianceWithADoublingEpsilon) {
  Eigen::MatrixXd singular(2, 2);
  singular << 1.0, 2.0, 2.0, 4.0;
  const auto whitening = whitening_finalize(singular, Eigen::VectorXd::Zero(2));
  EXPECT_GE(whitening.epsilon, 1e-10);
  // ε is 1e−10 times a power of two.
  const double steps = std::log2(whitening.epsilon / 1e-10);
  EXPECT_EQ(steps, std::round(steps));
  EXPECT_THROW(whitening_finalize(Eigen::MatrixXd::Zero(2, 2), Eigen::VectorXd::Zero(2)), ParameterError);
}

}  // namespace
}  // namespace sdc::distance
