// NB smoothing risk (kernels/risk/nb_smoothing.h): time per sample unique against the neighbourhood
// size |M|. The targets are 100 000 uniques in under 30 s at |M| = 125 and under 10 minutes
// at |M| ≈ 2 000 (5 keys, c = 2, d = 6: 1 893); the fit of one unique does not depend on the others,
// so the time is linear in the number of uniques and smaller runs extrapolate.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "kernels/risk/nb_smoothing.h"

namespace {

struct SampleTable {
  std::vector<std::int32_t> fixed, ordinal, levels;
  std::vector<std::int64_t> counts;
  std::vector<double> pi{0.1};
  std::size_t keys = 0;
  sdc::NbSampleClasses view() const {
    return {.fixed_key_count = 1,
            .ordinal_key_count = keys,
            .fixed_keys = fixed,
            .ordinal_keys = ordinal,
            .ordinal_levels = levels,
            .counts = counts,
            .sampling_fraction = pi,
            .ordinal_key_names = {}};
  }
};

/// Two fixed groups times an ordinal grid of `keys` keys, sized so that about `uniques` cells have
/// f = 1: a cell is occupied with probability exp(smooth bump) and then has f = 1 with
/// probability about 0.6. Fixed seed; benchmarks may use <random>.
const SampleTable& sample_table(std::size_t uniques, std::size_t keys) {
  static std::map<std::pair<std::size_t, std::size_t>, SampleTable> cache;
  auto& table = cache[{uniques, keys}];
  if (!table.counts.empty()) return table;
  table.keys = keys;
  const double cells_per_group = static_cast<double>(uniques) / (2 * 0.6 * 0.35);
  const auto side = static_cast<std::int32_t>(std::ceil(std::pow(cells_per_group, 1.0 / static_cast<double>(keys))));
  table.levels.assign(keys, side);
  std::mt19937_64 generator(2026);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::int32_t> code(keys, 0);
  const double centre = (side - 1) / 2.0;
  for (std::int32_t group = 0; group < 2; ++group) {
    std::fill(code.begin(), code.end(), 0);
    while (true) {
      double distance = 0;
      for (std::int32_t c : code) distance += ((c - centre) / side) * ((c - centre) / side);
      const double mean = 0.8 * std::exp(-2.0 * distance);
      std::poisson_distribution<std::int64_t> poisson(mean * std::gamma_distribution<double>(1.5, 1 / 1.5)(generator));
      const std::int64_t f = poisson(generator);
      if (f > 0) {
        table.fixed.push_back(group);
        table.ordinal.insert(table.ordinal.end(), code.begin(), code.end());
        table.counts.push_back(f);
      }
      std::size_t j = keys;
      while (j > 0 && code[j - 1] == side - 1) code[--j] = 0;
      if (j == 0) break;
      ++code[j - 1];
    }
  }
  return table;
}

void BM_NbSmoothing_Local(benchmark::State& state) {
  const auto uniques_wanted = static_cast<std::size_t>(state.range(0));
  const auto keys = static_cast<std::size_t>(state.range(1));
  const sdc::NbSmoothingOptions options{
      .sup_radius = static_cast<std::int32_t>(state.range(2)),
      .l1_radius =
          state.range(3) > 0 ? std::optional<std::int32_t>(static_cast<std::int32_t>(state.range(3))) : std::nullopt};
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(4)));
  const auto& table = sample_table(uniques_wanted, keys);
  const std::size_t neighbourhood =
      sdc::nb_neighbourhood_offsets({keys, options.sup_radius, options.l1_radius}).size() / keys;
  std::size_t uniques = 0;
  double mean_iterations = 0;
  std::int64_t not_converged = 0;
  for (auto _ : state) {
    const auto local = sdc::nb_smoothing_local(table.view(), options);
    uniques = local.unique_class.size();
    mean_iterations = std::accumulate(local.iterations.begin(), local.iterations.end(), 0.0) /
                      static_cast<double>(std::max<std::size_t>(uniques, 1));
    not_converged = local.partial.not_converged;
    benchmark::DoNotOptimize(local.partial.tau2.value());
  }
  state.counters["uniques"] = static_cast<double>(uniques);
  state.counters["M"] = static_cast<double>(neighbourhood);
  state.counters["iterations"] = mean_iterations;
  state.counters["not_converged"] = static_cast<double>(not_converged);
  state.counters["us_per_unique"] = benchmark::Counter(
      static_cast<double>(uniques) * 1e-6, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(uniques));
}
BENCHMARK(BM_NbSmoothing_Local)
    ->ArgNames({"uniques", "keys", "c", "d", "threads"})
    ->Args({20000, 3, 2, 0, 1})
    ->Args({20000, 3, 2, 0, 2})
    ->Args({5000, 3, 3, 0, 1})
    ->Args({5000, 4, 2, 6, 1})
    ->Args({2000, 5, 2, 4, 1})
    ->Args({2000, 5, 2, 6, 1})
    ->Args({2000, 5, 2, 6, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
