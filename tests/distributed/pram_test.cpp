// Runs under mpirun with any number of ranks (CTest: 1 and 3): every rank generates the whole file
// from global row ids and takes an uneven share; the distributed strata, counts and draws of its rows
// must equal those of one process holding the whole file.

#include "distributed/compose/pram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "kernels/core/record_rng.h"
#include "tests/distributed/rank_split.h"

namespace sdc::distributed {
namespace {

constexpr std::int64_t kRows = 20011;
const std::vector<std::int32_t> kLevels{6, 3, 4};  // the PRAMmed variable, then two stratum variables

std::vector<std::vector<std::int32_t>> make_codes() {
  const RecordRng rng(31, StepId::kRiskSimulation);
  std::vector<std::vector<std::int32_t>> codes(kLevels.size(),
                                               std::vector<std::int32_t>(static_cast<std::size_t>(kRows)));
  for (std::size_t i = 0; i < codes[0].size(); ++i)
    for (std::size_t j = 0; j < kLevels.size(); ++j) {
      const auto bits = rng.bits({.unit = i, .draw = j});
      const bool missing = RecordRng::uniform_from_bits(bits[0]) < 0.02;
      // Stratum variable 2 takes only levels 0 and 3, so some combinations are absent everywhere.
      const auto code = static_cast<std::int32_t>(bits[1] % static_cast<std::uint64_t>(kLevels[j]));
      codes[j][i] = missing ? -1 : (j == 2 ? (code % 2) * 3 : code);
    }
  return codes;
}

TEST(DistributedPram, StrataCountsAndDrawsEqualOneProcessHoldingTheWholeFile) {
  const auto comm = Communicator::world();
  const auto codes = make_codes();
  const auto [first, count] = uneven_share(comm, kRows);
  const std::vector<std::vector<std::int32_t>> strata_codes{codes[1], codes[2]};
  const std::vector<std::int32_t> strata_levels{kLevels[1], kLevels[2]};
  const Strata strata = distributed_strata(comm, key_columns_of(strata_codes, strata_levels, first, count),
                                           static_cast<std::size_t>(count));

  // The whole file in this process: the same strata ids, the same counts.
  std::set<std::uint64_t> all_ids;
  std::vector<std::uint64_t> whole_ids(static_cast<std::size_t>(kRows));
  for (std::size_t i = 0; i < whole_ids.size(); ++i) {
    const auto a = codes[1][i] < 0 ? 3U : static_cast<std::uint64_t>(codes[1][i]);
    const auto b = codes[2][i] < 0 ? 4U : static_cast<std::uint64_t>(codes[2][i]);
    whole_ids[i] = a + 4 * b;
    all_ids.insert(whole_ids[i]);
  }
  ASSERT_EQ(strata.ids, std::vector<std::uint64_t>(all_ids.begin(), all_ids.end()));
  EXPECT_EQ(strata.ids.size(), 12U) << "4 values of the first (3 + missing) x 3 of the second (0, 3, missing)";
  EXPECT_EQ(stratum_codes(strata.ids.back(), strata_levels), (std::vector<std::int32_t>{-1, -1}));
  for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i)
    ASSERT_EQ(strata.ids[static_cast<std::size_t>(strata.record_stratum[i])],
              whole_ids[static_cast<std::size_t>(first) + i]);

  const std::span<const std::int32_t> variable(codes[0]);
  const auto local = variable.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(count));
  const auto counts = distributed_pram_counts(comm, local, strata, kLevels[0]);
  std::vector<std::int64_t> expected(strata.ids.size() * 6, 0);
  for (std::size_t i = 0; i < variable.size(); ++i) {
    if (variable[i] < 0) continue;
    const auto s = static_cast<std::size_t>(std::lower_bound(strata.ids.begin(), strata.ids.end(), whole_ids[i]) -
                                            strata.ids.begin());
    ++expected[s * 6 + static_cast<std::size_t>(variable[i])];
  }
  EXPECT_EQ(counts, expected);

  // Draws: every rank builds the same samplers from the totals; the records' codes equal a one-process
  // draw of the whole file.
  std::vector<PramSampler> samplers;
  for (std::size_t s = 0; s < strata.ids.size(); ++s) {
    const std::span<const std::int64_t> t(counts.data() + s * 6, 6);
    samplers.emplace_back(pram_reference_matrices(pram_draw_diagonal(5, 0, strata.ids[s], 6, 0.7), t, 0.5).drawn);
  }
  std::vector<std::int32_t> released(local.size());
  std::vector<std::uint8_t> changed(local.size(), 0);
  const std::int64_t local_changes =
      pram_draw_in_blocks(local, strata.record_stratum, samplers, 5, 0, first, released, changed);
  std::vector<std::int32_t> whole_strata(variable.size());
  for (std::size_t i = 0; i < variable.size(); ++i)
    whole_strata[i] = static_cast<std::int32_t>(std::lower_bound(strata.ids.begin(), strata.ids.end(), whole_ids[i]) -
                                                strata.ids.begin());
  std::vector<std::int32_t> whole_released(variable.size());
  std::vector<std::uint8_t> whole_changed(variable.size(), 0);
  const std::int64_t whole_changes =
      pram_draw(variable, whole_strata, samplers, 5, 0, 0, whole_released, whole_changed);
  for (std::size_t i = 0; i < local.size(); ++i)
    ASSERT_EQ(released[i], whole_released[static_cast<std::size_t>(first) + i])
        << "row " << first + static_cast<std::int64_t>(i);
  EXPECT_EQ(comm.all_reduce_sum(local_changes), whole_changes);
  const auto changes = distributed_pram_changes(comm, local, released, strata);
  std::int64_t total = 0;
  for (std::int64_t c : changes) total += c;
  EXPECT_EQ(total, whole_changes);
}

TEST(DistributedPram, PairCountsAndTargetSumsEqualOneProcessHoldingTheWholeFile) {
  const auto comm = Communicator::world();
  const auto codes = make_codes();
  const auto [first, count] = uneven_share(comm, kRows);
  const std::vector<std::vector<std::int32_t>> strata_codes{codes[2]};
  const std::vector<std::int32_t> strata_levels{kLevels[2]};
  const Strata strata = distributed_strata(comm, key_columns_of(strata_codes, strata_levels, first, count),
                                           static_cast<std::size_t>(count));
  ASSERT_EQ(strata.ids, (std::vector<std::uint64_t>{0, 3, 4})) << "levels 0 and 3, and missing";
  const auto stratum_of = [&](std::size_t i) -> std::size_t { return codes[2][i] < 0 ? 2 : codes[2][i] == 0 ? 0 : 1; };
  // A continuous y with missing values and terms of very different magnitudes: only exact sums agree.
  std::vector<double> y(static_cast<std::size_t>(kRows));
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = i % 17 == 0 ? std::numeric_limits<double>::quiet_NaN() : (i % 3 == 0 ? 1e16 : 0.1 * static_cast<double>(i));
  const auto offset = static_cast<std::size_t>(first);
  const auto size = static_cast<std::size_t>(count);
  const auto local = [offset, size](const std::vector<std::int32_t>& column) {
    return std::span<const std::int32_t>(column).subspan(offset, size);
  };

  const auto pairs = distributed_pram_pair_counts(comm, local(codes[0]), local(codes[1]), strata, 6, 3);
  std::vector<std::int64_t> expected_pairs(3 * 6 * 3, 0);
  std::vector<std::int64_t> expected_counts(3 * 6, 0);
  std::vector<ExactSum> expected_sums(3 * 6);
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (codes[0][i] < 0) continue;
    const std::size_t cell = stratum_of(i) * 6 + static_cast<std::size_t>(codes[0][i]);
    if (codes[1][i] >= 0) ++expected_pairs[cell * 3 + static_cast<std::size_t>(codes[1][i])];
    if (std::isnan(y[i])) continue;
    ++expected_counts[cell];
    expected_sums[cell].add(y[i]);
  }
  EXPECT_EQ(pairs, expected_pairs);

  const PramTargetSums sums =
      distributed_pram_target_sums(comm, local(codes[0]), std::span<const double>(y).subspan(offset, size), strata, 6);
  EXPECT_EQ(sums.counts, expected_counts);
  ASSERT_EQ(sums.sums.size(), expected_sums.size());
  for (std::size_t c = 0; c < expected_sums.size(); ++c)
    EXPECT_EQ(sums.sums[c].value(), expected_sums[c].value()) << "cell " << c;
}

TEST(DistributedPram, WithoutStratumVariablesThereIsOneStratum) {
  const auto comm = Communicator::world();
  const auto [first, count] = uneven_share(comm, 101);
  std::vector<std::int32_t> codes(static_cast<std::size_t>(count), 1);
  const Strata strata = distributed_strata(comm, KeyColumns{}, codes.size());
  EXPECT_EQ(strata.ids, std::vector<std::uint64_t>{0});
  EXPECT_EQ(strata.record_stratum, std::vector<std::int32_t>(codes.size(), 0));
  EXPECT_EQ(distributed_pram_counts(comm, codes, strata, 3), (std::vector<std::int64_t>{0, 101, 0}));
  (void)first;
}

}  // namespace
}  // namespace sdc::distributed
