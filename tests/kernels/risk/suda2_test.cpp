#include "kernels/risk/suda2.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <barrier>
#include <bit>
#include <numeric>
#include <random>
#include <thread>

#include "kernels/core/error.h"
#include "kernels/core/table.h"
#include "tests/kernels/key_columns_fixture.h"

namespace sdc {
namespace {

Suda2Local run_local(const Columns& columns, const Suda2Options& options) {
  const KeyColumns keys = columns.view();
  return suda2_local(keys, make_local_subset_counter(keys), options);
}

// risk.md §11 "E SUDA2": keys (a,b,c) = (1,1,1) (1,1,2) (1,2,1) (2,2,1) (2,3,1) (2,3,1) (3,3,2) as codes
// of their sorted levels.
Columns oracle_keys() { return {{{0, 0, 0, 1, 1, 1, 2}, {0, 0, 1, 1, 2, 2, 2}, {0, 1, 0, 0, 0, 0, 1}}, {3, 3, 2}}; }

TEST(Suda2, ReproducesTheRiskMdOracle) {
  const Suda2Options options;  // phi = 0.01, all sizes
  const auto local = run_local(oracle_keys(), options);
  EXPECT_EQ(local.score, (std::vector<double>{1, 2, 1, 1, 0, 0, 3}));
  EXPECT_EQ(local.partial.unique_records, 5);
  EXPECT_EQ(local.partial.pair_records, 2);
  const auto dis = suda2_dis_scores(local.score, local.partial, 3, options);
  const std::vector<double> expected{0.01822, 0.04226, 0.01822, 0.01822, 0, 0, 0.06826};
  ASSERT_EQ(dis.size(), expected.size());
  for (std::size_t i = 0; i < dis.size(); ++i) EXPECT_NEAR(dis[i], expected[i], 5e-6) << "record " << i;
  EXPECT_EQ(local.partial.msus_by_size, (std::vector<std::int64_t>{1, 6, 0}));
}

// Derived by hand from the definitions (sdcMicro's contributionPercent = contribution / score):
// record 7 has MSUs {a} (weight 2) and {b,c} (weight 1), so a = 2/3, b = c = 1/3; key totals a 5, b 5,
// c 4 of a score total 8; levels of a: 2, 1, 2 of 5.
TEST(Suda2, ContributionsOnTheOracle) {
  Suda2Options options;
  options.contributions = true;
  const auto local = run_local(oracle_keys(), options);
  EXPECT_EQ(local.contribution, (std::vector<double>{0, 1, 1, 1, 1, 2, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1}));
  const auto attributes = suda2_attribute_contributions(local.partial);
  EXPECT_EQ(attributes.key_percent, (std::vector<double>{62.5, 62.5, 50}));
  EXPECT_EQ(local.partial.level_offsets, (std::vector<std::size_t>{0, 3, 6}));
  EXPECT_EQ(attributes.level_percent, (std::vector<double>{40, 20, 40, 40, 40, 20, 25, 75}));
}

// The oracle with record 7's key a missing: a missing value never enters an MSU, so record 7 keeps
// only {b,c}; U and D treat missing as a value (record 7 stays unique). Scores 1,2,1,1,0,0,1;
// A = 4 + 2^-1.25; DIS by the formula of risk.md §9.
TEST(Suda2, MissingKeyValueNeverFormsAnMsu) {
  auto columns = oracle_keys();
  columns.codes[0][6] = kMissingCode;
  const Suda2Options options;
  const auto local = run_local(columns, options);
  EXPECT_EQ(local.score, (std::vector<double>{1, 2, 1, 1, 0, 0, 1}));
  EXPECT_EQ(local.partial.unique_records, 5);
  const auto dis = suda2_dis_scores(local.score, local.partial, 3, options);
  EXPECT_NEAR(dis[0], 0.0218380, 5e-8);
  EXPECT_NEAR(dis[1], 0.0504219, 5e-8);
  EXPECT_NEAR(dis[6], 0.0218380, 5e-8);
}

// Two keys (a,b) = (1,1) (1,2) (2,1) (2,1) (3,1): the reference pads a constant third key, so M' = 3:
// {a,b} of record 1 weighs 1, {b} of record 2 and {a} of record 5 weigh 2; Q = 1.25.
TEST(Suda2, PadsFewerThanThreeKeysLikeTheReference) {
  const Columns columns{{{0, 0, 1, 1, 2}, {0, 1, 0, 0, 0}}, {3, 2}};
  const Suda2Options options;
  const auto local = run_local(columns, options);
  EXPECT_EQ(local.score, (std::vector<double>{1, 2, 0, 0, 2}));
  EXPECT_EQ(local.partial.unique_records, 3);
  EXPECT_EQ(local.partial.pair_records, 2);
  EXPECT_DOUBLE_EQ(suda2_q(2), 1.25);
  const auto dis = suda2_dis_scores(local.score, local.partial, 2, options);
  EXPECT_NEAR(dis[0], 0.00921181, 5e-9);
  EXPECT_NEAR(dis[1], 0.0216348, 5e-8);
  EXPECT_EQ(dis[2], 0.0);
}

// original_scores = FALSE: an MSU of size s weighs (2^(M-s) - 1) / C(M, s): 1, 1/3, 0 for M = 3.
TEST(Suda2, IhsnWeightsOnTheOracle) {
  Suda2Options options;
  options.weights = Suda2Weights::kIhsn;
  EXPECT_DOUBLE_EQ(suda2_msu_weight(3, 1, Suda2Weights::kIhsn), 1.0);
  EXPECT_DOUBLE_EQ(suda2_msu_weight(3, 2, Suda2Weights::kIhsn), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(suda2_msu_weight(3, 3, Suda2Weights::kIhsn), 0.0);
  const auto local = run_local(oracle_keys(), options);
  const std::vector<double> expected{1.0 / 3, 2.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 4.0 / 3};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_DOUBLE_EQ(local.score[i], expected[i]) << "record " << i;
  const auto dis = suda2_dis_scores(local.score, local.partial, 3, options);
  EXPECT_NEAR(dis[0], 0.0178436, 5e-8);
  EXPECT_NEAR(dis[6], 0.0931947, 5e-8);
}

TEST(Suda2, ElliotWeightsAreFactorials) {
  EXPECT_EQ(suda2_msu_weight(8, 1, Suda2Weights::kElliot), 5040.0);
  EXPECT_EQ(suda2_msu_weight(8, 4, Suda2Weights::kElliot), 24.0);
  EXPECT_EQ(suda2_msu_weight(8, 8, Suda2Weights::kElliot), 1.0);
  EXPECT_DOUBLE_EQ(suda2_q(8), 1.0);
  EXPECT_DOUBLE_EQ(suda2_q(4), 1.2);
}

// Every key tuple occurs twice: no record is unique on any subset, so U = 0, D = n and DIS = 0.
TEST(Suda2, NoSampleUniquesGiveZeroScoresAndZeroDis) {
  const Columns columns{{{0, 0, 1, 1}, {1, 1, 0, 0}, {0, 0, 0, 0}}, {2, 2, 1}};
  const Suda2Options options;
  const auto local = run_local(columns, options);
  EXPECT_EQ(local.score, (std::vector<double>(4, 0.0)));
  EXPECT_EQ(local.partial.unique_records, 0);
  EXPECT_EQ(local.partial.pair_records, 4);
  EXPECT_EQ(local.partial.msu_count, 0);
  EXPECT_EQ(suda2_dis_scores(local.score, local.partial, 3, options), (std::vector<double>(4, 0.0)));
}

// ---- brute force: every subset, counts by a pairwise scan ----

Columns random_columns(std::size_t records, const std::vector<std::int32_t>& levels, double missing,
                       std::mt19937& generator) {
  Columns columns;
  columns.levels = levels;
  std::bernoulli_distribution is_missing(missing);
  for (auto l : levels) {
    std::uniform_int_distribution<std::int32_t> code(0, l - 1);
    std::vector<std::int32_t> c(records);
    for (auto& x : c) x = is_missing(generator) ? kMissingCode : code(generator);
    columns.codes.push_back(std::move(c));
  }
  return columns;
}

struct BruteForce {
  std::vector<double> score;
  std::vector<double> contribution;
  std::vector<std::int64_t> msus_by_size;
  std::int64_t unique_records = 0;
  std::int64_t pair_records = 0;
};

BruteForce brute_force(const Columns& columns, std::size_t max_size, Suda2Weights weights) {
  const std::size_t n = columns.records();
  const std::size_t m = columns.codes.size();
  const auto count_on = [&](std::uint32_t subset, std::size_t r) {
    std::size_t count = 0;
    for (std::size_t q = 0; q < n; ++q) {
      bool equal = true;
      for (std::size_t j = 0; j < m; ++j)
        if ((subset >> j & 1U) != 0 && columns.codes[j][q] != columns.codes[j][r]) equal = false;
      count += equal ? 1U : 0U;
    }
    return count;
  };
  const auto complete_on = [&](std::uint32_t subset, std::size_t r) {
    for (std::size_t j = 0; j < m; ++j)
      if ((subset >> j & 1U) != 0 && columns.codes[j][r] == kMissingCode) return false;
    return true;
  };
  BruteForce out;
  out.score.assign(n, 0.0);
  out.contribution.assign(n * m, 0.0);
  out.msus_by_size.assign(max_size, 0);
  const std::uint32_t all = (1U << m) - 1;
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t whole = count_on(all, r);
    out.unique_records += whole == 1 ? 1 : 0;
    out.pair_records += whole == 2 ? 1 : 0;
    // Scores accumulate level by level, subsets in increasing mask order: the kernel's order.
    for (std::size_t size = 1; size <= max_size; ++size) {
      for (std::uint32_t subset = 1; subset <= all; ++subset) {
        if (static_cast<std::size_t>(std::popcount(subset)) != size) continue;
        if (!complete_on(subset, r) || count_on(subset, r) != 1) continue;
        bool minimal = true;
        for (std::uint32_t proper = (subset - 1) & subset; proper != 0 && minimal; proper = (proper - 1) & subset)
          if (count_on(proper, r) == 1) minimal = false;
        if (!minimal) continue;
        const double weight = suda2_msu_weight(m, size, weights);
        out.score[r] += weight;
        ++out.msus_by_size[size - 1];
        for (std::size_t j = 0; j < m; ++j)
          if ((subset >> j & 1U) != 0) out.contribution[r * m + j] += weight;
      }
    }
  }
  return out;
}

TEST(Suda2, MsuScoresMatchBruteForceOnRandomData) {
  std::mt19937 generator(20260);  // test data only
  int cases = 0;
  for (std::size_t m = 1; m <= 6; ++m) {
    for (int repeat = 0; repeat < 8; ++repeat) {
      std::vector<std::int32_t> levels(m);
      for (auto& l : levels) l = std::uniform_int_distribution<std::int32_t>(2, 5)(generator);
      const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 60)(generator);
      const double missing = repeat % 2 == 0 ? 0.0 : 0.1;
      const auto columns = random_columns(n, levels, missing, generator);
      const std::size_t max_size = repeat < 4 ? m : std::uniform_int_distribution<std::size_t>(1, m)(generator);
      const Suda2Weights weights = repeat % 3 == 2 ? Suda2Weights::kIhsn : Suda2Weights::kElliot;
      Suda2Options options;
      options.max_size = max_size;
      options.weights = weights;
      options.contributions = true;
      const auto local = run_local(columns, options);
      const auto expected = brute_force(columns, max_size, weights);
      SCOPED_TRACE("keys " + std::to_string(m) + ", records " + std::to_string(n) + ", max_size " +
                   std::to_string(max_size));
      EXPECT_EQ(local.score, expected.score);
      EXPECT_EQ(local.contribution, expected.contribution);
      EXPECT_EQ(local.partial.msus_by_size, expected.msus_by_size);
      EXPECT_EQ(local.partial.unique_records, expected.unique_records);
      EXPECT_EQ(local.partial.pair_records, expected.pair_records);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 48);
}

// ---- the local counter ----

TEST(Suda2, LocalCounterCapsCountsAtThreeOnBothPaths) {
  std::mt19937 generator(7);
  // Small level counts: dense counting; one key with 2^20 levels: the grouping path.
  for (std::int32_t wide : {3, 1 << 20}) {
    auto columns = random_columns(3000, {4, 3, wide}, 0.05, generator);
    for (auto& x : columns.codes[2]) x = x < 0 ? x : x % 40;
    const KeyColumns keys = columns.view();
    const auto counter = make_local_subset_counter(keys);
    RecordBits flags(record_bit_words(keys.record_count()), 0);
    for (std::size_t i = 0; i < keys.record_count(); i += 3) flags[i / 64] |= std::uint64_t{1} << (i % 64);
    std::vector<std::uint8_t> counts(keys.record_count(), 0);
    const std::vector<std::size_t> subset{0, 2};
    counter(subset, flags, counts);
    for (std::size_t i = 0; i < keys.record_count(); i += 3) {
      std::size_t expected = 0;
      for (std::size_t q = 0; q < keys.record_count(); q += 3)
        expected += keys.codes[0][q] == keys.codes[0][i] && keys.codes[2][q] == keys.codes[2][i] ? 1U : 0U;
      ASSERT_EQ(counts[i], std::min<std::size_t>(expected, 3)) << "record " << i << ", levels " << wide;
    }
  }
}

// ---- split across ranks and thread counts ----

/// Simulated ranks running in lockstep: every rank's call for a subset waits for all ranks, then the
/// counts among the candidates of all ranks are handed back, as a distributed group-by would.
class LockstepCounter {
 public:
  LockstepCounter(const Columns& whole, std::vector<std::size_t> offsets)
      : whole_(whole),
        keys_(whole.view()),
        global_(make_local_subset_counter(keys_)),
        offsets_(std::move(offsets)),
        ranks_(offsets_.size() - 1),
        sync_(static_cast<std::ptrdiff_t>(ranks_)),
        flags_(ranks_),
        subsets_(ranks_),
        counts_(whole.records()) {}

  SubsetCounter for_rank(std::size_t rank) {
    return [this, rank](std::span<const std::size_t> subset, std::span<const std::uint64_t> candidates,
                        std::span<std::uint8_t> out) {
      flags_[rank].assign(candidates.begin(), candidates.end());
      subsets_[rank].assign(subset.begin(), subset.end());
      sync_.arrive_and_wait();
      if (rank == 0) gather_and_count();
      sync_.arrive_and_wait();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = counts_[offsets_[rank] + i];
    };
  }
  bool subsets_agreed() const { return agreed_; }

 private:
  void gather_and_count() {
    RecordBits global(record_bit_words(whole_.records()), 0);
    for (std::size_t r = 0; r < ranks_; ++r) {
      if (subsets_[r] != subsets_[0]) agreed_ = false;
      for (std::size_t i = 0; i < offsets_[r + 1] - offsets_[r]; ++i)
        if ((flags_[r][i / 64] >> (i % 64) & 1U) != 0)
          global[(offsets_[r] + i) / 64] |= std::uint64_t{1} << ((offsets_[r] + i) % 64);
    }
    global_(subsets_[0], global, counts_);
  }

  const Columns& whole_;
  KeyColumns keys_;
  SubsetCounter global_;
  std::vector<std::size_t> offsets_;
  std::size_t ranks_;
  std::barrier<> sync_;
  std::vector<RecordBits> flags_;
  std::vector<std::vector<std::size_t>> subsets_;
  std::vector<std::uint8_t> counts_;
  bool agreed_ = true;
};

TEST(Suda2, SplitAcrossOneToFourRanksWithASharedCounterGivesIdenticalResults) {
  std::mt19937 generator(11);
  const auto columns = random_columns(5000, {2, 9, 4, 30, 6}, 0.02, generator);
  Suda2Options options;
  options.contributions = true;
  const auto whole = run_local(columns, options);
  const auto whole_dis = suda2_dis_scores(whole.score, whole.partial, 5, options);
  EXPECT_GT(whole.partial.msu_count, 1000);

  for (std::size_t ranks = 1; ranks <= 4; ++ranks) {
    // Uneven blocks, one of them empty when there are four ranks.
    std::vector<std::size_t> offsets{0};
    for (std::size_t r = 1; r < ranks; ++r)
      offsets.push_back(ranks == 4 && r == 2 ? offsets.back() : columns.records() * r / ranks + 37);
    offsets.push_back(columns.records());
    LockstepCounter counter(columns, offsets);
    std::vector<Suda2Local> locals(ranks);
    std::vector<KeyColumns> blocks;
    for (std::size_t r = 0; r < ranks; ++r) blocks.push_back(columns.view(offsets[r], offsets[r + 1] - offsets[r]));
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] { locals[r] = suda2_local(blocks[r], counter.for_rank(r), options); });
    for (auto& thread : threads) thread.join();
    EXPECT_TRUE(counter.subsets_agreed());

    Suda2Partial total = locals[0].partial;
    for (std::size_t r = 1; r < ranks; ++r) suda2_merge(total, locals[r].partial);
    std::vector<double> scores;
    std::vector<double> contributions;
    for (const auto& local : locals) {
      scores.insert(scores.end(), local.score.begin(), local.score.end());
      contributions.insert(contributions.end(), local.contribution.begin(), local.contribution.end());
    }
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    EXPECT_EQ(scores, whole.score);
    EXPECT_EQ(contributions, whole.contribution);
    EXPECT_EQ(total.unique_records, whole.partial.unique_records);
    EXPECT_EQ(total.pair_records, whole.partial.pair_records);
    EXPECT_EQ(total.msus_by_size, whole.partial.msus_by_size);
    EXPECT_EQ(total.inverse_score_power_sum.value(), whole.partial.inverse_score_power_sum.value());
    EXPECT_EQ(suda2_dis_scores(scores, total, 5, options), whole_dis);
    const auto split_attributes = suda2_attribute_contributions(total);
    const auto whole_attributes = suda2_attribute_contributions(whole.partial);
    EXPECT_EQ(split_attributes.key_percent, whole_attributes.key_percent);
    EXPECT_EQ(split_attributes.level_percent, whole_attributes.level_percent);
  }
}

TEST(Suda2, ResultsDoNotDependOnTheThreadCount) {
  std::mt19937 generator(5);
  // Enough records for several chunks, and a wide key so that both counting paths run.
  const auto columns = random_columns(120000, {2, 100, 5, 20, 3000}, 0.01, generator);
  Suda2Options options;
  options.contributions = true;
  options.max_size = 3;
  std::vector<Suda2Local> runs;
  for (int threads : {1, 2, 4}) {
    tbb::task_arena arena(threads);
    arena.execute([&] { runs.push_back(run_local(columns, options)); });
  }
  EXPECT_GT(runs[0].partial.msu_count, 10000);
  for (std::size_t t = 1; t < runs.size(); ++t) {
    EXPECT_EQ(runs[t].score, runs[0].score);
    EXPECT_EQ(runs[t].contribution, runs[0].contribution);
    EXPECT_EQ(runs[t].partial.inverse_score_power_sum.value(), runs[0].partial.inverse_score_power_sum.value());
    EXPECT_EQ(runs[t].partial.msus_by_size, runs[0].partial.msus_by_size);
  }
}

// ---- errors ----

TEST(Suda2, RejectsOptionsOutsideTheirRange) {
  const auto columns = oracle_keys();
  const KeyColumns keys = columns.view();
  const auto counter = make_local_subset_counter(keys);
  Suda2Options options;
  options.max_size = 4;
  EXPECT_THROW(suda2_local(keys, counter, options), ParameterError);
  options.max_size = 0;
  for (double phi : {0.0, -0.1, 1.5}) {
    options.dis_fraction = phi;
    EXPECT_THROW(suda2_local(keys, counter, options), ParameterError);
  }
  EXPECT_THROW(suda2_local(KeyColumns{}, counter, Suda2Options{}), ParameterError);
}

TEST(Suda2, RefusesASearchTooWideForLinearMemory) {
  Columns columns;
  columns.levels.assign(16, 2);
  columns.codes.assign(16, std::vector<std::int32_t>(4, 0));
  const KeyColumns keys = columns.view();
  const auto counter = make_local_subset_counter(keys);
  Suda2Options options;
  try {
    suda2_local(keys, counter, options);
    FAIL() << "expected ParameterError";
  } catch (const ParameterError& error) {
    EXPECT_NE(std::string(error.what()).find("max_size"), std::string::npos);
  }
  options.max_size = 4;  // C(16,3) + C(16,4) = 2380 subsets
  EXPECT_NO_THROW(suda2_local(keys, counter, options));
}

TEST(Suda2, RejectsCodesOutsideTheirLevels) {
  auto columns = oracle_keys();
  columns.codes[1][3] = 3;
  const KeyColumns keys = columns.view();
  try {
    make_local_subset_counter(keys);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("key variable 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace sdc
