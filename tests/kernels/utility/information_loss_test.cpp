#include "kernels/utility/information_loss.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <Eigen/Dense>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::utility {
namespace {

NumericData make_data(const std::vector<std::vector<double>>& columns, std::int64_t first_row_id = 0) {
  NumericData data;
  for (std::size_t j = 0; j < columns.size(); ++j) data.names.push_back("v" + std::to_string(j + 1));
  data.columns = columns;
  for (std::size_t i = 0; i < columns.front().size(); ++i)
    data.row_ids.push_back(first_row_id + static_cast<std::int64_t>(i));
  return data;
}

// Records [first, last) of `data` as a block of their own.
NumericData slice(const NumericData& data, std::size_t first, std::size_t last) {
  NumericData block;
  block.names = data.names;
  for (const auto& column : data.columns)
    block.columns.emplace_back(column.begin() + static_cast<std::ptrdiff_t>(first),
                               column.begin() + static_cast<std::ptrdiff_t>(last));
  block.row_ids.assign(data.row_ids.begin() + static_cast<std::ptrdiff_t>(first),
                       data.row_ids.begin() + static_cast<std::ptrdiff_t>(last));
  return block;
}

InformationLoss one_block(const NumericData& original, const NumericData& masked) {
  return information_loss_finalize(information_loss_local(original.view(), masked.view()));
}

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void expect_same_bits(const Discrepancy& a, const Discrepancy& b, const std::string& what) {
  EXPECT_EQ(bits(a.mean_square), bits(b.mean_square)) << what;
  EXPECT_EQ(bits(a.mean_absolute), bits(b.mean_absolute)) << what;
  EXPECT_EQ(bits(a.mean_variation), bits(b.mean_variation)) << what;
  EXPECT_EQ(a.entries, b.entries) << what;
  EXPECT_EQ(a.zero_entries_skipped, b.zero_entries_skipped) << what;
  EXPECT_EQ(a.defined, b.defined) << what;
}

void expect_same_bits(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(bits(a[i]), bits(b[i])) << what << " " << i;
}

void expect_same_bits(const InformationLoss& a, const InformationLoss& b) {
  EXPECT_EQ(a.records, b.records);
  EXPECT_EQ(a.variables, b.variables);
  EXPECT_EQ(bits(a.sse), bits(b.sse));
  EXPECT_EQ(bits(a.sst), bits(b.sst));
  EXPECT_EQ(bits(a.il_percent), bits(b.il_percent));
  EXPECT_EQ(a.constant_variables, b.constant_variables);
  expect_same_bits(a.values, b.values, "values");
  expect_same_bits(a.covariances, b.covariances, "covariances");
  expect_same_bits(a.correlations, b.correlations, "correlations");
  expect_same_bits(a.component_loadings, b.component_loadings, "component loadings");
  expect_same_bits(a.communalities, b.communalities, "communalities");
  expect_same_bits(a.score_coefficients, b.score_coefficients, "score coefficients");
  expect_same_bits(a.means, b.means, "means");
  expect_same_bits(a.variances, b.variances, "variances");
  EXPECT_EQ(a.correlation_variables, b.correlation_variables);
  expect_same_bits(a.eigenvalues_original, b.eigenvalues_original, "eigenvalues");
  expect_same_bits(a.eigenvalues_masked, b.eigenvalues_masked, "masked eigenvalues");
  expect_same_bits(a.eigen_gaps_original, b.eigen_gaps_original, "eigen gaps");
  expect_same_bits(a.eigen_gaps_masked, b.eigen_gaps_masked, "masked eigen gaps");
  expect_same_bits(a.component_weights, b.component_weights, "component weights");
  EXPECT_EQ(a.original_correlation_singular, b.original_correlation_singular);
  EXPECT_EQ(a.masked_correlation_singular, b.masked_correlation_singular);
  EXPECT_EQ(bits(a.il1), bits(b.il1));
  EXPECT_EQ(bits(a.il1s_sum), bits(b.il1s_sum));
  EXPECT_EQ(bits(a.il1s_mean), bits(b.il1s_mean));
  EXPECT_EQ(bits(a.eigen), bits(b.eigen));
  EXPECT_EQ(bits(a.il_correl), bits(b.il_correl));
}

// Uniform in [0, 1) from the raw engine output: the standard distributions differ between libraries.
double uniform(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }

// Four correlated variables around large, different means, with exact zeros in one of them, and a
// masked file of noise added to them: enough to exercise every sum of the partial.
void make_noisy_files(std::size_t n, NumericData& original, NumericData& masked) {
  std::mt19937_64 engine(20240611);
  std::vector<std::vector<double>> x(4, std::vector<double>(n)), y(4, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const double common = uniform(engine);
    x[0][i] = 1.0e6 + 1.0e3 * (common + 0.3 * uniform(engine));
    x[1][i] = -50.0 + 10.0 * (common - uniform(engine));
    x[2][i] = i % 7 == 0 ? 0.0 : 0.1 * uniform(engine);
    x[3][i] = 3.0 * common + uniform(engine);
    for (std::size_t j = 0; j < 4; ++j) y[j][i] = x[j][i] + (uniform(engine) - 0.5) * (j == 0 ? 100.0 : 0.5);
  }
  original = make_data(x, 1000);
  masked = make_data(y, 1000);
}

TEST(AnInformationLoss, MatchesTheWorkedContinuousExample) {
  const NumericData original = make_data({{1, 2, 3, 4}, {2, 4, 6, 9}});
  const NumericData masked = make_data({{1.5, 1.5, 3.5, 3.5}, {3, 3, 7.5, 7.5}});
  const InformationLoss loss = one_block(original, masked);

  EXPECT_NEAR(loss.values.mean_square, 0.9375, 5e-8);
  EXPECT_NEAR(loss.values.mean_absolute, 0.875, 5e-8);
  EXPECT_NEAR(loss.values.mean_variation, 0.2760417, 5e-8);
  EXPECT_NEAR(loss.covariances.mean_square, 1.833333, 5e-7);
  EXPECT_NEAR(loss.covariances.mean_absolute, 1.111111, 5e-7);
  EXPECT_NEAR(loss.covariances.mean_variation, 0.2201273, 5e-8);
  EXPECT_NEAR(loss.correlations.mean_square, 3.16214e-5, 5e-11);
  EXPECT_NEAR(loss.correlations.mean_absolute, 0.00562329, 5e-9);
  EXPECT_NEAR(loss.correlations.mean_variation, 0.00565509, 5e-9);
  EXPECT_EQ(loss.means.mean_square, 0.0);
  EXPECT_EQ(loss.means.mean_absolute, 0.0);
  EXPECT_NEAR(loss.il1, 220.8333, 5e-5);
  EXPECT_NEAR(loss.il1s_sum, 2.279451, 5e-7);
  EXPECT_NEAR(loss.il1s_mean, 2.279451 / 8.0, 1e-7);
  EXPECT_NEAR(loss.eigen, 1.00282, 5e-6);

  // The masked variables are collinear: R' is singular, so F' and IL_correl do not exist.
  EXPECT_FALSE(loss.original_correlation_singular);
  EXPECT_TRUE(loss.masked_correlation_singular);
  EXPECT_FALSE(loss.score_coefficients.defined);
  EXPECT_TRUE(std::isnan(loss.il_correl));
  EXPECT_TRUE(loss.component_loadings.defined);
  EXPECT_EQ(loss.values.zero_entries_skipped, 0U);
  std::printf(
      "E continuous: X-X' %.7g %.7g %.7g; V-V' %.7g %.7g %.7g; R-R' %.6g %.6g %.6g; IL1 %.7g; IL1s %.7g; "
      "eigen %.6g\n",
      loss.values.mean_square, loss.values.mean_absolute, loss.values.mean_variation, loss.covariances.mean_square,
      loss.covariances.mean_absolute, loss.covariances.mean_variation, loss.correlations.mean_square,
      loss.correlations.mean_absolute, loss.correlations.mean_variation, loss.il1, loss.il1s_sum, loss.eigen);
}

TEST(AnInformationLoss, SplitIntoBlocksAndMergedInAnyOrderHasTheBitsOfOneBlock) {
  NumericData original, masked;
  make_noisy_files(301, original, masked);
  const InformationLoss whole = one_block(original, masked);

  for (const std::vector<std::size_t>& cuts : std::vector<std::vector<std::size_t>>{
           {0, 1, 301}, {0, 150, 151, 301}, {0, 7, 64, 200, 300, 301}, {0, 0, 100, 301, 301}}) {
    std::vector<InformationLossPartial> partials;
    for (std::size_t b = 0; b + 1 < cuts.size(); ++b)
      partials.push_back(information_loss_local(slice(original, cuts[b], cuts[b + 1]).view(),
                                                slice(masked, cuts[b], cuts[b + 1]).view()));
    InformationLossPartial forward, backward, tree;
    for (const auto& partial : partials) information_loss_merge(forward, partial);
    for (auto it = partials.rbegin(); it != partials.rend(); ++it) information_loss_merge(backward, *it);
    // Pairs first, then the pairs' totals: another tree shape.
    std::vector<InformationLossPartial> level;
    for (std::size_t b = 0; b < partials.size(); b += 2) {
      InformationLossPartial pair = partials[b];
      if (b + 1 < partials.size()) information_loss_merge(pair, partials[b + 1]);
      level.push_back(std::move(pair));
    }
    for (auto it = level.rbegin(); it != level.rend(); ++it) information_loss_merge(tree, *it);

    SCOPED_TRACE(::testing::Message() << "blocks " << partials.size());
    expect_same_bits(information_loss_finalize(forward), whole);
    expect_same_bits(information_loss_finalize(backward), whole);
    expect_same_bits(information_loss_finalize(tree), whole);
  }
}

TEST(AnInformationLoss, DoesNotDependOnTheThreadCount) {
  NumericData original, masked;
  make_noisy_files(257, original, masked);
  const InformationLoss many = one_block(original, masked);
  const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  expect_same_bits(one_block(original, masked), many);
}

TEST(AnInformationLoss, GivesSseOverSstOnZScoresForAGroupingOfThree) {
  const NumericData original = make_data({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
  const NumericData masked = make_data({{2, 2, 2, 5.5, 5.5, 5.5, 5.5, 9, 9, 9}});
  const InformationLoss loss = one_block(original, masked);

  // Population variance of 1..10 is (10² − 1)/12; the groups' squared deviations are 2, 5 and 2.
  const double variance = 99.0 / 12.0;
  const double expected_sse = (1.0 + 0.0 + 1.0 + 2.25 + 0.25 + 0.25 + 2.25 + 1.0 + 0.0 + 1.0) / variance;
  EXPECT_NEAR(loss.sse, expected_sse, 1e-13);
  EXPECT_EQ(loss.sst, 10.0);
  EXPECT_NEAR(loss.il_percent, 100.0 * expected_sse / 10.0, 1e-12);
  EXPECT_NEAR(loss.il_percent, 10.909090909090909, 1e-12);
  std::printf("k = 3 grouping of 1..10: SSE %.15g SST %.15g IL %.15g %%\n", loss.sse, loss.sst, loss.il_percent);
}

TEST(AnInformationLoss, CountsNothingForAConstantColumnInSseOrSst) {
  const NumericData one_column = make_data({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
  const NumericData one_column_masked = make_data({{2, 2, 2, 5.5, 5.5, 5.5, 5.5, 9, 9, 9}});
  const NumericData original = make_data({{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, std::vector<double>(10, 0.1)});
  const NumericData masked = make_data({{2, 2, 2, 5.5, 5.5, 5.5, 5.5, 9, 9, 9}, std::vector<double>(10, 0.1)});
  const InformationLoss alone = one_block(one_column, one_column_masked);
  const InformationLoss loss = one_block(original, masked);

  EXPECT_EQ(loss.constant_variables, 1U);
  EXPECT_EQ(bits(loss.sse), bits(alone.sse));
  EXPECT_EQ(bits(loss.sst), bits(alone.sst));
  EXPECT_EQ(bits(loss.il_percent), bits(alone.il_percent));
  EXPECT_EQ(bits(loss.il1s_sum), bits(alone.il1s_sum));
  EXPECT_EQ(loss.correlation_variables, std::vector<std::size_t>{0});
  EXPECT_FALSE(loss.correlations.defined);
  // Its variance is exactly 0 in both files, and so is its covariance with the other variable.
  EXPECT_EQ(loss.covariances.entries, 3U);
  EXPECT_EQ(loss.covariances.zero_entries_skipped, 2U);
}

TEST(ASumOfSquares, HasTheBatterysSseSstAndConstantsBitForBitInAnySplit) {
  NumericData original, masked;
  make_noisy_files(301, original, masked);
  // A fifth variable constant in the original, and one whose spread is far below its mean.
  original.columns.push_back(std::vector<double>(301, 7.25));
  masked.columns.push_back(std::vector<double>(301, 7.0));
  original.columns.push_back(original.columns[1]);
  for (double& x : original.columns.back()) x += 1.0e15;
  masked.columns.push_back(original.columns.back());
  for (auto* data : {&original, &masked}) {
    data->names.push_back("constant");
    data->names.push_back("shifted");
  }
  const InformationLoss battery = one_block(original, masked);
  for (const std::vector<std::size_t>& cuts :
       std::vector<std::vector<std::size_t>>{{0, 301}, {0, 1, 301}, {0, 7, 64, 200, 300, 301}}) {
    SumOfSquaresPartial total;
    for (std::size_t b = 0; b + 1 < cuts.size(); ++b)
      sum_of_squares_merge(total, sum_of_squares_local(slice(original, cuts[b], cuts[b + 1]).view(),
                                                       slice(masked, cuts[b], cuts[b + 1]).view()));
    const SumOfSquares squares = sum_of_squares_finalize(total);
    SCOPED_TRACE(::testing::Message() << "blocks " << cuts.size() - 1);
    EXPECT_EQ(squares.records, 301U);
    EXPECT_EQ(bits(squares.sse), bits(battery.sse));
    EXPECT_EQ(bits(squares.sst), bits(battery.sst));
    EXPECT_EQ(bits(squares.il_percent), bits(battery.il_percent));
    EXPECT_EQ(squares.constant_variables, battery.constant_variables);
  }
  EXPECT_EQ(battery.constant_variables, 1U);
  EXPECT_GT(battery.sse, 0.0);
}

TEST(AnInformationLoss, KeepsTheSpreadOfVariablesWithLargeMeans) {
  NumericData original = make_data({{1, 2, 3, 4}, {2, 4, 6, 9}});
  NumericData masked = make_data({{1.5, 1.5, 3.5, 3.5}, {3, 3, 7.5, 7.5}});
  const InformationLoss near_zero = one_block(original, masked);
  for (auto* data : {&original, &masked})
    for (auto& column : data->columns)
      for (double& x : column) x += 1.0e9;
  const InformationLoss shifted = one_block(original, masked);
  EXPECT_EQ(bits(shifted.covariances.mean_square), bits(near_zero.covariances.mean_square));
  EXPECT_EQ(bits(shifted.correlations.mean_absolute), bits(near_zero.correlations.mean_absolute));
  EXPECT_EQ(bits(shifted.sse), bits(near_zero.sse));
}

TEST(AnInformationLoss, AgreesWithTwoPassFormulasOnThreeVariables) {
  NumericData original, masked;
  make_noisy_files(97, original, masked);
  original.columns.pop_back();
  original.names.pop_back();
  masked.columns.pop_back();
  masked.names.pop_back();
  const InformationLoss loss = one_block(original, masked);

  const auto to_matrix = [](const NumericData& data) {
    Eigen::MatrixXd m(static_cast<Eigen::Index>(data.row_ids.size()), 3);
    for (Eigen::Index j = 0; j < 3; ++j)
      for (Eigen::Index i = 0; i < m.rows(); ++i)
        m(i, j) = data.columns[static_cast<std::size_t>(j)][static_cast<std::size_t>(i)];
    return m;
  };
  const Eigen::MatrixXd x = to_matrix(original);
  const Eigen::MatrixXd y = to_matrix(masked);
  const double n = static_cast<double>(x.rows());
  const auto covariance = [n](const Eigen::MatrixXd& m) {
    const Eigen::MatrixXd centred = m.rowwise() - m.colwise().mean();
    return Eigen::MatrixXd(centred.transpose() * centred / (n - 1.0));
  };
  const auto correlation = [](const Eigen::MatrixXd& v) {
    const Eigen::VectorXd s = v.diagonal().cwiseSqrt().cwiseInverse();
    return Eigen::MatrixXd(s.asDiagonal() * v * s.asDiagonal());
  };
  const Eigen::MatrixXd v = covariance(x), v_masked = covariance(y);
  const Eigen::MatrixXd r = correlation(v), r_masked = correlation(v_masked);

  double covariance_square = 0.0, correlation_absolute = 0.0;
  for (Eigen::Index i = 0; i < 3; ++i)
    for (Eigen::Index j = i; j < 3; ++j) {
      covariance_square += std::pow(v(i, j) - v_masked(i, j), 2) / 6.0;
      if (i < j) correlation_absolute += std::fabs(r(i, j) - r_masked(i, j)) / 3.0;
    }
  EXPECT_NEAR(loss.covariances.mean_square, covariance_square, 1e-9 * covariance_square);
  EXPECT_NEAR(loss.correlations.mean_absolute, correlation_absolute, 1e-9 * correlation_absolute);

  double sse = 0.0;
  for (Eigen::Index j = 0; j < 3; ++j) sse += (x.col(j) - y.col(j)).squaredNorm() / (v(j, j) * (n - 1.0) / n);
  EXPECT_NEAR(loss.sse, sse, 1e-10 * sse);
  EXPECT_EQ(loss.sst, 3.0 * n);

  Eigen::VectorXd d = r.inverse().diagonal(), d_masked = r_masked.inverse().diagonal();
  const double il_correl = (d / d.norm() - d_masked / d_masked.norm()).norm() / std::sqrt(2.0);
  EXPECT_NEAR(loss.il_correl, il_correl, 1e-9 * il_correl + 1e-14);

  Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(r).eigenvalues().reverse();
  Eigen::VectorXd lambda_masked = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(r_masked).eigenvalues().reverse();
  const double eigen = ((lambda - lambda_masked).cwiseAbs().array() / lambda.array()).sum();
  EXPECT_NEAR(loss.eigen, eigen, 1e-9 * eigen);
  EXPECT_TRUE(loss.score_coefficients.defined);
  EXPECT_NEAR(std::accumulate(loss.component_weights.begin(), loss.component_weights.end(), 0.0), 1.0, 1e-12);
  EXPECT_EQ(loss.values.zero_entries_skipped, 14U);  // rows 0, 7, …, 91 of the third variable
}

TEST(AnInformationLoss, RejectsRowIdsThatDifferNamingTheFirstOne) {
  const NumericData original = make_data({{1, 2, 3}});
  NumericData masked = make_data({{1, 2, 3}});
  masked.row_ids = {0, 5, 2};
  try {
    information_loss_local(original.view(), masked.view());
    FAIL() << "misaligned row ids were accepted";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("row id 1 "), std::string::npos) << error.what();
  }
}

TEST(AnInformationLoss, RejectsBlocksOfDifferentLengthsNamingTheFirstUnmatchedRow) {
  const NumericData original = make_data({{1, 2, 3}}, 40);
  const NumericData masked = make_data({{1, 2}}, 40);
  try {
    information_loss_local(original.view(), masked.view());
    FAIL() << "blocks of different lengths were accepted";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("row id 42 "), std::string::npos) << error.what();
  }
}

TEST(AnInformationLoss, RejectsAMissingValueNamingTheVariableAndRow) {
  const NumericData original = make_data({{1, 2, 3}, {4, 5, 6}}, 10);
  const NumericData masked = make_data({{1, 2, 3}, {4, std::nan(""), 6}}, 10);
  try {
    information_loss_local(original.view(), masked.view());
    FAIL() << "a missing value was accepted";
  } catch (const InvalidInput& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'v2'"), std::string::npos) << message;
    EXPECT_NE(message.find("row id 11 "), std::string::npos) << message;
  }
}

TEST(AnInformationLoss, NeedsTwoRecordsAndOneWeightPerComponent) {
  const NumericData single = make_data({{1}, {2}});
  EXPECT_THROW(one_block(single, single), InvalidInput);

  NumericData original, masked;
  make_noisy_files(20, original, masked);
  const auto total = information_loss_local(original.view(), masked.view());
  InformationLossOptions options;
  options.component_weights = {1.0, 1.0};
  EXPECT_THROW(information_loss_finalize(total, options), ParameterError);
  options.component_weights = {1.0, 0.0, 0.0, 0.0};
  const InformationLoss first_only = information_loss_finalize(total, options);
  EXPECT_EQ(first_only.component_weights, options.component_weights);
  EXPECT_TRUE(first_only.component_loadings.defined);
}

}  // namespace
}  // namespace sdc::utility
