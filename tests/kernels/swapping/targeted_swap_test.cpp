#include "kernels/swapping/targeted_swap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/core/key_grouping.h"
#include "kernels/core/record_rng.h"

namespace sdc::swapping {
namespace {

using Codes = std::vector<std::int32_t>;
using Levels = std::vector<std::uint8_t>;

// ---- the E oracle "TRS risk and levels" of docs/methods swapping.md §5 ----

/// The method file's six households, one record per person: regions A = 0, B = 1 (level 0); districts
/// A1 = 0, A2 = 1, B1 = 2, B2 = 3 (level 1); one risk variable g.
struct SixHouseholds {
  std::vector<std::int64_t> household{1, 1, 2, 3, 3, 4, 5, 6, 6};
  Codes region{0, 0, 0, 0, 0, 1, 1, 1, 1};
  Codes district{0, 0, 0, 1, 1, 2, 2, 3, 3};
  Codes g{1, 2, 1, 2, 2, 1, 3, 1, 2};

  KeyColumns risk_variables() const {
    KeyColumns keys;
    keys.codes = {std::span<const std::int32_t>(g)};
    keys.level_counts = {4};
    return keys;
  }
  KeyColumns geography() const {
    KeyColumns keys;
    keys.codes = {std::span<const std::int32_t>(region), std::span<const std::int32_t>(district)};
    keys.level_counts = {2, 4};
    return keys;
  }
  /// The household summaries from the person risks that the counts of the file give.
  HouseholdSummaries summaries(const std::vector<std::vector<double>>& person_risk) const {
    HouseholdRecords records;
    records.household_ids = household;
    records.geography = geography();
    for (const auto& level : person_risk) records.person_risk.emplace_back(level);
    return summarise_households(records);
  }
};

TEST(ATargetedSwap, GivesTheRisksAndLevelsOfTheMethodFilesSixHouseholds) {
  const SixHouseholds six;
  const std::vector<std::vector<double>> person_risk = person_risk_per_level(six.risk_variables(), six.geography());
  ASSERT_EQ(person_risk.size(), 2U);
  // Person risks 1/count: (g = 2, region A) holds three persons (H1's second, both of H3).
  EXPECT_EQ(person_risk[0], (std::vector<double>{1. / 2, 1. / 3, 1. / 2, 1. / 3, 1. / 3, 1. / 2, 1, 1. / 2, 1}));
  EXPECT_EQ(person_risk[1], (std::vector<double>{1. / 2, 1, 1. / 2, 1. / 2, 1. / 2, 1, 1, 1, 1}));

  const HouseholdSummaries households = six.summaries(person_risk);
  ASSERT_EQ(households.size(), 6U);
  // [level 0, level 1] per household, the maximum over its members: H1 [1/2, 1], H2 [1/2, 1/2],
  // H3 [1/3, 1/2], H4 [1/2, 1], H5 [1, 1], H6 [1, 1].
  EXPECT_EQ(households.risk, (std::vector<double>{1. / 2, 1, 1. / 2, 1. / 2, 1. / 3, 1. / 2, 1. / 2, 1, 1, 1, 1, 1}));

  // k = 3: H3's level-0 risk equals the threshold 1/3, which is not above it, so H3 is at risk only at level 1.
  EXPECT_EQ(targeted_swap_threshold(0.0, 3), 1.0 / 3.0);
  EXPECT_EQ(household_levels(households, targeted_swap_threshold(0.0, 3)), (Levels{0, 0, 1, 0, 0, 0}));
  // k = 2: risks of exactly 1/2 are not above it; 2 = H means "no forced swap".
  EXPECT_EQ(household_levels(households, targeted_swap_threshold(0.0, 2)), (Levels{1, 2, 2, 1, 0, 0}));
}

TEST(ATargetedSwap, TakesAnExplicitThresholdOverKAnonymityAndDisablesForcedSwapsWhenKIsZero) {
  EXPECT_EQ(targeted_swap_threshold(0.25, 3), 0.25);
  EXPECT_EQ(targeted_swap_threshold(0.25, 0), 0.25);
  EXPECT_EQ(targeted_swap_threshold(0.0, 4), 0.25);
  EXPECT_EQ(targeted_swap_threshold(0.0, 0), 2.0);
  // Threshold 2 lies above every risk 1/count: no household of the oracle is at risk.
  const SixHouseholds six;
  const HouseholdSummaries households = six.summaries(person_risk_per_level(six.risk_variables(), six.geography()));
  EXPECT_EQ(household_levels(households, targeted_swap_threshold(0.0, 0)), (Levels{2, 2, 2, 2, 2, 2}));
}

TEST(ATargetedSwap, SwapsAllSixHouseholdsOfTheOracleAcrossTheTwoRegionsForAnySeed) {
  // k = 3: H1, H2, H4, H5, H6 must leave their region. Region A (H1, H2) takes two of B's three households,
  // the third of B must then take H3, the only household left in A: three pairs at level 0, whatever the keys.
  const SixHouseholds six;
  const HouseholdSummaries households = six.summaries(person_risk_per_level(six.risk_variables(), six.geography()));
  TargetedSwapOptions options;
  options.threshold = targeted_swap_threshold(0.0, 3);
  options.swap_fraction = 0.5;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    ASSERT_EQ(plan.pairs.size(), 3U) << "seed " << seed;
    EXPECT_EQ(plan.pairs[0].initiator, 0U);
    EXPECT_GE(plan.pairs[0].donor, 3U);
    EXPECT_EQ(plan.pairs[1].initiator, 1U);
    EXPECT_GE(plan.pairs[1].donor, 3U);
    EXPECT_GE(plan.pairs[2].initiator, 3U);
    EXPECT_EQ(plan.pairs[2].donor, 2U) << "H3 is the only household of region A left";
    for (const SwapPair& pair : plan.pairs) EXPECT_EQ(pair.level, 0);
    EXPECT_EQ(plan.swapped_households, 6);
    EXPECT_EQ(plan.swapped_records, 9);
    EXPECT_EQ(plan.households_without_donor, 0);
    EXPECT_EQ(plan.levels[0].risky_households, 5);
    EXPECT_EQ(plan.levels[1].risky_households, 6);
    EXPECT_EQ(plan.levels[0].must_swap, 5);
    EXPECT_EQ(plan.levels[1].must_swap, 1);
    EXPECT_EQ(plan.levels[0].swapped_pairs, 3);
    EXPECT_EQ(plan.levels[1].swapped_pairs, 0) << "H3 was taken as a donor before its level";
    EXPECT_EQ(plan.levels[1].quota_added, 0) << "nobody is left to fill the quotas";
  }
}

// ---- quotas ----

TEST(ATargetedSwap, RoundsTheOracleQuotaOfOneAndAHalfUpOrDownByAFairCoin) {
  // 6 households · 0.5 / 2 = 1.5.
  int ones = 0;
  int twos = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const std::int64_t total = quota_total(6, 0.5, seed);
    ASSERT_TRUE(total == 1 || total == 2) << "seed " << seed << ": " << total;
    (total == 1 ? ones : twos) += 1;
  }
  // Both occur; a fair coin gives 100 ± 7 of each (the bounds are 4 standard deviations wide).
  EXPECT_GT(ones, 70);
  EXPECT_GT(twos, 70);
}

TEST(ATargetedSwap, GivesExactlyTotalDistinctDistrictsOfTheOracleOneSwapEach) {
  // Districts hold 2, 1, 2, 1 households: every floor share of a total of 1 or 2 is 0.
  const std::vector<std::int64_t> districts{2, 1, 2, 1};
  std::vector<int> chosen(districts.size(), 0);
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    for (const std::int64_t total : {std::int64_t{1}, std::int64_t{2}, quota_total(6, 0.5, seed)}) {
      const std::vector<std::int64_t> quotas = area_quotas(districts, total, seed);
      ASSERT_EQ(quotas.size(), districts.size());
      for (const std::int64_t q : quotas) EXPECT_TRUE(q == 0 || q == 1) << "seed " << seed << " total " << total;
      EXPECT_EQ(std::accumulate(quotas.begin(), quotas.end(), std::int64_t{0}), total) << "seed " << seed;
      if (total == 1)
        for (std::size_t a = 0; a < quotas.size(); ++a) chosen[a] += static_cast<int>(quotas[a]);
    }
  }
  // The extra swaps go to areas chosen at random, not always to the same one.
  for (std::size_t a = 0; a < chosen.size(); ++a) EXPECT_GT(chosen[a], 0) << "district " << a;
}

TEST(ATargetedSwap, SharesTheQuotaTotalInProportionToTheAreasHouseholds) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 random(seed);
    std::vector<std::int64_t> sizes(1 + random() % 60);
    for (auto& size : sizes) size = 1 + static_cast<std::int64_t>(random() % 100);
    const std::int64_t households = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
    const std::int64_t total = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(households / 2 + 1));
    const std::vector<std::int64_t> quotas = area_quotas(sizes, total, seed);
    ASSERT_EQ(quotas.size(), sizes.size());
    EXPECT_EQ(std::accumulate(quotas.begin(), quotas.end(), std::int64_t{0}), total) << "seed " << seed;
    for (std::size_t a = 0; a < sizes.size(); ++a) {
      const std::int64_t floor_share = total * sizes[a] / households;
      EXPECT_TRUE(quotas[a] == floor_share || quotas[a] == floor_share + 1)
          << "seed " << seed << " area " << a << ": " << quotas[a] << " for a floor share of " << floor_share;
    }
  }
}

TEST(ATargetedSwap, DrawsNoCoinWhenTheQuotaTargetIsAnInteger) {
  struct Case {
    std::int64_t households;
    double swap_fraction;
    std::int64_t total;
  };
  for (const Case& c : {Case{100, 0.1, 5}, Case{200, 0.05, 5}, Case{1000, 0.02, 10}, Case{10, 0.2, 1},
                        Case{40, 0.5, 10}, Case{6, 0.0, 0}, Case{0, 0.05, 0}}) {
    for (std::uint64_t seed = 1; seed <= 50; ++seed)
      EXPECT_EQ(quota_total(c.households, c.swap_fraction, seed), c.total)
          << c.households << " households at " << c.swap_fraction << ", seed " << seed;
  }
}

// Products that are whole in decimals are not always whole in binary: 200 · 0.07 / 2 = 7.000000000000001
// and 100 · 0.58 / 2 = 28.999999999999996 in doubles; a coin there would give 8 or 28 for half the seeds.
TEST(ATargetedSwap, DrawsNoCoinWhenTheQuotaTargetIsAnIntegerInDecimals) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    EXPECT_EQ(quota_total(200, 0.07, seed), 7) << "seed " << seed;
    EXPECT_EQ(quota_total(100, 0.14, seed), 7) << "seed " << seed;
    EXPECT_EQ(quota_total(100, 0.58, seed), 29) << "seed " << seed;
  }
}

TEST(ATargetedSwap, RoundsTheQuotaTotalUpWhenTheTopBitOfItsCoinIsSet) {
  // The coin: the top bit of Philox (seed, kTargetedSwapQuota) at unit 0, draw 2.
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    const bool up = (RecordRng(seed, StepId::kTargetedSwapQuota).bits({0, 2, 0, 0})[0] >> 63) != 0;
    EXPECT_EQ(quota_total(6, 0.5, seed), up ? 2 : 1) << "seed " << seed;
    EXPECT_EQ(quota_total(1001, 0.1, seed), up ? 51 : 50) << "seed " << seed;
  }
}

TEST(ATargetedSwap, GivesTheRemainingQuotaToTheAreasOfSmallestKeys) {
  // Ten areas of one household and a total of 3: every floor share is 0, and the three areas of the
  // smallest keys (Philox (seed, kTargetedSwapQuota) at unit = the area's position, draw 1) get one each.
  const std::vector<std::int64_t> areas(10, 1);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const RecordRng rng(seed, StepId::kTargetedSwapQuota);
    std::vector<std::uint64_t> keys;
    for (std::uint64_t a = 0; a < areas.size(); ++a) keys.push_back(rng.bits({a, 1, 0, 0})[0]);
    std::vector<std::uint64_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> expected(areas.size(), 0);
    for (std::size_t a = 0; a < areas.size(); ++a) expected[a] = keys[a] <= sorted[2] ? 1 : 0;
    EXPECT_EQ(area_quotas(areas, 3, seed), expected) << "seed " << seed;
  }
}

TEST(ATargetedSwap, GivesNoQuotasWithoutAreasAndTheWholeTotalToASingleArea) {
  EXPECT_EQ(area_quotas(std::vector<std::int64_t>{}, 0, 1), std::vector<std::int64_t>{});
  EXPECT_EQ(area_quotas(std::vector<std::int64_t>{5}, 3, 1), std::vector<std::int64_t>{3});
}

// ---- an independent brute-force planner: the conventions of targeted_swap.h by linear scans ----

/// E ~ Exp(1) from one Philox word as the header documents: −ln((k + 1/2)·2^-53), k its top 53 bits.
double exponential_of(std::uint64_t bits) { return -std::log((static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53); }

/// The codes of levels 0..level of household i.
std::vector<std::int32_t> prefix_of(const HouseholdSummaries& households, std::size_t i, std::size_t level) {
  const auto codes = households.geography_of(i).first(level + 1);
  return {codes.begin(), codes.end()};
}

bool in_area(const HouseholdSummaries& households, std::size_t i, const std::vector<std::int32_t>& area) {
  const auto codes = households.geography_of(i).first(area.size());
  return std::equal(codes.begin(), codes.end(), area.begin());
}

/// The distinct level-`level` areas (geography prefixes) in lexicographic order.
std::vector<std::vector<std::int32_t>> areas_of_level(const HouseholdSummaries& households, std::size_t level) {
  std::vector<std::vector<std::int32_t>> areas;
  for (std::size_t i = 0; i < households.size(); ++i) areas.push_back(prefix_of(households, i, level));
  std::sort(areas.begin(), areas.end());
  areas.erase(std::unique(areas.begin(), areas.end()), areas.end());
  return areas;
}

std::vector<std::uint8_t> levels_by_scan(const HouseholdSummaries& households, double threshold) {
  std::vector<std::uint8_t> levels(households.size(), static_cast<std::uint8_t>(households.levels));
  for (std::size_t i = 0; i < households.size(); ++i)
    for (std::size_t h = households.levels; h-- > 0;)
      if (households.risk[i * households.levels + h] > threshold) levels[i] = static_cast<std::uint8_t>(h);
  return levels;
}

/// The finest area's quotas, the areas in lexicographic order.
std::vector<std::int64_t> quotas_for(const HouseholdSummaries& households, double swap_fraction, std::uint64_t seed) {
  const auto finest = areas_of_level(households, households.levels - 1);
  std::vector<std::int64_t> sizes(finest.size(), 0);
  for (std::size_t a = 0; a < finest.size(); ++a)
    for (std::size_t i = 0; i < households.size(); ++i) sizes[a] += in_area(households, i, finest[a]) ? 1 : 0;
  return area_quotas(sizes, quota_total(static_cast<std::int64_t>(households.size()), swap_fraction, seed), seed);
}

struct BruteForcePlan {
  std::vector<SwapPair> pairs;
  std::vector<std::int64_t> without_donor;
  std::vector<std::int64_t> quota_added;
};

BruteForcePlan brute_force_plan(const HouseholdSummaries& households, const TargetedSwapOptions& options,
                                std::uint64_t seed) {
  const std::size_t n = households.size();
  const std::size_t levels = households.levels;
  const std::vector<std::uint8_t> level_of = levels_by_scan(households, options.threshold);
  const auto finest = areas_of_level(households, levels - 1);
  const std::vector<std::int64_t> quotas = quotas_for(households, options.swap_fraction, seed);
  const RecordRng donor_rng(seed, StepId::kTargetedSwapDonor);
  const RecordRng quota_rng(seed, StepId::kTargetedSwapQuota);
  auto id_of = [&](std::size_t i) { return static_cast<std::uint64_t>(households.ids[i]); };
  auto risk = [&](std::size_t i, std::size_t h) { return households.risk[i * levels + h]; };
  // Larger key first, equal keys: the smaller household id first.
  auto before = [&](double key_a, std::size_t a, double key_b, std::size_t b) {
    return key_a != key_b ? key_a > key_b : households.ids[a] < households.ids[b];
  };

  BruteForcePlan plan;
  plan.without_donor.assign(levels, 0);
  plan.quota_added.assign(levels, 0);
  std::vector<bool> used(n, false);
  std::vector<bool> failed(n, false);
  std::vector<std::int64_t> initiated(finest.size(), 0);
  for (std::size_t h = 0; h < levels; ++h) {
    std::vector<double> kappa(n);
    for (std::size_t i = 0; i < n; ++i) kappa[i] = risk(i, h) / exponential_of(donor_rng.bits({id_of(i), h, 0, 0})[0]);
    for (const auto& area : areas_of_level(households, h)) {
      std::vector<std::size_t> swap_set;
      for (std::size_t i = 0; i < n; ++i)
        if (in_area(households, i, area) && !used[i] && !failed[i] && level_of[i] == h) swap_set.push_back(i);
      std::sort(swap_set.begin(), swap_set.end(),
                [&](std::size_t a, std::size_t b) { return households.ids[a] < households.ids[b]; });
      if (h + 1 == levels) {
        const auto a = static_cast<std::size_t>(std::find(finest.begin(), finest.end(), area) - finest.begin());
        std::int64_t wanted = quotas[a] - initiated[a] - static_cast<std::int64_t>(swap_set.size());
        std::vector<double> key(n, 0.0);
        std::vector<bool> candidate(n, false);
        for (std::size_t i = 0; i < n; ++i) {
          candidate[i] = in_area(households, i, area) && !used[i] && !failed[i] && level_of[i] != h;
          if (candidate[i]) key[i] = risk(i, h) / exponential_of(quota_rng.bits({id_of(i), 0, 0, 0})[0]);
        }
        for (; wanted > 0; --wanted) {
          std::optional<std::size_t> best;
          for (std::size_t i = 0; i < n; ++i)
            if (candidate[i] && (!best || before(key[i], i, key[*best], *best))) best = i;
          if (!best) break;
          candidate[*best] = false;
          swap_set.push_back(*best);
          ++plan.quota_added[h];
        }
      }
      for (const std::size_t i : swap_set) {
        std::optional<std::size_t> donor;
        std::size_t profile = 0;
        for (; profile < options.profiles.size() && !donor; ++profile) {
          for (std::size_t j = 0; j < n; ++j) {
            if (used[j] || in_area(households, j, area)) continue;
            bool alike = true;
            for (const std::size_t v : options.profiles[profile])
              alike = alike && households.similar[i * households.similar_count + v] ==
                                   households.similar[j * households.similar_count + v];
            if (alike && (!donor || before(kappa[j], j, kappa[*donor], *donor))) donor = j;
          }
        }
        if (!donor) {
          failed[i] = true;
          ++plan.without_donor[h];
          continue;
        }
        used[i] = true;
        used[*donor] = true;
        plan.pairs.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(*donor),
                              static_cast<std::uint8_t>(h), static_cast<std::uint8_t>(profile - 1)});
        const auto a = static_cast<std::size_t>(
            std::find(finest.begin(), finest.end(), prefix_of(households, i, levels - 1)) - finest.begin());
        ++initiated[a];
      }
    }
  }
  return plan;
}

std::string describe(const SwapPair& pair) {
  std::ostringstream out;
  out << "(initiator " << pair.initiator << ", donor " << pair.donor << ", level " << int{pair.level} << ", profile "
      << int{pair.profile} << ")";
  return out.str();
}

/// Equal pair lists, or the first place where they part.
::testing::AssertionResult same_pairs(const std::vector<SwapPair>& got, const std::vector<SwapPair>& expected) {
  for (std::size_t p = 0; p < std::min(got.size(), expected.size()); ++p) {
    const SwapPair& g = got[p];
    const SwapPair& e = expected[p];
    if (g.initiator != e.initiator || g.donor != e.donor || g.level != e.level || g.profile != e.profile)
      return ::testing::AssertionFailure() << "pair " << p << ": " << describe(g) << ", brute force " << describe(e);
  }
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << got.size() << " pairs, brute force " << expected.size();
  return ::testing::AssertionSuccess();
}

/// A random file of households: three nested levels (region, district within it, cell within that),
/// two similarity variables of 3 and 2 values, 1–5 members, spaced household ids that are not in storage
/// order.
struct RandomTable {
  std::size_t households = 500;
  std::int32_t regions = 3;
  std::int32_t districts = 3;         ///< per region
  std::int32_t cells = 4;             ///< per district
  double zero_risk = 0.0;             ///< share of households of risk 0 at every level (κ = 0: ties)
  bool ids_follow_geography = false;  ///< ids ascend with the geography (else shuffled); storage stays random
};

HouseholdSummaries random_households(const RandomTable& table, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  auto below = [&](std::uint64_t k) { return static_cast<std::int32_t>(random() % k); };
  auto chance = [&](double p) { return static_cast<double>(random() >> 11) * 0x1.0p-53 < p; };
  struct Household {
    std::int32_t geography[3];
    std::int32_t similar[2];
    std::int32_t members;
    double risk[3];
  };
  // At or below the threshold 1/3 (1/3 itself included: not at risk), and above it.
  const double safe[] = {0.05, 0.2, 1.0 / 3.0};
  const double risky[] = {0.5, 1.0};
  std::vector<Household> rows(table.households);
  for (Household& row : rows) {
    row.geography[0] = below(static_cast<std::uint64_t>(table.regions));
    row.geography[1] = row.geography[0] * table.districts + below(static_cast<std::uint64_t>(table.districts));
    row.geography[2] = row.geography[1] * table.cells + below(static_cast<std::uint64_t>(table.cells));
    row.similar[0] = below(3);
    row.similar[1] = below(2);
    row.members = 1 + below(5);
    // The level at risk: 0 (10 %), 1 (10 %), 2 (15 %) or none (65 %); risk above 1/3 from there on.
    const std::int32_t draw = below(20);
    const std::int32_t at_risk = draw < 2 ? 0 : draw < 4 ? 1 : draw < 7 ? 2 : 3;
    const bool zero = chance(table.zero_risk);
    for (std::int32_t h = 0; h < 3; ++h) row.risk[h] = zero ? 0.0 : h < at_risk ? safe[below(3)] : risky[below(2)];
  }
  // The households in the order of their ids: shuffled, then (ids_follow_geography) stably sorted by
  // geography, so that within a cell the ids are still not in storage order.
  std::vector<std::size_t> rank(rows.size());
  std::iota(rank.begin(), rank.end(), std::size_t{0});
  for (std::size_t i = rank.size(); i > 1; --i) std::swap(rank[i - 1], rank[random() % i]);  // Fisher–Yates
  if (table.ids_follow_geography)
    std::stable_sort(rank.begin(), rank.end(), [&](std::size_t a, std::size_t b) {
      return std::lexicographical_compare(rows[a].geography, rows[a].geography + 3, rows[b].geography,
                                          rows[b].geography + 3);
    });
  std::vector<std::int64_t> ids(table.households);
  for (std::size_t k = 0; k < rank.size(); ++k) ids[rank[k]] = 1000 + 7 * static_cast<std::int64_t>(k);

  HouseholdSummaries households;
  households.levels = 3;
  households.similar_count = 2;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    households.ids.push_back(ids[i]);
    households.first_rows.push_back(static_cast<std::int64_t>(i));
    households.members.push_back(rows[i].members);
    households.geography.insert(households.geography.end(), rows[i].geography, rows[i].geography + 3);
    households.similar.insert(households.similar.end(), rows[i].similar, rows[i].similar + 2);
    households.risk.insert(households.risk.end(), rows[i].risk, rows[i].risk + 3);
  }
  return households;
}

TargetedSwapOptions two_profiles(double swap_fraction) {
  TargetedSwapOptions options;
  options.threshold = 1.0 / 3.0;
  options.swap_fraction = swap_fraction;
  options.profiles = {{0, 1}, {0}};
  return options;
}

/// Plans `table` for seeds 1..50 (300–2000 households, swap fractions 0.05–0.3) and compares every pair
/// and count with the brute force.
void expect_brute_force_pairs(RandomTable table) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    table.households = 300 + (seed * 337) % 1701;
    const TargetedSwapOptions options = two_profiles(0.05 + 0.05 * static_cast<double>(seed % 6));
    const HouseholdSummaries households = random_households(table, seed);
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    const BruteForcePlan expected = brute_force_plan(households, options, seed);
    ASSERT_TRUE(same_pairs(plan.pairs, expected.pairs)) << "seed " << seed;
    for (std::size_t h = 0; h < households.levels; ++h) {
      EXPECT_EQ(plan.levels[h].without_donor, expected.without_donor[h]) << "seed " << seed << " level " << h;
      EXPECT_EQ(plan.levels[h].quota_added, expected.quota_added[h]) << "seed " << seed << " level " << h;
    }
  }
}

TEST(ATargetedSwap, MatchesTheBruteForcePlannerWhenHouseholdIdsFollowTheGeography) {
  // Ids ascending with the geography, as in a census sorted by area and household.
  RandomTable table;
  table.ids_follow_geography = true;
  expect_brute_force_pairs(table);
}

// A coarse area's swap set is read in household id order, not in the order of the finer codes.
TEST(ATargetedSwap, MatchesTheBruteForcePlannerOnHouseholdIdsInAnyOrder) { expect_brute_force_pairs(RandomTable{}); }

TEST(ATargetedSwap, MatchesTheBruteForcePlannerWhenTheFinestLevelDecidesAlone) {
  // Households at risk only at the finest level (and quota fills) are read within one finest area,
  // where geography order and household id order agree: this part holds for ids in any order.
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    RandomTable table;
    table.households = 300 + (seed * 211) % 900;
    HouseholdSummaries households = random_households(table, seed);
    for (std::size_t i = 0; i < households.size(); ++i)
      for (std::size_t h = 0; h + 1 < households.levels; ++h)
        households.risk[i * households.levels + h] = std::min(households.risk[i * households.levels + h], 0.2);
    const TargetedSwapOptions options = two_profiles(0.05 + 0.05 * static_cast<double>(seed % 6));
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    const BruteForcePlan expected = brute_force_plan(households, options, seed);
    ASSERT_TRUE(same_pairs(plan.pairs, expected.pairs)) << "seed " << seed;
    EXPECT_EQ(plan.levels[2].without_donor, expected.without_donor[2]) << "seed " << seed;
    EXPECT_EQ(plan.levels[2].quota_added, expected.quota_added[2]) << "seed " << seed;
  }
}

TEST(ATargetedSwap, MatchesTheBruteForcePlannerWithASingleRegionWhoseLevelZeroHouseholdsAllFail) {
  // One region: no donor lies outside it, so every level-0 household fails; failed households stay
  // donors for the later levels, which the brute force checks.
  RandomTable table;
  table.regions = 1;
  table.districts = 6;
  table.ids_follow_geography = true;
  expect_brute_force_pairs(table);
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    table.households = 800;
    const HouseholdSummaries households = random_households(table, seed);
    const TargetedSwapPlan plan = plan_targeted_swap(households, two_profiles(0.1), seed);
    EXPECT_GT(plan.levels[0].must_swap, 0);
    EXPECT_EQ(plan.levels[0].without_donor, plan.levels[0].must_swap) << "seed " << seed;
    EXPECT_EQ(plan.levels[0].swapped_pairs, 0);
    for (const SwapPair& pair : plan.pairs) EXPECT_NE(pair.level, 0);
  }
}

TEST(ATargetedSwap, MatchesTheBruteForcePlannerWhenEqualKeysAreBrokenByTheSmallerHouseholdId) {
  // Households of risk 0 have κ = 0 at every level and a fill key of 0: many equal keys, which must go
  // by the smaller household id (the ids are not in storage order). With 85 % of them the households of
  // positive κ run out, so donors of equal keys compete across areas too.
  for (const double zero_risk : {0.4, 0.85}) {
    RandomTable table;
    table.zero_risk = zero_risk;
    table.ids_follow_geography = true;
    expect_brute_force_pairs(table);
    table.ids_follow_geography = false;
    expect_brute_force_pairs(table);
  }
}

/// H0 of region 0 at risk, and donors of risk 0 (κ = 0 for each) of the given ids and regions.
HouseholdSummaries one_initiator_and_equal_donors(const std::vector<std::int64_t>& ids, const Codes& regions) {
  HouseholdSummaries households;
  households.levels = 1;
  households.ids = {10};
  households.geography = {0};
  households.risk = {1.0};
  households.ids.insert(households.ids.end(), ids.begin(), ids.end());
  households.geography.insert(households.geography.end(), regions.begin(), regions.end());
  households.risk.resize(households.ids.size(), 0.0);
  households.members.assign(households.ids.size(), 1);
  households.first_rows.assign(households.ids.size(), 0);
  return households;
}

TEST(ATargetedSwap, TakesTheDonorOfSmallerIdAmongEqualKeysInOneArea) {
  // The donors of region 1 all have κ = 0: the donor is the one of smallest id (20), not the first stored
  // (30) nor the largest id.
  const HouseholdSummaries households = one_initiator_and_equal_donors({30, 20, 40}, {1, 1, 1});
  TargetedSwapOptions options;
  options.swap_fraction = 0.0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    ASSERT_EQ(plan.pairs.size(), 1U);
    EXPECT_EQ(plan.pairs[0].initiator, 0U);
    EXPECT_EQ(plan.pairs[0].donor, 2U) << "seed " << seed;
  }
}

TEST(ATargetedSwap, TakesTheDonorOfSmallerIdAmongEqualKeysInDifferentAreas) {
  // One donor of κ = 0 in each of regions 1, 2 and 3: the smallest id (20, region 3) wins across areas.
  const HouseholdSummaries households = one_initiator_and_equal_donors({30, 40, 20}, {1, 2, 3});
  TargetedSwapOptions options;
  options.swap_fraction = 0.0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    ASSERT_EQ(plan.pairs.size(), 1U);
    EXPECT_EQ(plan.pairs[0].donor, 3U) << "seed " << seed;
  }
}

// Region 0 holds districts 0 and 1; H0 (id 1, district 1) and H1 (id 2, district 0) are at risk at level 0;
// H2 (id 3) in region 1 is the only donor. In household id order H0 takes H2 and H1 fails; in the order of
// the districts it would be the other way round.
TEST(ATargetedSwap, ReadsACoarseAreasSwapSetInHouseholdIdOrder) {
  HouseholdSummaries households;
  households.levels = 2;
  households.ids = {1, 2, 3};
  households.first_rows = {0, 1, 2};
  households.members = {1, 1, 1};
  households.geography = {0, 1, 0, 0, 1, 2};
  households.risk = {1.0, 1.0, 1.0, 1.0, 0.0, 0.0};
  TargetedSwapOptions options;
  options.swap_fraction = 0.0;
  const TargetedSwapPlan plan = plan_targeted_swap(households, options, 1);
  ASSERT_EQ(plan.pairs.size(), 1U);
  EXPECT_EQ(plan.pairs[0].initiator, 0U);
  EXPECT_EQ(plan.pairs[0].donor, 2U);
  EXPECT_EQ(plan.levels[0].without_donor, 1);
}

TEST(ATargetedSwap, TriesTheSecondProfileOnlyWhenTheFirstHasNoDonor) {
  // H0 (region 0, similar (1, 0)) must swap. Region 1 holds H1 (1, 1) of large risk and H2 (1, 0) of risk
  // 0: the full profile {0, 1} matches only H2, the key notwithstanding; H3 (2, 1) must swap too and has
  // no match on either profile, H4 (0, 0) matches H5 on the second profile only.
  HouseholdSummaries households;
  households.levels = 1;
  households.similar_count = 2;
  households.ids = {1, 2, 3, 4, 5, 6};
  households.first_rows = {0, 1, 2, 3, 4, 5};
  households.members = {1, 2, 3, 1, 1, 1};
  households.geography = {0, 1, 1, 0, 0, 1};
  households.similar = {1, 0, 1, 1, 1, 0, 2, 1, 0, 0, 0, 1};
  households.risk = {1.0, 0.9, 0.0, 1.0, 1.0, 0.0};
  TargetedSwapOptions options = two_profiles(0.0);
  const TargetedSwapPlan plan = plan_targeted_swap(households, options, 7);
  ASSERT_EQ(plan.pairs.size(), 2U);
  EXPECT_TRUE(same_pairs(plan.pairs, {{0, 2, 0, 0}, {4, 5, 0, 1}}));
  EXPECT_EQ(plan.levels[0].without_donor, 2) << "H3, and H1: region 0's only unused household, H3, is unlike it";
  EXPECT_EQ(plan.households_without_donor, 2);
  EXPECT_EQ(plan.swapped_records, 1 + 3 + 1 + 1);
}

// ---- invariants ----

/// The households of `households` in the order `order` (entry k is household order[k]).
HouseholdSummaries permuted(const HouseholdSummaries& households, const std::vector<std::size_t>& order) {
  HouseholdSummaries out;
  out.levels = households.levels;
  out.similar_count = households.similar_count;
  for (const std::size_t i : order) {
    out.ids.push_back(households.ids[i]);
    out.first_rows.push_back(households.first_rows[i]);
    out.members.push_back(households.members[i]);
    const auto geography = households.geography_of(i);
    out.geography.insert(out.geography.end(), geography.begin(), geography.end());
    for (std::size_t v = 0; v < households.similar_count; ++v)
      out.similar.push_back(households.similar[i * households.similar_count + v]);
    for (std::size_t h = 0; h < households.levels; ++h) out.risk.push_back(households.risk[i * households.levels + h]);
  }
  return out;
}

TEST(ATargetedSwap, PairsTheSameHouseholdIdsWhateverTheOrderTheHouseholdsAreStoredIn) {
  // Keys, area order, swap sets and ties all go by codes and household ids, never by the position of a
  // household among the summaries (which depends on how the records were split into blocks).
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    RandomTable table;
    table.households = 600;
    table.zero_risk = 0.3;
    const HouseholdSummaries households = random_households(table, seed);
    std::vector<std::size_t> order(households.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 random(seed + 1000);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[random() % i]);
    const HouseholdSummaries shuffled = permuted(households, order);
    const TargetedSwapOptions options = two_profiles(0.2);
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    const TargetedSwapPlan again = plan_targeted_swap(shuffled, options, seed);
    ASSERT_EQ(plan.pairs.size(), again.pairs.size()) << "seed " << seed;
    for (std::size_t p = 0; p < plan.pairs.size(); ++p) {
      const SwapPair& a = plan.pairs[p];
      const SwapPair& b = again.pairs[p];
      EXPECT_EQ(households.ids[a.initiator], shuffled.ids[b.initiator]) << "seed " << seed << " pair " << p;
      EXPECT_EQ(households.ids[a.donor], shuffled.ids[b.donor]) << "seed " << seed << " pair " << p;
      EXPECT_EQ(a.level, b.level);
      EXPECT_EQ(a.profile, b.profile);
    }
    EXPECT_EQ(plan.households_without_donor, again.households_without_donor);
    EXPECT_EQ(plan.swapped_records, again.swapped_records);
  }
}

/// Whether household a's level-`level` area comes before b's in lexicographic order.
bool area_before(const HouseholdSummaries& households, std::size_t a, std::size_t b, std::size_t level) {
  return prefix_of(households, a, level) < prefix_of(households, b, level);
}

TEST(ATargetedSwap, KeepsTheInvariantsOfAPlanForSeedsOneToTwenty) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    RandomTable table;
    table.households = 400 + 50 * seed;
    HouseholdSummaries households = random_households(table, seed);
    // Every 25th household has a value of its own on similarity variable 0: at risk, it finds no donor.
    for (std::size_t i = 0; i < households.size(); i += 25)
      households.similar[i * 2] = 100 + static_cast<std::int32_t>(i);
    const std::size_t n = households.size();
    const std::size_t levels = households.levels;
    const TargetedSwapOptions options = two_profiles(0.04 + 0.01 * static_cast<double>(seed));
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    const std::vector<std::uint8_t> level_of = levels_by_scan(households, options.threshold);
    SCOPED_TRACE("seed " + std::to_string(seed));

    // Each household in at most one pair; the report's totals.
    std::vector<int> appearances(n, 0);
    std::vector<std::optional<std::size_t>> donor_pair(n);
    std::vector<bool> initiator(n, false);
    std::int64_t records = 0;
    std::vector<std::int64_t> pairs_per_level(levels, 0);
    std::int64_t fill_pairs = 0;
    for (std::size_t p = 0; p < plan.pairs.size(); ++p) {
      const SwapPair& pair = plan.pairs[p];
      ++appearances[pair.initiator];
      ++appearances[pair.donor];
      initiator[pair.initiator] = true;
      donor_pair[pair.donor] = p;
      records += households.members[pair.initiator] + households.members[pair.donor];
      ++pairs_per_level[pair.level];
      // The donor lies in another area of the pair's level and equals the initiator on the profile used.
      EXPECT_NE(prefix_of(households, pair.initiator, pair.level), prefix_of(households, pair.donor, pair.level))
          << describe(pair);
      for (const std::size_t v : options.profiles[pair.profile])
        EXPECT_EQ(households.similar[pair.initiator * 2 + v], households.similar[pair.donor * 2 + v]) << describe(pair);
      // Initiators are must-swap households of the pair's level, or quota fills (not at risk) at the finest.
      if (level_of[pair.initiator] != pair.level) {
        EXPECT_EQ(pair.level + 1U, levels) << describe(pair);
        EXPECT_EQ(level_of[pair.initiator], levels) << describe(pair);
        ++fill_pairs;
      }
    }
    for (std::size_t i = 0; i < n; ++i) EXPECT_LE(appearances[i], 1) << "household " << i;
    EXPECT_EQ(plan.swapped_households, 2 * static_cast<std::int64_t>(plan.pairs.size()));
    EXPECT_EQ(plan.swapped_records, records);

    // Per level: risky and must-swap households counted independently, pairs, and the failures. A
    // must-swap household of level h that initiated nothing failed unless it was taken as a donor before
    // its turn: at a coarser level, or at level h by an area that comes first.
    std::int64_t without_donor = 0;
    for (std::size_t h = 0; h < levels; ++h) {
      std::int64_t risky = 0;
      std::int64_t must_swap = 0;
      std::int64_t failed = 0;
      for (std::size_t i = 0; i < n; ++i) {
        risky += households.risk[i * levels + h] > options.threshold ? 1 : 0;
        if (level_of[i] != h) continue;
        ++must_swap;
        if (initiator[i]) continue;
        const bool taken_before =
            donor_pair[i] && (plan.pairs[*donor_pair[i]].level < h ||
                              (plan.pairs[*donor_pair[i]].level == h &&
                               area_before(households, plan.pairs[*donor_pair[i]].initiator, i, h)));
        failed += taken_before ? 0 : 1;
      }
      EXPECT_EQ(plan.levels[h].risky_households, risky) << "level " << h;
      EXPECT_EQ(plan.levels[h].must_swap, must_swap) << "level " << h;
      EXPECT_EQ(plan.levels[h].swapped_pairs, pairs_per_level[h]) << "level " << h;
      // At the finest level the quota fills that found no donor fail too.
      const std::int64_t fill_failures = h + 1 == levels ? plan.levels[h].quota_added - fill_pairs : 0;
      EXPECT_GE(fill_failures, 0);
      EXPECT_EQ(plan.levels[h].without_donor, failed + fill_failures) << "level " << h;
      without_donor += plan.levels[h].without_donor;
    }
    EXPECT_EQ(plan.households_without_donor, without_donor);
    EXPECT_GT(plan.households_without_donor, 0) << "the households of a value of their own find no donor";
  }
}

TEST(ATargetedSwap, HonoursEveryAreasQuotaWhenDonorsArePlentiful) {
  // One empty profile and 60 finest areas of ~20 households: every swap set finds a donor, and each
  // finest area initiates at least its quota (coarser-level initiators count towards it). Threshold 3/4:
  // only risks of 1 are at risk, so the quotas of rates 0.22–0.6 call for fills.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    RandomTable table;
    table.households = 1200;
    table.regions = 3;
    table.districts = 4;
    table.cells = 5;
    const HouseholdSummaries households = random_households(table, seed);
    TargetedSwapOptions options;
    options.threshold = 0.75;
    options.swap_fraction = 0.2 + 0.02 * static_cast<double>(seed);
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, seed);
    EXPECT_EQ(plan.households_without_donor, 0) << "seed " << seed;
    EXPECT_EQ(plan.quota_total, quota_total(1200, options.swap_fraction, seed));
    std::int64_t swapped_pairs = 0;
    for (const auto& level : plan.levels) swapped_pairs += level.swapped_pairs;
    EXPECT_GE(swapped_pairs, plan.quota_total) << "seed " << seed;
    EXPECT_GT(plan.levels[2].quota_added, 0) << "seed " << seed << ": the quotas call for more than the risk";

    const auto finest = areas_of_level(households, 2);
    const std::vector<std::int64_t> quotas = quotas_for(households, options.swap_fraction, seed);
    std::vector<std::int64_t> initiators(finest.size(), 0);
    for (const SwapPair& pair : plan.pairs)
      ++initiators[static_cast<std::size_t>(
          std::find(finest.begin(), finest.end(), prefix_of(households, pair.initiator, 2)) - finest.begin())];
    for (std::size_t a = 0; a < finest.size(); ++a)
      EXPECT_GE(initiators[a], quotas[a]) << "seed " << seed << " area " << a;
  }
}

TEST(ATargetedSwap, GivesTheSamePlanForTheSameSeedAndAnotherForAnotherSeed) {
  RandomTable table;
  table.households = 800;
  const HouseholdSummaries households = random_households(table, 3);
  const TargetedSwapOptions options = two_profiles(0.1);
  const TargetedSwapPlan first = plan_targeted_swap(households, options, 11);
  EXPECT_TRUE(same_pairs(plan_targeted_swap(households, options, 11).pairs, first.pairs));
  EXPECT_FALSE(same_pairs(plan_targeted_swap(households, options, 12).pairs, first.pairs));
}

// ---- household records ----

/// Five person records of households 7 (rows 0–1) and 9 (rows 2–4) over two levels, one similarity
/// variable and three carry-along columns (a double, an int32 code, an int64 id).
struct FiveRecords {
  std::vector<std::int64_t> household{7, 7, 9, 9, 9};
  Codes region{0, 0, 1, 1, 1};
  Codes district{3, 3, 4, 4, 4};
  Codes similar{2, 1, 0, 2, 2};
  std::vector<double> income{1.5, 1.5, -0.0, -0.0, -0.0};
  Codes code{-1, -1, 5, 5, 5};
  std::vector<std::int64_t> big{-5, -5, std::int64_t{1} << 40, std::int64_t{1} << 40, std::int64_t{1} << 40};
  std::vector<double> risk0{0.2, 0.5, 0.1, 1.0, 0.3};
  std::vector<double> risk1{0.25, 0.5, 1.0, 0.5, 0.5};

  HouseholdRecords records() const {
    HouseholdRecords out;
    out.household_ids = household;
    out.geography.codes = {std::span<const std::int32_t>(region), std::span<const std::int32_t>(district)};
    out.geography.level_counts = {2, 5};
    out.similar = {similar};
    out.carry_along = {std::span<const double>(income), std::span<const std::int32_t>(code),
                       std::span<const std::int64_t>(big)};
    out.person_risk = {risk0, risk1};
    return out;
  }
};

TEST(ATargetedSwap, FindsNoDisagreementWithinConsistentHouseholds) {
  const FiveRecords five;
  EXPECT_FALSE(first_household_disagreement(five.records()).has_value());
}

TEST(ATargetedSwap, ReportsAMemberInAnotherDistrictThanItsHouseholdsFirstRecord) {
  FiveRecords five;
  five.district[4] = 2;
  const auto disagreement = first_household_disagreement(five.records());
  ASSERT_TRUE(disagreement.has_value());
  EXPECT_EQ(disagreement->first_row, 2U);
  EXPECT_EQ(disagreement->row, 4U);
  EXPECT_EQ(disagreement->variable, 1U) << "level 1 of the geography";
}

TEST(ATargetedSwap, NumbersACarryAlongDisagreementAfterTheGeography) {
  FiveRecords five;
  five.income[1] = 1.25;
  auto disagreement = first_household_disagreement(five.records());
  ASSERT_TRUE(disagreement.has_value());
  EXPECT_EQ(disagreement->first_row, 0U);
  EXPECT_EQ(disagreement->row, 1U);
  EXPECT_EQ(disagreement->variable, 2U) << "two geography levels, then carry-along 0";

  five.income[1] = 1.5;
  five.big[3] = 6;
  disagreement = first_household_disagreement(five.records());
  ASSERT_TRUE(disagreement.has_value());
  EXPECT_EQ(disagreement->first_row, 2U);
  EXPECT_EQ(disagreement->row, 3U);
  EXPECT_EQ(disagreement->variable, 4U) << "carry-along 2";
}

TEST(ATargetedSwap, ComparesCarryAlongDoublesBitForBit) {
  // Bit patterns: NaN equals the same NaN; 0.0 and −0.0 differ.
  FiveRecords five;
  five.income = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(), -0.0, -0.0, 0.0};
  const auto disagreement = first_household_disagreement(five.records());
  ASSERT_TRUE(disagreement.has_value());
  EXPECT_EQ(disagreement->row, 4U);
  EXPECT_EQ(disagreement->variable, 2U);
}

TEST(ATargetedSwap, ReportsTheFirstDisagreementInRecordOrder) {
  // Row 1 differs on carry-along 1 and row 3 on the geography: row 1 comes first.
  FiveRecords five;
  five.code[1] = 4;
  five.region[3] = 0;
  const auto disagreement = first_household_disagreement(five.records());
  ASSERT_TRUE(disagreement.has_value());
  EXPECT_EQ(disagreement->row, 1U);
  EXPECT_EQ(disagreement->variable, 3U);
}

TEST(ATargetedSwap, SummarisesEachHouseholdByItsFirstRecordAndItsLargestRisks) {
  const FiveRecords five;
  const HouseholdSummaries summaries = summarise_households(five.records());
  EXPECT_EQ(summaries.levels, 2U);
  EXPECT_EQ(summaries.similar_count, 1U);
  EXPECT_EQ(summaries.carry_count, 3U);
  EXPECT_EQ(summaries.ids, (std::vector<std::int64_t>{7, 9}));
  EXPECT_EQ(summaries.first_rows, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(summaries.members, (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(summaries.geography, (Codes{0, 3, 1, 4}));
  EXPECT_EQ(summaries.similar, (Codes{2, 0})) << "the first record's codes";
  // value_word: a double's bit pattern, codes and ids sign-extended.
  EXPECT_EQ(summaries.carry,
            (std::vector<std::uint64_t>{0x3FF8000000000000ULL, 0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFBULL,
                                        0x8000000000000000ULL, 5ULL, std::uint64_t{1} << 40}));
  EXPECT_EQ(summaries.risk, (std::vector<double>{0.5, 0.5, 1.0, 1.0})) << "the maximum over the members";
  EXPECT_EQ(summaries.geography_of(1)[1], 4);
  EXPECT_EQ(summaries.carry_of(1)[1], 5U);
}

TEST(ATargetedSwap, AppendsTheHouseholdsOfTheNextBlockKeepingTheirBlockRows) {
  const FiveRecords five;
  HouseholdSummaries all;
  append_households(all, summarise_households(five.records()));
  append_households(all, summarise_households(five.records()));
  EXPECT_EQ(all.levels, 2U);
  EXPECT_EQ(all.carry_count, 3U);
  EXPECT_EQ(all.ids, (std::vector<std::int64_t>{7, 9, 7, 9}));
  EXPECT_EQ(all.first_rows, (std::vector<std::int64_t>{0, 2, 0, 2}));
  EXPECT_EQ(all.geography, (Codes{0, 3, 1, 4, 0, 3, 1, 4}));
  EXPECT_EQ(all.carry.size(), 12U);
  EXPECT_EQ(all.risk, (std::vector<double>{0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0}));
}

// ---- nesting of the hierarchy ----

KeyColumns geography_of(const std::vector<Codes>& levels) {
  KeyColumns keys;
  for (const Codes& codes : levels) {
    keys.codes.emplace_back(codes);
    keys.level_counts.push_back(100);
  }
  return keys;
}

TEST(ATargetedSwap, ReportsADistrictUnderTwoRegionsWithARecordOfEach) {
  // District 10 lies in region 0 (row 0) and region 1 (row 3).
  const std::vector<Codes> levels{{0, 0, 1, 1, 1, 0}, {10, 11, 12, 10, 12, 10}};
  const auto parents = area_parents(geography_of(levels));
  ASSERT_EQ(parents.size(), 1U);
  ASSERT_EQ(parents[0].size(), 4U) << "(10, 0) and (12, 1) twice, kept once";
  const auto conflict = first_nesting_conflict(1, parents[0]);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->level, 1U);
  EXPECT_EQ(conflict->first.area, 10);
  EXPECT_EQ(conflict->first.parent, 0);
  EXPECT_EQ(conflict->first.row, 0);
  EXPECT_EQ(conflict->second.area, 10);
  EXPECT_EQ(conflict->second.parent, 1);
  EXPECT_EQ(conflict->second.row, 3);
}

TEST(ATargetedSwap, FindsNoConflictInAProperlyNestedHierarchy) {
  const std::vector<Codes> levels{{0, 0, 0, 1, 1, 0}, {1, 1, 2, 3, 3, 2}, {10, 11, 20, 30, 31, 20}};
  const auto parents = area_parents(geography_of(levels));
  ASSERT_EQ(parents.size(), 2U);
  EXPECT_EQ(parents[0].size(), 3U);
  EXPECT_EQ(parents[1].size(), 5U);
  EXPECT_FALSE(first_nesting_conflict(1, parents[0]).has_value());
  EXPECT_FALSE(first_nesting_conflict(2, parents[1]).has_value());
  EXPECT_TRUE(area_parents(geography_of(std::vector<Codes>{Codes{0, 1}})).empty()) << "one level has no parents";
}

TEST(ATargetedSwap, FindsNoFalseConflictInThePairsOfTwoBlocksConcatenatedAndResorted) {
  // Both blocks hold districts 5 and 6 of region 2 (and district 7 of region 3): equal pairs repeat.
  const auto first = area_parents(geography_of({{2, 2, 3}, {5, 6, 7}}));
  const auto second = area_parents(geography_of({{3, 2, 2, 2}, {7, 6, 5, 5}}));
  std::vector<AreaParent> pairs = first[0];
  pairs.insert(pairs.end(), second[0].begin(), second[0].end());
  auto by_area_and_parent = [](const AreaParent& a, const AreaParent& b) {
    return a.area != b.area ? a.area < b.area : a.parent < b.parent;
  };
  std::sort(pairs.begin(), pairs.end(), by_area_and_parent);
  EXPECT_FALSE(first_nesting_conflict(1, pairs).has_value());

  // A district 5 of region 4 in a third block is a conflict across blocks.
  const auto third = area_parents(geography_of({{4}, {5}}));
  pairs.insert(pairs.end(), third[0].begin(), third[0].end());
  std::sort(pairs.begin(), pairs.end(), by_area_and_parent);
  const auto conflict = first_nesting_conflict(1, pairs);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->first.parent, 2);
  EXPECT_EQ(conflict->second.parent, 4);
  EXPECT_EQ(conflict->second.area, 5);
}

// ---- risky households ----

TEST(ATargetedSwap, CountsHouseholdsAboveTheThresholdPerLevelNotThoseAtIt) {
  const std::vector<std::int64_t> ids{1, 1, 2, 3, 3, 3};
  const std::vector<double> level0{0.2, 0.5, 1.0 / 3.0, 0.1, 0.1, 0.1};
  const std::vector<double> level1{1.0 / 3.0, 1.0 / 3.0, 1.0, 0.1, 0.5, 0.2};
  const std::vector<std::span<const double>> risk{level0, level1};
  // Level 0: H1 (0.5); H2 sits at the threshold. Level 1: H2 and H3; H1 sits at the threshold.
  EXPECT_EQ(count_risky_households(ids, risk, 1.0 / 3.0), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(count_risky_households(ids, risk, 2.0), (std::vector<std::int64_t>{0, 0}));
  EXPECT_EQ(count_risky_households(ids, risk, 0.0), (std::vector<std::int64_t>{3, 3}));

  // Blocks split between households add up.
  const auto head = count_risky_households(std::span(ids).first(3),
                                           {std::span(level0).first(3), std::span(level1).first(3)}, 1.0 / 3.0);
  const auto tail = count_risky_households(std::span(ids).subspan(3),
                                           {std::span(level0).subspan(3), std::span(level1).subspan(3)}, 1.0 / 3.0);
  EXPECT_EQ(head[0] + tail[0], 1);
  EXPECT_EQ(head[1] + tail[1], 2);
  EXPECT_EQ(count_risky_households({}, {std::span<const double>{}}, 0.5), (std::vector<std::int64_t>{0}));
}

TEST(ATargetedSwap, CountsTheSameRiskyHouseholdsAsThePlanReports) {
  const SixHouseholds six;
  const auto person_risk = person_risk_per_level(six.risk_variables(), six.geography());
  const HouseholdSummaries households = six.summaries(person_risk);
  const std::vector<std::span<const double>> risk{person_risk[0], person_risk[1]};
  for (const double threshold : {1.0 / 3.0, 0.5}) {
    TargetedSwapOptions options;
    options.threshold = threshold;
    const TargetedSwapPlan plan = plan_targeted_swap(households, options, 1);
    const auto counts = count_risky_households(six.household, risk, threshold);
    EXPECT_EQ(counts, (std::vector<std::int64_t>{plan.levels[0].risky_households, plan.levels[1].risky_households}));
  }
  // k = 2: level 0 only H5 and H6 (risk 1); level 1 H1, H4, H5, H6.
  EXPECT_EQ(count_risky_households(six.household, risk, 0.5), (std::vector<std::int64_t>{2, 4}));
}

}  // namespace
}  // namespace sdc::swapping
