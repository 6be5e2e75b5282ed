#include "kernels/swapping/karr_sanil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::swapping {
namespace {

using Records = std::vector<std::vector<std::int32_t>>;

// The table of `records` (codes 0..levels−1 per attribute) as the composition would merge it.
ReleaseTable table_of(const Records& records, const std::vector<std::int32_t>& code_counts) {
  std::map<std::vector<std::int32_t>, std::int64_t> cells;
  for (const auto& record : records) ++cells[record];
  FrequencyClasses classes;
  classes.key_count = code_counts.size();
  for (const auto& [tuple, count] : cells) {
    classes.class_keys.insert(classes.class_keys.end(), tuple.begin(), tuple.end());
    classes.counts.push_back(count);
  }
  return make_release_table(classes, code_counts);
}

// The selection of the given records (indices into `records`), in that order, as if their keys
// ascended in it.
SwapSelection selection_of(const Records& records, const std::vector<std::size_t>& chosen, const ReleaseTable& table,
                           const Records& strata = {}) {
  std::vector<SelectedRecord> selected;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    SelectedRecord record{static_cast<std::uint64_t>(i), static_cast<std::int64_t>(chosen[i]), records[chosen[i]]};
    if (!strata.empty()) record.codes.insert(record.codes.end(), strata[chosen[i]].begin(), strata[chosen[i]].end());
    selected.push_back(std::move(record));
  }
  return make_swap_selection(std::move(selected), chosen.size(), table, strata.empty() ? 0 : strata.front().size());
}

// swapping.md §5, "E Karr–Sanil toy": (A, B) = (1,1) (1,1) (1,2) (2,1) (2,2) (2,2) (2,2) (3,1), codes
// one less; B of records 3 and 4 swapped.
const Records kToy{{0, 0}, {0, 0}, {0, 1}, {1, 0}, {1, 1}, {1, 1}, {1, 1}, {2, 0}};

TEST(KarrSanil, ToyOracleRiskAndDistances) {
  const ReleaseTable table = table_of(kToy, {3, 2});
  EXPECT_DOUBLE_EQ(original_disclosure_risk(table), 5.0 / 8.0);
  const SwapSelection selection = selection_of(kToy, {2, 3}, table);
  const auto pairs = pair_selected(selection, 1);
  ASSERT_EQ(pairs.size(), 1U);
  const std::vector<std::size_t> swap_b{1};
  const ReleaseEvaluation e = evaluate_release(table, selection, pairs, swap_b, {}, nullptr);
  EXPECT_EQ(e.pairs, 1);
  EXPECT_EQ(e.swapped_records, 2);
  EXPECT_EQ(e.changed_records, 2);
  EXPECT_EQ(e.unswapped_records, 6);
  EXPECT_EQ(e.unswapped_in_small_cells, 1);  // record 8, alone in (3,1)
  EXPECT_DOUBLE_EQ(e.disclosure_risk, 1.0 / 6.0);
  EXPECT_NEAR(e.distances.hellinger, 0.368512, 5e-7);
  EXPECT_NEAR(e.distances.total_variation, 0.25, 1e-15);
  EXPECT_NEAR(e.distances.entropy_change, -0.519860, 5e-7);
  EXPECT_TRUE(std::isnan(e.loglinear_utility));
}

TEST(KarrSanil, ToyOracleFrontier) {
  // R1 (0.30, −0.10), R2 (0.20, −0.15), R3 (0.25, −0.20), R4 (0.10, −0.40), R5 (0.20, −0.12) → {R4, R5, R1}.
  const std::vector<RiskUtilityPoint> points{{0.30, -0.10}, {0.20, -0.15}, {0.25, -0.20}, {0.10, -0.40}, {0.20, -0.12}};
  EXPECT_EQ(undominated_points(points), (std::vector<std::size_t>{3, 4, 0}));
  EXPECT_EQ(best_under_risk_bound(points, 0.2), std::optional<std::size_t>(4));
  EXPECT_EQ(best_under_risk_bound(points, 0.05), std::nullopt);
  EXPECT_EQ(best_under_risk_bound(points, 1.0), std::optional<std::size_t>(0));
}

TEST(KarrSanil, FrontierKeepsIdenticalPointsAndSkipsNaN) {
  const std::vector<RiskUtilityPoint> points{{0.1, -0.5}, {0.1, -0.5},         {0.1, -0.6},
                                             {0.2, -0.5}, {std::nan(""), 0.0}, {0.3, -0.1}};
  EXPECT_EQ(undominated_points(points), (std::vector<std::size_t>{0, 1, 5}));
}

// The frontier against its definition: a point is kept iff no other point has risk <= and utility >=
// with one of them strict.
TEST(KarrSanil, FrontierEqualsTheDefinitionOnRandomPoints) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<RiskUtilityPoint> points(30);
    for (auto& point : points)
      point = {static_cast<double>(random() % 8) / 8.0, -static_cast<double>(random() % 8) / 8.0};
    std::set<std::size_t> expected;
    for (std::size_t i = 0; i < points.size(); ++i) {
      bool dominated = false;
      for (std::size_t j = 0; j < points.size(); ++j)
        dominated = dominated || (points[j].risk <= points[i].risk && points[j].utility >= points[i].utility &&
                                  (points[j].risk < points[i].risk || points[j].utility > points[i].utility));
      if (!dominated) expected.insert(i);
    }
    const auto kept = undominated_points(points);
    EXPECT_EQ(std::set<std::size_t>(kept.begin(), kept.end()), expected) << "trial " << trial;
  }
}

TEST(KarrSanil, UnchangedPairsCountAsUnswappedOnRequest) {
  const ReleaseTable table = table_of(kToy, {3, 2});
  // Records 1 and 4 have B = 1 and 1 (codes 0, 0): swapping B changes nothing.
  const SwapSelection selection = selection_of(kToy, {0, 3}, table);
  const auto pairs = pair_selected(selection, 1);
  const std::vector<std::size_t> swap_b{1};
  const ReleaseEvaluation plain = evaluate_release(table, selection, pairs, swap_b, {}, nullptr);
  EXPECT_EQ(plain.changed_records, 0);
  EXPECT_EQ(plain.unswapped_records, 6);
  EXPECT_EQ(plain.distances.hellinger, 0.0);
  const ReleaseEvaluation counted = evaluate_release(table, selection, pairs, swap_b, {true}, nullptr);
  EXPECT_EQ(counted.unswapped_records, 8);
  EXPECT_DOUBLE_EQ(counted.disclosure_risk, 5.0 / 8.0);
}

TEST(KarrSanil, SwapIntoANewCell) {
  // (1,2) and (3,1) exchange B: (1,1) and (3,2), the second a cell the original table does not have.
  const ReleaseTable table = table_of(kToy, {3, 2});
  const SwapSelection selection = selection_of(kToy, {2, 7}, table);
  const std::vector<std::size_t> swap_b{1};
  const ReleaseEvaluation e = evaluate_release(table, selection, pair_selected(selection, 1), swap_b, {}, nullptr);
  // After: (1,1) 3, (1,2) 0, (2,1) 1, (2,2) 3, (3,1) 0, (3,2) 1; unswapped records in cells of 1 or 2: record 4.
  EXPECT_EQ(e.unswapped_in_small_cells, 1);
  EXPECT_EQ(e.unswapped_records, 6);
  const std::vector<double> before{2, 1, 1, 3, 1, 0};
  const std::vector<double> after{3, 0, 1, 3, 0, 1};
  EXPECT_EQ(e.distances.hellinger, utility::table_distances(before, after).hellinger);
}

TEST(KarrSanil, LogLinearUtilityOfTheSaturatedModelIsMinusNTimesTheEntropyChange) {
  const ReleaseTable table = table_of(kToy, {3, 2});
  LogLinearModelSpec saturated;
  saturated.level_counts = table.level_counts;
  saturated.generators = {{0, 1}};
  const LogLinearBaseline baseline = make_loglinear_baseline(table, saturated, true);
  const SwapSelection selection = selection_of(kToy, {2, 3}, table);
  const std::vector<std::size_t> swap_b{1};
  const ReleaseEvaluation e = evaluate_release(table, selection, pair_selected(selection, 1), swap_b, {}, &baseline);
  EXPECT_NEAR(e.loglinear_utility, -8.0 * e.distances.entropy_change, 1e-9);
  EXPECT_NEAR(e.loglinear_utility, 8.0 * 0.519860, 5e-6);
}

TEST(KarrSanil, LogLinearUtilityOfTheIndependenceModelByHand) {
  // Swapping B keeps both one-way margins, so the refitted independence model is the original one:
  // m̂/N = (a/8)(b/8) with A margins (3, 4, 1) and B margins (4, 4).
  const ReleaseTable table = table_of(kToy, {3, 2});
  const LogLinearBaseline baseline = make_loglinear_baseline(table, independence_model(table.level_counts), true);
  const auto l = [](double a, double b) { return std::log((a / 8.0) * (b / 8.0)); };
  const double before = 2 * l(3, 4) + l(3, 4) + l(4, 4) + 3 * l(4, 4) + l(1, 4);
  const double after = 3 * l(3, 4) + 4 * l(4, 4) + l(1, 4);
  EXPECT_NEAR(baseline.log_likelihood, before, 1e-9);
  const SwapSelection selection = selection_of(kToy, {2, 3}, table);
  const std::vector<std::size_t> swap_b{1};
  const ReleaseEvaluation refit =
      evaluate_release(table, selection, pair_selected(selection, 1), swap_b, {}, &baseline);
  EXPECT_NEAR(refit.loglinear_utility, after - before, 1e-9);
  LogLinearBaseline kept = baseline;
  kept.refit = false;
  const ReleaseEvaluation original_fit =
      evaluate_release(table, selection, pair_selected(selection, 1), swap_b, {}, &kept);
  EXPECT_NEAR(original_fit.loglinear_utility, after - before, 1e-9);
}

TEST(KarrSanil, PairsWithinStrataFollowKeyOrder) {
  const Records records{{0}, {1}, {0}, {1}, {0}, {1}, {0}};
  const Records strata{{5}, {5}, {7}, {7}, {7}, {5}, {9}};
  const ReleaseTable table = table_of(records, {2});
  const SwapSelection selection = selection_of(records, {0, 1, 2, 3, 4, 5, 6}, table, strata);
  // 3 pairs wanted: the first 6 selected; stratum 5 holds 0, 1, 5; stratum 7 holds 2, 3, 4.
  const auto pairs = pair_selected(selection, 3);
  using Pair = std::pair<std::uint32_t, std::uint32_t>;
  EXPECT_EQ(pairs, (std::vector<Pair>{{0, 1}, {2, 3}}));
  EXPECT_EQ(pair_selected(selection, 0).size(), 0U);
  const SwapSelection plain = selection_of(records, {0, 1, 2, 3, 4}, table);
  EXPECT_EQ(pair_selected(plain, 2), (std::vector<Pair>{{0, 1}, {2, 3}}));
  EXPECT_EQ(pair_selected(plain, 9).size(), 2U);  // only five selected
}

TEST(KarrSanil, SelectionKeepsTheSmallestKeysAndRowIdsBreakTies) {
  const Records records{{0}, {1}, {0}, {1}};
  const ReleaseTable table = table_of(records, {2});
  std::vector<SelectedRecord> selected{{5, 3, {1}}, {2, 9, {0}}, {5, 1, {1}}, {9, 0, {0}}};
  const SwapSelection selection = make_swap_selection(selected, 3, table, 0);
  EXPECT_EQ(selection.row_ids, (std::vector<std::int64_t>{9, 1, 3}));
  EXPECT_NE(selection_key(1, 0, 4), selection_key(1, 1, 4));
  EXPECT_NE(selection_key(1, 0, 4), selection_key(2, 0, 4));
  EXPECT_EQ(selection_key(1, 0, 4), selection_key(1, 0, 4));
}

TEST(KarrSanil, MissingCodesAreALevelOfTheirOwn) {
  const Records records{{-1, 0}, {0, 0}, {-1, 1}, {2, 1}};
  const ReleaseTable table = table_of(records, {3, 2});
  EXPECT_EQ(table.level_counts, (std::vector<std::int32_t>{3, 2}));  // missing, 0 and 2 observed
  EXPECT_EQ(table.find(std::vector<std::int32_t>{0, 1}), std::optional<std::size_t>(1));
  std::vector<SelectedRecord> outside{{0, 0, {1, 0}}};  // code 1 of attribute 0 is in no cell
  EXPECT_THROW(make_swap_selection(outside, 1, table, 0), InvalidInput);
}

// Swapping keeps every one-way margin, whatever the pairs: the table's total and each attribute's
// counts are those of the original.
TEST(KarrSanil, RandomSwapsKeepTheOneWayMargins) {
  std::mt19937_64 random(11);
  Records records(400);
  for (auto& record : records)
    record = {static_cast<std::int32_t>(random() % 4), static_cast<std::int32_t>(random() % 3),
              static_cast<std::int32_t>(random() % 5)};
  const ReleaseTable table = table_of(records, {4, 3, 5});
  std::vector<std::size_t> chosen(records.size());
  std::iota(chosen.begin(), chosen.end(), std::size_t{0});
  std::shuffle(chosen.begin(), chosen.end(), random);
  chosen.resize(120);
  const SwapSelection selection = selection_of(records, chosen, table);
  const std::vector<std::size_t> swap{0, 2};
  const ReleaseEvaluation e = evaluate_release(table, selection, pair_selected(selection, 60), swap, {}, nullptr);
  EXPECT_EQ(e.swapped_records, 120);
  EXPECT_EQ(e.unswapped_records, 280);
  // Independence log-likelihood does not move when every one-way margin is kept.
  const LogLinearBaseline baseline = make_loglinear_baseline(table, independence_model(table.level_counts), true);
  const ReleaseEvaluation with_model =
      evaluate_release(table, selection, pair_selected(selection, 60), swap, {}, &baseline);
  EXPECT_NEAR(with_model.loglinear_utility, 0.0, 1e-9);
}

TEST(KarrSanil, PairsForRate) {
  EXPECT_EQ(pairs_for_rate(0.05, 200000), 5000);
  EXPECT_EQ(pairs_for_rate(0.1, 30), 1);     // 1.5
  EXPECT_EQ(pairs_for_rate(0.07, 100), 3);   // 3.5000000000000004 in doubles
  EXPECT_EQ(pairs_for_rate(0.3, 10), 1);     // 1.5
  EXPECT_EQ(pairs_for_rate(0.29, 100), 14);  // 14.499999999999998
  EXPECT_EQ(pairs_for_rate(0.7, 180), 63);   // 62.99999999999999
  EXPECT_EQ(pairs_for_rate(1.0, 7), 3);
  EXPECT_EQ(pairs_for_rate(0.0, 7), 0);
  EXPECT_THROW(pairs_for_rate(1.5, 7), ParameterError);
}

TEST(KarrSanil, LevelsMapBackToCodes) {
  const Records records{{-1, 0}, {0, 0}, {-1, 1}, {2, 1}};
  const ReleaseTable table = table_of(records, {3, 2});
  EXPECT_EQ(table.code_of_level[0], (std::vector<std::int32_t>{-1, 0, 2}));
  EXPECT_EQ(table.code_of_level[1], (std::vector<std::int32_t>{0, 1}));
}

}  // namespace
}  // namespace sdc::swapping
