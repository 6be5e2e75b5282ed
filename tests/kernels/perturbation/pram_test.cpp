#include "kernels/perturbation/pram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kernels/core/error.h"

namespace sdc {
namespace {

void expect_matrix_near(const PramMatrix& actual, const std::vector<std::vector<double>>& expected, double tolerance) {
  ASSERT_EQ(actual.rows(), static_cast<Eigen::Index>(expected.size()));
  for (Eigen::Index r = 0; r < actual.rows(); ++r) {
    ASSERT_EQ(actual.cols(), static_cast<Eigen::Index>(expected[static_cast<std::size_t>(r)].size()));
    for (Eigen::Index c = 0; c < actual.cols(); ++c)
      EXPECT_NEAR(actual(r, c), expected[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)], tolerance)
          << "row " << r << ", column " << c;
  }
}

void expect_rows_sum_to_one(const PramMatrix& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) EXPECT_NEAR(m.row(r).sum(), 1.0, 1e-15) << "row " << r;
}

// perturbation.md §6, oracle "E nF".
TEST(PramOracle, ENfMatrixExpectedCountsAndRisk) {
  const std::vector<std::int64_t> t{5576, 24, 632};
  const PramMatrix p = pram_frequency_matrix(t, 0.6);
  expect_matrix_near(p, {{0.6000, 0.3854, 0.0146}, {0.0407, 0.6000, 0.3593}, {0.0017, 0.3983, 0.6000}}, 0.5e-4);
  const Eigen::VectorXd expected = pram_expected_counts(p, t);
  EXPECT_NEAR(expected(0), 3347.66, 0.005);
  EXPECT_NEAR(expected(1), 2414.92, 0.005);
  EXPECT_NEAR(expected(2), 469.42, 0.005);
  const PramRisk risk = pram_risk(p, t, 100.0);
  EXPECT_NEAR(risk.risk[0], 0.9994, 0.5e-4);
  EXPECT_NEAR(risk.risk[1], 0.0060, 0.5e-4);
  EXPECT_NEAR(risk.risk[2], 0.8078, 0.5e-4);
  EXPECT_EQ(risk.rare, (std::vector<bool>{false, true, false}));
  EXPECT_TRUE(risk.safe[1]) << "0.0060 <= 24/100";
}

// perturbation.md §6, oracle "E two categories".
TEST(PramOracle, ETwoCategoriesEstimateAndVariances) {
  const PramMatrix p = (PramMatrix(2, 2) << 0.9, 0.1, 0.1, 0.9).finished();
  const std::vector<std::int64_t> original{110, 90};
  const Eigen::VectorXd expected = pram_expected_counts(p, original);
  EXPECT_NEAR(expected(0), 108.0, 1e-12);
  EXPECT_NEAR(expected(1), 92.0, 1e-12);
  const auto estimate = pram_unbiased_estimate(p, std::vector<std::int64_t>{108, 92});
  ASSERT_TRUE(estimate);
  EXPECT_NEAR((*estimate)(0), 110.0, 1e-12);
  EXPECT_NEAR((*estimate)(1), 90.0, 1e-12);
  const Eigen::MatrixXd released = pram_released_variance(p, original);
  EXPECT_NEAR(released(0, 0), 18.0, 1e-12);
  EXPECT_NEAR(released(0, 1), -18.0, 1e-12);
  EXPECT_NEAR(released(1, 0), -18.0, 1e-12);
  EXPECT_NEAR(released(1, 1), 18.0, 1e-12);
  const auto variance = pram_estimate_variance(p, original);
  ASSERT_TRUE(variance);
  EXPECT_NEAR((*variance)(0, 0), 28.125, 1e-11);
  EXPECT_NEAR((*variance)(0, 1), -28.125, 1e-11);
  EXPECT_NEAR((*variance)(1, 1), 28.125, 1e-11);
  EXPECT_NEAR(std::sqrt((*variance)(0, 0)), 5.303, 0.0005);
  const auto diagonal = pram_estimate_variance_diagonal(p, original);
  ASSERT_TRUE(diagonal);
  EXPECT_NEAR((*diagonal)(0), 28.125, 1e-11);
  EXPECT_NEAR((*diagonal)(1), 28.125, 1e-11);
}

// perturbation.md §6, oracle "E invariant PRAM".
TEST(PramOracle, EInvariantPramBackwardInvariantAndBlendedMatrices) {
  const PramMatrix p = pram_equal_matrix(3, 0.8);
  const std::vector<std::int64_t> t{60, 30, 10};
  expect_matrix_near(pram_backward_matrix(p, t),
                     {{0.92308, 0.05769, 0.01923}, {0.19355, 0.77419, 0.03226}, {0.35294, 0.17647, 0.47059}}, 0.5e-5);
  const PramMatrix r = pram_invariant_matrix(p, t);
  expect_matrix_near(r, {{0.79311, 0.14122, 0.06567}, {0.28244, 0.64277, 0.07479}, {0.39402, 0.22437, 0.38162}},
                     0.5e-5);
  const Eigen::VectorXd kept = pram_expected_counts(r, t);
  EXPECT_NEAR(kept(0), 60.0, 1e-12);
  EXPECT_NEAR(kept(1), 30.0, 1e-12);
  EXPECT_NEAR(kept(2), 10.0, 1e-12);
  expect_matrix_near(pram_blend_with_identity(r, 0.5),
                     {{0.89656, 0.07061, 0.03283}, {0.14122, 0.82139, 0.03739}, {0.19701, 0.11218, 0.69081}}, 0.5e-5);
  // The reference construction with a constant diagonal 0.8 is exactly this.
  const ReferencePram reference = pram_reference_matrices(std::vector<double>{0.8, 0.8, 0.8}, t, 0.5);
  EXPECT_LT((reference.p - p).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((reference.drawn - pram_blend_with_identity(r, 0.5)).cwiseAbs().maxCoeff(), 1e-15);
}

// perturbation.md §6, oracle "E family shapes".
TEST(PramOracle, EFamilyShapesRowsSumToOneIdentityAndFourBand) {
  expect_matrix_near(pram_band_matrix(4, 0.6, 2),
                     {{0.6, 0.4, 0, 0}, {0.2, 0.6, 0.2, 0}, {0, 0.2, 0.6, 0.2}, {0, 0, 0.4, 0.6}}, 1e-15);
  EXPECT_TRUE(pram_equal_matrix(5, 1.0).isIdentity(0.0));
  const std::vector<std::int64_t> counts{5, 0, 17, 3, 1, 40};
  std::vector<PramMatrix> generated{pram_equal_matrix(6, 0.7),
                                    pram_equal_matrix(1, 0.7),
                                    pram_band_matrix(6, 0.55, 3),
                                    pram_band_matrix(6, 0.9, 1),
                                    pram_frequency_matrix(counts, 0.6),
                                    pram_frequency_matrix(std::vector<std::int64_t>{0, 9, 0}, 0.6),
                                    pram_diagonal_matrix(pram_draw_diagonal(3, 0, 0, 6, 0.8)),
                                    pram_invariant_matrix(pram_equal_matrix(6, 0.8), counts),
                                    pram_reference_matrices(pram_draw_diagonal(3, 1, 7, 6, 0.8), counts, 0.5).drawn};
  generated.push_back(pram_block_matrix(
      std::vector<PramMatrix>{pram_equal_matrix(2, 0.8), PramMatrix::Ones(1, 1), pram_band_matrix(3, 0.6, 2)}));
  for (std::size_t i = 0; i < generated.size(); ++i) {
    SCOPED_TRACE("matrix " + std::to_string(i));
    expect_rows_sum_to_one(generated[i]);
    EXPECT_FALSE(pram_check_matrix(generated[i], pram_default_row_sum_tolerance(generated[i].rows()) * 4));
  }
  const PramMatrix& block = generated.back();
  EXPECT_EQ(block(2, 2), 1.0) << "a 1x1 block keeps its category";
  EXPECT_EQ(block(0, 3), 0.0);
  EXPECT_EQ(block(4, 1), 0.0);
}

TEST(PramMatrices, FrequencyFamilyNeedsThreeCategories) {
  EXPECT_THROW(pram_frequency_matrix(std::vector<std::int64_t>{3, 4}, 0.6), InternalError);
}

TEST(PramMatrices, ReferenceDiagonalIsUniformAboveTheDiagonalProbabilityAndAFunctionOfItsCounter) {
  const auto d = pram_draw_diagonal(42, 1, 9, 1000, 0.8);
  double sum = 0.0;
  for (double v : d) {
    EXPECT_GE(v, 0.8);
    EXPECT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_NEAR(sum / 1000.0, 0.9, 0.006) << "mean of U(0.8, 1); sd of the mean 0.0018";
  EXPECT_EQ(pram_draw_diagonal(42, 1, 9, 3, 0.8), std::vector<double>(d.begin(), d.begin() + 3))
      << "category k's draw does not depend on the number of categories";
  EXPECT_NE(pram_draw_diagonal(42, 1, 10, 3, 0.8), pram_draw_diagonal(42, 1, 9, 3, 0.8)) << "strata differ";
  EXPECT_NE(pram_draw_diagonal(42, 0, 9, 3, 0.8), pram_draw_diagonal(42, 1, 9, 3, 0.8)) << "variables differ";
}

TEST(PramMatrices, BackwardMatrixMapsAnUnreachableCategoryToItself) {
  const std::vector<std::int64_t> t{10, 0, 5};
  const PramMatrix r = pram_invariant_matrix(PramMatrix::Identity(3, 3), t);
  EXPECT_TRUE(r.isIdentity(1e-15));
  // With a positive P, no mass goes to a category the stratum does not have.
  const PramMatrix s = pram_invariant_matrix(pram_equal_matrix(3, 0.8), t);
  EXPECT_EQ(s(0, 1), 0.0);
  EXPECT_EQ(s(2, 1), 0.0);
  expect_rows_sum_to_one(s);
}

TEST(PramMatrices, CheckNamesTheFirstRowThatIsNotADistribution) {
  PramMatrix m = pram_equal_matrix(3, 0.8);
  EXPECT_FALSE(pram_check_matrix(m, pram_default_row_sum_tolerance(3)));
  m(1, 2) = 0.2;
  auto problem = pram_check_matrix(m, pram_default_row_sum_tolerance(3));
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->row, 1);
  EXPECT_NE(problem->what.find("sums to 1.1"), std::string::npos) << problem->what;
  m(1, 2) = 0.1;
  m(2, 0) = -0.1;
  problem = pram_check_matrix(m, 1.0);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->row, 2);
  EXPECT_EQ(problem->what, "entry 1 is negative");
}

TEST(PramSampler, TablesReproduceEveryRowAndNeverDrawAZeroEntry) {
  PramMatrix m = pram_band_matrix(7, 0.55, 3);
  m.row(3) << 1e-17, 0.25, 0, 0.5, 0, 0.125, 0.125 - 1e-17;
  const PramSampler sampler(m);
  for (std::int32_t from = 0; from < 7; ++from)
    for (std::int32_t to = 0; to < 7; ++to) {
      const double p = m(from, to);
      if (p == 0.0) {
        EXPECT_EQ(sampler.probability(from, to), 0.0) << from << " -> " << to;
      } else {
        EXPECT_NEAR(sampler.probability(from, to), p, 1e-15 + 1e-15 * p) << from << " -> " << to;
      }
    }
  // Every pair of words: zeros of row 0 (columns 3..6) never come out.
  for (std::uint64_t a = 0; a < 64; ++a)
    for (std::uint64_t b = 0; b < 64; ++b) {
      const std::int32_t to = sampler.draw(0, a << 58, ~(b << 58));
      EXPECT_LT(to, 3);
    }
}

TEST(PramDraw, KeepsMissingValuesAndGivesTheSameCodesForAnySplitOfTheRecords) {
  std::vector<std::int32_t> original(1000);
  std::vector<std::int32_t> strata(original.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    original[i] = i % 13 == 0 ? -1 : static_cast<std::int32_t>((i * 7) % 4);
    strata[i] = static_cast<std::int32_t>(i % 2);
  }
  const std::vector<PramSampler> samplers{PramSampler(pram_equal_matrix(4, 0.5)),
                                          PramSampler(pram_band_matrix(4, 0.7, 2))};
  std::vector<std::int32_t> whole(original.size());
  std::vector<std::uint8_t> changed(original.size(), 0);
  const std::int64_t changes = pram_draw(original, strata, samplers, 99, 1, 5000, whole, changed);
  EXPECT_GT(changes, 300);
  EXPECT_EQ(changes, std::accumulate(changed.begin(), changed.end(), std::int64_t{0}));
  for (std::size_t i = 0; i < original.size(); ++i) {
    if (original[i] < 0) {
      EXPECT_EQ(whole[i], original[i]) << "missing stays missing";
    }
    EXPECT_EQ(changed[i] == 1, whole[i] != original[i]) << i;
  }
  std::vector<std::int32_t> split(original.size());
  std::vector<std::uint8_t> split_changed(original.size(), 0);
  const std::span<const std::int32_t> in(original);
  const std::span<const std::int32_t> by(strata);
  const std::size_t cuts[] = {0, 333, 334, 900, original.size()};
  for (std::size_t c = 0; c + 1 < std::size(cuts); ++c) {
    const std::size_t size = cuts[c + 1] - cuts[c];
    pram_draw(in.subspan(cuts[c], size), by.subspan(cuts[c], size), samplers, 99, 1,
              5000 + static_cast<std::int64_t>(cuts[c]), std::span(split).subspan(cuts[c], size),
              std::span(split_changed).subspan(cuts[c], size));
  }
  EXPECT_EQ(split, whole);
  EXPECT_EQ(split_changed, changed);
  std::vector<std::int32_t> other(original.size());
  pram_draw(original, strata, samplers, 99, 2, 5000, other, changed);
  EXPECT_NE(other, whole) << "another variable position draws other words";
}

// Statistical checks with a fixed seed (deterministic: they cannot flake). 100 000 records of a
// four-category variable under the reference construction.
class AReferencePramOfOneHundredThousandRecords : public ::testing::Test {
 protected:
  void SetUp() override {
    std::int32_t code = 0;
    for (std::int64_t c : counts_) original_.insert(original_.end(), static_cast<std::size_t>(c), code++);
    matrices_ = pram_reference_matrices(pram_draw_diagonal(20260417, 0, 0, 4, 0.8), counts_, 0.5);
    const std::vector<PramSampler> samplers{PramSampler(matrices_.drawn)};
    released_.resize(original_.size());
    std::vector<std::uint8_t> changed(original_.size(), 0);
    pram_draw(original_, {}, samplers, 20260417, 0, 0, released_, changed);
  }
  const std::vector<std::int64_t> counts_{50000, 30000, 15000, 5000};
  std::vector<std::int32_t> original_;
  std::vector<std::int32_t> released_;
  ReferencePram matrices_;
};

TEST_F(AReferencePramOfOneHundredThousandRecords, EmpiricalTransitionFrequenciesMatchTheDrawnMatrix) {
  std::vector<std::vector<double>> moves(4, std::vector<double>(4, 0.0));
  for (std::size_t i = 0; i < original_.size(); ++i)
    moves[static_cast<std::size_t>(original_[i])][static_cast<std::size_t>(released_[i])] += 1.0;
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t l = 0; l < 4; ++l) {
      const double n = static_cast<double>(counts_[k]);
      const double p = matrices_.drawn(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(l));
      const double sd = std::sqrt(p * (1.0 - p) / n);
      EXPECT_NEAR(moves[k][l] / n, p, 4.5 * sd + 1e-12) << k << " -> " << l;
    }
}

TEST_F(AReferencePramOfOneHundredThousandRecords, ReleasedCountsEqualTheOriginalsInExpectation) {
  std::vector<std::int64_t> after(4, 0);
  for (std::int32_t code : released_) ++after[static_cast<std::size_t>(code)];
  const Eigen::VectorXd expected = pram_expected_counts(matrices_.drawn, counts_);
  const Eigen::MatrixXd variance = pram_released_variance(matrices_.drawn, counts_);
  for (Eigen::Index k = 0; k < 4; ++k) {
    EXPECT_NEAR(expected(k), static_cast<double>(counts_[static_cast<std::size_t>(k)]), 1e-8)
        << "invariance, category " << k;
    EXPECT_NEAR(static_cast<double>(after[static_cast<std::size_t>(k)]), expected(k), 4.5 * std::sqrt(variance(k, k)))
        << "category " << k;
  }
  // The unbiased estimate recovers the originals within its standard error.
  const auto estimate = pram_unbiased_estimate(matrices_.drawn, after);
  const auto estimate_variance = pram_estimate_variance_diagonal(matrices_.drawn, counts_);
  ASSERT_TRUE(estimate && estimate_variance);
  std::vector<double> t_hat(4);
  std::vector<double> v(4);
  for (Eigen::Index k = 0; k < 4; ++k) {
    t_hat[static_cast<std::size_t>(k)] = (*estimate)(k);
    v[static_cast<std::size_t>(k)] = (*estimate_variance)(k);
    EXPECT_NEAR((*estimate)(k), static_cast<double>(counts_[static_cast<std::size_t>(k)]),
                4.5 * std::sqrt(v[static_cast<std::size_t>(k)]));
  }
  const PramInformationLoss loss = pram_information_loss(counts_, t_hat, v);
  EXPECT_GT(loss.mrd, 0.0);
  EXPECT_LE(loss.rd, loss.mrd);
  EXPECT_LE(loss.cv, loss.mcv);
  EXPECT_EQ(loss.infinite, 0);
}

TEST(PramEstimation, SingularMatrixGivesNoEstimate) {
  const PramMatrix p = pram_equal_matrix(2, 0.5);
  EXPECT_FALSE(pram_unbiased_estimate(p, std::vector<std::int64_t>{3, 4}));
  EXPECT_FALSE(pram_estimate_variance(p, std::vector<std::int64_t>{3, 4}));
  EXPECT_FALSE(pram_estimate_variance_diagonal(p, std::vector<std::int64_t>{3, 4}));
}

TEST(PramEstimation, VarianceDiagonalEqualsTheFullMatrixDiagonal) {
  const std::vector<std::int64_t> t{5, 0, 17, 3, 1, 40};
  const PramMatrix p = pram_reference_matrices(pram_draw_diagonal(5, 0, 0, 6, 0.7), t, 0.6).drawn;
  const auto full = pram_estimate_variance(p, t);
  const auto diagonal = pram_estimate_variance_diagonal(p, t);
  ASSERT_TRUE(full && diagonal);
  for (Eigen::Index k = 0; k < 6; ++k)
    EXPECT_NEAR((*diagonal)(k), (*full)(k, k), 1e-9 * (1.0 + std::fabs((*full)(k, k))));
}

TEST(PramInformationLoss, MediansMaximaAndInfiniteCells) {
  const std::vector<std::int64_t> t{10, 20, 0, 40};
  const std::vector<double> estimate{11, 18, 2, 40};
  const std::vector<double> variance{4, 16, 1, 64};
  const PramInformationLoss loss = pram_information_loss(t, estimate, variance);
  EXPECT_DOUBLE_EQ(loss.rd, 0.1);  // (0.1, 0.1, 0)
  EXPECT_DOUBLE_EQ(loss.mrd, 0.1);
  EXPECT_EQ(loss.infinite, 1);
  EXPECT_DOUBLE_EQ(loss.cv, 0.2);  // (0.2, 0.2, 0.2)
  EXPECT_DOUBLE_EQ(loss.mcv, 0.2);
  const PramInformationLoss even =
      pram_information_loss(std::vector<std::int64_t>{10, 20}, std::vector<double>{11, 20}, std::vector<double>{1, 4});
  EXPECT_DOUBLE_EQ(even.rd, 0.05) << "mean of the two middle values";
}

}  // namespace
}  // namespace sdc
