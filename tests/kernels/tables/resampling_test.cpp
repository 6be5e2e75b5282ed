#include "kernels/tables/resampling.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "kernels/bootstrap/replicates.h"
#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

constexpr std::uint64_t kSeed = 20260417;

// The seed paper's Table 1 (004_c2c1616e17aa0dac.txt): P(X = k | X^M = k), rows k = 1, 2, 3; columns
// M = 1, 3, 5, each with S = 3, 2, 1.5.
constexpr std::array<std::array<double, 9>, 3> kPaperTable1{{
    {0.40, 0.42, 0.47, 0.65, 0.65, 0.66, 0.76, 0.76, 0.76},
    {0.27, 0.28, 0.28, 0.46, 0.46, 0.46, 0.58, 0.58, 0.58},
    {0.22, 0.24, 0.27, 0.38, 0.38, 0.39, 0.48, 0.48, 0.48},
}};

// tabular.md §3, "Analytic reproduction": the model's values to three decimals.
constexpr std::array<std::array<double, 9>, 3> kAnalyticTable1{{
    {0.403, 0.419, 0.466, 0.651, 0.652, 0.654, 0.759, 0.759, 0.759},
    {0.271, 0.277, 0.279, 0.458, 0.457, 0.457, 0.575, 0.575, 0.575},
    {0.223, 0.242, 0.271, 0.382, 0.383, 0.388, 0.481, 0.481, 0.482},
}};

// ---- helpers ------------------------------------------------------------------------------------------

/// Pearson's statistic of `observed` counts against `probability` (summing to 1 over the bins), adjacent
/// bins merged until each expects at least 5; compared with the 1 − 1e-4 quantile of chi² by the
/// Wilson–Hilferty approximation.
void expect_chi_square_fits(const std::vector<double>& observed, const std::vector<double>& probability, double n) {
  double statistic = 0.0;
  int bins = 0;
  double pending_observed = 0.0;
  double pending_expected = 0.0;
  double last_observed = 0.0;
  double last_expected = 0.0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    pending_observed += observed[i];
    pending_expected += probability[i] * n;
    if (pending_expected >= 5.0) {
      if (bins > 0) {
        statistic += (last_observed - last_expected) * (last_observed - last_expected) / last_expected;
      }
      last_observed = pending_observed;
      last_expected = pending_expected;
      pending_observed = 0.0;
      pending_expected = 0.0;
      ++bins;
    }
  }
  last_observed += pending_observed;
  last_expected += pending_expected;
  ASSERT_GE(bins, 2);
  statistic += (last_observed - last_expected) * (last_observed - last_expected) / last_expected;
  const double df = bins - 1;
  constexpr double kZ = 3.719;  // the 1 − 1e-4 normal quantile
  const double w = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1.0 - w + kZ * std::sqrt(w), 3.0);
  EXPECT_LT(statistic, critical) << "chi² with " << df << " degrees of freedom";
}

double hypergeometric_pmf(std::int64_t y, std::int64_t draws, std::int64_t successes, std::int64_t population) {
  const auto log_choose = [](std::int64_t n, std::int64_t k) {
    return std::lgamma(static_cast<long double>(n) + 1) - std::lgamma(static_cast<long double>(k) + 1) -
           std::lgamma(static_cast<long double>(n - k) + 1);
  };
  if (y < 0 || y > draws || y > successes || draws - y > population - successes) return 0.0;
  return static_cast<double>(std::exp(log_choose(successes, y) + log_choose(population - successes, draws - y) -
                                      log_choose(population, draws)));
}

double binomial_pmf(std::int64_t y, std::int64_t trials, double p) {
  const auto n = static_cast<long double>(trials);
  const auto k = static_cast<long double>(y);
  return static_cast<double>(std::exp(std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1) +
                                      k * std::log(static_cast<long double>(p)) +
                                      (n - k) * std::log1p(-static_cast<long double>(p))));
}

/// Counts from a counter-based stream: a fraction of zeros, small counts, a few large ones.
std::vector<std::int64_t> random_counts(std::size_t cells, std::uint64_t stream, std::int64_t largest) {
  const RecordRng rng(kSeed + stream, StepId::kKnownAnswerTest);
  std::vector<std::int64_t> counts(cells);
  for (std::size_t i = 0; i < cells; ++i) {
    const auto block = rng.bits({i, 0, 0, 0});
    const std::uint64_t kind = index_from_bits(block[0], 10);
    if (kind < 3) {
      counts[i] = 0;
    } else if (kind < 8) {
      counts[i] = 1 + static_cast<std::int64_t>(index_from_bits(block[1], 12));
    } else {
      counts[i] = 1 + static_cast<std::int64_t>(index_from_bits(block[1], static_cast<std::uint64_t>(largest)));
    }
  }
  return counts;
}

template <class Run>
auto in_arena(int threads, const Run& run) {
  tbb::task_arena arena(threads);
  return arena.execute(run);
}

// ---- quality condition --------------------------------------------------------------------------------

// tabular.md §5, "E quality interval".
TEST(QualityInterval, ReproducesTheOracleOfACountOfFour) {
  const QualityInterval interval = quality_interval(4, 1000, 2.0);
  EXPECT_NEAR(interval.sd, 1.99600, 5e-6);
  EXPECT_EQ(interval.lower, 1);
  EXPECT_EQ(interval.upper, 7);
}

TEST(QualityInterval, ReproducesTheOracleOfACountOfOne) {
  const QualityInterval interval = quality_interval(1, 1000, 1.5);
  EXPECT_NEAR(interval.sd, 0.99950, 5e-6);
  EXPECT_EQ(interval.lower, 0);
  EXPECT_EQ(interval.upper, 2);
}

TEST(QualityInterval, ExcludesABoundaryThatIsAnInteger) {
  // n = 16, x = 8: sd = sqrt(8 · 8/16) = 2 exactly, so x ± 1.5 · sd = 5 and 11 are excluded.
  const QualityInterval interval = quality_interval(8, 16, 1.5);
  EXPECT_EQ(interval.sd, 2.0);
  EXPECT_EQ(interval.lower, 6);
  EXPECT_EQ(interval.upper, 10);
  // S · sd = 1: only x itself; S · sd just above 1 admits x ± 1.
  EXPECT_EQ(quality_interval(8, 16, 0.5).lower, 8);
  EXPECT_EQ(quality_interval(8, 16, 0.5).upper, 8);
  EXPECT_EQ(quality_interval(8, 16, std::nextafter(0.5, 1.0)).lower, 7);
  EXPECT_EQ(quality_interval(8, 16, std::nextafter(0.5, 1.0)).upper, 9);
  // x = 9 of 25: sd = sqrt(9 · 16/25) = 2.4; S = 2.5 puts the bounds at exactly 3 and 15.
  EXPECT_EQ(quality_interval(9, 25, 2.5).lower, 4);
  EXPECT_EQ(quality_interval(9, 25, 2.5).upper, 14);
}

TEST(QualityInterval, AZeroStandardDeviationAdmitsOnlyTheCount) {
  EXPECT_EQ(quality_interval(0, 50, 3.0).lower, 0);
  EXPECT_EQ(quality_interval(0, 50, 3.0).upper, 0);
  EXPECT_EQ(quality_interval(50, 50, 3.0).lower, 50);
  EXPECT_EQ(quality_interval(50, 50, 3.0).upper, 50);
  // A wide S is clamped to [0, n].
  EXPECT_EQ(quality_interval(2, 3, 100.0).lower, 0);
  EXPECT_EQ(quality_interval(2, 3, 100.0).upper, 3);
}

TEST(QualityInterval, AveragedBoundsApplyTheUnrescaledSdToTheMean) {
  // x = 4 of 1000, S = 2, M = 3: T/3 in (4 − 3.992, 4 + 3.992), T in (0.024, 23.976).
  const QualityInterval interval = averaged_quality_interval(4, 1000, 2.0, 3);
  EXPECT_EQ(interval.lower, 1);
  EXPECT_EQ(interval.upper, 23);
  EXPECT_EQ(averaged_quality_interval(4, 1000, 2.0, 1).lower, 1);
  // n = 16, x = 8, S = 1.5, M = 5: T in (25, 55) exactly.
  EXPECT_EQ(averaged_quality_interval(8, 16, 1.5, 5).lower, 26);
  EXPECT_EQ(averaged_quality_interval(8, 16, 1.5, 5).upper, 54);
}

TEST(QualityInterval, RejectsBadParameters) {
  EXPECT_THROW(quality_interval(4, 1000, 0.0), ParameterError);
  EXPECT_THROW(quality_interval(4, 1000, -1.0), ParameterError);
  EXPECT_THROW(quality_interval(4, 1000, std::nan("")), ParameterError);
  EXPECT_THROW(quality_interval(-1, 1000, 2.0), ParameterError);
  EXPECT_THROW(quality_interval(1001, 1000, 2.0), ParameterError);
  EXPECT_THROW(averaged_quality_interval(4, 1000, 2.0, 0), ParameterError);
}

// ---- samplers -----------------------------------------------------------------------------------------

struct HypergeometricCase {
  std::int64_t draws;
  std::int64_t successes;
  std::int64_t population;
};

TEST(HypergeometricDraw, FollowsTheExactProbabilityFunction) {
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  // Inversion (fewer than 10 support points after the symmetries), HRUA, and each symmetry.
  const std::vector<HypergeometricCase> cases{{5, 7, 20},    {15, 4, 30},     {18, 27, 30},   {50, 30, 100},
                                              {70, 80, 100}, {12, 600, 1000}, {400, 37, 500}, {2000, 3000000, 10000000},
                                              {60, 45, 120}};
  constexpr std::int64_t kDraws = 40000;
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.draws) + " of " + std::to_string(c.population) + " with " +
                 std::to_string(c.successes));
    const std::int64_t low = std::max<std::int64_t>(0, c.draws - (c.population - c.successes));
    const std::int64_t high = std::min(c.draws, c.successes);
    std::vector<double> observed(static_cast<std::size_t>(high - low + 1), 0.0);
    for (std::int64_t i = 0; i < kDraws; ++i) {
      const std::int64_t y =
          hypergeometric_draw(rng, {static_cast<std::uint64_t>(i), 3, 0, 0}, c.draws, c.successes, c.population);
      ASSERT_GE(y, low);
      ASSERT_LE(y, high);
      observed[static_cast<std::size_t>(y - low)] += 1.0;
    }
    std::vector<double> probability(observed.size());
    for (std::size_t j = 0; j < observed.size(); ++j) {
      probability[j] = hypergeometric_pmf(low + static_cast<std::int64_t>(j), c.draws, c.successes, c.population);
    }
    expect_chi_square_fits(observed, probability, kDraws);
  }
}

TEST(HypergeometricDraw, MatchesMeanAndVarianceAtCensusScale) {
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  constexpr std::int64_t kDraws = 20000;
  constexpr std::int64_t kPopulation = 10'000'000'000;
  constexpr std::int64_t kSuccesses = 3'000'000'000;
  constexpr std::int64_t kSample = 100'000'000;
  double sum = 0.0;
  double squares = 0.0;
  for (std::int64_t i = 0; i < kDraws; ++i) {
    const auto y = static_cast<double>(
        hypergeometric_draw(rng, {static_cast<std::uint64_t>(i), 5, 0, 0}, kSample, kSuccesses, kPopulation));
    sum += y;
    squares += y * y;
  }
  const double p = static_cast<double>(kSuccesses) / static_cast<double>(kPopulation);
  const double mean = static_cast<double>(kSample) * p;
  const double variance = static_cast<double>(kSample) * p * (1 - p) * static_cast<double>(kPopulation - kSample) /
                          static_cast<double>(kPopulation - 1);
  const double sample_mean = sum / kDraws;
  const double sample_variance = squares / kDraws - sample_mean * sample_mean;
  EXPECT_NEAR(sample_mean, mean, 4.0 * std::sqrt(variance / kDraws));
  EXPECT_NEAR(sample_variance, variance, 4.0 * variance * std::sqrt(2.0 / kDraws));
}

TEST(HypergeometricDraw, HandlesTheEdgesAndRejectsBadArguments) {
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  EXPECT_EQ(hypergeometric_draw(rng, {1, 0, 0, 0}, 0, 5, 10), 0);
  EXPECT_EQ(hypergeometric_draw(rng, {1, 0, 0, 0}, 4, 0, 10), 0);
  EXPECT_EQ(hypergeometric_draw(rng, {1, 0, 0, 0}, 4, 10, 10), 4);
  EXPECT_EQ(hypergeometric_draw(rng, {1, 0, 0, 0}, 10, 6, 10), 6);
  EXPECT_THROW(hypergeometric_draw(rng, {1, 0, 0, 0}, 11, 6, 10), ParameterError);
  EXPECT_THROW(hypergeometric_draw(rng, {1, 0, 0, 0}, 4, -1, 10), ParameterError);
}

TEST(BinomialDraw, FollowsTheExactProbabilityFunctionAtTableScale) {
  // The sampler of bootstrap/replicates.h as the table methods use it: n up to a census, p = x/n small.
  const RecordRng rng(kSeed, StepId::kKnownAnswerTest);
  struct Case {
    std::int64_t trials;
    double p;
  };
  const std::vector<Case> cases{{20, 0.3}, {1000, 0.4}, {1'000'000, 0.5}, {100'000'000, 3e-7}, {60'000'000, 4.0 / 6e7}};
  constexpr std::int64_t kDraws = 40000;
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.trials) + " " + std::to_string(c.p));
    const double mean = static_cast<double>(c.trials) * c.p;
    const double sd = std::sqrt(mean * (1 - c.p));
    const auto low = std::max<std::int64_t>(0, static_cast<std::int64_t>(mean - 8 * sd));
    const auto high = std::min(c.trials, static_cast<std::int64_t>(mean + 8 * sd) + 1);
    std::vector<double> observed(static_cast<std::size_t>(high - low + 1), 0.0);
    for (std::int64_t i = 0; i < kDraws; ++i) {
      const auto y = static_cast<std::int64_t>(
          binomial_draw(rng, {static_cast<std::uint64_t>(i), 0, 9, 0}, static_cast<std::uint64_t>(c.trials), c.p));
      ASSERT_GE(y, low);
      ASSERT_LE(y, high);
      observed[static_cast<std::size_t>(y - low)] += 1.0;
    }
    std::vector<double> probability(observed.size());
    for (std::size_t j = 0; j < observed.size(); ++j) {
      probability[j] = binomial_pmf(low + static_cast<std::int64_t>(j), c.trials, c.p);
    }
    expect_chi_square_fits(observed, probability, kDraws);
  }
}

TEST(MultivariateHypergeometricSplit, TakesEachCellsUnitsWithTheHypergeometricLaw) {
  const std::vector<std::int64_t> weights{3, 0, 5, 2, 7, 1, 9};
  const std::int64_t total = std::accumulate(weights.begin(), weights.end(), std::int64_t{0});
  constexpr std::int64_t kUnits = 10;
  constexpr std::int64_t kDraws = 30000;
  std::vector<std::vector<double>> observed(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) observed[i].assign(static_cast<std::size_t>(weights[i]) + 1, 0.0);
  for (std::int64_t slice = 0; slice < kDraws; ++slice) {
    const auto out = multivariate_hypergeometric_split(kSeed, static_cast<std::uint64_t>(slice), weights, kUnits);
    ASSERT_EQ(std::accumulate(out.begin(), out.end(), std::int64_t{0}), kUnits);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      ASSERT_GE(out[i], 0);
      ASSERT_LE(out[i], weights[i]);
      observed[i][static_cast<std::size_t>(out[i])] += 1.0;
    }
  }
  // Every cell's take is Hypergeometric(units; its weight, total weight).
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] < 2) continue;
    SCOPED_TRACE(i);
    std::vector<double> probability(observed[i].size());
    for (std::size_t y = 0; y < probability.size(); ++y) {
      probability[y] = hypergeometric_pmf(static_cast<std::int64_t>(y), kUnits, weights[i], total);
    }
    expect_chi_square_fits(observed[i], probability, kDraws);
  }
  EXPECT_THROW(multivariate_hypergeometric_split(kSeed, 0, weights, total + 1), ParameterError);
}

// ---- Heer's bootstrap ---------------------------------------------------------------------------------

TEST(BootstrapTree, EveryTableKeepsTheTotalAndItsZeros) {
  const auto counts = random_counts(5000, 1, 500);
  const BootstrapTree tree(counts);
  const std::int64_t n = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  EXPECT_EQ(tree.total(), n);
  for (std::uint64_t m = 0; m < 3; ++m) {
    std::vector<std::int64_t> table(counts.size(), 0);
    tree.add_table(kSeed, m, 0, table);
    EXPECT_EQ(std::accumulate(table.begin(), table.end(), std::int64_t{0}), n);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] == 0) {
        ASSERT_EQ(table[i], 0) << i;
      }
    }
  }
}

TEST(BootstrapTree, CellsHaveTheBinomialMeanAndVariance) {
  const std::vector<std::int64_t> counts{5, 0, 20, 75};
  const BootstrapTree tree(counts);
  constexpr std::int64_t kTables = 20000;
  std::vector<double> sum(counts.size(), 0.0);
  std::vector<double> squares(counts.size(), 0.0);
  for (std::int64_t a = 0; a < kTables; ++a) {
    std::vector<std::int64_t> table(counts.size(), 0);
    tree.add_table(kSeed, 0, static_cast<std::uint64_t>(a), table);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      sum[i] += static_cast<double>(table[i]);
      squares[i] += static_cast<double>(table[i] * table[i]);
    }
  }
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto x = static_cast<double>(counts[i]);
    const double variance = x * (1 - x / 100.0);
    const double mean = sum[i] / kTables;
    EXPECT_NEAR(mean, x, 4.0 * std::sqrt(variance / kTables) + 1e-12) << i;
    EXPECT_NEAR(squares[i] / kTables - mean * mean, variance, 0.05 * variance + 1e-12) << i;
  }
}

TEST(BootstrapTree, OneCellsPathGivesTheSameCountAsTheWholeTable) {
  // Tree evaluation order: every cell alone, in reverse order, from its root-to-leaf path.
  const auto counts = random_counts(3001, 2, 1000);
  const BootstrapTree tree(counts);
  std::vector<std::int64_t> table(counts.size(), 0);
  tree.add_table(kSeed, 2, 7, table);
  for (std::size_t i = counts.size(); i-- > 0;) ASSERT_EQ(tree.cell_count(kSeed, 2, 7, i), table[i]) << i;
}

TEST(BootstrapTree, TablesAreIdenticalForOneAndFourThreads) {
  const auto counts = random_counts(100000, 3, 5000);
  const BootstrapTree tree(counts);
  const auto draw = [&] {
    std::vector<std::int64_t> table(counts.size(), 0);
    tree.add_table(kSeed, 1, 3, table);
    return table;
  };
  EXPECT_EQ(in_arena(1, draw), in_arena(4, draw));
}

TEST(HeerBootstrap, AReleasedTableKeepsTotalZerosAndEveryCellInItsInterval) {
  const auto counts = random_counts(100, 4, 300);
  const std::int64_t n = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  for (const double s : {2.0, 3.0}) {
    SCOPED_TRACE(s);
    const HeerBootstrapResult result = heer_bootstrap(counts, {.s = s, .tables = 1, .seed = kSeed});
    EXPECT_EQ(result.original_total, n);
    EXPECT_EQ(result.released_total, n);
    EXPECT_EQ(std::accumulate(result.released.begin(), result.released.end(), std::int64_t{0}), n);
    EXPECT_GE(result.attempts, 1);
    EXPECT_DOUBLE_EQ(result.acceptance_rate, 1.0 / static_cast<double>(result.attempts));
    EXPECT_EQ(result.s, s);
    EXPECT_EQ(result.tables, 1);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const QualityInterval interval = quality_interval(counts[i], n, s);
      ASSERT_GE(result.released[i], interval.lower) << i;
      ASSERT_LE(result.released[i], interval.upper) << i;
      if (counts[i] == 0) {
        ASSERT_EQ(result.released[i], 0) << i;
      }
    }
  }
}

TEST(HeerBootstrap, AnAveragedTableMeetsTheConditionOnItsMean) {
  const auto counts = random_counts(400, 5, 300);
  const std::int64_t n = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  for (const std::int64_t M : {3, 5}) {
    SCOPED_TRACE(M);
    const HeerBootstrapResult result = heer_bootstrap(counts, {.s = 2.0, .tables = M, .seed = kSeed});
    EXPECT_EQ(result.tables, M);
    EXPECT_EQ(std::accumulate(result.released.begin(), result.released.end(), std::int64_t{0}), result.released_total);
    // Rounding moves the mean by at most a half: round(T/M) lies within the rounded bounds of T/M.
    for (std::size_t i = 0; i < counts.size(); ++i) {
      const QualityInterval bounds = averaged_quality_interval(counts[i], n, 2.0, M);
      ASSERT_GE(result.released[i], (2 * bounds.lower + M) / (2 * M)) << i;
      ASSERT_LE(result.released[i], (2 * bounds.upper + M) / (2 * M)) << i;
      if (counts[i] == 0) {
        ASSERT_EQ(result.released[i], 0) << i;
      }
    }
    // Averaging makes acceptance likelier than one table of 400 cells at S = 2.
    EXPECT_LT(result.attempts, 50);
  }
}

TEST(HeerBootstrap, ResultsAreIdenticalForOneAndFourThreads) {
  // Wide enough to split subtrees over threads, S wide enough for 40 000 cells to pass together.
  const auto counts = random_counts(40000, 6, 2000);
  const HeerBootstrapOptions options{.s = 8.0, .tables = 3, .seed = kSeed};
  const auto run = [&] { return heer_bootstrap(counts, options); };
  const HeerBootstrapResult one = in_arena(1, run);
  const HeerBootstrapResult four = in_arena(4, run);
  EXPECT_EQ(one.released, four.released);
  EXPECT_EQ(one.attempts, four.attempts);
}

TEST(HeerBootstrap, ACellHoldingTheWholeTotalStays) {
  const std::vector<std::int64_t> counts{0, 0, 37, 0};
  const HeerBootstrapResult result = heer_bootstrap(counts, {.s = 1.0, .tables = 1, .seed = kSeed});
  EXPECT_EQ(result.released, counts);
  EXPECT_EQ(result.attempts, 1);
}

TEST(HeerBootstrap, RejectsBadInputsAndParameters) {
  const std::vector<std::int64_t> counts{3, 0, 5};
  const std::vector<std::int64_t> negative{3, -1, 5};
  try {
    heer_bootstrap(negative, {});
    FAIL() << "a negative count was accepted";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("cell 1"), std::string::npos) << error.what();
  }
  EXPECT_THROW(heer_bootstrap(counts, {.s = 0.0}), ParameterError);
  EXPECT_THROW(heer_bootstrap(counts, {.s = -2.0}), ParameterError);
  EXPECT_THROW(heer_bootstrap(counts, {.s = 2.0, .tables = 0}), ParameterError);
  EXPECT_THROW(heer_bootstrap(counts, {.s = 2.0, .tables = 1, .seed = 0, .max_attempts = 0}), ParameterError);
}

TEST(HeerBootstrap, GivesUpAfterTheCapOfAttemptsNamingTheRemedy) {
  // S = 0.05 admits only the original count for every cell of 500: no table passes in 5 attempts.
  const auto counts = random_counts(500, 7, 100);
  try {
    heer_bootstrap(counts, {.s = 0.05, .tables = 1, .seed = kSeed, .max_attempts = 5});
    FAIL() << "the cap was not applied";
  } catch (const ParameterError& error) {
    EXPECT_STREQ(error.what(), "no table met the quality condition in 5 attempts; raise S or M");
  }
}

// ---- cell perturbation with compensation --------------------------------------------------------------

struct Shape {
  std::vector<std::int64_t> dimensions;
  std::optional<std::size_t> preserved;
};

/// The totals of the slices of `dimension` (the whole total without one).
std::vector<std::int64_t> slice_totals(const std::vector<std::int64_t>& counts, const Shape& shape) {
  if (!shape.preserved) return {std::accumulate(counts.begin(), counts.end(), std::int64_t{0})};
  const std::size_t kept = *shape.preserved;
  std::size_t stride = 1;
  for (std::size_t d = kept + 1; d < shape.dimensions.size(); ++d)
    stride *= static_cast<std::size_t>(shape.dimensions[d]);
  const auto codes = static_cast<std::size_t>(shape.dimensions[kept]);
  std::vector<std::int64_t> totals(codes, 0);
  for (std::size_t i = 0; i < counts.size(); ++i) totals[(i / stride) % codes] += counts[i];
  return totals;
}

std::size_t slice_of(std::size_t cell, const Shape& shape) {
  if (!shape.preserved) return 0;
  std::size_t stride = 1;
  for (std::size_t d = *shape.preserved + 1; d < shape.dimensions.size(); ++d) {
    stride *= static_cast<std::size_t>(shape.dimensions[d]);
  }
  return (cell / stride) % static_cast<std::size_t>(shape.dimensions[*shape.preserved]);
}

TEST(CellPerturbation, RandomTablesKeepTotalsMarginsZerosAndIntervals) {
  const std::vector<Shape> shapes{{{60}, std::nullopt}, {{7, 9}, std::nullopt}, {{7, 9}, 0},
                                  {{7, 9}, 1},          {{4, 5, 6}, 1},         {{4, 5, 6}, 2},
                                  {{3, 1, 11}, 0},      {{1}, std::nullopt},    {{12}, 0}};
  int compensated = 0;
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    const Shape& shape = shapes[t];
    const auto cells = static_cast<std::size_t>(
        std::accumulate(shape.dimensions.begin(), shape.dimensions.end(), std::int64_t{1}, std::multiplies<>()));
    for (std::uint64_t stream = 0; stream < 6; ++stream) {
      const auto counts = random_counts(cells, 100 * t + stream, stream % 2 == 0 ? 40 : 4000);
      for (const double s : {1.5, 2.0, 3.0}) {
        SCOPED_TRACE("shape " + std::to_string(t) + " stream " + std::to_string(stream) + " S " + std::to_string(s));
        CellPerturbationOptions options;
        options.s = s;
        options.seed = kSeed + stream;
        options.dimensions = shape.dimensions;
        options.preserved_dimension = shape.preserved;
        const CellPerturbationResult result = perturb_cells(counts, options);
        const auto before = slice_totals(counts, shape);
        EXPECT_EQ(slice_totals(result.released, shape), before);
        // Feasibility of the compensation (tabular.md §5 "E compensation feasibility"): Σ l <= n <= Σ u.
        std::vector<std::int64_t> lower_sum(before.size(), 0);
        std::vector<std::int64_t> upper_sum(before.size(), 0);
        for (std::size_t i = 0; i < cells; ++i) {
          const std::size_t slice = slice_of(i, shape);
          const QualityInterval interval = quality_interval(counts[i], before[slice], s);
          lower_sum[slice] += interval.lower;
          upper_sum[slice] += interval.upper;
          ASSERT_GE(result.released[i], interval.lower) << i;
          ASSERT_LE(result.released[i], interval.upper) << i;
          if (counts[i] == 0) {
            ASSERT_EQ(result.released[i], 0) << i;
          }
        }
        for (std::size_t slice = 0; slice < before.size(); ++slice) {
          EXPECT_LE(lower_sum[slice], before[slice]);
          EXPECT_GE(upper_sum[slice], before[slice]);
        }
        EXPECT_EQ(result.original_total, std::accumulate(before.begin(), before.end(), std::int64_t{0}));
        EXPECT_EQ(result.perturbed_total - result.units_removed + result.units_added, result.original_total);
        EXPECT_GE(result.draws, result.perturbed_cells);
        if (result.units_removed + result.units_added > 0) ++compensated;
      }
    }
  }
  EXPECT_GT(compensated, 100);
}

TEST(CellPerturbation, ResultsAreIdenticalForOneAndFourThreads) {
  const auto counts = random_counts(200 * 1000, 8, 100000);
  for (const auto& preserved : {std::optional<std::size_t>{}, std::optional<std::size_t>{1}}) {
    CellPerturbationOptions options;
    options.s = 2.0;
    options.seed = kSeed;
    options.dimensions = {200, 1000};
    options.preserved_dimension = preserved;
    const auto run = [&] { return perturb_cells(counts, options); };
    const CellPerturbationResult one = in_arena(1, run);
    const CellPerturbationResult four = in_arena(4, run);
    EXPECT_EQ(one.released, four.released);
    EXPECT_EQ(one.draws, four.draws);
    EXPECT_EQ(one.perturbed_total, four.perturbed_total);
    EXPECT_GT(one.units_removed + one.units_added, 0);
    EXPECT_EQ(std::accumulate(one.released.begin(), one.released.end(), std::int64_t{0}),
              std::accumulate(counts.begin(), counts.end(), std::int64_t{0}));
  }
}

TEST(CellPerturbation, AcceptanceIsThatOfThePerCellCondition) {
  // One draw in about 1.05 is redrawn at S = 2 for large counts (P(|Z| >= 2) = 0.0455).
  const std::vector<std::int64_t> counts(2000, 5000);
  CellPerturbationOptions options;
  options.s = 2.0;
  options.seed = kSeed;
  const CellPerturbationResult result = perturb_cells(counts, options);
  EXPECT_EQ(result.perturbed_cells, 2000);
  EXPECT_NEAR(result.acceptance_rate, 0.955, 0.015);
}

TEST(CellPerturbation, RejectsBadInputsShapesAndParameters) {
  const std::vector<std::int64_t> counts{3, 0, 5, 4, 4, 1};
  CellPerturbationOptions options;
  try {
    perturb_cells(std::vector<std::int64_t>{3, 0, -5}, options);
    FAIL() << "a negative count was accepted";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("cell 2"), std::string::npos) << error.what();
  }
  options.s = 0.0;
  EXPECT_THROW(perturb_cells(counts, options), ParameterError);
  options.s = 2.0;
  options.dimensions = {4, 2};
  EXPECT_THROW(perturb_cells(counts, options), ParameterError);
  options.dimensions = {2, 3};
  options.preserved_dimension = 2;
  EXPECT_THROW(perturb_cells(counts, options), ParameterError);
  options.preserved_dimension = 1;
  EXPECT_NO_THROW(perturb_cells(counts, options));
  options.max_redraws = 0;
  EXPECT_THROW(perturb_cells(counts, options), ParameterError);
}

// ---- Table 1 ------------------------------------------------------------------------------------------

// tabular.md §3 "Analytic reproduction" and §5 "E Heer Table 1 analytic model".
TEST(HeerTable1, TheAnalyticModelReproducesItsPrintedDigitsAndThePaper) {
  const auto table = heer_table1_analytic();
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t column = 0; column < 9; ++column) {
      SCOPED_TRACE("k = " + std::to_string(k + 1) + ", column " + std::to_string(column));
      EXPECT_NEAR(table[k][column], kAnalyticTable1[k][column], 0.0005);
      EXPECT_NEAR(table[k][column], kPaperTable1[k][column], 0.006);
    }
  }
  EXPECT_THROW(heer_exact_disclosure(0.0, 1), ParameterError);
  EXPECT_THROW(heer_exact_disclosure(2.0, 0), ParameterError);
}

TEST(HeerTable1, TheBootstrapSimulationMatchesThePaperAndTheModel) {
  const auto model = heer_table1_analytic();
  constexpr std::int64_t kDraws = 1'000'000;
  for (std::size_t m = 0; m < kTable1Tables.size(); ++m) {
    for (std::size_t j = 0; j < kTable1S.size(); ++j) {
      const std::size_t column = 3 * m + j;
      SCOPED_TRACE("M = " + std::to_string(kTable1Tables[m]) + ", S = " + std::to_string(kTable1S[j]));
      const auto simulation = simulate_exact_disclosure(DisclosureMethod::kBootstrap, kTable1S[j], kTable1Tables[m],
                                                        kDraws, kSeed + column);
      EXPECT_EQ(simulation.trials, kDraws);
      EXPECT_GE(simulation.attempts, kDraws);
      EXPECT_GT(simulation.acceptance_rate, 0.5);
      EXPECT_LE(simulation.acceptance_rate, 1.0);
      for (std::size_t k = 0; k < 3; ++k) {
        const double p = simulation.probability[k];
        const double se = std::sqrt(p * (1 - p) / static_cast<double>(simulation.released[k]));
        EXPECT_NEAR(p, kPaperTable1[k][column], 0.01) << "k = " << k + 1;
        EXPECT_NEAR(p, model[k][column], 4.5 * se) << "k = " << k + 1;
      }
    }
  }
}

TEST(HeerTable1, TheCellMethodSimulationMatchesTheColumnWithoutAveraging) {
  const auto model = heer_table1_analytic();
  constexpr std::int64_t kDraws = 1'000'000;
  for (std::size_t j = 0; j < kTable1S.size(); ++j) {
    SCOPED_TRACE("S = " + std::to_string(kTable1S[j]));
    const auto simulation = simulate_exact_disclosure(DisclosureMethod::kCell, kTable1S[j], 1, kDraws, kSeed + 50 + j);
    for (std::size_t k = 0; k < 3; ++k) {
      const double p = simulation.probability[k];
      const double se = std::sqrt(p * (1 - p) / static_cast<double>(simulation.released[k]));
      EXPECT_NEAR(p, kPaperTable1[k][j], 0.01) << "k = " << k + 1;
      EXPECT_NEAR(p, model[k][j], 4.5 * se) << "k = " << k + 1;
    }
  }
  EXPECT_THROW(simulate_exact_disclosure(DisclosureMethod::kCell, 2.0, 3, 100, kSeed), ParameterError);
  EXPECT_THROW(simulate_exact_disclosure(DisclosureMethod::kBootstrap, 2.0, 0, 100, kSeed), ParameterError);
  EXPECT_THROW(simulate_exact_disclosure(DisclosureMethod::kBootstrap, -1.0, 1, 100, kSeed), ParameterError);
}

TEST(HeerTable1, TheSimulationIsIdenticalForOneAndFourThreads) {
  const auto run = [] { return simulate_exact_disclosure(DisclosureMethod::kBootstrap, 2.0, 3, 50000, kSeed); };
  const ExactDisclosureSimulation one = in_arena(1, run);
  const ExactDisclosureSimulation four = in_arena(4, run);
  EXPECT_EQ(one.released, four.released);
  EXPECT_EQ(one.exact, four.exact);
  EXPECT_EQ(one.attempts, four.attempts);
}

}  // namespace
}  // namespace sdc::tables
