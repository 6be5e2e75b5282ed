// The differentially private Hotelling test (kernels/bootstrap/dp_mean_test.h): the empirical type-1
// error of the bootstrap and the asymptotic χ² test over the grid of Dunsche, Kutta & Dette's Table 1
// (n = 10²..10⁵ per group, ε = 0.1, 0.5, 1, 5, d = 10, 30, B = 200, α = 0.05), printed as counters
// bootstrap_level and asymptotic_level; and the cost of one test (moments of a million records, then the
// privatisation and 200 replicates).
//
// Groups of n <= 1000 are drawn as records; larger groups draw the moments' large-n law directly
// (DpSampleSimulation::kMoments). Trials: 1000 by default, as in the paper; the `trials` argument lowers
// it for a quick run, e.g. --benchmark_filter='LevelStudy/.*/trials:200'.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/bootstrap/dp_mean_test.h"
#include "kernels/core/record_rng.h"

namespace {

using sdc::DpLevelStudyOptions;
using sdc::DpSampleSimulation;

void BM_DpMeanTest_LevelStudy(benchmark::State& state) {
  DpLevelStudyOptions options;
  options.group_size = static_cast<std::uint64_t>(state.range(0));
  options.epsilon = static_cast<double>(state.range(1)) / 10.0;
  options.dimension = static_cast<std::size_t>(state.range(2));
  options.trials = static_cast<std::uint64_t>(state.range(3));
  options.replicates = 200;
  options.alpha = 0.05;
  options.seed = 20220920;
  options.simulation = options.group_size <= 1000 ? DpSampleSimulation::kRecords : DpSampleSimulation::kMoments;
  sdc::DpLevelStudyResult result;
  for (auto _ : state) {
    result = sdc::dp_mean_test_level_study(options);
    benchmark::DoNotOptimize(result.bootstrap_rejections);
  }
  state.counters["bootstrap_level"] = result.bootstrap_rate();
  state.counters["asymptotic_level"] = result.asymptotic_rate();
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(options.trials));
}

void level_grid(benchmark::internal::Benchmark* bench) {
  bench->ArgNames({"n", "eps_x10", "d", "trials"});
  for (std::int64_t trials : {200, 1000})
    for (std::int64_t d : {10, 30})
      for (std::int64_t eps_x10 : {1, 5, 10, 50})
        for (std::int64_t n : {100, 1000, 10000, 100000}) bench->Args({n, eps_x10, d, trials});
}
BENCHMARK(BM_DpMeanTest_LevelStudy)->Apply(level_grid)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Records uniform on [-1, 1)^d, columns.
std::vector<std::vector<double>> uniform_columns(std::size_t d, std::size_t n, std::uint64_t sample) {
  const sdc::RecordRng rng(2026, sdc::StepId::kKnownAnswerTest);
  std::vector<std::vector<double>> columns(d, std::vector<double>(n));
  for (std::size_t j = 0; j < d; ++j)
    for (std::size_t i = 0; i < n; ++i) columns[j][i] = 2.0 * rng.uniform({i, j, sample, 0}) - 1.0;
  return columns;
}

void BM_DpMeanTest_Moments(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const auto columns = uniform_columns(static_cast<std::size_t>(state.range(1)), records, 0);
  const std::vector<std::span<const double>> spans(columns.begin(), columns.end());
  for (auto _ : state) {
    auto moments = sdc::mean_test_moments_finalize(sdc::mean_test_moments_local(spans, 1.0));
    benchmark::DoNotOptimize(moments.covariance.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_DpMeanTest_Moments)
    ->ArgNames({"records", "d"})
    ->Args({1 << 20, 10})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_DpMeanTest_EndToEnd(benchmark::State& state) {
  const auto d = static_cast<std::size_t>(state.range(0));
  const auto columns = uniform_columns(d, 1000, 0);
  const std::vector<std::span<const double>> spans(columns.begin(), columns.end());
  const auto x = sdc::mean_test_moments_finalize(sdc::mean_test_moments_local(spans, 1.0));
  const auto y = x;
  sdc::DpMeanTestOptions options;
  options.epsilon = 1.0;
  options.replicates = 200;
  for (auto _ : state) {
    ++options.seed;
    auto result = sdc::dp_mean_test(x, y, options);
    benchmark::DoNotOptimize(result.statistic);
  }
}
BENCHMARK(BM_DpMeanTest_EndToEnd)->ArgNames({"d"})->Arg(10)->Arg(30)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
