#include "kernels/bootstrap/replicate_risk.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/key_grouping.h"
#include "kernels/risk/frequency_count.h"
#include "kernels/risk/household_risk.h"

namespace sdc {
namespace {

constexpr std::uint64_t kSeed = 77031;

/// Records as the distributed composition hands them to a rank.
struct Records {
  std::vector<std::uint32_t> record_class;
  std::vector<std::uint64_t> units;
  std::vector<double> weights;

  void push(std::uint32_t c, std::uint64_t u, double w) {
    record_class.push_back(c);
    units.push_back(u);
    weights.push_back(w);
  }
};

/// Splits records over `ranks` by class (each class whole on one rank), in a scrambled record order.
std::vector<Records> split_by_class(const Records& all, std::uint32_t ranks, bool interleaved, std::uint32_t classes) {
  std::vector<Records> parts(ranks);
  for (std::size_t j = 0; j < all.record_class.size(); ++j) {
    const std::size_t i = all.record_class.size() - 1 - j;  // reversed arrival order
    const std::uint32_t c = all.record_class[i];
    const std::uint32_t owner =
        interleaved ? c % ranks : static_cast<std::uint32_t>(std::uint64_t{c} * ranks / classes);
    parts[owner].push(c, all.units[i], all.weights[i]);
  }
  return parts;
}

ReplicateRiskPartial run_split(const Records& all, std::uint32_t ranks, bool interleaved, std::uint32_t classes,
                               const ReplicateDesign& design, std::uint64_t b0, std::uint64_t b1,
                               const ReplicateRiskOptions& options = {}) {
  const auto parts = split_by_class(all, ranks, interleaved, classes);
  std::vector<ReplicateRiskPartial> partials;
  for (const auto& part : parts) {
    const auto plan = make_replicate_risk_plan(part.record_class, part.units, part.weights, options);
    partials.push_back(replicate_risk_local(plan, design, b0, b1));
  }
  // Merge in reverse rank order: the order must not matter.
  ReplicateRiskPartial total = partials.back();
  for (std::size_t r = partials.size() - 1; r-- > 0;) replicate_risk_merge(total, partials[r]);
  return total;
}

// ---- oracles ---------------------------------------------------------------------------------------

TEST(ReplicateRiskOracle, FrancdatFullSampleReproducesTheGlobalRisk) {
  // risk.md §11 "E francdat": classes by (Key1..Key4), weights w; ER = 0.966526, global 0.1208158.
  Records francdat;
  const std::vector<std::uint32_t> classes{0, 1, 1, 2, 3, 4, 5, 0};
  const std::vector<double> weights{18, 45.5, 39, 17, 541, 8, 5, 92};
  for (std::size_t i = 0; i < 8; ++i) francdat.push(classes[i], i, weights[i]);
  const auto plan = make_replicate_risk_plan(francdat.record_class, francdat.units, francdat.weights, {});
  const auto full = replicate_risk_finalize(replicate_risk_full_sample(plan));
  EXPECT_EQ(full.records.at(0), 8U);
  EXPECT_EQ(full.sample_uniques.at(0), 4U);
  EXPECT_EQ(full.records_below_k.at(0), 8U);
  EXPECT_NEAR(full.expected_reidentifications.at(0), 0.966526, 0.5e-6);
  EXPECT_NEAR(full.global_risk.at(0), 0.1208158, 0.5e-7);
}

TEST(ReplicateRiskOracle, UniqueSurvivalIsOneOverEForOneToFourRanks) {
  // bootstrap.md §9 "E unique survival": a sample unique stays a unique class in a Poisson replicate
  // with probability P(m = 1) = e^-1 = 0.3679.
  constexpr std::uint32_t kUniques = 20000;
  constexpr std::uint64_t kReplicates = 40;
  Records uniques;
  for (std::uint32_t i = 0; i < kUniques; ++i) uniques.push(i, 1000000 + 3 * std::uint64_t{i}, 20.0 + i % 50);
  const auto design = ReplicateDesign::poisson(kSeed);
  const auto one_rank = run_split(uniques, 1, false, kUniques, design, 0, kReplicates);
  for (std::uint32_t ranks = 2; ranks <= 4; ++ranks) {
    for (bool interleaved : {false, true}) {
      EXPECT_EQ(run_split(uniques, ranks, interleaved, kUniques, design, 0, kReplicates), one_rank) << ranks;
    }
  }
  EXPECT_EQ(one_rank.unique_survivors, one_rank.sample_uniques) << "every class is a full-sample unique";
  const double survived = static_cast<double>(
      std::accumulate(one_rank.sample_uniques.begin(), one_rank.sample_uniques.end(), std::uint64_t{0}));
  const double trials = double{kUniques} * kReplicates;
  const double rate = survived / trials;
  EXPECT_NEAR(rate, 0.3679, 4.0 * std::sqrt(0.3679 * (1 - 0.3679) / trials));
  EXPECT_NEAR(std::exp(-1.0), 0.3679, 0.5e-4);
}

TEST(ReplicateRiskOracle, UniqueSurvivalUnderTheMultinomialBootstrap) {
  // Classical bootstrap: P(m = 1) = (1 - 1/n)^(n-1), 0.3679 for large n as well.
  constexpr std::uint32_t kUniques = 20000;
  constexpr std::uint64_t kReplicates = 40;
  Records uniques;
  for (std::uint32_t i = 0; i < kUniques; ++i) uniques.push(i, i, 30.0);
  const auto design = ReplicateDesign::multinomial(kSeed, kUniques);
  const auto one_rank = run_split(uniques, 1, false, kUniques, design, 0, kReplicates);
  for (std::uint32_t ranks = 2; ranks <= 4; ++ranks) {
    EXPECT_EQ(run_split(uniques, ranks, true, kUniques, design, 0, kReplicates), one_rank) << ranks;
  }
  for (auto n : one_rank.records) EXPECT_EQ(n, kUniques);
  const double survived = static_cast<double>(
      std::accumulate(one_rank.sample_uniques.begin(), one_rank.sample_uniques.end(), std::uint64_t{0}));
  const double trials = double{kUniques} * kReplicates;
  const double p = std::pow(1.0 - 1.0 / kUniques, kUniques - 1.0);
  EXPECT_NEAR(survived / trials, p, 4.0 * std::sqrt(p * (1 - p) / trials));
}

// ---- partition and thread invariance -----------------------------------------------------------

/// About 3000 persons in households of 1..6, five census-like keys, weights 10..100.
struct SmallCensus {
  Records records;
  std::uint32_t classes = 0;
  std::uint64_t households = 0;
};

SmallCensus small_census() {
  std::mt19937_64 generator(5);
  std::vector<std::vector<std::int32_t>> codes(5);
  std::vector<std::uint64_t> household;
  std::vector<double> weight;
  const std::vector<std::int32_t> levels{2, 20, 4, 6, 30};
  for (std::uint64_t h = 0; h < 1200; ++h) {
    const std::uint64_t size = 1 + generator() % 6;
    const auto area = static_cast<std::int32_t>(generator() % 30);
    const double w = 10.0 + static_cast<double>(generator() % 9001) / 100.0;
    for (std::uint64_t p = 0; p < size; ++p) {
      for (std::size_t k = 0; k < 4; ++k) {
        codes[k].push_back(static_cast<std::int32_t>(generator() % static_cast<std::uint64_t>(levels[k])));
      }
      codes[4].push_back(area);
      household.push_back(h);
      weight.push_back(w);
    }
  }
  KeyColumns keys;
  keys.level_counts = levels;
  for (const auto& c : codes) keys.codes.emplace_back(c);
  const KeyGrouping grouping = group_by_keys(keys);
  SmallCensus census;
  census.classes = static_cast<std::uint32_t>(grouping.class_count());
  census.households = 1200;
  for (std::size_t i = 0; i < household.size(); ++i)
    census.records.push(grouping.record_class[i], household[i], weight[i]);
  return census;
}

TEST(ReplicateRiskPartitionInvariance, StatisticsAreIdenticalForOneToFourRanksOneOrTwoThreadsAndAnyBatch) {
  const SmallCensus census = small_census();
  const std::vector<ReplicateDesign> designs{ReplicateDesign::poisson(kSeed),
                                             ReplicateDesign::multinomial(kSeed, census.households)};
  for (const auto& design : designs) {
    SCOPED_TRACE(static_cast<int>(design.scheme));
    const auto reference = run_split(census.records, 1, false, census.classes, design, 10, 30);
    for (int threads : {1, 2}) {
      tbb::task_arena arena(threads);
      for (std::uint32_t ranks = 1; ranks <= 4; ++ranks) {
        for (bool interleaved : {false, true}) {
          for (std::size_t batch : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
            ReplicateRiskOptions options;
            options.batch_replicates = batch;
            ReplicateRiskPartial got;
            arena.execute(
                [&] { got = run_split(census.records, ranks, interleaved, census.classes, design, 10, 30, options); });
            EXPECT_EQ(got, reference) << threads << " threads, " << ranks << " ranks, batch " << batch;
          }
        }
      }
    }
    // A sub-range of replicates is the same slice of the series.
    const auto slice = run_split(census.records, 3, true, census.classes, design, 17, 21);
    for (std::size_t b = 0; b < 4; ++b) EXPECT_EQ(slice.expected[b], reference.expected[7 + b]);
  }
}

TEST(ReplicateRiskPartitionInvariance, ClusterReplicatesMoveWholeHouseholds) {
  // Under the cluster multinomial design every household appears m times with all its members, so n^(b)
  // is the sum of the drawn households' sizes; with one record per household it would equal the households.
  const SmallCensus census = small_census();
  const auto design = ReplicateDesign::multinomial(kSeed, census.households);
  const auto partial = run_split(census.records, 2, true, census.classes, design, 0, 5);
  std::vector<std::uint64_t> size(census.households, 0);
  for (auto u : census.records.units) ++size[u];
  std::vector<std::uint64_t> households(census.households);
  std::iota(households.begin(), households.end(), 0);
  std::vector<std::uint32_t> m(5 * census.households);
  fill_multiplicities(design, 0, 5, households, m);
  for (std::size_t b = 0; b < 5; ++b) {
    std::uint64_t expected = 0;
    for (std::size_t h = 0; h < census.households; ++h) expected += m[b * census.households + h] * size[h];
    EXPECT_EQ(partial.records[b], expected) << b;
  }
}

// ---- full sample agrees with the risk kernels -------------------------------------------------

TEST(ReplicateRisk, FullSampleAgreesWithFrequencyCountsAndIndividualRisk) {
  const SmallCensus census = small_census();
  const auto& r = census.records;
  const auto plan = make_replicate_risk_plan(r.record_class, r.units, r.weights, {});
  const auto full = replicate_risk_finalize(replicate_risk_full_sample(plan));

  std::vector<std::int64_t> counts(census.classes, 0);
  std::vector<ExactSum> weight_sums(census.classes);
  for (std::size_t i = 0; i < r.record_class.size(); ++i) {
    ++counts[r.record_class[i]];
    weight_sums[r.record_class[i]].add(r.weights[i]);
  }
  const auto summary = frequency_count_finalize(counts, 3);
  EXPECT_EQ(full.sample_uniques.at(0), static_cast<std::uint64_t>(summary.sample_uniques));
  EXPECT_EQ(full.records_below_k.at(0), static_cast<std::uint64_t>(summary.records_below_k));
  EXPECT_EQ(full.records.at(0), r.record_class.size());

  std::vector<double> f_per_record;
  std::vector<double> weight_sum_per_record;
  for (std::size_t i = 0; i < r.record_class.size(); ++i) {
    f_per_record.push_back(static_cast<double>(counts[r.record_class[i]]));
    weight_sum_per_record.push_back(weight_sums[r.record_class[i]].value());
  }
  const auto risk = individual_risk(f_per_record, weight_sum_per_record, {});
  const auto global = global_risk_finalize(global_risk_local(risk.risk));
  EXPECT_NEAR(full.expected_reidentifications.at(0), global.expected_reidentifications,
              1e-12 * global.expected_reidentifications);
  EXPECT_NEAR(full.global_risk.at(0), global.risk, 1e-12 * global.risk);
}

TEST(ReplicateRisk, ReplicateStatisticsMatchABruteForceRecount) {
  // Per replicate: multiplicities by household, class counts recounted directly, risks by individual_risk.
  const SmallCensus census = small_census();
  const auto& r = census.records;
  const auto design = ReplicateDesign::poisson(kSeed);
  const auto plan = make_replicate_risk_plan(r.record_class, r.units, r.weights, {});
  const auto series = replicate_risk_finalize(replicate_risk_local(plan, design, 0, 6));
  std::vector<std::uint64_t> households(census.households);
  std::iota(households.begin(), households.end(), 0);
  std::vector<std::uint32_t> m(6 * census.households);
  fill_multiplicities(design, 0, 6, households, m);
  for (std::size_t b = 0; b < 6; ++b) {
    std::vector<double> f(census.classes, 0.0);
    std::vector<double> F(census.classes, 0.0);
    std::vector<std::uint64_t> size(census.classes, 0);
    for (std::size_t i = 0; i < r.record_class.size(); ++i) ++size[r.record_class[i]];
    for (std::size_t i = 0; i < r.record_class.size(); ++i) {
      const double mi = m[b * census.households + r.units[i]];
      f[r.record_class[i]] += mi;
      F[r.record_class[i]] += mi * r.weights[i];
    }
    std::vector<double> drawn_f;
    std::vector<double> drawn_weight_sums;
    std::uint64_t uniques = 0;
    std::uint64_t survivors = 0;
    std::uint64_t below = 0;
    std::uint64_t n = 0;
    for (std::size_t c = 0; c < census.classes; ++c) {
      if (size[c] == 1 && f[c] == 1) ++survivors;
      if (f[c] == 0) continue;
      drawn_f.push_back(f[c]);
      drawn_weight_sums.push_back(F[c]);
      n += static_cast<std::uint64_t>(f[c]);
      if (f[c] == 1) ++uniques;
      if (f[c] < 3) below += static_cast<std::uint64_t>(f[c]);
    }
    const auto risk = individual_risk(drawn_f, drawn_weight_sums, {});
    double expected = 0.0;
    for (std::size_t j = 0; j < drawn_f.size(); ++j) expected += drawn_f[j] * risk.risk[j];
    EXPECT_EQ(series.records[b], n) << b;
    EXPECT_EQ(series.sample_uniques[b], uniques) << b;
    EXPECT_EQ(series.unique_survivors[b], survivors) << b;
    EXPECT_LE(series.unique_survivors[b], series.sample_uniques[b]) << b;
    EXPECT_EQ(series.records_below_k[b], below) << b;
    EXPECT_NEAR(series.expected_reidentifications[b], expected, 1e-12 * expected) << b;
  }
}

TEST(ReplicateRisk, ReplicateSeriesAreCentredOnTheFullSampleForSmoothStatistics) {
  // The replicate size averages n; ER of the replicates stays in a plausible band around the estimate.
  const SmallCensus census = small_census();
  const auto& r = census.records;
  const auto plan = make_replicate_risk_plan(r.record_class, r.units, r.weights, {});
  const auto series = replicate_risk_finalize(replicate_risk_local(plan, ReplicateDesign::poisson(kSeed), 0, 200));
  std::vector<double> sizes(series.records.begin(), series.records.end());
  const auto size_summary = summarize_replicates(sizes, static_cast<double>(r.record_class.size()));
  // Poisson cluster bootstrap: Var n^(b) = Σ_h size_h² over households.
  std::vector<double> size(census.households, 0.0);
  for (auto u : r.units) size[u] += 1.0;
  double variance = 0.0;
  for (double s : size) variance += s * s;
  EXPECT_NEAR(size_summary.bias, 0.0, 4.0 * std::sqrt(variance / 200.0));
  EXPECT_NEAR(size_summary.standard_error, std::sqrt(variance), 0.25 * std::sqrt(variance));
  for (double er : series.expected_reidentifications) EXPECT_GT(er, 0.0);
}

// ---- naive flag, fixed point, errors ---------------------------------------------------------------

TEST(ReplicateRisk, MarksUniquenessBasedStatisticsAsNaive) {
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kSampleUniques), BootstrapValidity::kNaive);
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kRecordsBelowK), BootstrapValidity::kNaive);
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kTau1), BootstrapValidity::kNaive);
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kTau2), BootstrapValidity::kNaive);
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kSuda), BootstrapValidity::kNaive);
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kReplicateSize), BootstrapValidity::kValid);
  EXPECT_EQ(naive_bootstrap_validity(BootstrappedStatistic::kGlobalRisk), BootstrapValidity::kValid);
}

TEST(FixedPointSum, AddsExactlyInAnyOrder) {
  const std::vector<double> terms{0.1, 1e-10, 3.75, 0x1p-60, 12345.678, 0.3, 1e-19};
  FixedPointSum forward;
  for (double t : terms) forward.add(t);
  FixedPointSum backward;
  for (auto it = terms.rbegin(); it != terms.rend(); ++it) backward.add(*it);
  EXPECT_EQ(forward, backward);
  FixedPointSum a;
  FixedPointSum b;
  for (std::size_t i = 0; i < terms.size(); ++i) (i % 2 == 0 ? a : b).add(terms[i]);
  a.merge(b);
  EXPECT_EQ(a, forward);
  EXPECT_NEAR(forward.value(), 12349.8280000001, 1e-9);
  // Carries from the fraction into the integer part.
  FixedPointSum halves;
  for (int i = 0; i < 6; ++i) halves.add(0.5);
  EXPECT_EQ(halves.high, 3U);
  EXPECT_EQ(halves.low, 0U);
}

TEST(ReplicateRisk, RejectsBadInputNamingTheColumn) {
  const std::vector<std::uint32_t> classes{0, 0, 1};
  const std::vector<std::uint64_t> units{0, 1, 2};
  const auto message_of = [&](std::span<const std::uint64_t> u, std::span<const double> w,
                              const ReplicateRiskOptions& options) -> std::string {
    try {
      make_replicate_risk_plan(classes, u, w, options);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  const std::vector<double> good{2, 3, 4};
  const std::vector<double> small{2, 0.5, 4};
  const std::vector<double> nan{2, std::nan(""), 4};
  EXPECT_NE(message_of(std::span(units).first(2), good, {}).find("unit ids"), std::string::npos);
  EXPECT_NE(message_of(units, std::span(good).first(2), {}).find("weights"), std::string::npos);
  EXPECT_NE(message_of(units, small, {}).find("below 1"), std::string::npos);
  EXPECT_NE(message_of(units, nan, {}).find("not finite"), std::string::npos);
  ReplicateRiskOptions compat;
  compat.risk.mode = RiskMode::kCompat;
  EXPECT_EQ(message_of(units, small, compat), "");
  ReplicateRiskOptions bad_k;
  bad_k.k = 0;
  EXPECT_THROW(make_replicate_risk_plan(classes, units, good, bad_k), ParameterError);
}

}  // namespace
}  // namespace sdc
