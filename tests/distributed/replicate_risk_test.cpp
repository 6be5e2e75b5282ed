// Runs under mpirun with any number of ranks (CTest: 1 and 3): every rank generates the whole file from
// global row ids, takes an uneven share, and compares the distributed bootstrap replicates with the
// kernel run on the whole file in one process — bit for bit — and the unit numbering within strata with
// the sequential one.

#include "distributed/compose/replicate_risk.h"

#include <gtest/gtest.h>

#include "distributed/comm.h"
#include "kernels/core/record_rng.h"
#include "tests/distributed/rank_split.h"

namespace sdc::distributed {
namespace {

constexpr std::int64_t kRows = 20011;
const std::vector<std::int32_t> kLevels{2, 60, 4, 9, 5};

struct File {
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<std::uint64_t> households;  ///< three persons a household
  std::vector<double> weights;
  std::vector<std::int32_t> strata;  ///< 7 strata, arbitrary order over the rows

  KeyColumns view(std::int64_t first, std::int64_t count) const { return key_columns_of(codes, kLevels, first, count); }
};

File make_file() {
  const RecordRng rng(91, StepId::kRiskSimulation);
  File file;
  file.codes.assign(kLevels.size(), std::vector<std::int32_t>(static_cast<std::size_t>(kRows)));
  for (std::size_t i = 0; i < static_cast<std::size_t>(kRows); ++i) {
    const auto bits = rng.bits({.unit = i});
    for (std::size_t j = 0; j < kLevels.size(); ++j)
      file.codes[j][i] =
          static_cast<std::int32_t>((bits[j % 4] >> (16 * (j / 4))) % static_cast<std::uint64_t>(kLevels[j]));
    file.households.push_back(1000 + i / 3);
    file.weights.push_back(1.0 + rng.uniform({.unit = i, .draw = 1}) * 300.0);
    file.strata.push_back(static_cast<std::int32_t>(rng.bits({.unit = i, .draw = 2})[0] % 7));
  }
  return file;
}

void expect_same_series(const ReplicateRiskSeries& a, const ReplicateRiskSeries& b) {
  EXPECT_EQ(a.first_replicate, b.first_replicate);
  EXPECT_EQ(a.records, b.records);
  EXPECT_EQ(a.sample_uniques, b.sample_uniques);
  EXPECT_EQ(a.records_below_k, b.records_below_k);
  EXPECT_EQ(a.unique_survivors, b.unique_survivors);
  EXPECT_EQ(a.expected_reidentifications, b.expected_reidentifications);
  EXPECT_EQ(a.global_risk, b.global_risk);
}

void expect_equals_kernel(const File& file, std::span<const std::uint64_t> all_units, const ReplicateDesign& design) {
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share<std::size_t>(comm, kRows);
  ReplicateRiskOptions options;
  options.risk.weighted = true;
  options.k = 4;
  options.batch_replicates = 5;
  const auto distributed = distributed_replicate_risk(
      comm, file.view(static_cast<std::int64_t>(first), static_cast<std::int64_t>(count)),
      all_units.subspan(first, count), std::span(file.weights).subspan(first, count), options, design, 1, 13);

  const KeyGrouping whole = group_by_keys(file.view(0, kRows));
  const auto plan = make_replicate_risk_plan(whole.record_class, all_units, file.weights, options);
  expect_same_series(distributed.full_sample, replicate_risk_finalize(replicate_risk_full_sample(plan)));
  expect_same_series(distributed.replicates, replicate_risk_finalize(replicate_risk_local(plan, design, 1, 13)));
  EXPECT_EQ(distributed.replicates.records.size(), 12U);
  EXPECT_GT(distributed.full_sample.sample_uniques.at(0), 100U) << "the file has uniques to survive";
}

TEST(DistributedReplicateRisk, ClusterReplicatesEqualTheKernelInOneProcess) {
  const File file = make_file();
  expect_equals_kernel(file, file.households, ReplicateDesign::poisson(5));
}

TEST(DistributedReplicateRisk, MultinomialReplicatesEqualTheKernelInOneProcess) {
  const File file = make_file();
  std::vector<std::uint64_t> rows(static_cast<std::size_t>(kRows));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  expect_equals_kernel(file, rows, ReplicateDesign::multinomial(6, rows.size()));
}

TEST(DistributedReplicateRisk, NumbersUnitsWithinStrataInFileOrderForAnyPartition) {
  const File file = make_file();
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share<std::size_t>(comm, kRows);
  const auto numbered = number_units_within_strata(comm, std::span(file.strata).subspan(first, count), 7);

  // Sequentially: stratum h's units, in row order, get offsets[h], offsets[h] + 1, ...
  std::vector<std::uint64_t> offsets(8, 0);
  for (std::int32_t h : file.strata) ++offsets[static_cast<std::size_t>(h) + 1];
  for (std::size_t h = 0; h < 7; ++h) offsets[h + 1] += offsets[h];
  EXPECT_EQ(numbered.offsets, offsets);
  std::vector<std::uint64_t> next(offsets.begin(), offsets.end() - 1);
  std::vector<std::uint64_t> expected;
  for (std::int32_t h : file.strata) expected.push_back(next[static_cast<std::size_t>(h)]++);
  EXPECT_EQ(numbered.numbers,
            std::vector<std::uint64_t>(expected.begin() + static_cast<std::ptrdiff_t>(first),
                                       expected.begin() + static_cast<std::ptrdiff_t>(first + count)));
}

TEST(DistributedReplicateRisk, StratifiedReplicatesEqualTheKernelInOneProcess) {
  const File file = make_file();
  // Every rank numbers the whole file the way number_units_within_strata numbers its share.
  std::vector<std::uint64_t> offsets(8, 0);
  for (std::int32_t h : file.strata) ++offsets[static_cast<std::size_t>(h) + 1];
  for (std::size_t h = 0; h < 7; ++h) offsets[h + 1] += offsets[h];
  std::vector<std::uint64_t> next(offsets.begin(), offsets.end() - 1);
  std::vector<std::uint64_t> units;
  for (std::int32_t h : file.strata) units.push_back(next[static_cast<std::size_t>(h)]++);
  ReplicateDesign design = ReplicateDesign::poisson(8);
  design.scheme = ReplicateScheme::kMultinomial;
  design.stratum_offsets = offsets;
  expect_equals_kernel(file, units, design);
}

}  // namespace
}  // namespace sdc::distributed
