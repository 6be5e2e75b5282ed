#include "kernels/utility/categorical_loss.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/table.h"

namespace sdc::utility {
namespace {

/// The cross-tabulation original × masked of one variable whose files share their levels.
std::vector<std::uint64_t> cross_tabulation(const std::vector<std::int32_t>& original,
                                            const std::vector<std::int32_t>& masked, const CategoryDomain& domain) {
  const std::vector<TableAxis> axes{{original, domain.original_category, domain.categories},
                                    {masked, domain.masked_category, domain.categories}};
  return count_table_cells(axes);
}

// utility.md §9, "E CTBIL": V = (A, A, B) -> (A, missing, B). One suppression changes two cells of
// the one-way table: A loses a record, missing gains one.
TEST(ACategoricalLoss, CtbilOracleCountsOneSuppressionAsTwoCells) {
  const std::vector<std::string> levels{"A", "B"};
  const CategoryDomain domain = match_categories(levels, levels);
  const std::vector<std::int32_t> original{0, 0, 1};
  const std::vector<std::int32_t> masked{0, kMissingCode, 1};
  const std::vector<TableAxis> original_axes{{original, domain.original_category, domain.categories}};
  const std::vector<TableAxis> masked_axes{{masked, domain.masked_category, domain.categories}};
  const std::vector<TableComparison> tables{
      compare_tables(count_table_cells(original_axes), count_table_cells(masked_axes))};
  const Ctbil loss = ctbil(tables);
  std::printf("CTBIL %llu over %llu cells, normalised %.6f\n", static_cast<unsigned long long>(loss.value),
              static_cast<unsigned long long>(loss.cells), loss.normalised);
  EXPECT_EQ(loss.value, 2U);
  EXPECT_EQ(loss.cells, 3U);  // missing, A, B
  EXPECT_DOUBLE_EQ(loss.normalised, 2.0 / 3.0);
  // The direct comparison of the same records: one record changed, at the largest distance.
  const CategoryComparison direct =
      compare_categories(cross_tabulation(original, masked, domain), domain.categories, {});
  EXPECT_EQ(direct.records, 3U);
  EXPECT_EQ(direct.records_changed, 1U);
  EXPECT_EQ(direct.missing_masked, 1U);
  EXPECT_DOUBLE_EQ(direct.mean_distance, 1.0 / 3.0);
}

// utility.md §9, "E EBIL": P = [[0.9, 0.1], [0.1, 0.9]], T = (110, 90), released counts at expectation.
TEST(ACategoricalLoss, EbilOracleFromAKnownTransitionMatrix) {
  const std::vector<double> transition{0.9, 0.1, 0.1, 0.9};
  const std::vector<double> original_counts{110, 90};
  const BackwardProbabilities backward = backward_probabilities(transition, 2, original_counts);
  std::printf("backward (%.6f, %.6f) and (%.6f, %.6f)\n", backward.at(0, 0), backward.at(1, 0), backward.at(0, 1),
              backward.at(1, 1));
  EXPECT_NEAR(backward.at(0, 0), 0.916667, 5e-7);
  EXPECT_NEAR(backward.at(1, 0), 0.083333, 5e-7);
  EXPECT_NEAR(backward.at(0, 1), 0.119565, 5e-7);
  EXPECT_NEAR(backward.at(1, 1), 0.880435, 5e-7);
  const std::vector<double> entropies = conditional_entropies(backward);
  std::printf("H = %.6f, %.6f\n", entropies[0], entropies[1]);
  EXPECT_NEAR(entropies[0], 0.286836, 5e-7);
  EXPECT_NEAR(entropies[1], 0.366058, 5e-7);
  const std::vector<double> released{108, 92};
  const double ebil = entropy_based_loss(backward, released);
  std::printf("EBIL = %.5f\n", ebil);
  EXPECT_NEAR(ebil, 64.65561, 5e-6);
  // The text's IL over records at the expected transition counts, with P's backward probabilities.
  const std::vector<double> expected_counts{99, 11, 9, 81};
  EXPECT_NEAR(summed_record_loss(backward.probability, expected_counts), 64.65561, 5e-6);
}

// The same oracle from observed transitions: (99, 11; 9, 81), missing a category of no record.
TEST(ACategoricalLoss, EbilOracleFromExpectedTransitionCounts) {
  const std::vector<std::uint64_t> counts{0, 0,  0,  //
                                          0, 99, 11, 0, 9, 81};
  const CategoryComparison text = compare_categories(counts, 3, {});
  std::printf("EBIL = %.5f, IL = %.5f\n", text.ebil, text.information_loss);
  EXPECT_NEAR(text.ebil, 64.65561, 5e-6);
  EXPECT_NEAR(text.information_loss, 64.65561, 5e-6);
  EXPECT_EQ(text.records, 200U);
  EXPECT_EQ(text.records_changed, 20U);
  EXPECT_DOUBLE_EQ(text.mean_distance, 0.1);
}

// utility.md §3 and §9, "E PRIL": Albany and New York City recoded to NY state (seed 002, Example 7).
// A recoding is a transition matrix of 0 and 1; the backward probabilities are population shares.
TEST(ACategoricalLoss, PrilOracleForAlbanyAndNewYorkCityRecodedToTheState) {
  const double state = 17'990'455;
  const double albany = 101'082;
  const double new_york_city = 7'322'564;
  const std::vector<double> original_counts{albany, new_york_city, state - albany - new_york_city};
  const std::vector<double> transition{1.0, 1.0, 1.0};  // every town to NY
  const BackwardProbabilities backward = backward_probabilities(transition, 1, original_counts);
  // Second erratum: the print says 0.05, the quotient is 0.005619.
  EXPECT_NEAR(backward.at(0, 0), 0.005619, 5e-7);
  EXPECT_NEAR(backward.at(1, 0), 0.407, 5e-4);
  const double albany_loss = summed_record_loss(std::vector<double>{backward.at(0, 0)}, std::vector<double>{1.0});
  const double city_loss = summed_record_loss(std::vector<double>{backward.at(1, 0)}, std::vector<double>{1.0});
  std::printf("PRIL Albany -> NY %.4f, New York City -> NY %.4f\n", albany_loss, city_loss);
  EXPECT_NEAR(albany_loss, 5.1817, 5e-5);
  EXPECT_NEAR(city_loss, 0.8989, 5e-5);
  // The printed formula, -ln P(V' = NY | V = Albany) = -ln 1: a recoding loses nothing by it.
  EXPECT_EQ(summed_record_loss(std::vector<double>{transition[0]}, std::vector<double>{1.0}), 0.0);

  // The same recoding as files: the masked labels are matched to the original ones by label, NY a
  // category the original lacks.
  const std::vector<std::string> towns{"Albany", "New York City", "Other"};
  const std::vector<std::string> states{"NY"};
  const CategoryDomain domain = match_categories(towns, states);
  EXPECT_EQ(domain.categories, 5U);
  EXPECT_EQ(domain.original_levels, 3U);
  ASSERT_EQ(domain.masked_only_codes.size(), 1U);
  EXPECT_EQ(domain.masked_category[1], 4);
  // Ten Albany records and thirty of New York City, all recoded: backward 1/4 and 3/4.
  std::vector<std::int32_t> original(40, 1);
  for (std::size_t i = 0; i < 10; ++i) original[i] = 0;
  const std::vector<std::int32_t> masked(40, 0);
  const CategoryComparison compared = compare_categories(cross_tabulation(original, masked, domain), 5, {});
  EXPECT_EQ(compared.records_changed, 40U);
  EXPECT_NEAR(compared.information_loss, -10 * std::log(0.25) - 30 * std::log(0.75), 1e-12);
  EXPECT_NEAR(compared.ebil, compared.information_loss, 1e-12);
  const CategoryComparison printed =
      compare_categories(cross_tabulation(original, masked, domain), 5, {.record_loss_form = RecordLossForm::kPrinted});
  EXPECT_EQ(printed.information_loss, 0.0);
}

TEST(ACategoricalLoss, GivesTheTextAndThePrintedRecordLossFromObservedTransitions) {
  // Categories missing, a, b: a -> a 3 times, a -> b once, b -> b twice.
  const std::vector<std::uint64_t> counts{0, 0, 0, 0, 3, 1, 0, 0, 2};
  const CategoryComparison text = compare_categories(counts, 3, {});
  EXPECT_NEAR(text.information_loss, std::log(3.0) + 2 * std::log(1.5), 1e-14);
  EXPECT_NEAR(text.ebil, text.information_loss, 1e-14);
  const CategoryComparison printed = compare_categories(counts, 3, {.record_loss_form = RecordLossForm::kPrinted});
  EXPECT_NEAR(printed.information_loss, -3 * std::log(0.75) - std::log(0.25), 1e-14);
  EXPECT_EQ(printed.ebil, text.ebil);
}

TEST(ACategoricalLoss, MeasuresNominalAndOrdinalDistancesWithTheMissingRules) {
  const CategoryComparisonOptions nominal;
  EXPECT_EQ(category_distance(1, 1, nominal), 0.0);
  EXPECT_EQ(category_distance(1, 3, nominal), 1.0);
  EXPECT_EQ(category_distance(0, 0, nominal), 0.0);
  EXPECT_EQ(category_distance(0, 2, nominal), 1.0);
  const CategoryComparisonOptions rank{.scale = CategoricalScale::kOrdinal, .ordered_categories = 3};
  EXPECT_EQ(category_distance(1, 3, rank), 1.0);
  EXPECT_EQ(category_distance(1, 2, rank), 0.5);
  EXPECT_EQ(category_distance(2, 2, rank), 0.0);
  EXPECT_EQ(category_distance(2, 0, rank), 1.0);
  EXPECT_EQ(category_distance(0, 0, rank), 0.0);
  // As printed: the categories from min to max over |D|, so a category is at 1/|D| from itself.
  CategoryComparisonOptions printed = rank;
  printed.ordinal_distance = OrdinalDistance::kPrinted;
  EXPECT_EQ(category_distance(1, 3, printed), 1.0);
  EXPECT_DOUBLE_EQ(category_distance(1, 2, printed), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(category_distance(2, 2, printed), 1.0 / 3.0);
  EXPECT_EQ(category_distance(0, 0, printed), 0.0);
  EXPECT_EQ(category_distance(0, 1, printed), 1.0);

  // Ranks 1..3 in code order: (1, 3, 2, missing) -> (2, 3, 2, 1).
  const std::vector<std::string> levels{"low", "mid", "high"};
  const CategoryDomain domain = match_categories(levels, levels);
  const std::vector<std::int32_t> original{0, 2, 1, kMissingCode};
  const std::vector<std::int32_t> masked{1, 2, 1, 0};
  const auto table = cross_tabulation(original, masked, domain);
  EXPECT_DOUBLE_EQ(compare_categories(table, 4, rank).mean_distance, (0.5 + 0 + 0 + 1) / 4);
  EXPECT_DOUBLE_EQ(compare_categories(table, 4, printed).mean_distance, (2.0 / 3 + 1.0 / 3 + 1.0 / 3 + 1) / 4);
  EXPECT_DOUBLE_EQ(compare_categories(table, 4, nominal).mean_distance, 0.5);
  EXPECT_EQ(compare_categories(table, 4, nominal).missing_original, 1U);
}

TEST(ACategoricalLoss, CountsTheSameCellsForAnySplitAndThreadCount) {
  // 200 000 records of three variables: a small table (counted in a copy per thread) and a large one
  // (atomic increments).
  const std::size_t n = 200'000;
  std::vector<std::int32_t> a(n), b(n), c(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::int32_t>((i * 7919) % 5) - 1;
    b[i] = static_cast<std::int32_t>((i * 104729) % 300);
    c[i] = static_cast<std::int32_t>((i * 1299709) % 400);
  }
  const std::vector<std::string> a_levels{"0", "1", "2", "3"};
  std::vector<std::string> b_levels, c_levels;
  for (int i = 0; i < 300; ++i) b_levels.push_back(std::to_string(i));
  for (int i = 0; i < 400; ++i) c_levels.push_back(std::to_string(i));
  const CategoryDomain da = match_categories(a_levels, a_levels);
  const CategoryDomain db = match_categories(b_levels, b_levels);
  const CategoryDomain dc = match_categories(c_levels, c_levels);
  for (const bool large : {false, true}) {
    std::vector<TableAxis> axes{{a, da.original_category, da.categories}, {b, db.original_category, db.categories}};
    if (large) axes.push_back({c, dc.original_category, dc.categories});
    const std::uint64_t cells = large ? 5ULL * 301 * 401 : 5ULL * 301;
    const std::vector<std::uint64_t> threaded = count_table_cells(axes);
    std::vector<std::uint64_t> whole;
    {
      const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
      whole = count_table_cells(axes);
    }
    ASSERT_EQ(whole.size(), cells);
    std::uint64_t total = 0;
    for (const auto x : whole) total += x;
    EXPECT_EQ(total, n);
    EXPECT_EQ(threaded, whole) << (large ? "large" : "small");
    std::vector<std::uint64_t> merged;
    for (std::size_t begin = 0; begin < n; begin += 70'001) {
      const std::size_t size = std::min<std::size_t>(70'001, n - begin);
      std::vector<TableAxis> part = axes;
      for (auto& axis : part) axis.codes = axis.codes.subspan(begin, size);
      merge_table_cells(merged, count_table_cells(part));
    }
    EXPECT_EQ(merged, whole) << (large ? "large" : "small");
  }
}

TEST(ACategoricalLoss, RefusesATableBeyondTheCellLimit) {
  const std::vector<std::int32_t> codes{0, 1};
  const std::vector<std::int32_t> categories(4097, 0);
  const std::vector<TableAxis> axes{{codes, categories, 4097}, {codes, categories, 4097}};
  EXPECT_GT(grid_cells(std::vector<std::uint32_t>{4097, 4097}), kMaxTableCells);
  EXPECT_THROW(count_table_cells(axes), ParameterError);
  EXPECT_EQ(grid_cells(std::vector<std::uint32_t>{1U << 31, 1U << 31, 1U << 31}),
            std::numeric_limits<std::uint64_t>::max());
}

TEST(ACategoricalLoss, EnumeratesTheTablesOfUpToKVariablesBySizeThenInOrder) {
  const auto subsets = table_subsets(4, 2);
  const std::vector<std::vector<std::size_t>> expected{{0},    {1},    {2},    {3},    {0, 1},
                                                       {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
  EXPECT_EQ(subsets, expected);
  EXPECT_EQ(table_subsets(3, 5).size(), 7U);
  EXPECT_EQ(table_subsets(3, 3).back(), (std::vector<std::size_t>{0, 1, 2}));
}

TEST(ACategoricalLoss, ComparesTablesWithTheirDistances) {
  // swapping.md §5's Karr–Sanil toy as counts: CTBIL sums |x - x'|, the distances are table_distance.h's.
  const std::vector<std::uint64_t> before{2, 1, 1, 3, 1};
  const std::vector<std::uint64_t> after{3, 0, 0, 4, 1};
  const TableComparison compared = compare_tables(before, after);
  EXPECT_EQ(compared.absolute_difference, 4U);
  EXPECT_NEAR(compared.distances.hellinger, 0.368512, 5e-7);
  EXPECT_NEAR(compared.distances.total_variation, 0.25, 1e-15);
  EXPECT_TRUE(std::isinf(compared.distances.kullback_leibler));
}

// utility.md §9, "E Shlomo–Young imputation".
TEST(ACategoricalLoss, ShlomoYoungImputationOracle) {
  // Row total 500, 400 published in two cells, two cells suppressed: 50 each by the row average.
  const std::vector<double> row{300, 100, 0, 0};
  const std::vector<std::uint8_t> suppressed{0, 0, 1, 1};
  const auto average = impute_suppressed_cells(row, suppressed, 500, SuppressedCellImputation::kRowAverage);
  EXPECT_EQ(average, (std::vector<double>{300, 100, 50, 50}));
  EXPECT_EQ(impute_suppressed_cells(row, suppressed, 500, SuppressedCellImputation::kZero),
            (std::vector<double>{300, 100, 0, 0}));
  // Column averages 50 and 10 with 100 to distribute: 83.33 and 16.67 (a constant factor cancels).
  const std::vector<double> weights{7, 7, 50, 10};
  const auto weighted =
      impute_suppressed_cells(row, suppressed, 500, SuppressedCellImputation::kColumnWeighted, weights);
  std::printf("column-weighted: %.2f, %.2f\n", weighted[2], weighted[3]);
  EXPECT_NEAR(weighted[2], 83.33, 5e-3);
  EXPECT_NEAR(weighted[3], 16.67, 5e-3);
  const std::vector<double> scaled{1, 1, 5, 1};
  const auto same = impute_suppressed_cells(row, suppressed, 500, SuppressedCellImputation::kColumnWeighted, scaled);
  EXPECT_NEAR(same[2], 100.0 * 5 / 6, 1e-12);
  EXPECT_THROW(impute_suppressed_cells(row, suppressed, 500, SuppressedCellImputation::kColumnWeighted, {}),
               ParameterError);
}

// utility.md §9: Cramér's V of [[10, 20], [30, 40]].
TEST(ACategoricalLoss, CramersVOracle) {
  const std::vector<double> table{10, 20, 30, 40};
  const Association association = cramers_v(table, 2, 2);
  std::printf("chi2 = %.5f, V = %.5f\n", association.chi_square, association.cramers_v);
  EXPECT_NEAR(association.chi_square, 0.79365, 5e-6);
  EXPECT_NEAR(association.cramers_v, 0.08909, 5e-6);
  // Erratum: the divisor is min(R - 1, C - 1), not (R - 1)(C - 1): a 3 × 2 table divides by 1.
  const std::vector<double> wide{10, 20, 30, 40, 0, 0};
  EXPECT_NEAR(cramers_v(wide, 3, 2).cramers_v, 0.08909, 5e-6);  // an empty row is no row
  const std::vector<double> three{10, 20, 30, 40, 5, 25};
  const Association a3 = cramers_v(three, 3, 2);
  EXPECT_NEAR(a3.cramers_v, std::sqrt(a3.chi_square / 130.0 / 1.0), 1e-15);
}

TEST(ACategoricalLoss, GivesTheShlomoYoungMeasuresOfASmallTable) {
  // Original [[1, 2], [3, 0]] against masked [[2, 2], [1, 1]]; every figure worked by hand.
  const std::vector<std::uint64_t> original{1, 2, 3, 0};
  const std::vector<std::uint64_t> masked{2, 2, 1, 1};
  const ShlomoYoung m = shlomo_young_measures(original, masked, 2, 2);
  EXPECT_EQ(m.rows_compared, 2U);
  const double hd0 = std::sqrt(0.5 * std::pow(std::sqrt(2.0) - 1.0, 2));
  const double hd1 = std::sqrt(0.5 * std::pow(1.0 - std::sqrt(3.0), 2) + 0.5);
  EXPECT_NEAR(m.hellinger, (hd0 + hd1) / 2, 1e-15);
  EXPECT_NEAR(m.relative_absolute, (1.0 + 2.0 / 3.0) / 2, 1e-15);
  EXPECT_EQ(m.zero_cells_skipped, 1U);
  EXPECT_NEAR(m.average_absolute, (0.5 + 1.5) / 2, 1e-15);
  EXPECT_NEAR(m.average_variance_original, 2.5, 1e-15);
  EXPECT_EQ(m.average_variance_masked, 0.0);
  EXPECT_NEAR(m.relative_average_variance, -100.0, 1e-12);
  EXPECT_NEAR(m.cramers_v_original, std::sqrt(0.5), 1e-15);  // chi2 = 3, n = 6
  EXPECT_NEAR(m.cramers_v_masked, 0.0, 1e-15);
  EXPECT_NEAR(m.relative_cramers_v, -100.0, 1e-12);
  const double h_original = -(1.0 / 3) * std::log(1.0 / 3) - (2.0 / 3) * std::log(2.0 / 3);
  EXPECT_NEAR(m.entropy_original, h_original, 1e-15);
  EXPECT_NEAR(m.entropy_masked, 2 * std::log(2.0), 1e-15);
  EXPECT_NEAR(m.relative_entropy, 100 * (2 * std::log(2.0) - h_original) / h_original, 1e-12);
  // Column 0 swaps the order of its two rows (RC 100 %), column 1 keeps it (ties by original order).
  EXPECT_EQ(m.rank_distorted_columns, 1U);
  EXPECT_DOUBLE_EQ(m.mean_rank_change, 50.0);
  EXPECT_EQ(m.small_cells, 2U);
  EXPECT_EQ(m.small_cells_unchanged, 1U);
  EXPECT_DOUBLE_EQ(m.small_cells_unchanged_percent, 50.0);
}

// utility.md §6, RAT, AT, BVR and LR on one table, every figure worked by hand:
//   original [[6, 4], [3, 7], [5, 5]]   row totals N_orig (10, 10, 10), column totals (14, 16), n = 30
//   masked   [[5, 4], [4, 6], [5, 6]]   row totals N_pert ( 9, 10, 11), column totals (14, 16), n = 30
TEST(ACategoricalLoss, GivesTheShlomoYoungTotalsVarianceAndLikelihoodRatiosOfATable) {
  const std::vector<std::uint64_t> original{6, 4, 3, 7, 5, 5};
  const std::vector<std::uint64_t> masked{5, 4, 4, 6, 5, 6};
  ShlomoYoungOptions options;
  options.target_column = 0;
  const ShlomoYoung m = shlomo_young_measures(original, masked, 3, 2, options);
  std::printf("RAT %.6f, AT %.6f, BV %.7f / %.7f, BVR %.6f, L2 %.6f / %.6f, LR %.6f\n", m.relative_absolute_total,
              m.absolute_total, m.between_variance_original, m.between_variance_masked, m.between_variance_ratio,
              m.likelihood_ratio_original, m.likelihood_ratio_masked, m.likelihood_ratio);
  // C' = every column: RAT = |9 − 10|/10 + |10 − 10|/10 + |11 − 10|/10 = 0.2; AT = (1 + 0 + 1)/3.
  EXPECT_EQ(m.total_columns, 2U);
  EXPECT_NEAR(m.relative_absolute_total, 0.2, 1e-15);
  EXPECT_EQ(m.zero_total_rows_skipped, 0U);
  EXPECT_NEAR(m.absolute_total, 2.0 / 3.0, 1e-15);
  // BVR of column 0. Original: P^k = 0.6, 0.3, 0.5, P = 14/30 = 7/15; gaps 2/15, −1/6, 1/30; squares
  // 16/900 + 25/900 + 1/900 = 42/900; BV = 42/900/2 = 7/300 = 0.0233333.
  // Masked: P^k = 5/9, 4/10, 5/11, P = 14/30 = 7/15; gaps 4/45, −1/15, −2/165; squares 16/2025 +
  // 1/225 + 4/27225 = 0.00790123 + 0.00444444 + 0.00014692 = 0.0124926; BV = 0.0062463.
  // BVR = 0.0062463/0.0233333 = 0.267699.
  EXPECT_EQ(m.between_variance_rows_original, 3U);
  EXPECT_EQ(m.between_variance_rows_masked, 3U);
  EXPECT_NEAR(m.between_variance_original, 7.0 / 300.0, 1e-15);
  EXPECT_NEAR(m.between_variance_masked, (16.0 / 2025 + 1.0 / 225 + 4.0 / 27225) / 2, 1e-15);
  EXPECT_NEAR(m.between_variance_ratio, 0.267699, 5e-7);
  // LR, ê = N_k·(column total)/30. Original ê = 10·14/30 = 4.666667 and 10·16/30 = 5.333333 in every
  // row: Σ o ln(o/ê) = 6 ln(6/4.666667) + 4 ln(4/5.333333) + 3 ln(3/4.666667) + 7 ln(7/5.333333)
  // + 5 ln(5/4.666667) + 5 ln(5/5.333333) = 1.507887 − 1.150728 − 1.325498 + 1.903536 + 0.344964
  // − 0.322693 = 0.957468; L² = 1.914936. Masked ê = (4.2, 4.8), (4.666667, 5.333333), (5.133333,
  // 5.866667): 0.871767 − 0.729286 − 0.616603 + 0.706698 − 0.131587 + 0.134837 = 0.235827;
  // L² = 0.471654. LR = 0.471654/1.914936 = 0.246303.
  EXPECT_NEAR(m.likelihood_ratio_original, 1.914936, 5e-7);
  EXPECT_NEAR(m.likelihood_ratio_masked, 0.471654, 5e-7);
  EXPECT_NEAR(m.likelihood_ratio, 0.246303, 5e-7);

  // C' = column 1 only: N_orig = (4, 7, 5), N_pert = (4, 6, 6): RAT = 0 + 1/7 + 1/5 = 0.342857,
  // AT = (0 + 1 + 1)/3. No target: BVR is not computed.
  const ShlomoYoung group = shlomo_young_measures(original, masked, 3, 2, {{1}, std::nullopt});
  EXPECT_EQ(group.total_columns, 1U);
  EXPECT_NEAR(group.relative_absolute_total, 1.0 / 7 + 1.0 / 5, 1e-15);
  EXPECT_NEAR(group.absolute_total, 2.0 / 3.0, 1e-15);
  EXPECT_TRUE(std::isnan(group.between_variance_ratio));
  EXPECT_EQ(group.likelihood_ratio, m.likelihood_ratio);  // the independence model uses every cell

  // A row with N_orig = 0 is skipped by RAT and counted, but not by AT; a row without records in a file
  // is no row of that file's BV. [[2, 2], [0, 0], [1, 3]] against [[2, 2], [1, 0], [2, 2]]: the compared
  // rows are all three; RAT = 0/4 + (skipped) + 0/4 = 0, AT = (0 + 1 + 0)/3. Target column 0:
  // original P^k = 0.5, 0.25 over two rows, P = 3/8: BV = (1/64 + 1/64)/1 = 1/32; masked P^k = 0.5, 1,
  // 0.5 over three rows, P = 5/9: BV = (1/324 + 16/81 + 1/324)/2 = 66/648 = 0.101852; BVR = 3.259259.
  const std::vector<std::uint64_t> sparse_original{2, 2, 0, 0, 1, 3};
  const std::vector<std::uint64_t> sparse_masked{2, 2, 1, 0, 2, 2};
  const ShlomoYoung sparse = shlomo_young_measures(sparse_original, sparse_masked, 3, 2, {{}, 0});
  EXPECT_EQ(sparse.rows_compared, 3U);
  EXPECT_EQ(sparse.relative_absolute_total, 0.0);
  EXPECT_EQ(sparse.zero_total_rows_skipped, 1U);
  EXPECT_NEAR(sparse.absolute_total, 1.0 / 3.0, 1e-15);
  EXPECT_EQ(sparse.between_variance_rows_original, 2U);
  EXPECT_EQ(sparse.between_variance_rows_masked, 3U);
  EXPECT_NEAR(sparse.between_variance_original, 1.0 / 32, 1e-15);
  EXPECT_NEAR(sparse.between_variance_masked, 66.0 / 648, 1e-15);
  EXPECT_NEAR(sparse.between_variance_ratio, 3.259259, 5e-7);

  // Columns outside the table, or one of C' twice.
  EXPECT_THROW(shlomo_young_measures(original, masked, 3, 2, {{2}, std::nullopt}), ParameterError);
  EXPECT_THROW(shlomo_young_measures(original, masked, 3, 2, {{1, 1}, std::nullopt}), ParameterError);
  EXPECT_THROW(shlomo_young_measures(original, masked, 3, 2, {{}, 2}), ParameterError);
}

// utility.md §6's bias test for methods other than rounding, worked by hand. Differences masked −
// original: +3, −1, +2, +2, 0, −4, +5, +1. The 0 is dropped: n = 7. |d| sorted 1, 1, 2, 2, 3, 4, 5 take
// ranks 1.5, 1.5, 3.5, 3.5, 5, 6, 7. W+ = 5 + 3.5 + 3.5 + 7 + 1.5 = 20.5 (W− = 1.5 + 6 = 7.5).
// E(W+) = 7·8/4 = 14; σ² = 7·8·15/24 − ((2³ − 2) + (2³ − 2))/48 = 35 − 0.25 = 34.75, σ = 5.894913;
// z = (20.5 − 14 − 0.5)/5.894913 = 1.017827; p = erfc(1.017827/√2) = 0.308760 (R's wilcox.test(d,
// exact = FALSE) prints V = 20.5, p-value = 0.3088).
TEST(ACategoricalLoss, WilcoxonSignedRankOracleWithTiesAndAZeroDifference) {
  const std::vector<std::uint64_t> original{0, 1, 0, 5, 4, 6, 0, 2};
  const std::vector<std::uint64_t> masked{3, 0, 2, 7, 4, 2, 5, 3};
  const SignedRankTest test = signed_rank_test(original, masked);
  std::printf("n %llu, W+ %.1f, z %.6f, p %.6f\n", static_cast<unsigned long long>(test.differences), test.w_plus,
              test.z, test.p_value);
  EXPECT_EQ(test.differences, 7U);
  EXPECT_EQ(test.w_plus, 20.5);
  EXPECT_NEAR(test.z, 1.017827, 5e-7);
  EXPECT_NEAR(test.p_value, 0.308760, 5e-7);
  // The other direction: W+ = 7.5, the same |z| with the sign turned, the same p.
  const SignedRankTest reverse = signed_rank_test(masked, original);
  EXPECT_EQ(reverse.w_plus, 7.5);
  EXPECT_NEAR(reverse.z, -1.017827, 5e-7);
  EXPECT_EQ(reverse.p_value, test.p_value);
  // The order of the cells changes nothing.
  const std::vector<std::uint64_t> original_shuffled{2, 0, 6, 4, 5, 0, 1, 0};
  const std::vector<std::uint64_t> masked_shuffled{3, 5, 2, 4, 7, 2, 0, 3};
  const SignedRankTest shuffled = signed_rank_test(original_shuffled, masked_shuffled);
  EXPECT_EQ(shuffled.w_plus, test.w_plus);
  EXPECT_EQ(shuffled.z, test.z);
  // W+ on its mean: no continuity correction, z = 0, p = 1. Nothing changed: not defined.
  const std::vector<std::uint64_t> balanced_original{1, 2, 3, 4};
  const std::vector<std::uint64_t> balanced_masked{2, 1, 3, 4};
  const SignedRankTest balanced = signed_rank_test(balanced_original, balanced_masked);
  EXPECT_EQ(balanced.differences, 2U);
  EXPECT_EQ(balanced.z, 0.0);
  EXPECT_EQ(balanced.p_value, 1.0);
  EXPECT_TRUE(std::isnan(signed_rank_test(balanced_original, balanced_original).z));
  // The measures of a table report the test of its cells.
  const ShlomoYoung m = shlomo_young_measures(original, masked, 4, 2);
  EXPECT_EQ(m.bias.w_plus, 20.5);
  EXPECT_EQ(m.bias.p_value, test.p_value);
}

// utility.md §6's bias test of rounding, by hand. Under H0 p = 2/3, n = 3: P(0..3) = 1, 6, 12, 8 (/27).
// k = 0: {0} → 1/27 = 0.037037; k = 1: {0, 1} → 7/27 = 0.259259; k = 3: {0, 1, 3} → 15/27 = 0.555556;
// k = 2, the mode: every outcome → 1. n = 6: P(0..6) = 1, 12, 60, 160, 240, 192, 64 (/729); k = 2:
// {0, 1, 2} → 73/729 = 0.100137; k = 6: {0, 1, 2, 6} → 137/729 = 0.187929. p = 1/2, n = 4, k = 0: the
// two outcomes of probability 1/16, 0 and 4, both count (the slack of 1e-7) → 0.125.
TEST(ACategoricalLoss, ExactBinomialTestOfRoundingDirectionsOracle) {
  std::printf("n = 3: %.6f %.6f %.6f %.6f; n = 6: %.6f %.6f\n", exact_binomial_test(0, 3), exact_binomial_test(1, 3),
              exact_binomial_test(2, 3), exact_binomial_test(3, 3), exact_binomial_test(2, 6),
              exact_binomial_test(6, 6));
  EXPECT_NEAR(exact_binomial_test(0, 3), 1.0 / 27, 1e-14);
  EXPECT_NEAR(exact_binomial_test(1, 3), 7.0 / 27, 1e-14);
  EXPECT_NEAR(exact_binomial_test(2, 3), 1.0, 1e-14);
  EXPECT_NEAR(exact_binomial_test(3, 3), 15.0 / 27, 1e-14);
  EXPECT_NEAR(exact_binomial_test(2, 6), 73.0 / 729, 1e-14);
  EXPECT_NEAR(exact_binomial_test(6, 6), 137.0 / 729, 1e-14);
  EXPECT_NEAR(exact_binomial_test(0, 4, 0.5), 0.125, 1e-14);
  EXPECT_EQ(exact_binomial_test(0, 0), 1.0);
  EXPECT_THROW(exact_binomial_test(4, 3), ParameterError);
  EXPECT_THROW(exact_binomial_test(1, 3, 0.0), ParameterError);
  EXPECT_THROW(exact_binomial_test(1, 3, 1.0), ParameterError);
}

// utility.md §9's sizes: 1 472 rows × 36 cells = 52 992 cells holding 317 064 persons. An unchanged
// table loses nothing and keeps every small cell.
TEST(ACategoricalLoss, FindsNoLossInAnUnchangedTableOfThePublishedSize) {
  const std::size_t rows = 1472;
  const std::size_t columns = 36;
  EXPECT_EQ(grid_cells(std::vector<std::uint32_t>{1472, 36}), 52'992U);
  std::vector<std::uint64_t> table(rows * columns);
  std::uint64_t persons = 0;
  for (std::size_t c = 0; c < table.size(); ++c) {
    table[c] = (c * 2654435761U) % 11;
    persons += table[c];
  }
  table[0] += 317'064 - persons;  // the published total
  const ShlomoYoung m = shlomo_young_measures(table, table, rows, columns);
  EXPECT_EQ(m.rows_compared, rows);
  EXPECT_EQ(m.hellinger, 0.0);
  EXPECT_EQ(m.relative_absolute, 0.0);
  EXPECT_EQ(m.average_absolute, 0.0);
  EXPECT_EQ(m.relative_average_variance, 0.0);
  EXPECT_EQ(m.relative_cramers_v, 0.0);
  EXPECT_EQ(m.relative_entropy, 0.0);
  EXPECT_EQ(m.rank_distorted_columns, 0U);
  EXPECT_GT(m.small_cells, 0U);
  EXPECT_EQ(m.small_cells_unchanged_percent, 100.0);
  EXPECT_EQ(m.relative_absolute_total, 0.0);
  EXPECT_EQ(m.absolute_total, 0.0);
  EXPECT_GT(m.likelihood_ratio_original, 0.0);
  EXPECT_EQ(m.likelihood_ratio, 1.0);
  EXPECT_EQ(m.bias.differences, 0U);  // no difference to rank: the test is not defined
  EXPECT_TRUE(std::isnan(m.bias.p_value));
  EXPECT_THROW(shlomo_young_measures(std::vector<std::uint64_t>(4, 0), std::vector<std::uint64_t>(4, 0), 2, 2),
               ParameterError);
}

}  // namespace
}  // namespace sdc::utility
