// Runs under mpirun with any number of ranks (CTest: 1 and 3): every rank generates the whole file
// from global row ids, takes its share, and compares the distributed counts of its records with the
// kernel run on the whole file in one process.

#include "distributed/compose/wildcard_frequency.h"

#include <gtest/gtest.h>

#include "distributed/comm.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/risk/wildcard_frequency.h"
#include "tests/distributed/rank_split.h"

namespace sdc::distributed {
namespace {

constexpr std::int64_t kRows = 30011;
const std::vector<std::int32_t> kLevels{2, 30, 5, 7, 3};

struct File {
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<double> weights;

  KeyColumns view(std::int64_t first, std::int64_t count) const { return key_columns_of(codes, kLevels, first, count); }
};

/// Codes and weights as functions of the row id; `missing_rate[j]` of key j missing.
File make_file(const std::vector<double>& missing_rate) {
  const RecordRng rng(77, StepId::kRiskSimulation);
  File file;
  file.codes.assign(kLevels.size(), std::vector<std::int32_t>(static_cast<std::size_t>(kRows)));
  file.weights.resize(static_cast<std::size_t>(kRows));
  for (std::size_t i = 0; i < file.weights.size(); ++i) {
    for (std::size_t j = 0; j < kLevels.size(); ++j) {
      const auto bits = rng.bits({.unit = i, .draw = j});
      const bool missing = RecordRng::uniform_from_bits(bits[0]) < missing_rate[j];
      file.codes[j][i] = missing ? -1 : static_cast<std::int32_t>(bits[1] % static_cast<std::uint64_t>(kLevels[j]));
    }
    file.weights[i] = 1.0 + rng.uniform({.unit = i, .draw = 99}) * 400.0;
  }
  return file;
}

void expect_equals_kernel(const File& file, double alpha, std::int64_t k) {
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, kRows);
  const auto distributed = distributed_wildcard_frequency_count(
      comm, file.view(first, count),
      std::span(file.weights).subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(count)), alpha, k);

  const auto local = frequency_count_local(file.view(0, kRows), file.weights);
  const auto patterns = wildcard_frequency(local.classes, kLevels, alpha);
  const auto whole = wildcard_frequency_assign(local.record_class, patterns);
  ASSERT_EQ(distributed.records.fk.size(), static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < distributed.records.fk.size(); ++i) {
    const auto row = static_cast<std::size_t>(first) + i;
    ASSERT_EQ(distributed.records.fk[i], whole.fk[row]) << "row " << row << " alpha " << alpha;
    ASSERT_EQ(distributed.records.fk_weighted[i], whole.fk_weighted[row]) << "row " << row << " alpha " << alpha;
  }
  const auto summary = wildcard_frequency_finalize(local.classes.counts, patterns.f, k);
  EXPECT_EQ(distributed.summary.records, kRows);
  EXPECT_EQ(distributed.summary.classes, summary.classes);
  EXPECT_EQ(distributed.summary.sample_uniques, summary.sample_uniques);
  EXPECT_EQ(distributed.summary.records_below_k, summary.records_below_k);
  EXPECT_EQ(distributed.summary.classes_below_k, summary.classes_below_k);
  EXPECT_EQ(distributed.summary.k, k);
}

TEST(DistributedWildcardFrequency, EqualsTheKernelInOneProcess) {
  const File file = make_file({0.02, 0.05, 0.0, 0.1, 0.3});
  for (double alpha : {1.0, 0.5, 0.0}) expect_equals_kernel(file, alpha, 3);
}

TEST(DistributedWildcardFrequency, EqualsTheKernelWhenOnlyTheLastRowsHaveMissingKeys) {
  File file = make_file({0, 0, 0, 0, 0});
  for (std::int64_t row = kRows - 40; row < kRows; ++row)
    file.codes[static_cast<std::size_t>(row % 5)][static_cast<std::size_t>(row)] = -1;
  expect_equals_kernel(file, 0.5, 2);
}

TEST(DistributedWildcardFrequency, WithoutMissingKeysIsTheCompleteFrequencyCountBitForBit) {
  const File file = make_file({0, 0, 0, 0, 0});
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, kRows);
  const auto keys = file.view(first, count);
  const auto weights =
      std::span(file.weights).subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(count));
  const auto wildcard = distributed_wildcard_frequency_count(comm, keys, weights, 0.5, 3);
  const auto complete = distributed_frequency_count(comm, keys, weights, 3);
  EXPECT_EQ(wildcard.records.fk, complete.records.fk);
  EXPECT_EQ(wildcard.records.fk_weighted, complete.records.fk_weighted);
  EXPECT_EQ(wildcard.summary.classes, complete.summary.classes);
  EXPECT_EQ(wildcard.summary.sample_uniques, complete.summary.sample_uniques);
  EXPECT_EQ(wildcard.summary.records_below_k, complete.summary.records_below_k);
  expect_equals_kernel(file, 0.5, 3);
}

TEST(DistributedWildcardFrequency, RejectsAlphaOutsideTheUnitIntervalOnEveryRank) {
  const File file = make_file({0.1, 0, 0, 0, 0});
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, kRows);
  EXPECT_THROW(distributed_wildcard_frequency_count(comm, file.view(first, count), {}, 1.25, 3), ParameterError);
}

}  // namespace
}  // namespace sdc::distributed
