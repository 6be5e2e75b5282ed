// Runs under mpirun with any number of ranks (CTest: 1 and 3): every rank generates the whole file from
// global row ids, takes an uneven share, and compares the distributed NB smoothing risks of its records
// with the kernel run on all the file's classes in one process, bit for bit — with fixed keys (classes
// shuffled by the hash of their fixed keys) and without (the first ordinal key split into ranges with
// a halo, also one reaching beyond the next rank's range).

#include "distributed/compose/nb_smoothing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "distributed/comm.h"
#include "kernels/core/record_rng.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::distributed {
namespace {

constexpr std::int64_t kRows = 3001;

struct File {
  std::vector<std::int32_t> levels{2, 80, 12};  // g (fixed or ordinal), a, b
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<double> weights;

  /// Rows [first, first + count) of the keys `which`, in that order.
  KeyColumns view(const std::vector<std::size_t>& which, std::int64_t first, std::int64_t count) const {
    KeyColumns keys;
    for (std::size_t j : which) {
      keys.codes.emplace_back(codes[j].data() + first, static_cast<std::size_t>(count));
      keys.level_counts.push_back(levels[j]);
    }
    return keys;
  }
};

/// Codes skewed towards 0 (dense cells there, uniques in the tails) and weights in [2, 50).
File make_file() {
  const RecordRng rng(91, StepId::kRiskSimulation);
  File file;
  file.codes.assign(file.levels.size(), std::vector<std::int32_t>(static_cast<std::size_t>(kRows)));
  file.weights.resize(static_cast<std::size_t>(kRows));
  for (std::size_t i = 0; i < file.weights.size(); ++i) {
    for (std::size_t j = 0; j < file.levels.size(); ++j) {
      const double u = rng.uniform({.unit = i, .draw = j});
      file.codes[j][i] = static_cast<std::int32_t>(std::floor(u * u * file.levels[j]));
    }
    file.weights[i] = 2.0 + rng.uniform({.unit = i, .draw = 9}) * 48.0;
  }
  return file;
}

/// Uneven shares: rank r holds rows [kRows r^2 / R^2, kRows (r+1)^2 / R^2).
std::pair<std::int64_t, std::int64_t> share(const Communicator& comm) {
  const std::int64_t ranks = comm.size(), r = comm.rank();
  const std::int64_t first = kRows * r * r / (ranks * ranks);
  const std::int64_t end = kRows * (r + 1) * (r + 1) / (ranks * ranks);
  return {first, end - first};
}

/// `which`: the keys, fixed ones first; `fixed`: how many are fixed.
void expect_equals_kernel(const std::vector<std::size_t>& which, std::size_t fixed, const NbSmoothingOptions& options) {
  const File file = make_file();
  const auto comm = Communicator::world();
  const auto [first, count] = share(comm);
  NbSmoothingInput input;
  input.keys = file.view(which, first, count);
  input.fixed_key_count = fixed;
  input.weighted = true;
  input.weights = std::span(file.weights).subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(count));
  input.weight_name = "w";
  input.options = options;
  const DistributedNbSmoothing distributed = distributed_nb_smoothing(comm, input);

  // The kernel on every class of the file.
  const LocalFrequencyCount whole = frequency_count_local(file.view(which, 0, kRows), file.weights);
  const FrequencyClasses& classes = whole.classes;
  const std::size_t n = classes.class_count(), m = which.size(), v = m - fixed;
  std::vector<std::int32_t> fixed_codes, ordinal_codes;
  std::vector<double> fractions(n, 1.0);
  for (std::size_t c = 0; c < n; ++c) {
    const auto key = classes.key(c);
    fixed_codes.insert(fixed_codes.end(), key.begin(), key.begin() + static_cast<std::ptrdiff_t>(fixed));
    ordinal_codes.insert(ordinal_codes.end(), key.begin() + static_cast<std::ptrdiff_t>(fixed), key.end());
    if (classes.counts[c] == 1) fractions[c] = 1.0 / classes.weights[c].value();
  }
  const KeyColumns all = file.view(which, 0, kRows);
  NbSampleClasses sample;
  sample.fixed_key_count = fixed;
  sample.ordinal_key_count = v;
  sample.fixed_keys = fixed_codes;
  sample.ordinal_keys = ordinal_codes;
  sample.ordinal_levels = std::span(all.level_counts).subspan(fixed, v);
  sample.counts = classes.counts;
  sample.sampling_fraction = fractions;
  const NbSmoothingLocal local = nb_smoothing_local(sample, options);
  std::vector<double> p(n, 0.0), e(n, 0.0);
  for (std::size_t u = 0; u < local.unique_class.size(); ++u) {
    p[local.unique_class[u]] = local.risk[u].population_unique_probability;
    e[local.unique_class[u]] = local.risk[u].expected_inverse_population;
  }

  ASSERT_EQ(distributed.unique_probability.size(), static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < distributed.unique_probability.size(); ++i) {
    const std::size_t row = static_cast<std::size_t>(first) + i;
    const std::uint32_t c = whole.record_class[row];
    ASSERT_EQ(distributed.unique_probability[i], p[c]) << "row " << row;
    ASSERT_EQ(distributed.expected_inverse[i], e[c]) << "row " << row;
  }
  const NbSmoothingTotals totals = nb_smoothing_finalize(local.partial);
  EXPECT_GT(totals.sample_uniques, 100);
  EXPECT_EQ(distributed.totals.sample_uniques, totals.sample_uniques);
  EXPECT_EQ(distributed.totals.not_converged, totals.not_converged);
  EXPECT_EQ(distributed.totals.tau1, totals.tau1);
  EXPECT_EQ(distributed.totals.tau2, totals.tau2);
  std::int64_t iterations = 0;
  for (std::int32_t it : local.iterations) iterations += it;
  EXPECT_EQ(distributed.iterations, iterations);
}

TEST(DistributedNbSmoothing, EqualsTheKernelOnAllClassesWithAFixedKey) {
  expect_equals_kernel({0, 1, 2}, 1, NbSmoothingOptions{});
}

TEST(DistributedNbSmoothing, EqualsTheKernelWithoutFixedKeysThroughTheHalo) {
  expect_equals_kernel({1, 2}, 0, NbSmoothingOptions{});  // a: 80 levels split over the ranks, c = 2
}

TEST(DistributedNbSmoothing, EqualsTheKernelWhenTheHaloReachesBeyondTheNextRank) {
  NbSmoothingOptions options;
  options.sup_radius = 5;  // b's 12 levels over 3 ranks: ranges of a few codes, halos of 5
  options.out_of_range = OutOfRangeCells::kExclude;
  expect_equals_kernel({2, 1}, 0, options);
}

}  // namespace
}  // namespace sdc::distributed
