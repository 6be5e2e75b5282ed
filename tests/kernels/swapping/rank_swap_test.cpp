#include "kernels/swapping/rank_swap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/swapping/taus88.h"
#include "tests/kernels/support/correlation.h"

namespace sdc::swapping {
namespace {

using testing::bivariate_normal;
using testing::pearson;
using testing::spearman;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/// first, first + step, … up to last.
std::vector<double> sequence(double first, double last, double step = 1.0) {
  std::vector<double> out;
  for (double v = first; v <= last; v += step) out.push_back(v);
  return out;
}

std::vector<std::int64_t> row_ids_for(std::size_t n) {
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::int64_t>(i);
  return ids;
}

RankSwapOptions window_only(double fraction, RankSwapMode mode = RankSwapMode::kCompat) {
  RankSwapOptions options;
  options.top_percent = 0.0;
  options.bottom_percent = 0.0;
  options.window_fraction = fraction;
  options.mode = mode;
  return options;
}

RankSwapDraws draws_for(RankSwapMode mode, std::uint32_t seed, std::uint64_t variable = 0) {
  return mode == RankSwapMode::kCompat ? RankSwapDraws::compat(seed) : RankSwapDraws::native(seed, variable);
}

std::vector<double> swapped(const std::vector<double>& values, const RankSwapOptions& options, RankSwapDraws& draws,
                            RankSwapSummary* summary = nullptr) {
  return rank_swap(values, row_ids_for(values.size()), options, draws, summary);
}

/// Equal bit patterns: NaN equals NaN, 0.0 differs from −0.0.
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](double x, double y) {
    return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
  });
}

/// Ascending, missing values last.
std::vector<double> sorted_copy(std::vector<double> values) {
  std::sort(values.begin(), values.end(),
            [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); });
  return values;
}

// ---- the E oracles of docs/methods swapping.md §5 ----

TEST(ARankSwap, PairsEachPositionWithTheNextUnderAWindowOfOneNeighbour) {
  const std::vector<double> expected{2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15, 18, 17, 20, 19};
  for (const RankSwapMode mode : {RankSwapMode::kCompat, RankSwapMode::kNative}) {
    for (const std::uint32_t seed : {1U, 2U, 12345U, 4294967295U}) {
      RankSwapDraws draws = draws_for(mode, seed);
      RankSwapSummary summary;
      EXPECT_EQ(swapped(sequence(1, 20), window_only(0.1, mode), draws, &summary), expected) << "seed " << seed;
      EXPECT_EQ(summary.swapped_pairs, 10);
      EXPECT_EQ(summary.window_positions, 2);
      EXPECT_EQ(draws.draws(), 10) << "one draw among a single candidate per pair";
    }
  }
}

TEST(ARankSwap, ReproducesTheReferenceOnTwoVariablesSharingOneTaus88StreamFromSeedOne) {
  RankSwapDraws draws = RankSwapDraws::compat(1);
  const RankSwapOptions options = window_only(0.2);
  EXPECT_EQ(swapped(sequence(1, 20), options, draws),
            (std::vector<double>{3, 5, 1, 6, 2, 4, 8, 7, 12, 13, 14, 9, 10, 11, 18, 19, 20, 15, 16, 17}));
  EXPECT_EQ(
      swapped(sequence(10, 200, 10), options, draws),
      (std::vector<double>{20, 10, 50, 70, 30, 90, 40, 110, 60, 120, 80, 100, 140, 130, 170, 190, 150, 200, 160, 180}));
  EXPECT_EQ(draws.clamped(), 0);
}

TEST(ARankSwap, ReproducesTheReferenceTopAndBottomCodingOfTenPercent) {
  RankSwapOptions options = window_only(0.3);
  options.top_percent = 10.0;
  options.bottom_percent = 10.0;
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapSummary summary;
  EXPECT_EQ(swapped(sequence(1, 20), options, draws, &summary),
            (std::vector<double>{1, 4, 5, 2, 3, 9, 11, 12, 6, 13, 7, 8, 10, 18, 19, 17, 16, 14, 15, 20}));
  EXPECT_EQ(summary.top_coded, 1) << "10 % of 20 codes one value in single precision";
  EXPECT_EQ(summary.bottom_coded, 1);
}

TEST(ARankSwap, ReproducesTheReferenceTopAndBottomCodingOfTwentyFivePercent) {
  RankSwapOptions options = window_only(0.3);
  options.top_percent = 25.0;
  options.bottom_percent = 25.0;
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapSummary summary;
  EXPECT_EQ(swapped(sequence(1, 20), options, draws, &summary),
            (std::vector<double>{3, 3, 3, 3, 3, 8, 9, 6, 7, 11, 10, 14, 15, 12, 13, 18, 18, 18, 18, 18}));
  EXPECT_EQ(summary.top_coded, 5);
  EXPECT_EQ(summary.bottom_coded, 5);
}

TEST(ARankSwap, ReplacesTheFourLargestAndSmallestOfAHundredByTheirMeansUnderFivePercent) {
  RankSwapOptions options = window_only(1e-6);
  options.top_percent = 5.0;
  options.bottom_percent = 5.0;
  for (const RankSwapMode mode : {RankSwapMode::kCompat, RankSwapMode::kNative}) {
    options.mode = mode;
    RankSwapDraws draws = draws_for(mode, 1);
    RankSwapSummary summary;
    const std::vector<double> out = swapped(sequence(1, 100), options, draws, &summary);
    std::vector<double> expected = sequence(1, 100);
    for (std::size_t i = 0; i < 4; ++i) {
      expected[i] = 2.5;
      expected[99 - i] = 98.5;
    }
    EXPECT_EQ(out, expected);
    EXPECT_EQ(summary.top_coded, 4);
    EXPECT_EQ(summary.bottom_coded, 4);
    EXPECT_EQ(summary.swapped_pairs, 0);
    EXPECT_EQ(draws.draws(), 0);
  }
}

// ---- single precision (§1.3) ----

TEST(ARankSwap, CountsTheTopCodedValuesInSinglePrecisionOneBelowAnExactProduct) {
  struct Case {
    std::size_t n;
    double percent;
    std::int64_t coded;
  };
  for (const Case& c : {Case{100, 5.0, 4}, Case{20, 10.0, 1}, Case{20, 20.0, 3}, Case{1000, 5.0, 49}, Case{20, 25.0, 5},
                        Case{20, 0.0, 0}, Case{20, 100.0, 20}}) {
    RankSwapOptions options = window_only(0.1);
    options.top_percent = c.percent;
    RankSwapDraws draws = RankSwapDraws::compat(1);
    RankSwapSummary summary;
    swapped(sequence(1, static_cast<double>(c.n)), options, draws, &summary);
    EXPECT_EQ(summary.top_coded, c.coded) << c.percent << " % of " << c.n;
    EXPECT_EQ(summary.bottom_coded, 0);
  }
}

TEST(ARankSwap, CodesASingleValueAsANoOpThatStillKeepsItFromSwapping) {
  RankSwapOptions options = window_only(0.5);
  options.top_percent = 10.0;  // one of 20 in single precision
  RankSwapDraws draws = RankSwapDraws::compat(3);
  const std::vector<double> out = swapped(sequence(1, 20), options, draws);
  EXPECT_EQ(out[19], 20.0) << "the top-coded value is its own mean and never swapped";
}

TEST(ARankSwap, ReportsTheWindowFractionAndPositionsItUsed) {
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapSummary summary;
  swapped(sequence(1, 20), window_only(0.2), draws, &summary);
  EXPECT_EQ(summary.records, 20);
  EXPECT_EQ(summary.missing, 0);
  EXPECT_EQ(summary.window_fraction, 0.2) << "the float 0.2f by its shortest decimal form";
  EXPECT_EQ(summary.window_positions, 4);
  // The reference's P is a fraction: P = 10 is ten times the file, i.e. the whole of it.
  swapped(sequence(1, 20), window_only(10.0), draws, &summary);
  EXPECT_EQ(summary.window_positions, 20);
}

TEST(ARankSwap, DerivesTheWindowFromR0AndK0) {
  // Values 1…20 uncoded: μ = 10.5, σ² = 33.25, Δ = 19.
  RankSwapOptions options = window_only(0.1);
  options.window_fraction.reset();
  options.r0 = 0.5;
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapSummary summary;
  swapped(sequence(1, 20), options, draws, &summary);
  EXPECT_NEAR(summary.window_fraction, std::sqrt(2.0 * 33.25 * 0.5) / 19.0, 1e-6);
  options.r0.reset();
  options.k0 = 0.1;
  swapped(sequence(1, 20), options, draws, &summary);
  EXPECT_NEAR(summary.window_fraction, std::sqrt(8.0 / 3.0) * 0.1 * 10.5 / 19.0, 1e-6);
  options.k0.reset();  // none given: R0 = 0.95
  swapped(sequence(1, 20), options, draws, &summary);
  EXPECT_NEAR(summary.window_fraction, std::sqrt(2.0 * 33.25 * 0.05) / 19.0, 1e-6);
  // Equal values: Δ = 0 gives P = 0, nothing moves.
  swapped(std::vector<double>(10, 3.0), options, draws, &summary);
  EXPECT_EQ(summary.window_fraction, 0.0);
  EXPECT_EQ(summary.swapped_pairs, 0);
}

// ---- O(n log n) partner selection ----

struct RandomCase {
  std::vector<double> values;
  std::vector<std::int64_t> row_ids;
  RankSwapOptions options;
};

/// Small integer values (many ties), a few missing, shuffled row ids, random coding and window.
RandomCase random_case(std::uint64_t seed, RankSwapMode mode) {
  std::mt19937_64 engine(seed);
  auto below = [&](std::uint64_t m) { return engine() % m; };
  RandomCase c;
  const std::size_t n = 50 + below(151);
  for (std::size_t i = 0; i < n; ++i)
    c.values.push_back(below(20) == 0 ? kNan : static_cast<double>(below(1 + n / 3)) - 10.0);
  c.row_ids = row_ids_for(n);
  for (std::size_t i = n; i > 1; --i) std::swap(c.row_ids[i - 1], c.row_ids[below(i)]);
  for (auto& id : c.row_ids) id *= 3;  // not the record's position
  const double percents[] = {0.0, 0.0, 5.0, 10.0, 12.5, 25.0};
  c.options.top_percent = percents[below(6)];
  c.options.bottom_percent = percents[below(6)];
  switch (below(4)) {
    case 0:
      c.options.window_fraction = 0.01 + static_cast<double>(below(1000)) / 800.0;
      break;
    case 1:
      c.options.r0 = static_cast<double>(below(101)) / 100.0;
      break;
    case 2:
      c.options.k0 = 0.01 + static_cast<double>(below(100)) / 50.0;
      break;
    default:
      break;  // R0 = 0.95
  }
  c.options.mode = mode;
  return c;
}

TEST(ARankSwap, ChoosesByFenwickTreeTheSamePartnersAsTheReferenceScanFor10000Seeds) {
  std::int64_t draws = 0;
  for (std::uint32_t seed = 1; seed <= 10000; ++seed) {
    const RandomCase c = random_case(seed, RankSwapMode::kCompat);
    RankSwapDraws tree_draws = RankSwapDraws::compat(seed);
    RankSwapDraws scan_draws = RankSwapDraws::compat(seed);
    const auto by_tree = rank_swap(c.values, c.row_ids, c.options, tree_draws);
    const auto by_scan = rank_swap_by_scan(c.values, c.row_ids, c.options, scan_draws);
    ASSERT_TRUE(same_bits(by_tree, by_scan)) << "seed " << seed;
    ASSERT_EQ(tree_draws.draws(), scan_draws.draws()) << "seed " << seed;
    draws += tree_draws.draws();
  }
  EXPECT_GT(draws, 100'000) << "the random cases swap";
  for (std::uint32_t seed = 1; seed <= 200; ++seed) {
    const RandomCase c = random_case(1'000'000 + seed, RankSwapMode::kNative);
    RankSwapDraws tree_draws = RankSwapDraws::native(seed, 3);
    RankSwapDraws scan_draws = RankSwapDraws::native(seed, 3);
    ASSERT_TRUE(same_bits(rank_swap(c.values, c.row_ids, c.options, tree_draws),
                          rank_swap_by_scan(c.values, c.row_ids, c.options, scan_draws)))
        << "native seed " << seed;
    ASSERT_EQ(tree_draws.draws(), scan_draws.draws());
  }
}

// ---- invariants ----

TEST(ARankSwap, KeepsTheMultisetOfValuesWithoutTopAndBottomCoding) {
  for (const RankSwapMode mode : {RankSwapMode::kCompat, RankSwapMode::kNative}) {
    for (std::uint32_t seed = 1; seed <= 20; ++seed) {
      RandomCase c = random_case(seed, mode);
      c.options.top_percent = 0.0;
      c.options.bottom_percent = 0.0;
      RankSwapDraws draws = draws_for(mode, seed);
      RankSwapSummary summary;
      const auto out = rank_swap(c.values, c.row_ids, c.options, draws, &summary);
      EXPECT_TRUE(same_bits(sorted_copy(out), sorted_copy(c.values))) << "seed " << seed;
      std::int64_t changed = 0;
      for (std::size_t i = 0; i < out.size(); ++i) changed += out[i] != c.values[i] && !std::isnan(out[i]);
      EXPECT_LE(changed, 2 * summary.swapped_pairs) << "seed " << seed;
    }
  }
}

TEST(ARankSwap, MovesEverySwappedValueAtMostTheWindowInSortedOrder) {
  for (const RankSwapMode mode : {RankSwapMode::kCompat, RankSwapMode::kNative}) {
    for (std::uint32_t seed = 1; seed <= 20; ++seed) {
      // Distinct values in a shuffled record order: a value's sorted position identifies it.
      std::mt19937_64 engine(seed);
      const std::size_t n = 120;
      std::vector<double> values = sequence(1, static_cast<double>(n));
      for (std::size_t i = n; i > 1; --i) std::swap(values[i - 1], values[engine() % i]);
      for (const double fraction : {0.03, 0.1, 0.25}) {
        RankSwapDraws draws = draws_for(mode, seed);
        RankSwapSummary summary;
        const auto out = swapped(values, window_only(fraction, mode), draws, &summary);
        std::int64_t moved = 0;
        for (std::size_t i = 0; i < n; ++i) {
          // Value v sits at sorted position n − v (descending).
          const auto from = static_cast<std::int64_t>(n) - static_cast<std::int64_t>(values[i]);
          const auto to = static_cast<std::int64_t>(n) - static_cast<std::int64_t>(out[i]);
          EXPECT_LE(std::abs(from - to), summary.window_positions) << "seed " << seed << ", record " << i;
          moved += from != to;
        }
        EXPECT_EQ(moved, 2 * summary.swapped_pairs) << "distinct values: every pair changes two records";
        EXPECT_GT(summary.swapped_pairs, 0);
      }
    }
  }
}

TEST(ARankSwap, LeavesMissingValuesInPlaceAndSwapsTheOthersAsIfTheyWereAlone) {
  for (const RankSwapMode mode : {RankSwapMode::kCompat, RankSwapMode::kNative}) {
    for (std::uint32_t seed = 1; seed <= 20; ++seed) {
      const RandomCase c = random_case(seed, mode);
      std::vector<double> present;
      std::vector<std::int64_t> present_ids;
      for (std::size_t i = 0; i < c.values.size(); ++i) {
        if (std::isnan(c.values[i])) continue;
        present.push_back(c.values[i]);
        present_ids.push_back(c.row_ids[i]);
      }
      RankSwapDraws with_missing = draws_for(mode, seed);
      RankSwapDraws without = draws_for(mode, seed);
      RankSwapSummary summary;
      const auto out = rank_swap(c.values, c.row_ids, c.options, with_missing, &summary);
      const auto alone = rank_swap(present, present_ids, c.options, without);
      std::size_t k = 0;
      std::int64_t missing = 0;
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (std::isnan(c.values[i])) {
          EXPECT_TRUE(std::isnan(out[i])) << "seed " << seed << ", record " << i;
          ++missing;
        } else {
          EXPECT_EQ(out[i], alone[k++]) << "seed " << seed << ", record " << i;
        }
      }
      EXPECT_EQ(summary.missing, missing);
      EXPECT_EQ(summary.records, static_cast<std::int64_t>(c.values.size()));
    }
  }
}

TEST(ARankSwap, PutsTheRecordWithTheLargerRowIdFirstAmongEqualValues) {
  // Sorted: 2 (row 10), 1 (row 30), 1 (row 20), 0 (row 40); a window of one neighbour pairs the first
  // two and the last two, whatever the order of the records in memory.
  const std::vector<double> values{2, 1, 1, 0};
  const std::vector<std::int64_t> row_ids{10, 30, 20, 40};
  for (const RankSwapMode mode : {RankSwapMode::kCompat, RankSwapMode::kNative}) {
    RankSwapDraws draws = draws_for(mode, 5);
    EXPECT_EQ(rank_swap(values, row_ids, window_only(0.5, mode), draws), (std::vector<double>{1, 2, 0, 1}));
  }
}

TEST(ARankSwap, CodesTheLaterOfEqualValuesAtTheTopBoundary) {
  // Sorted: 30 (row 4), 30 (row 1), 20, 19, …: the top-coded one is row 4's (10 % of 20 codes one value).
  std::vector<double> values = sequence(1, 20);
  values[1] = 30.0;
  values[4] = 30.0;
  RankSwapOptions options = window_only(1e-6);
  options.top_percent = 10.0;
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapSummary summary;
  const auto out = swapped(values, options, draws, &summary);
  ASSERT_EQ(summary.top_coded, 1);
  EXPECT_EQ(out, values) << "coding one value keeps it; a negligible window swaps nothing";
  RankSwapDraws again = RankSwapDraws::compat(1);
  options.window_fraction = 0.12;  // one neighbour among the 19 left: 19 · 0.12 = 2.28
  const auto paired = swapped(values, options, again);
  EXPECT_EQ(paired[4], 30.0) << "row 4 is coded, so never swapped";
  EXPECT_EQ(paired[1], 20.0) << "row 1 heads the values left and pairs with 20";
}

TEST(ARankSwap, GivesNativeDrawsThatDependOnTheVariablePositionAndNotOnAnotherVariable) {
  const std::vector<double> x = sequence(1, 200);
  const RankSwapOptions options = window_only(0.2, RankSwapMode::kNative);
  RankSwapDraws first = RankSwapDraws::native(42, 0);
  RankSwapDraws second = RankSwapDraws::native(42, 1);
  RankSwapDraws first_again = RankSwapDraws::native(42, 0);
  const auto a = swapped(x, options, first);
  swapped(sequence(5, 300), options, first_again);  // another variable on the same object changes nothing
  EXPECT_EQ(swapped(x, options, first_again), a);
  EXPECT_NE(swapped(x, options, second), a);
}

TEST(ARankSwap, TakesTheLastCandidateWhereTheReferenceDrawReachesTheCount) {
  // Seed 2215457506: the first taus88 output is at least 2^32 − 128, so u rounds to 1.0f (found by search).
  constexpr std::uint32_t kSeed = 2215457506U;
  EXPECT_EQ(Taus88(kSeed).uniform(), 1.0f);
  EXPECT_EQ(Taus88(kSeed).random(7), 7) << "the reference's Random(7) indexes past seven candidates";
  RankSwapDraws draws = RankSwapDraws::compat(kSeed);
  EXPECT_EQ(draws.pick(7, 0), 6);
  EXPECT_EQ(draws.clamped(), 1);
  RankSwapDraws one_neighbour = RankSwapDraws::compat(kSeed);
  EXPECT_EQ(swapped(sequence(1, 20), window_only(0.1), one_neighbour),
            (std::vector<double>{2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15, 18, 17, 20, 19}));
  EXPECT_EQ(one_neighbour.clamped(), 1);
}

// ---- taus88 ----

TEST(ATaus88, RaisesASmallSeedLikeTheReferenceSoSeedsZeroAndOneShareAStream) {
  Taus88 zero(0);
  Taus88 one(1);
  Taus88 two(2);
  bool differs_from_two = false;
  for (int i = 0; i < 100; ++i) {
    const std::uint32_t bits = zero.next_bits();
    EXPECT_EQ(bits, one.next_bits());
    differs_from_two |= bits != two.next_bits();
  }
  EXPECT_TRUE(differs_from_two);
}

TEST(ATaus88, DrawsIndicesBelowTheCountForSmallCounts) {
  Taus88 taus88(7);
  std::vector<int> hits(5, 0);
  for (int i = 0; i < 10000; ++i) {
    const std::int64_t k = taus88.random(5);
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 5);
    ++hits[static_cast<std::size_t>(k)];
  }
  for (const int h : hits) EXPECT_NEAR(h, 2000, 200);
}

// ---- parameters ----

TEST(ARankSwap, RejectsPercentsOutsideZeroToHundred) {
  for (const double bad : {-0.1, 100.5, kNan}) {
    RankSwapDraws draws = RankSwapDraws::compat(1);
    RankSwapOptions options = window_only(0.1);
    options.top_percent = bad;
    EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError);
    options.top_percent = 5.0;
    options.bottom_percent = bad;
    EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError);
  }
}

TEST(ARankSwap, RejectsMoreThanOneOfWindowFractionR0AndK0) {
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapOptions options = window_only(0.1);
  options.r0 = 0.9;
  EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError);
  options.window_fraction.reset();
  options.k0 = 0.1;
  EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError);
}

TEST(ARankSwap, RejectsAWindowFractionOrK0NotAboveZeroOrNotFiniteAndAnR0OutsideZeroToOne) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const double bad : {0.0, -0.2, inf, kNan, 1e39}) {
    RankSwapDraws draws = RankSwapDraws::compat(1);
    RankSwapOptions options = window_only(bad);
    EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError) << "window fraction " << bad;
    options.window_fraction.reset();
    options.k0 = bad;
    EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError) << "K0 " << bad;
  }
  for (const double bad : {-0.01, 1.01, kNan}) {
    RankSwapDraws draws = RankSwapDraws::compat(1);
    RankSwapOptions options = window_only(0.1);
    options.window_fraction.reset();
    options.r0 = bad;
    EXPECT_THROW(swapped(sequence(1, 5), options, draws), ParameterError) << "R0 " << bad;
  }
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapOptions options = window_only(0.1);
  options.window_fraction.reset();
  options.r0 = 1.0;
  EXPECT_EQ(swapped(sequence(1, 5), options, draws), sequence(1, 5)) << "R0 = 1 keeps every value";
}

TEST(ARankSwap, RejectsAnInfiniteValueNamingItsRowId) {
  RankSwapDraws draws = RankSwapDraws::compat(1);
  std::vector<double> values = sequence(1, 5);
  values[2] = -std::numeric_limits<double>::infinity();
  try {
    swapped(values, window_only(0.1), draws);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("row id 2"), std::string::npos) << e.what();
  }
}

TEST(ARankSwap, RefusesDrawsOfTheOtherMode) {
  RankSwapDraws draws = RankSwapDraws::native(1, 0);
  EXPECT_THROW(swapped(sequence(1, 5), window_only(0.1, RankSwapMode::kCompat), draws), InternalError);
}

TEST(ARankSwap, ReturnsEmptyAndAllMissingVariablesUnchanged) {
  RankSwapDraws draws = RankSwapDraws::compat(1);
  RankSwapSummary summary;
  EXPECT_TRUE(swapped({}, window_only(0.5), draws, &summary).empty());
  EXPECT_EQ(summary.records, 0);
  const auto out = swapped({kNan, kNan}, window_only(0.5), draws, &summary);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  EXPECT_EQ(summary.missing, 2);
  EXPECT_EQ(draws.draws(), 0);
}

// ---- the segmented pieces (distributed/compose/rank_swap.cpp) give rank_swap's bits ----

/// rank_swap composed from its segment pieces, the sorted order cut at `cuts` (increasing positions):
/// what the ranks do, each holding one segment, in one process.
std::vector<double> segmented_rank_swap(const std::vector<double>& values, const RankSwapOptions& options,
                                        std::uint64_t seed, const std::vector<std::int64_t>& cuts) {
  std::vector<SortedValue> sorted;
  std::vector<std::size_t> record_of;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isnan(values[i])) sorted.push_back({values[i], static_cast<std::int64_t>(i)});
  std::sort(sorted.begin(), sorted.end(), sorted_before);
  const auto n = static_cast<std::int64_t>(sorted.size());
  const std::int64_t top = rank_swap_coded_count(n, options.top_percent);
  const std::int64_t bottom = rank_swap_coded_count(n, options.bottom_percent);
  RankSwapSums sums;
  for (std::int64_t j = 0; j < top; ++j) sums.top += sorted[static_cast<std::size_t>(j)].value;
  const double top_mean = top > 0 ? sums.top / static_cast<double>(top) : 0.0;
  const auto coded = [&](std::int64_t j) { return j < top ? top_mean : sorted[static_cast<std::size_t>(j)].value; };
  for (std::int64_t j = n - bottom; j < n; ++j) sums.bottom += coded(j);
  const double bottom_mean = sums.bottom != 0.0 ? sums.bottom / static_cast<double>(bottom) : 0.0;
  const std::int64_t free_count = std::max<std::int64_t>(0, n - bottom - top);
  for (std::int64_t j = top; j < top + free_count; ++j) {
    sums.free += sorted[static_cast<std::size_t>(j)].value;
    const double square = sorted[static_cast<std::size_t>(j)].value * sorted[static_cast<std::size_t>(j)].value;
    sums.free_squares += square;
  }
  const double top_value = n == 0 ? 0.0 : sorted[static_cast<std::size_t>(top > 0 ? top - 1 : 0)].value;
  const double bottom_value = n == 0 ? 0.0 : coded(bottom > 0 ? n - bottom : n - 1);
  const float p = rank_swap_window_fraction(options, sums, free_count, top_value, bottom_value);

  std::vector<double> masked(sorted.size());
  for (std::int64_t j = 0; j < n; ++j) masked[static_cast<std::size_t>(j)] = sorted[static_cast<std::size_t>(j)].value;
  for (std::int64_t j = 0; j < top; ++j) masked[static_cast<std::size_t>(j)] = top_mean;
  for (std::int64_t j = n - bottom; j < n; ++j) masked[static_cast<std::size_t>(j)] = bottom_mean;
  RankSwapDraws draws = RankSwapDraws::native(seed, 0);
  std::vector<std::int64_t> taken;
  std::vector<std::int64_t> bounds{0};
  for (std::int64_t cut : cuts) bounds.push_back(std::min(cut, free_count));
  bounds.push_back(free_count);
  std::vector<double> swapped_values(masked);
  for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
    const std::int64_t first = std::min(bounds[s], free_count);
    const std::int64_t end = std::max(first, bounds[s + 1]);
    std::vector<std::int64_t> row_ids;
    for (std::int64_t f = first; f < end; ++f) row_ids.push_back(sorted[static_cast<std::size_t>(top + f)].row_id);
    const SegmentScan scanned = rank_swap_scan_segment(first, row_ids, free_count, p, taken, draws);
    for (const auto& [a, b] : scanned.pairs)
      std::swap(swapped_values[static_cast<std::size_t>(top + a)], swapped_values[static_cast<std::size_t>(top + b)]);
    taken = scanned.taken_after;
  }
  std::vector<double> out(values);
  for (std::int64_t j = 0; j < n; ++j)
    out[static_cast<std::size_t>(sorted[static_cast<std::size_t>(j)].row_id)] =
        swapped_values[static_cast<std::size_t>(j)];
  return out;
}

TEST(ARankSwap, GivesTheSameBitsScannedInSegmentsAsInOnePass) {
  std::mt19937_64 random(31);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + random() % 400;
    std::vector<double> values(n);
    for (auto& value : values) value = random() % 7 == 0 ? kNan : static_cast<double>(random() % 50) / 4.0;
    RankSwapOptions options;
    options.mode = RankSwapMode::kNative;
    options.top_percent = static_cast<double>(random() % 12);
    options.bottom_percent = static_cast<double>(random() % 12);
    if (trial % 3 == 0) options.window_fraction = 0.01 + static_cast<double>(random() % 60) / 100.0;
    if (trial % 3 == 1) options.k0 = 0.05;
    std::vector<std::int64_t> cuts;
    for (int c = 0; c < static_cast<int>(random() % 5); ++c) cuts.push_back(static_cast<std::int64_t>(random() % n));
    std::sort(cuts.begin(), cuts.end());
    const auto seed = static_cast<std::uint64_t>(trial);
    RankSwapDraws draws = RankSwapDraws::native(seed, 0);
    const std::vector<double> whole = rank_swap(values, row_ids_for(n), options, draws);
    EXPECT_TRUE(same_bits(segmented_rank_swap(values, options, seed, cuts), whole)) << "trial " << trial;
  }
}

// ---- the A oracle of docs/methods swapping.md §5: swap against shuffle ----

// Published (Muralidhar, Sarathy & Dandekar; n = 1 000, ρ = 0.5, 1 000 replications, windows of 10, 50
// and 100 % of the records): mean change of the Spearman correlation −0.026 / −0.332 / −0.481, of the
// Pearson −0.054 / −0.359 / −0.499; squared correlation original–masked 0.887 / ≈ 0.272 / ≈ 0.002;
// tolerance ± 0.01. Both variables are swapped, each with its own draws, top and bottom coding off.
TEST(ARankSwap, MatchesTheSwapVersusShuffleSimulation) {
  constexpr std::size_t kN = 1000;
  constexpr int kReplications = 1000;
  const double windows[] = {0.10, 0.50, 1.00};
  const double published_spearman[] = {-0.026, -0.332, -0.481};
  const double published_pearson[] = {-0.054, -0.359, -0.499};
  const double published_squared[] = {0.887, 0.272, 0.002};
  for (int w = 0; w < 3; ++w) {
    double spearman_change = 0.0, pearson_change = 0.0, squared = 0.0;
    for (int r = 0; r < kReplications; ++r) {
      const auto data = bivariate_normal(kN, 0.5, 5000 + static_cast<std::uint64_t>(r));
      std::vector<std::vector<double>> masked;
      for (std::uint64_t v = 0; v < 2; ++v) {
        RankSwapDraws draws = RankSwapDraws::native(9000 + static_cast<std::uint64_t>(r), v);
        masked.push_back(swapped(data[v], window_only(windows[w], RankSwapMode::kNative), draws));
      }
      spearman_change += (spearman(masked[0], masked[1]) - spearman(data[0], data[1])) / kReplications;
      pearson_change += (pearson(masked[0], masked[1]) - pearson(data[0], data[1])) / kReplications;
      const double r1 = pearson(data[0], masked[0]), r2 = pearson(data[1], masked[1]);
      squared += (r1 * r1 + r2 * r2) / 2.0 / kReplications;
    }
    std::printf(
        "A oracle, rank swap window %.0f %%: mean change Spearman %+.4f (published %+.3f), Pearson %+.4f "
        "(%+.3f); squared correlation original-masked %.4f (%.3f)\n",
        100 * windows[w], spearman_change, published_spearman[w], pearson_change, published_pearson[w], squared,
        published_squared[w]);
    EXPECT_NEAR(spearman_change, published_spearman[w], 0.01) << windows[w];
    EXPECT_NEAR(pearson_change, published_pearson[w], 0.01) << windows[w];
    EXPECT_NEAR(squared, published_squared[w], 0.01) << windows[w];
  }
}

}  // namespace
}  // namespace sdc::swapping
