#include "kernels/bootstrap/replicates.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/core/error.h"

namespace sdc {
namespace {

constexpr std::uint64_t kSeed = 20260311;

std::vector<std::uint64_t> iota_units(std::uint64_t n, std::uint64_t first = 0) {
  std::vector<std::uint64_t> units(n);
  std::iota(units.begin(), units.end(), first);
  return units;
}

std::vector<std::uint32_t> fill(const ReplicateDesign& design, std::uint64_t b0, std::uint64_t b1,
                                std::span<const std::uint64_t> units) {
  std::vector<std::uint32_t> out((b1 - b0) * units.size());
  fill_multiplicities(design, b0, b1, units, out);
  return out;
}

struct Moments {
  double mean = 0.0;
  double variance = 0.0;  // divisor N
};

template <class T>
Moments moments(const std::vector<T>& values) {
  double sum = 0.0;
  for (auto v : values) sum += static_cast<double>(v);
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0.0;
  for (auto v : values) squares += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  return {mean, squares / static_cast<double>(values.size())};
}

// ---- Poisson --------------------------------------------------------------------------------------

TEST(PoissonReplicates, InvertsTheDistributionFunctionAtItsThresholds) {
  // round(2^53 · e^-1) = 3313563428353948 is the first threshold: below it m = 0, at it m = 1.
  EXPECT_EQ(poisson1_from_bits(0), 0U);
  EXPECT_EQ(poisson1_from_bits((3313563428353948ULL - 1) << 11U), 0U);
  EXPECT_EQ(poisson1_from_bits(3313563428353948ULL << 11U), 1U);
  EXPECT_EQ(poisson1_from_bits((6627126856707896ULL - 1) << 11U), 1U);
  EXPECT_EQ(poisson1_from_bits(6627126856707896ULL << 11U), 2U);
  EXPECT_EQ(poisson1_from_bits(~std::uint64_t{0}), 18U);
}

TEST(PoissonReplicates, MultiplicitiesHaveMeanOneVarianceOneAndPOfOneOverE) {
  const auto units = iota_units(100000);
  const auto m = fill(ReplicateDesign::poisson(kSeed), 0, 4, units);
  const auto n = static_cast<double>(m.size());
  const Moments mom = moments(m);
  EXPECT_NEAR(mom.mean, 1.0, 4.0 / std::sqrt(n));
  // Var of the sample variance: (μ4 - σ^4) / N with μ4 = λ + 3λ² = 4 for Poisson(1).
  EXPECT_NEAR(mom.variance, 1.0, 4.0 * std::sqrt(3.0 / n));
  const double ones = static_cast<double>(std::count(m.begin(), m.end(), 1U)) / n;
  const double e1 = std::exp(-1.0);
  EXPECT_NEAR(ones, e1, 4.0 * std::sqrt(e1 * (1 - e1) / n));
}

// ---- Binomial sampler -----------------------------------------------------------------------------

struct BinomialCase {
  std::uint64_t trials;
  double p;
};

TEST(BinomialDraw, MatchesTheMeanAndVarianceInBothRegimes) {
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  // Inversion (n·min(p, q) < 10), BTRS (>= 10), and their complements (p > 1/2).
  const std::vector<BinomialCase> cases{{5, 0.3},    {40, 0.2},    {30, 0.9},      {100, 0.3},
                                        {1000, 0.5}, {4096, 0.75}, {1000000, 0.7}, {3, 1.0 / 3.0}};
  constexpr std::uint64_t kDraws = 20000;
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.trials) + " " + std::to_string(c.p));
    std::vector<std::uint64_t> draws(kDraws);
    for (std::uint64_t i = 0; i < kDraws; ++i) draws[i] = binomial_draw(rng, {i, 0, 7, 0}, c.trials, c.p);
    const double n = static_cast<double>(c.trials);
    const double mean = n * c.p;
    const double variance = n * c.p * (1 - c.p);
    const double mu4 = variance * (1 + 3 * (n - 2) * c.p * (1 - c.p));
    const Moments mom = moments(draws);
    EXPECT_NEAR(mom.mean, mean, 4.0 * std::sqrt(variance / kDraws));
    EXPECT_NEAR(mom.variance, variance, 4.0 * std::sqrt((mu4 - variance * variance) / kDraws));
    for (auto d : draws) ASSERT_LE(d, c.trials);
  }
}

TEST(BinomialDraw, FollowsTheProbabilityFunctionInTheRejectionRegime) {
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  constexpr std::uint64_t kDraws = 50000;
  constexpr std::uint64_t kTrials = 100;
  constexpr double kP = 0.3;
  std::vector<double> frequency(kTrials + 1, 0.0);
  for (std::uint64_t i = 0; i < kDraws; ++i) frequency[binomial_draw(rng, {i, 0, 11, 0}, kTrials, kP)] += 1.0;
  for (std::uint64_t k = 15; k <= 45; ++k) {
    const auto x = static_cast<double>(k);
    const double n = static_cast<double>(kTrials);
    const double log_pmf = std::lgamma(n + 1.0) - std::lgamma(x + 1.0) - std::lgamma(n - x + 1.0) + x * std::log(kP) +
                           (n - x) * std::log(1 - kP);
    const double pmf = std::exp(log_pmf);
    EXPECT_NEAR(frequency[k] / kDraws, pmf, 4.5 * std::sqrt(pmf * (1 - pmf) / kDraws)) << k;
  }
}

TEST(BinomialDraw, HandlesTheEdgesOfP) {
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  EXPECT_EQ(binomial_draw(rng, {1, 0, 0, 0}, 0, 0.5), 0U);
  EXPECT_EQ(binomial_draw(rng, {1, 0, 0, 0}, 17, 0.0), 0U);
  EXPECT_EQ(binomial_draw(rng, {1, 0, 0, 0}, 17, 1.0), 17U);
}

// ---- Multinomial ----------------------------------------------------------------------------------

TEST(MultinomialReplicates, EveryReplicateSumsExactlyToN) {
  for (std::uint64_t n : {1ULL, 7ULL, 4096ULL, 4097ULL, 20000ULL, 100003ULL}) {
    const auto units = iota_units(n);
    const auto m = fill(ReplicateDesign::multinomial(kSeed, n), 0, 20, units);
    for (std::uint64_t b = 0; b < 20; ++b) {
      const auto begin = m.begin() + static_cast<std::ptrdiff_t>(b * n);
      EXPECT_EQ(std::accumulate(begin, begin + static_cast<std::ptrdiff_t>(n), std::uint64_t{0}), n) << n << ' ' << b;
    }
  }
}

TEST(MultinomialReplicates, UnitsHaveMeanOneAndVarianceOneMinusOneOverN) {
  // n = 3: Var m = 1 - 1/3, well away from the Poisson bootstrap's 1.
  {
    const auto units = iota_units(3);
    constexpr std::uint64_t kReplicates = 30000;
    const auto m = fill(ReplicateDesign::multinomial(kSeed, 3), 0, kReplicates, units);
    const double draws = static_cast<double>(m.size());
    const Moments mom = moments(m);
    EXPECT_NEAR(mom.mean, 1.0, 1e-12);  // every replicate sums to 3
    // Var of the sample variance (μ4 - σ^4)/N, μ4 = npq(1 + 3(n-2)pq) = 10/9, σ^4 = 4/9; draws correlated
    // within a replicate, so the bound is loose by a small factor only.
    EXPECT_NEAR(mom.variance, 2.0 / 3.0, 6.0 * std::sqrt((10.0 / 9.0 - 4.0 / 9.0) / draws));
    const auto by_unit = [&](std::size_t u) {
      std::vector<std::uint32_t> values;
      for (std::uint64_t b = 0; b < kReplicates; ++b) values.push_back(m[b * 3 + u]);
      return moments(values);
    };
    for (std::size_t u = 0; u < 3; ++u) {
      const Moments unit = by_unit(u);
      EXPECT_NEAR(unit.mean, 1.0, 4.0 * std::sqrt(2.0 / 3.0 / kReplicates)) << u;
      EXPECT_NEAR(unit.variance, 2.0 / 3.0, 4.0 * std::sqrt(2.0 / 3.0 / kReplicates)) << u;
    }
  }
  // n spanning five leaves: each leaf total is Binomial(n, L/n), which checks the tree's splits.
  {
    constexpr std::uint64_t kUnits = 4 * kMultinomialLeafUnits + 1000;
    constexpr std::uint64_t kReplicates = 400;
    const auto units = iota_units(kUnits);
    const auto m = fill(ReplicateDesign::multinomial(kSeed, kUnits), 0, kReplicates, units);
    for (std::uint64_t leaf = 0; leaf < 5; ++leaf) {
      const std::uint64_t begin = leaf * kMultinomialLeafUnits;
      const std::uint64_t end = std::min(begin + kMultinomialLeafUnits, kUnits);
      std::vector<std::uint64_t> totals;
      for (std::uint64_t b = 0; b < kReplicates; ++b) {
        const auto row = m.begin() + static_cast<std::ptrdiff_t>(b * kUnits);
        totals.push_back(std::accumulate(row + static_cast<std::ptrdiff_t>(begin),
                                         row + static_cast<std::ptrdiff_t>(end), std::uint64_t{0}));
      }
      const double size = static_cast<double>(end - begin);
      const double variance = size * (1 - size / kUnits);
      const Moments mom = moments(totals);
      EXPECT_NEAR(mom.mean, size, 4.0 * std::sqrt(variance / kReplicates)) << leaf;
      EXPECT_NEAR(mom.variance, variance, 4.0 * variance * std::sqrt(2.0 / kReplicates)) << leaf;
    }
    const Moments pooled = moments(m);
    EXPECT_NEAR(pooled.variance, 1.0 - 1.0 / kUnits, 4.0 * std::sqrt(3.0 / static_cast<double>(m.size())));
  }
}

TEST(MultinomialReplicates, RejectsUnitsOutsideTheStrata) {
  const std::vector<std::uint64_t> units{3, 10};
  std::vector<std::uint32_t> out(2);
  EXPECT_THROW(fill_multiplicities(ReplicateDesign::multinomial(kSeed, 10), 0, 1, units, out), InvalidInput);
}

// ---- Stratified -----------------------------------------------------------------------------------

TEST(StratifiedReplicates, TotalsEqualTheDrawsOfEachStratum) {
  ReplicateDesign design{ReplicateScheme::kMultinomial, kSeed, {0, 10, 5000, 5000, 13000}, {}};
  const auto units = iota_units(13000);
  for (const auto& draws : {std::vector<std::uint64_t>{}, std::vector<std::uint64_t>{5, 100, 0, 9000}}) {
    design.stratum_draws = draws;
    const auto m = fill(design, 0, 30, units);
    for (std::uint64_t b = 0; b < 30; ++b) {
      for (std::size_t h = 0; h + 1 < design.stratum_offsets.size(); ++h) {
        const auto row = m.begin() + static_cast<std::ptrdiff_t>(b * units.size());
        const std::uint64_t total =
            std::accumulate(row + static_cast<std::ptrdiff_t>(design.stratum_offsets[h]),
                            row + static_cast<std::ptrdiff_t>(design.stratum_offsets[h + 1]), std::uint64_t{0});
        const std::uint64_t expected =
            draws.empty() ? design.stratum_offsets[h + 1] - design.stratum_offsets[h] : draws[h];
        EXPECT_EQ(total, expected) << b << ' ' << h;
      }
    }
  }
}

TEST(StratifiedReplicates, StrataDrawIndependently) {
  // Two strata of equal size must not get the same multiplicities (the stratum keys the draws).
  ReplicateDesign design{ReplicateScheme::kMultinomial, kSeed, {0, 5000, 10000}, {}};
  const auto units = iota_units(10000);
  const auto m = fill(design, 0, 1, units);
  EXPECT_FALSE(std::equal(m.begin(), m.begin() + 5000, m.begin() + 5000));
}

TEST(StratifiedReplicates, RejectsInconsistentDesignsNamingTheField) {
  const auto expect_job_error = [](const ReplicateDesign& design, const std::string& fragment) {
    try {
      validate_replicate_design(design);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const ParameterError& error) {
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
    }
  };
  expect_job_error({ReplicateScheme::kMultinomial, 1, {5}, {}}, "stratum_offsets");
  expect_job_error({ReplicateScheme::kMultinomial, 1, {0, 9, 3}, {}}, "stratum_offsets decrease at stratum 1");
  expect_job_error({ReplicateScheme::kMultinomial, 1, {0, 9, 12}, {4}}, "stratum_draws needs one entry per stratum");
  expect_job_error({ReplicateScheme::kMultinomial, 1, {0, 9, 9}, {4, 2}}, "stratum 1 has no units");
}

// ---- Cluster --------------------------------------------------------------------------------------

TEST(ClusterReplicates, MembersShareTheirHouseholdsMultiplicity) {
  // Records of 3000 households of 1..5 members, listed out of household order.
  std::vector<std::uint64_t> record_household;
  for (std::uint64_t h = 0; h < 3000; ++h) {
    for (std::uint64_t member = 0; member <= h % 5; ++member) record_household.push_back((h * 7919) % 3000);
  }
  const auto households = iota_units(3000);
  for (const auto& design : {ReplicateDesign::poisson(kSeed), ReplicateDesign::multinomial(kSeed, 3000)}) {
    const auto by_record = fill(design, 3, 13, record_household);
    const auto by_household = fill(design, 3, 13, households);
    for (std::uint64_t b = 0; b < 10; ++b) {
      for (std::size_t i = 0; i < record_household.size(); ++i) {
        ASSERT_EQ(by_record[b * record_household.size() + i], by_household[b * 3000 + record_household[i]]);
      }
      if (design.scheme == ReplicateScheme::kMultinomial) {
        const auto row = by_household.begin() + static_cast<std::ptrdiff_t>(b * 3000);
        EXPECT_EQ(std::accumulate(row, row + 3000, std::uint64_t{0}), 3000U);
      }
    }
  }
}

// ---- Partition invariance (bootstrap.md §9 "E partition invariance") ---------------------------

TEST(ReplicatePartitionInvariance, MultiplicitiesAreIdenticalForOneToFourSplitsAndOneOrTwoThreads) {
  constexpr std::uint64_t kUnits = 3 * kMultinomialLeafUnits + 777;
  const auto all = iota_units(kUnits);
  for (const auto& design : {ReplicateDesign::poisson(kSeed), ReplicateDesign::multinomial(kSeed, kUnits)}) {
    const auto whole = fill(design, 5, 9, all);
    for (int threads : {1, 2}) {
      tbb::task_arena arena(threads);
      for (std::uint64_t ranks = 1; ranks <= 4; ++ranks) {
        for (bool interleaved : {false, true}) {
          std::vector<std::uint32_t> assembled(whole.size());
          for (std::uint64_t rank = 0; rank < ranks; ++rank) {
            std::vector<std::uint64_t> mine;
            for (std::uint64_t u = 0; u < kUnits; ++u) {
              const std::uint64_t owner = interleaved ? u % ranks : u * ranks / kUnits;
              if (owner == rank) mine.push_back(u);
            }
            std::vector<std::uint32_t> part;
            arena.execute([&] { part = fill(design, 5, 9, mine); });
            for (std::uint64_t b = 0; b < 4; ++b) {
              for (std::size_t i = 0; i < mine.size(); ++i) assembled[b * kUnits + mine[i]] = part[b * mine.size() + i];
            }
          }
          EXPECT_EQ(assembled, whole) << threads << " threads, " << ranks << " ranks, interleaved " << interleaved;
        }
      }
    }
  }
}

TEST(ReplicatePartitionInvariance, ALeafRangeAloneGivesTheSameMultiplicities) {
  constexpr std::uint64_t kUnits = 9 * kMultinomialLeafUnits + 5;
  const auto design = ReplicateDesign::multinomial(kSeed, kUnits);
  const auto whole = fill(design, 0, 3, iota_units(kUnits));
  const auto leaf = iota_units(100, 6 * kMultinomialLeafUnits + 17);
  const auto part = fill(design, 0, 3, leaf);
  for (std::uint64_t b = 0; b < 3; ++b) {
    for (std::size_t i = 0; i < leaf.size(); ++i) EXPECT_EQ(part[b * leaf.size() + i], whole[b * kUnits + leaf[i]]);
  }
}

// ---- Summaries (bootstrap.md §4) ------------------------------------------------------------------

TEST(ReplicateSummary, ReproducesTheExamMarksMeanAndStandardDeviation) {
  // bootstrap.md §9 "E quantiles": exam marks as replicate values; mean 62.55, sd 17.89582.
  const std::vector<double> marks{1, 40, 50, 55, 58, 58, 60, 62, 65, 66, 66, 68, 70, 71, 72, 74, 75, 75, 80, 85};
  const auto summary = summarize_replicates(marks, 60.0, 0.5);
  EXPECT_EQ(summary.replicates, 20U);
  EXPECT_NEAR(summary.mean, 62.55, 0.5e-2);
  EXPECT_NEAR(summary.standard_error, 17.89582, 0.5e-5);
  EXPECT_NEAR(summary.bias, 2.55, 0.5e-2);
  // α = 0.5: the percentile interval is (Q1, Q3): type 7 (58, 72.5), type 6 (58, 73.5).
  EXPECT_NEAR(summary.percentile.lower, 58, 1e-12);
  EXPECT_NEAR(summary.percentile.upper, 72.5, 1e-12);
  EXPECT_NEAR(summary.basic.lower, 120 - 72.5, 1e-12);
  EXPECT_NEAR(summary.basic.upper, 120 - 58, 1e-12);
  const auto type6 = summarize_replicates(marks, 60.0, 0.5, {QuantileType::kType6});
  EXPECT_NEAR(type6.percentile.upper, 73.5, 1e-12);
  EXPECT_EQ(type6.quantile_type, QuantileType::kType6);
}

TEST(ReplicateSummary, KnownValuesOfASmallSeries) {
  const std::vector<double> replicates{5, 1, 4, std::nan(""), 2, 3};
  const auto summary = summarize_replicates(replicates, 2.5, 0.5);
  EXPECT_EQ(summary.replicates, 5U);
  EXPECT_EQ(summary.nan_replicates, 1U);
  EXPECT_DOUBLE_EQ(summary.mean, 3.0);
  EXPECT_DOUBLE_EQ(summary.bias, 0.5);
  EXPECT_DOUBLE_EQ(summary.standard_error, std::sqrt(2.5));
  EXPECT_DOUBLE_EQ(summary.percentile.lower, 2.0);
  EXPECT_DOUBLE_EQ(summary.percentile.upper, 4.0);
  EXPECT_DOUBLE_EQ(summary.basic.lower, 1.0);
  EXPECT_DOUBLE_EQ(summary.basic.upper, 3.0);
  EXPECT_TRUE(std::isnan(summarize_replicates(std::vector<double>{1.0}, 1.0).standard_error));
  EXPECT_THROW(summarize_replicates(replicates, 2.5, 1.5), ParameterError);
}

}  // namespace
}  // namespace sdc
