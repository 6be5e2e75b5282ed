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

// perturbation.md §1 and §6 "E family shapes" for Block(m; M_1; ...; M_m) spelt as families
// (docs/pram.md: block:1/nE:0.8:3/nB:0.6:2:4): the blocks on the diagonal over consecutive levels.
TEST(PramOracle, EBlockOfFamiliesKeepsACategoryAndPlacesEachBlockInLevelOrder) {
  const std::vector<PramFamily> blocks{{.kind = PramFamilyKind::kKeep, .size = 1},
                                       {.kind = PramFamilyKind::kEqual, .p = 0.8, .size = 3},
                                       {.kind = PramFamilyKind::kBand, .p = 0.6, .band = 2, .size = 4}};
  const std::vector<std::int64_t> counts{4, 9, 1, 0, 30, 2, 7, 5};
  const PramMatrix m = pram_family_block_matrix(blocks, counts);
  ASSERT_EQ(m.rows(), 8);
  expect_rows_sum_to_one(m);
  EXPECT_EQ(m(0, 0), 1.0) << "\"1\" keeps its category";
  EXPECT_EQ(m.row(0).sum(), 1.0);
  EXPECT_EQ(m.col(0).sum(), 1.0) << "and no other category moves into it";
  expect_matrix_near(m.block(1, 1, 3, 3), {{0.8, 0.1, 0.1}, {0.1, 0.8, 0.1}, {0.1, 0.1, 0.8}}, 1e-15);
  expect_matrix_near(m.block(4, 4, 4, 4), {{0.6, 0.4, 0, 0}, {0.2, 0.6, 0.2, 0}, {0, 0.2, 0.6, 0.2}, {0, 0, 0.4, 0.6}},
                     1e-15);
  EXPECT_EQ(m.block(1, 4, 3, 4).cwiseAbs().maxCoeff(), 0.0) << "zeros off the diagonal blocks";
  EXPECT_EQ(m.block(4, 0, 4, 4).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_TRUE(pram_family_block_matrix(std::vector<PramFamily>(3, {.kind = PramFamilyKind::kKeep, .size = 1}),
                                       std::vector<std::int64_t>{1, 2, 3})
                  .isIdentity(0.0));
  EXPECT_THROW(pram_family_block_matrix(blocks, std::vector<std::int64_t>(7, 1)), InternalError)
      << "block sizes 1 + 3 + 4 do not cover 7 categories";
  EXPECT_THROW(pram_family_block_matrix(blocks, std::vector<std::int64_t>(9, 1)), InternalError);
}

// perturbation.md §6 "E nF" inside a Block: nF uses the counts of its block's categories only, so the
// oracle's 3F(0.6) rows come back next to a kept category of any size.
TEST(PramOracle, ENfInsideABlockUsesTheBlocksOwnCounts) {
  const std::vector<PramFamily> blocks{{.kind = PramFamilyKind::kKeep, .size = 1},
                                       {.kind = PramFamilyKind::kFrequency, .p = 0.6, .size = 3}};
  const PramMatrix m = pram_family_block_matrix(blocks, std::vector<std::int64_t>{100000, 5576, 24, 632});
  expect_matrix_near(m.block(1, 1, 3, 3),
                     {{0.6000, 0.3854, 0.0146}, {0.0407, 0.6000, 0.3593}, {0.0017, 0.3983, 0.6000}}, 0.5e-4);
  EXPECT_EQ(m(0, 0), 1.0);
  const PramMatrix whole =
      pram_family_matrix({.kind = PramFamilyKind::kFrequency, .p = 0.6}, std::vector<std::int64_t>{5576, 24, 632});
  EXPECT_LT((m.block(1, 1, 3, 3) - whole).cwiseAbs().maxCoeff(), 1e-15);
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

// perturbation.md §6 "E two categories" as a two-way table: ξ PRAMmed with P = [[0.9, 0.1], [0.1, 0.9]],
// η not (the identity). T_ξη = [[60, 50], [40, 50]] has the oracle's margin (110, 90); its expectation
// P_ξᵀ T_ξη = [[58, 50], [42, 50]] has the oracle's (108, 92), and the estimate from it is T_ξη.
TEST(PramOracle, ETwoCategoriesAsATwoWayTableWithAnUnperturbedVariable) {
  const PramMatrix p = (PramMatrix(2, 2) << 0.9, 0.1, 0.1, 0.9).finished();
  const PramMatrix identity;
  const std::vector<std::int64_t> original{60, 50, 40, 50};
  const Eigen::MatrixXd expected = pram_two_way_expected(p, identity, original, 2, 2);
  EXPECT_NEAR(expected(0, 0), 58.0, 1e-12);
  EXPECT_NEAR(expected(0, 1), 50.0, 1e-12);
  EXPECT_NEAR(expected(1, 0), 42.0, 1e-12);
  EXPECT_NEAR(expected(1, 1), 50.0, 1e-12);
  EXPECT_NEAR(expected.row(0).sum(), 108.0, 1e-12);
  const auto estimate = pram_two_way_estimate(p, identity, std::vector<std::int64_t>{58, 50, 42, 50}, 2, 2);
  ASSERT_TRUE(estimate);
  EXPECT_NEAR((*estimate)(0, 0), 60.0, 1e-12);
  EXPECT_NEAR((*estimate)(0, 1), 50.0, 1e-12);
  EXPECT_NEAR((*estimate)(1, 0), 40.0, 1e-12);
  EXPECT_NEAR((*estimate)(1, 1), 50.0, 1e-12);
  // The same variable in the other position: the transpose.
  const auto transposed = pram_two_way_estimate(identity, p, std::vector<std::int64_t>{58, 42, 50, 50}, 2, 2);
  ASSERT_TRUE(transposed);
  EXPECT_LT((*transposed - estimate->transpose()).cwiseAbs().maxCoeff(), 1e-12);
  const std::vector<double> cells{(*estimate)(0, 0), (*estimate)(0, 1), (*estimate)(1, 0), (*estimate)(1, 1)};
  const PramRelativeDifference loss = pram_relative_difference(original, cells);
  EXPECT_LT(loss.mrd, 1e-13);
  EXPECT_EQ(loss.infinite, 0);
}

TEST(PramTwoWay, ExpectationAndEstimateEqualTheKroneckerProductAndKeepTheOneWayMargins) {
  const std::vector<std::int64_t> row_counts{60, 30, 10};
  const PramMatrix p_row = pram_reference_matrices(pram_draw_diagonal(8, 0, 0, 3, 0.7), row_counts, 0.5).drawn;
  const PramMatrix p_column = pram_band_matrix(4, 0.6, 2);
  const std::vector<std::int64_t> original{20, 0, 15, 25, 3, 9, 0, 18, 7, 1, 2, 0};
  // E(vec T_XY) = (P_X ⊗ P_Y)ᵀ vec T for the row-major vec; materialised here only, on 12 cells.
  Eigen::MatrixXd kron(12, 12);
  for (Eigen::Index a = 0; a < 3; ++a)
    for (Eigen::Index b = 0; b < 3; ++b) kron.block(a * 4, b * 4, 4, 4) = p_row(a, b) * p_column;
  Eigen::VectorXd vec(12);
  for (Eigen::Index c = 0; c < 12; ++c) vec(c) = static_cast<double>(original[static_cast<std::size_t>(c)]);
  const Eigen::VectorXd expected_vec = kron.transpose() * vec;
  const Eigen::MatrixXd expected = pram_two_way_expected(p_row, p_column, original, 3, 4);
  for (Eigen::Index c = 0; c < 12; ++c) EXPECT_NEAR(expected(c / 4, c % 4), expected_vec(c), 1e-12) << c;

  const std::vector<std::int64_t> released{18, 2, 14, 22, 5, 8, 3, 16, 6, 2, 4, 1};
  const auto estimate = pram_two_way_estimate(p_row, p_column, released, 3, 4);
  ASSERT_TRUE(estimate);
  Eigen::VectorXd released_vec(12);
  for (Eigen::Index c = 0; c < 12; ++c) released_vec(c) = static_cast<double>(released[static_cast<std::size_t>(c)]);
  const Eigen::VectorXd by_kron = Eigen::MatrixXd(kron.transpose()).fullPivLu().solve(released_vec);
  for (Eigen::Index c = 0; c < 12; ++c) EXPECT_NEAR((*estimate)(c / 4, c % 4), by_kron(c), 1e-10) << c;
  // Its row margins are the one-way estimates from the released margins (P_Y⁻¹ 1 = 1: P_Y's rows sum to 1).
  const auto one_way =
      pram_unbiased_estimate(p_row, std::vector<std::int64_t>{18 + 2 + 14 + 22, 5 + 8 + 3 + 16, 6 + 2 + 4 + 1});
  ASSERT_TRUE(one_way);
  for (Eigen::Index r = 0; r < 3; ++r) EXPECT_NEAR(estimate->row(r).sum(), (*one_way)(r), 1e-10) << r;
  EXPECT_FALSE(pram_two_way_estimate(pram_equal_matrix(3, 1.0 / 3.0), p_column, released, 3, 4)) << "singular";
  EXPECT_FALSE(pram_two_way_estimate(p_row, pram_equal_matrix(4, 0.25), released, 3, 4));
}

// LRD on the oracle "E two categories": y sums (1100, 1800) per original category, means (10, 20). The
// expected released sums Pᵀ T^y = (1170, 1730) and counts (108, 92) give back the means exactly.
TEST(PramRegression, EExpectedReleasedSumsGiveBackTheGroupMeans) {
  const PramMatrix p = (PramMatrix(2, 2) << 0.9, 0.1, 0.1, 0.9).finished();
  const auto totals = pram_unbiased_totals(p, std::vector<double>{1170.0, 1730.0});
  const auto counts = pram_unbiased_estimate(p, std::vector<std::int64_t>{108, 92});
  ASSERT_TRUE(totals && counts);
  EXPECT_NEAR((*totals)(0), 1100.0, 1e-11);
  EXPECT_NEAR((*totals)(1), 1800.0, 1e-11);
  const std::vector<double> estimated_counts{(*counts)(0), (*counts)(1)};
  const std::vector<double> estimated_sums{(*totals)(0), (*totals)(1)};
  const PramRegressionLoss loss = pram_regression_loss(
      std::vector<std::int64_t>{110, 90}, std::vector<double>{1100.0, 1800.0}, estimated_counts, estimated_sums);
  EXPECT_DOUBLE_EQ(loss.beta[0], 10.0);
  EXPECT_DOUBLE_EQ(loss.beta[1], 20.0);
  EXPECT_NEAR(loss.beta_estimate[0], 10.0, 1e-12);
  EXPECT_NEAR(loss.beta_estimate[1], 20.0, 1e-12);
  EXPECT_LT(loss.lrd, 1e-13);
  EXPECT_LT(loss.mlrd, 1e-13);
  EXPECT_EQ(loss.measured, 2);
  EXPECT_FALSE(pram_unbiased_totals(pram_equal_matrix(2, 0.5), std::vector<double>{1.0, 2.0}));
}

TEST(PramRegression, LeavesOutEmptyAndZeroMeanCategoriesAndCountsALostMeanAsInfinite) {
  const std::vector<std::int64_t> counts{10, 20, 0, 40, 5, 8};
  const std::vector<double> sums{100, 0, 0, 400, 50, -16};              // means 10, 0, -, 10, 10, -2
  const std::vector<double> estimated_counts{11, 18, 2, 40, 1e-12, 8};  // category 4: none estimated
  const std::vector<double> estimated_sums{99, 3, 4, 380, 7, -17};      // means 9, 1/6, 2, 9.5, -, -2.125
  const PramRegressionLoss loss = pram_regression_loss(counts, sums, estimated_counts, estimated_sums);
  EXPECT_EQ(loss.empty, 1);
  EXPECT_EQ(loss.zero_mean, 1);
  EXPECT_EQ(loss.measured, 4);
  EXPECT_EQ(loss.infinite, 1);
  EXPECT_TRUE(std::isnan(loss.beta[2]));
  EXPECT_DOUBLE_EQ(loss.beta_estimate[2], 2.0) << "an estimate needs no original record";
  EXPECT_TRUE(std::isnan(loss.beta_estimate[4]));
  // |β − β̃|/|β| = 0.1, 0.05, ∞, 0.0625: the median of four averages 0.0625 and 0.1.
  EXPECT_DOUBLE_EQ(loss.lrd, (0.0625 + 0.1) / 2.0);
  EXPECT_DOUBLE_EQ(loss.mlrd, 0.1) << "the maximum of the finite ones";
  const PramRegressionLoss none = pram_regression_loss(std::vector<std::int64_t>{0, 3}, std::vector<double>{0, 0},
                                                       std::vector<double>{1, 2}, std::vector<double>{1, 0});
  EXPECT_EQ(none.measured, 0);
  EXPECT_TRUE(std::isnan(none.lrd));
  EXPECT_TRUE(std::isnan(none.mlrd));
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
