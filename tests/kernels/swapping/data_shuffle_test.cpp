#include "kernels/swapping/data_shuffle.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/LU>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/core/record_rng.h"
#include "kernels/distance/whitening.h"
#include "kernels/perturbation/noise.h"
#include "tests/kernels/support/correlation.h"

namespace sdc::swapping {
namespace {

using testing::average_ranks;
using testing::bivariate_normal;
using testing::pearson;
using testing::spearman;

using Columns = std::vector<std::vector<double>>;

constexpr double kSqrt2 = 1.4142135623730950488;

double relative_error(double got, double expected) { return std::fabs(got - expected) / std::fabs(expected); }

double normal_cdf(double x) { return 0.5 * std::erfc(-x / kSqrt2); }

/// x − Φ⁻¹(p) to first order, (Φ(x) − p)/φ(x), in long double: the forward error of x = normal_quantile(p).
long double forward_error(double p, double x) {
  const long double xl = x;
  const long double cdf = 0.5L * std::erfc(-xl / std::sqrt(2.0L));
  const long double density = std::exp(-xl * xl / 2.0L) / std::sqrt(2.0L * 3.14159265358979323846264338327950288L);
  return (cdf - static_cast<long double>(p)) / density;
}

/// The largest relative forward error of normal_quantile over `ps`, and where it occurs.
std::pair<double, double> worst_relative_error(const std::vector<double>& ps) {
  double worst = 0.0;
  double at = 0.0;
  for (const double p : ps) {
    const double x = normal_quantile(p);
    const double error = static_cast<double>(std::fabs(forward_error(p, x) / x));
    if (error > worst) {
      worst = error;
      at = p;
    }
  }
  return {worst, at};
}

/// m·10^e for m = 1…9 and e in [lowest, highest], below `below`.
std::vector<double> decades(int lowest, int highest, double below) {
  std::vector<double> ps;
  for (int e = lowest; e <= highest; ++e)
    for (int m = 1; m <= 9; ++m)
      if (const double p = m * std::pow(10.0, e); p < below) ps.push_back(p);
  return ps;
}

std::vector<std::int64_t> row_ids_for(std::size_t n) {
  std::vector<std::int64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::int64_t{0});
  return ids;
}

std::vector<double> sorted_copy(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values;
}

NumericData numeric_data(Columns columns, const std::vector<std::int64_t>& row_ids) {
  NumericData data;
  data.row_ids = row_ids;
  for (std::size_t j = 0; j < columns.size(); ++j) data.names.push_back("v" + std::to_string(j + 1));
  data.columns = std::move(columns);
  return data;
}

/// The moments of the normal scores of the confidential variables, then of the given ones.
distance::Moments score_moments(const Columns& confidential, const Columns& given) {
  Columns scores;
  for (const auto& column : confidential) scores.push_back(normal_scores(column));
  for (const auto& column : given) scores.push_back(normal_scores(column));
  const NumericData data = numeric_data(scores, row_ids_for(scores.front().size()));
  return distance::moments_finalize(distance::moments_local(data.view()));
}

/// Data shuffling of one block holding every record, composed as distributed/compose/data_shuffle.cpp
/// does: normal scores per variable, their moments (X first, then S), the map, Philox normals by row id,
/// the targets Y* and the reverse mapping per confidential variable.
Columns shuffle_block(const Columns& confidential, const Columns& given, const std::vector<std::int64_t>& row_ids,
                      std::uint64_t seed) {
  const std::size_t p = confidential.size();
  Columns scores;
  for (const auto& column : confidential) scores.push_back(normal_scores(column));
  for (const auto& column : given) scores.push_back(normal_scores(column));
  const NumericData all_scores = numeric_data(scores, row_ids);
  const distance::Moments moments = distance::moments_finalize(distance::moments_local(all_scores.view()));
  const ShuffleMap map = shuffle_map(moments, p);
  const NumericData given_scores =
      numeric_data(Columns(scores.begin() + static_cast<std::ptrdiff_t>(p), scores.end()), row_ids);
  const NumericData normals = perturbation::noise_normals(row_ids, p, seed, StepId::kDataShuffle);
  const Columns targets = shuffle_targets(given_scores.view(), normals.view(), map);
  Columns released;
  for (std::size_t j = 0; j < p; ++j) released.push_back(reverse_map(confidential[j], targets[j], row_ids));
  return released;
}

std::size_t kept_values(const std::vector<double>& original, const std::vector<double>& released) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < original.size(); ++i)
    if (original[i] == released[i]) ++kept;
  return kept;
}

// ---- normal_quantile ----

TEST(ANormalQuantile, ReproducesKnownQuantiles) {
  EXPECT_LE(std::fabs(normal_quantile(0.5)), 1e-300);
  EXPECT_LE(relative_error(normal_quantile(0.975), 1.959963984540054), 1e-15);
  EXPECT_LE(relative_error(normal_quantile(0.025), -1.959963984540054), 1e-15);
  EXPECT_LE(relative_error(normal_quantile(0.8413447460685429), 1.0), 1e-14);
  EXPECT_LE(relative_error(normal_quantile(1e-10), -6.361340902404056), 1e-15);
  // Φ⁻¹(1e-300) = −37.04709629936120 (mpmath, 50 digits).
  EXPECT_LE(relative_error(normal_quantile(1e-300), -37.04709629936120), 1e-15);
}

// 1 − p rounds, so the test takes q = fl(1 − p) and its complement 1 − q, which is exact (Sterbenz).
TEST(ANormalQuantile, IsAntisymmetricAboutOneHalf) {
  for (const double p : {0.3, 0.1, 0.025, 0.01}) {
    const double q = 1.0 - p;
    const double exact_p = 1.0 - q;
    EXPECT_LE(std::fabs(normal_quantile(exact_p) + normal_quantile(q)), 1e-14 * std::fabs(normal_quantile(exact_p)))
        << "p = " << p;
  }
}

// A residual 0.5·erfc(−x/√2) − p above one half carries an absolute rounding error of about 1e-16
// (x then only good to 1e-16/φ(x): 4.3e-10 off at 1 − 1e-8); the quantile mirrors p > 1/2 instead.
TEST(ANormalQuantile, IsAntisymmetricInTheFarTails) {
  for (const double p : {1e-5, 1e-8, 1e-12}) {
    const double q = 1.0 - p;
    const double exact_p = 1.0 - q;
    EXPECT_LE(std::fabs(normal_quantile(exact_p) + normal_quantile(q)), 1e-14 * std::fabs(normal_quantile(exact_p)))
        << "p = " << exact_p << ": " << normal_quantile(exact_p) << " vs " << normal_quantile(q);
  }
}

// Backward error: Φ(x) = 0.5·erfc(−x/√2) returns p, to 1e-15 relative plus what rounding costs in the far
// lower tail, where p moves by |x|·Δx relative: rounding x and −x/√2 to doubles each cost up to about
// x²·2^-53 (1.5e-13 at p = 1e-300, for any double x). The forward-error tests below are the tight ones.
TEST(ANormalQuantile, RoundTripsThroughTheNormalDistributionFunction) {
  std::vector<double> ps = decades(-300, -1, 0.999);
  for (int k = 1; k < 999; ++k) ps.push_back(k / 1000.0);
  for (const double p : ps) {
    const double x = normal_quantile(p);
    const double eps = std::numeric_limits<double>::epsilon();
    EXPECT_LE(std::fabs(normal_cdf(x) - p), p * (1e-15 + 2.0 * x * x * eps)) << "p = " << p << ", x = " << x;
  }
}

TEST(ANormalQuantile, IsAccurateToOneInTenToTheFifteenUpToFourTenths) {
  if (std::numeric_limits<long double>::digits < 64) GTEST_SKIP() << "needs an extended long double";
  std::vector<double> ps = decades(-300, -1, 0.4);
  for (int k = 1; k <= 4000; ++k) ps.push_back(k / 10000.0);
  const auto [worst, at] = worst_relative_error(ps);
  EXPECT_LE(worst, 1e-15) << "at p = " << at;
}

// Near one half x is tiny against an erfc residual's 1e-16 absolute error (3.5e-12 relative at
// p = 0.4999952): the residual there comes from erf against p − 1/2.
TEST(ANormalQuantile, IsAccurateToOneInTenToTheFifteenAboveFourTenths) {
  if (std::numeric_limits<long double>::digits < 64) GTEST_SKIP() << "needs an extended long double";
  std::vector<double> ps;
  for (int k = 40000; k < 100000; ++k) ps.push_back(k / 100000.0);
  for (const double t : decades(-15, -6, 1.0)) ps.push_back(1.0 - t);
  const auto [worst, at] = worst_relative_error(ps);
  EXPECT_LE(worst, 1e-15) << "at p = " << at;
}

TEST(ANormalQuantile, IncreasesStrictlyOnAFineGrid) {
  std::vector<double> ps;
  for (int e = 3000; e > 60; --e) ps.push_back(std::pow(10.0, -e / 10.0));  // 1e-300 … 1e-6
  for (int k = 1; k < 1000000; ++k) ps.push_back(k * 1e-6);
  for (int e = 61; e <= 150; ++e) ps.push_back(1.0 - std::pow(10.0, -e / 10.0));  // … 1 − 1e-15
  ASSERT_TRUE(std::adjacent_find(ps.begin(), ps.end(), std::greater_equal<double>()) == ps.end()) << "the grid";
  double previous = -std::numeric_limits<double>::infinity();
  for (const double p : ps) {
    const double x = normal_quantile(p);
    ASSERT_GT(x, previous) << "p = " << p;
    previous = x;
  }
}

TEST(ANormalQuantile, RejectsProbabilitiesOutsideTheOpenUnitInterval) {
  for (const double p :
       {0.0, -0.0, -0.25, 1.0, 1.5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    EXPECT_THROW(normal_quantile(p), InternalError) << "p = " << p;
}

// ---- normal_scores ----

TEST(ShuffleNormalScores, AreTheQuantilesOfRankOverNPlusOneInTheRecordsOrder) {
  const std::vector<double> values{3.25, -1.0, 7.0, 0.5, 10.0, -4.0};
  const std::vector<double> ranks{4, 2, 5, 3, 6, 1};
  const std::vector<double> scores = normal_scores(values);
  ASSERT_EQ(scores.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_DOUBLE_EQ(scores[i], normal_quantile(ranks[i] / 7.0)) << "record " << i;
}

TEST(ShuffleNormalScores, GiveEqualValuesTheAverageOfTheirRanks) {
  const std::vector<double> scores = normal_scores(std::vector<double>{5, 1, 5, 3});
  ASSERT_EQ(scores.size(), 4U);
  EXPECT_DOUBLE_EQ(scores[0], normal_quantile(3.5 / 5.0));
  EXPECT_DOUBLE_EQ(scores[1], normal_quantile(1.0 / 5.0));
  EXPECT_DOUBLE_EQ(scores[2], normal_quantile(3.5 / 5.0));
  EXPECT_DOUBLE_EQ(scores[3], normal_quantile(2.0 / 5.0));
}

TEST(ShuffleNormalScores, AreZeroForAConstantVariableAndTreatSignedZerosAsEqual) {
  for (const double score : normal_scores(std::vector<double>{2.5, 2.5, 2.5})) EXPECT_EQ(score, 0.0);
  const std::vector<double> scores = normal_scores(std::vector<double>{0.0, -0.0});
  EXPECT_EQ(scores[0], 0.0);
  EXPECT_EQ(scores[1], 0.0);
  EXPECT_TRUE(normal_scores(std::vector<double>{}).empty());
}

TEST(ShuffleNormalScores, SumToZeroByTheirSymmetry) {
  const std::vector<double> values = bivariate_normal(1001, 0.0, 7)[0];
  const std::vector<double> scores = normal_scores(values);
  double sum = 0.0, squares = 0.0;
  for (const double score : scores) {
    sum += score;
    squares += score * score;
  }
  EXPECT_LT(std::fabs(sum), 1e-10);
  EXPECT_GT(squares / 1000.0, 0.95) << "scores of a spread variable, not zeros";
}

TEST(ShuffleNormalScores, FollowTheOrderOfTheValues) {
  const std::vector<double> values = bivariate_normal(500, 0.0, 8)[1];
  const std::vector<double> scores = normal_scores(values);
  EXPECT_EQ(average_ranks(scores), average_ranks(values));
}

// ---- reverse_map ----

TEST(AShuffleReverseMap, ReturnsAPermutationOfTheValues) {
  const Columns data = bivariate_normal(300, 0.0, 11);
  std::vector<double> values = data[0];
  for (double& v : values) v = std::round(v * 4.0) / 4.0;  // with ties
  const std::vector<double> out = reverse_map(values, data[1], row_ids_for(values.size()));
  EXPECT_EQ(sorted_copy(out), sorted_copy(values));
}

TEST(AShuffleReverseMap, GivesTheRthSmallestValueToTheRecordWithTheRthSmallestKey) {
  const std::vector<double> values{10, 40, 20, 30, 50};
  const std::vector<double> keys{0.3, -2.0, 7.5, 0.1, 1.0};
  const std::vector<std::int64_t> row_ids{0, 1, 2, 3, 4};
  EXPECT_EQ(reverse_map(values, keys, row_ids), (std::vector<double>{30, 10, 50, 20, 40}));
}

TEST(AShuffleReverseMap, BreaksTiedKeysBySmallerRowIdNotByStorageOrder) {
  const std::vector<double> values{10, 20, 30, 40};
  const std::vector<double> keys{2, 1, 2, 1};
  const std::vector<std::int64_t> row_ids{7, 9, 3, 4};
  // By (key, row id): record 3 (1, 4), record 1 (1, 9), record 2 (2, 3), record 0 (2, 7).
  EXPECT_EQ(reverse_map(values, keys, row_ids), (std::vector<double>{40, 20, 30, 10}));
}

TEST(AShuffleReverseMap, LeavesEveryValueInPlaceWhenTheKeysFollowTheValues) {
  const std::vector<double> values{3.0, -1.0, 3.0, 2.0, 8.5, -7.0, 0.0};
  std::vector<double> keys(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) keys[i] = std::exp(values[i]) + static_cast<double>(i) * 1e-9;
  const std::vector<std::int64_t> row_ids{12, 3, 40, 1, 0, 9, 5};
  EXPECT_EQ(reverse_map(values, keys, row_ids), values);
}

TEST(AShuffleReverseMap, RefusesKeysOrRowIdsOfAnotherLength) {
  const std::vector<double> values{1, 2, 3};
  EXPECT_THROW(reverse_map(values, std::vector<double>{1, 2}, row_ids_for(3)), InternalError);
  EXPECT_THROW(reverse_map(values, std::vector<double>{1, 2, 3}, row_ids_for(4)), InternalError);
}

// ---- shuffle_map and shuffle_targets ----

/// A positive definite covariance of `dimension` variables and some mean.
distance::Moments random_moments(Eigen::Index dimension, unsigned seed) {
  std::srand(seed);
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(dimension, dimension);
  distance::Moments moments;
  moments.count = 100;
  moments.covariance = a * a.transpose() + 0.5 * Eigen::MatrixXd::Identity(dimension, dimension);
  moments.mean = Eigen::VectorXd::Random(dimension) * 1e-3;
  return moments;
}

/// Frobenius distance relative to the expected matrix.
double matrix_error(const Eigen::MatrixXd& got, const Eigen::MatrixXd& expected) {
  if (got.rows() != expected.rows() || got.cols() != expected.cols()) return std::numeric_limits<double>::infinity();
  return (got - expected).norm() / expected.norm();
}

TEST(AShuffleMap, FactorsTheScoresCovarianceWithoutGivenVariables) {
  const distance::Moments moments = random_moments(3, 1);
  const ShuffleMap map = shuffle_map(moments, 3);
  EXPECT_EQ(map.regression.rows(), 0);
  EXPECT_EQ(map.regression.cols(), 3);
  EXPECT_EQ(map.s_mean.size(), 0);
  ASSERT_EQ(map.noise_factor.rows(), 3);
  ASSERT_EQ(map.noise_factor.cols(), 3);
  EXPECT_LT(matrix_error(map.noise_factor.transpose() * map.noise_factor, moments.covariance), 1e-14);
  for (Eigen::Index r = 0; r < 3; ++r) {
    EXPECT_GT(map.noise_factor(r, r), 0.0);
    for (Eigen::Index c = 0; c < r; ++c) EXPECT_EQ(map.noise_factor(r, c), 0.0) << "Lᵀ is upper triangular";
  }
}

TEST(AShuffleMap, RegressesOnTheGivenVariablesAndFactorsTheConditionalCovariance) {
  const Eigen::Index p = 2, q = 3;
  const distance::Moments moments = random_moments(p + q, 2);
  const Eigen::MatrixXd& sigma = moments.covariance;
  const Eigen::MatrixXd sxx = sigma.topLeftCorner(p, p);
  const Eigen::MatrixXd ssx = sigma.bottomLeftCorner(q, p);
  const Eigen::MatrixXd sss = sigma.bottomRightCorner(q, q);
  const Eigen::MatrixXd b = sss.inverse() * ssx;
  const Eigen::MatrixXd conditional = sxx - ssx.transpose() * sss.inverse() * ssx;

  const ShuffleMap map = shuffle_map(moments, static_cast<std::size_t>(p));
  EXPECT_LT(matrix_error(map.regression, b), 1e-13);
  EXPECT_LT(matrix_error(map.noise_factor.transpose() * map.noise_factor, conditional), 1e-13);
  EXPECT_EQ(map.noise_factor(1, 0), 0.0);
  ASSERT_EQ(map.s_mean.size(), q);
  for (Eigen::Index k = 0; k < q; ++k) EXPECT_EQ(map.s_mean(k), moments.mean(p + k));
}

TEST(AShuffleMap, RefusesAConfidentialVariableEqualToAGivenOne) {
  const Columns data = bivariate_normal(200, 0.3, 3);
  EXPECT_THROW(shuffle_map(score_moments({data[0]}, {data[1], data[0]}), 1), ParameterError);
  EXPECT_NO_THROW(shuffle_map(score_moments({data[0]}, {data[1]}), 1));
}

TEST(AShuffleMap, RefusesAConstantGivenVariable) {
  const Columns data = bivariate_normal(200, 0.3, 4);
  const std::vector<double> constant(200, 1.5);
  EXPECT_THROW(shuffle_map(score_moments({data[0]}, {constant}), 1), ParameterError);
  EXPECT_THROW(shuffle_map(score_moments({data[0]}, {data[1], constant}), 1), ParameterError);
}

TEST(AShuffleMap, RefusesAConstantOrDuplicatedConfidentialVariable) {
  const Columns data = bivariate_normal(200, 0.3, 5);
  const std::vector<double> constant(200, -2.0);
  EXPECT_THROW(shuffle_map(score_moments({data[0], constant}, {}), 2), ParameterError);
  EXPECT_THROW(shuffle_map(score_moments({data[0], data[1], data[0]}, {}), 3), ParameterError);
  EXPECT_NO_THROW(shuffle_map(score_moments({data[0], data[1]}, {}), 2));
}

TEST(AShuffleMap, RequiresBetweenOneAndAllVariablesToBeConfidential) {
  const distance::Moments moments = random_moments(3, 6);
  EXPECT_THROW(shuffle_map(moments, 0), InternalError);
  EXPECT_THROW(shuffle_map(moments, 4), InternalError);
}

TEST(ShuffleTargets, AreTheConditionalMeanPlusTheFactoredNormals) {
  ShuffleMap map;
  map.regression.resize(3, 2);
  map.regression << 0.5, -0.25, 1.5, 0.75, -1.0, 2.0;
  map.noise_factor.resize(2, 2);
  map.noise_factor << 0.8, 0.3, 0.0, 0.6;
  map.s_mean.resize(3);
  map.s_mean << 0.01, -0.02, 0.03;
  const NumericData s =
      numeric_data({{0.1, -1.2, 2.0, 0.4}, {1.1, 0.0, -0.5, 0.9}, {-0.3, 0.7, 0.2, -2.2}}, row_ids_for(4));
  const NumericData w = numeric_data({{1.0, -0.5, 0.25, 2.0}, {-1.5, 0.3, 0.0, 1.2}}, row_ids_for(4));
  const Columns y = shuffle_targets(s.view(), w.view(), map);
  ASSERT_EQ(y.size(), 2U);
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 2; ++j) {
      double expected = 0.0;
      for (std::size_t k = 0; k < 3; ++k)
        expected += (s.columns[k][i] - map.s_mean(static_cast<Eigen::Index>(k))) *
                    map.regression(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(j));
      for (std::size_t k = 0; k < 2; ++k)
        expected += w.columns[k][i] * map.noise_factor(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(j));
      ASSERT_EQ(y[j].size(), 4U);
      EXPECT_NEAR(y[j][i], expected, 1e-14) << "record " << i << ", variable " << j;
    }
  }
}

TEST(ShuffleTargets, AreTheFactoredNormalsWithoutGivenVariables) {
  const ShuffleMap map = shuffle_map(random_moments(2, 9), 2);
  const NumericData w = numeric_data({{1.0, -0.5, 0.25}, {-1.5, 0.3, 2.0}}, row_ids_for(3));
  const Columns y = shuffle_targets(NumericColumns{}, w.view(), map);
  ASSERT_EQ(y.size(), 2U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(y[0][i], w.columns[0][i] * map.noise_factor(0, 0), 1e-14);
    EXPECT_NEAR(y[1][i], w.columns[0][i] * map.noise_factor(0, 1) + w.columns[1][i] * map.noise_factor(1, 1), 1e-14);
  }
}

TEST(ShuffleTargets, AreTheSameBitsForAnyBlockOfRecords) {
  const Columns data = bivariate_normal(10, 0.4, 10);
  const ShuffleMap map = shuffle_map(score_moments({data[0]}, {data[1]}), 1);
  const NumericData s = numeric_data({normal_scores(data[1])}, row_ids_for(10));
  const NumericData w = perturbation::noise_normals(s.row_ids, 1, 99, StepId::kDataShuffle);
  const Columns whole = shuffle_targets(s.view(), w.view(), map);
  NumericColumns s_tail = s.view(), w_tail = w.view();
  s_tail.columns[0] = s_tail.columns[0].subspan(6);
  w_tail.columns[0] = w_tail.columns[0].subspan(6);
  const Columns tail = shuffle_targets(s_tail, w_tail, map);
  ASSERT_EQ(tail[0].size(), 4U);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(tail[0][i]), std::bit_cast<std::uint64_t>(whole[0][6 + i]));
}

// ---- the whole kernel, composed as distributed/compose/data_shuffle.cpp composes it ----

TEST(ADataShuffle, KeepsEveryVariablesMultisetOfValues) {
  Columns data = bivariate_normal(2000, 0.6, 21);
  for (double& v : data[1]) v = std::round(v * 3.0);  // many ties
  const std::vector<double> given = bivariate_normal(2000, 0.0, 22)[0];
  const Columns released = shuffle_block(data, {given}, row_ids_for(2000), 5);
  ASSERT_EQ(released.size(), 2U);
  for (std::size_t j = 0; j < 2; ++j) EXPECT_EQ(sorted_copy(released[j]), sorted_copy(data[j])) << "variable " << j;
}

TEST(ADataShuffle, MovesValuesBetweenRecordsKeepingFewOnlyByChance) {
  const Columns data = bivariate_normal(5000, 0.7, 23);
  const Columns released = shuffle_block(data, {}, row_ids_for(5000), 6);
  for (std::size_t j = 0; j < 2; ++j) EXPECT_LT(kept_values(data[j], released[j]), 50U) << "variable " << j;
}

TEST(ADataShuffle, KeepsTheRankCorrelationWithAGivenVariable) {
  const Columns data = bivariate_normal(5000, 0.7, 24);
  const double before = spearman(data[0], data[1]);
  const Columns released = shuffle_block({data[0]}, {data[1]}, row_ids_for(5000), 7);
  const double after = spearman(released[0], data[1]);
  std::printf("Spearman(X, S): before %.4f, after %.4f\n", before, after);
  EXPECT_LT(std::fabs(after - before), 0.05);
  EXPECT_LT(kept_values(data[0], released[0]), 500U) << "the values move";
}

TEST(ADataShuffle, KeepsTheRankCorrelationBetweenConfidentialVariables) {
  const Columns data = bivariate_normal(5000, 0.7, 25);
  const double before = spearman(data[0], data[1]);
  const Columns released = shuffle_block(data, {}, row_ids_for(5000), 8);
  const double after = spearman(released[0], released[1]);
  std::printf("Spearman(X1, X2): before %.4f, after %.4f\n", before, after);
  EXPECT_LT(std::fabs(after - before), 0.05);
}

TEST(ADataShuffle, KeepsEveryRankCorrelationWithTwoConfidentialAndOneGivenVariable) {
  // X1, X2 confidential, S given: corr(X1, X2) = 0.5, corr(X1, S) = 0.7, corr(X2, S) = 0.4.
  Eigen::Matrix3d r;
  r << 1.0, 0.5, 0.7, 0.5, 1.0, 0.4, 0.7, 0.4, 1.0;
  const Eigen::Matrix3d l = r.llt().matrixL();
  const std::size_t n = 4000;
  const Columns z1 = bivariate_normal(n, 0.0, 26), z2 = bivariate_normal(n, 0.0, 27);
  Columns x(3, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d v = l * Eigen::Vector3d(z1[0][i], z1[1][i], z2[0][i]);
    for (int j = 0; j < 3; ++j) x[static_cast<std::size_t>(j)][i] = std::exp(v(j));  // non-normal marginals
  }
  const Columns released = shuffle_block({x[0], x[1]}, {x[2]}, row_ids_for(n), 9);
  EXPECT_LT(std::fabs(spearman(released[0], released[1]) - spearman(x[0], x[1])), 0.05);
  EXPECT_LT(std::fabs(spearman(released[0], x[2]) - spearman(x[0], x[2])), 0.05);
  EXPECT_LT(std::fabs(spearman(released[1], x[2]) - spearman(x[1], x[2])), 0.05);
}

TEST(ADataShuffle, GivesEachRowIdTheSameValueInAnyStorageOrder) {
  const std::size_t n = 400;
  const Columns data = bivariate_normal(n, 0.5, 28);
  std::vector<std::int64_t> row_ids(n);
  for (std::size_t i = 0; i < n; ++i) row_ids[i] = static_cast<std::int64_t>(3 * i + 100);
  const Columns released = shuffle_block({data[0]}, {data[1]}, row_ids, 10);

  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  Columns permuted(2, std::vector<double>(n));
  std::vector<std::int64_t> permuted_ids(n);
  for (std::size_t k = 0; k < n; ++k) {
    permuted[0][k] = data[0][order[k]];
    permuted[1][k] = data[1][order[k]];
    permuted_ids[k] = row_ids[order[k]];
  }
  const Columns again = shuffle_block({permuted[0]}, {permuted[1]}, permuted_ids, 10);
  for (std::size_t k = 0; k < n; ++k)
    ASSERT_EQ(std::bit_cast<std::uint64_t>(again[0][k]), std::bit_cast<std::uint64_t>(released[0][order[k]]))
        << "row id " << permuted_ids[k];
}

TEST(ADataShuffle, DependsOnTheSeed) {
  const Columns data = bivariate_normal(300, 0.5, 29);
  EXPECT_EQ(shuffle_block(data, {}, row_ids_for(300), 11), shuffle_block(data, {}, row_ids_for(300), 11));
  EXPECT_NE(shuffle_block(data, {}, row_ids_for(300), 11), shuffle_block(data, {}, row_ids_for(300), 12));
}

// ---- the A oracle of docs/methods swapping.md §5, shuffle part ----

// Bivariate normal, n = 1 000, ρ = 0.5, both variables shuffled without given variables: mean change of
// the Spearman correlation 0.000, of the Pearson −0.002, squared correlation original–masked ≈ 0.000,
// each ± 0.01, over 1 000 replications as in the reference (a fixed number: the figures never depend on
// the machine's speed).
TEST(ADataShuffle, MatchesTheSwapVersusShuffleSimulation) {
  constexpr std::size_t kN = 1000;
  constexpr int kReplications = 1000;
  double spearman_change = 0.0, pearson_change = 0.0, squared = 0.0;
  int replications = 0;
  while (replications < kReplications) {
    const auto r = static_cast<std::uint64_t>(replications);
    const Columns data = bivariate_normal(kN, 0.5, 1000 + r);
    const Columns released = shuffle_block(data, {}, row_ids_for(kN), 2000 + r);
    spearman_change += spearman(released[0], released[1]) - spearman(data[0], data[1]);
    pearson_change += pearson(released[0], released[1]) - pearson(data[0], data[1]);
    const double r1 = pearson(data[0], released[0]), r2 = pearson(data[1], released[1]);
    squared += (r1 * r1 + r2 * r2) / 2.0;
    ++replications;
  }
  spearman_change /= replications;
  pearson_change /= replications;
  squared /= replications;
  std::printf(
      "A oracle, shuffle (n = 1000, rho = 0.5, %d replications): mean change Spearman %+.4f, "
      "Pearson %+.4f; squared correlation original-masked %.4f\n",
      replications, spearman_change, pearson_change, squared);
  EXPECT_NEAR(spearman_change, 0.000, 0.01);
  EXPECT_NEAR(pearson_change, -0.002, 0.01);
  EXPECT_NEAR(squared, 0.000, 0.01);
}

}  // namespace
}  // namespace sdc::swapping
