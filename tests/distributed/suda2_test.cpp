// Runs under mpirun with any number of ranks (CTest: 1 and 3): every rank generates the whole file
// from global row ids, takes an uneven share, and compares distributed SUDA2 on its records with the
// kernel run on the whole file in one process with the local counter, bit for bit.

#include "distributed/compose/suda2.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "distributed/comm.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "tests/distributed/rank_split.h"

namespace sdc::distributed {
namespace {

constexpr std::int64_t kRows = 12007;
// Key 3 with key 1 or key 5 spans more than kDenseSubsetSpace tuples: those subsets take the shuffle.
const std::vector<std::int32_t> kLevels{2, 60, 4, 400, 6, 300};

struct File {
  std::vector<std::vector<std::int32_t>> codes;

  KeyColumns view(std::int64_t first, std::int64_t count) const { return key_columns_of(codes, kLevels, first, count); }
};

/// Skewed codes (the square of a uniform: low codes common, high codes rare), some missing in key 2.
File make_file() {
  const RecordRng rng(2027, StepId::kRiskSimulation);
  File file;
  file.codes.assign(kLevels.size(), std::vector<std::int32_t>(static_cast<std::size_t>(kRows)));
  for (std::size_t i = 0; i < static_cast<std::size_t>(kRows); ++i) {
    for (std::size_t j = 0; j < kLevels.size(); ++j) {
      const double u = rng.uniform({.unit = i, .draw = j});
      const bool missing = j == 2 && rng.uniform({.unit = i, .draw = 10 + j}) < 0.01;
      file.codes[j][i] = missing ? -1 : static_cast<std::int32_t>(u * u * kLevels[j]);
    }
  }
  return file;
}

void expect_equals_kernel(const Suda2Options& options) {
  const File file = make_file();
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, kRows);
  const KeyColumns mine = file.view(first, count);
  const DistributedSuda2 distributed = distributed_suda2(comm, mine, options);

  const KeyColumns all = file.view(0, kRows);
  const Suda2Local whole = suda2_local(all, make_local_subset_counter(all), options);
  const auto dis = suda2_dis_scores(whole.score, whole.partial, kLevels.size(), options);
  ASSERT_EQ(distributed.score.size(), static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < distributed.score.size(); ++i) {
    const auto row = static_cast<std::size_t>(first) + i;
    ASSERT_EQ(distributed.score[i], whole.score[row]) << "row " << row;
    ASSERT_EQ(distributed.dis[i], dis[row]) << "row " << row;
  }
  const Suda2Partial& total = distributed.total;
  EXPECT_EQ(total.unique_records, whole.partial.unique_records);
  EXPECT_EQ(total.pair_records, whole.partial.pair_records);
  EXPECT_EQ(total.scored_records, whole.partial.scored_records);
  EXPECT_EQ(total.msus_by_size, whole.partial.msus_by_size);
  EXPECT_EQ(total.score_sum.value(), whole.partial.score_sum.value());
  EXPECT_EQ(total.inverse_score_power_sum.value(), whole.partial.inverse_score_power_sum.value());
  EXPECT_EQ(distributed.score_max, *std::max_element(whole.score.begin(), whole.score.end()));
  EXPECT_GT(total.scored_records, 0);
  if (options.contributions) {
    ASSERT_TRUE(distributed.contributions.has_value());
    const auto expected = suda2_attribute_contributions(whole.partial);
    EXPECT_EQ(distributed.contributions->key_percent, expected.key_percent);
    EXPECT_EQ(distributed.contributions->level_percent, expected.level_percent);
  }
}

TEST(DistributedSuda2, EqualsTheKernelInOneProcess) {
  Suda2Options options;
  options.contributions = true;
  expect_equals_kernel(options);
}

TEST(DistributedSuda2, EqualsTheKernelWithIhsnWeightsAndASmallerMaximumSize) {
  Suda2Options options;
  options.max_size = 3;
  options.weights = Suda2Weights::kIhsn;
  options.dis_fraction = 0.2;
  expect_equals_kernel(options);
}

TEST(DistributedSubsetCounter, CountsEveryFlaggedRecordOverAllRanks) {
  // Key pair (3, 5): 401 x 301 tuples, the shuffle; key 0 alone: dense. Every record flagged.
  const File file = make_file();
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, kRows);
  const KeyColumns mine = file.view(first, count);
  const KeyColumns all = file.view(0, kRows);
  const auto distributed = make_distributed_subset_counter(comm, mine);
  const auto local = make_local_subset_counter(all);
  for (const std::vector<std::size_t>& subset : {std::vector<std::size_t>{3, 5}, std::vector<std::size_t>{0}}) {
    RecordBits mine_flags(record_bit_words(static_cast<std::size_t>(count)), ~std::uint64_t{0});
    RecordBits all_flags(record_bit_words(static_cast<std::size_t>(kRows)), ~std::uint64_t{0});
    std::vector<std::uint8_t> counts(static_cast<std::size_t>(count)), expected(static_cast<std::size_t>(kRows));
    distributed(subset, mine_flags, counts);
    local(subset, all_flags, expected);
    for (std::size_t i = 0; i < counts.size(); ++i)
      ASSERT_EQ(counts[i], expected[static_cast<std::size_t>(first) + i])
          << "row " << first + static_cast<std::int64_t>(i);
  }
}

TEST(DistributedSubsetCounter, ThrowsOnEveryRankWhenRanksCountDifferentSubsets) {
  const auto comm = Communicator::world();
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const File file = make_file();
  const auto [first, count] = uneven_share(comm, kRows);
  const KeyColumns mine = file.view(first, count);
  const auto counter = make_distributed_subset_counter(comm, mine);
  RecordBits flags(record_bit_words(static_cast<std::size_t>(count)), ~std::uint64_t{0});
  std::vector<std::uint8_t> counts(static_cast<std::size_t>(count));
  const std::vector<std::size_t> subset{comm.is_coordinator() ? std::size_t{0} : std::size_t{1}};
  EXPECT_THROW(counter(subset, flags, counts), InternalError);
}

TEST(DistributedSubsetCounter, RejectsACodeOutsideItsLevelsOnEveryRank) {
  // Only the last row is bad, so with several ranks only the last rank sees it.
  File file = make_file();
  file.codes[1].back() = kLevels[1];
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, kRows);
  const KeyColumns mine = file.view(first, count);
  EXPECT_THROW(make_distributed_subset_counter(comm, mine), InvalidInput);
}

}  // namespace
}  // namespace sdc::distributed
