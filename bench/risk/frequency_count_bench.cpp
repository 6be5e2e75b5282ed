// fk/Fk on census-shaped keys: the grouping kernel at 1 and 2 threads, and a random-gather ceiling
// that bounds any grouping that touches per-class state in record order.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <cmath>
#include <numeric>
#include <random>

#include "bench/risk/census_keys.h"
#include "kernels/risk/frequency_count.h"

namespace {

using sdc::bench::census_keys;

void BM_FrequencyCount_Local(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const auto& keys = census_keys(records);
  const auto view = keys.view();
  for (auto _ : state) {
    auto local = sdc::frequency_count_local(view, keys.weights);
    std::vector<double> class_weights(local.classes.class_count());
    for (std::size_t c = 0; c < class_weights.size(); ++c) class_weights[c] = local.classes.weights[c].value();
    auto per_record = sdc::frequency_count_assign(local.record_class, local.classes.counts, class_weights);
    benchmark::DoNotOptimize(per_record.fk.data());
    state.counters["classes"] = static_cast<double>(local.classes.class_count());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_FrequencyCount_Local)
    ->ArgNames({"records", "threads"})
    ->Args({1 << 20, 1})->Args({1 << 20, 2})->Args({5000000, 1})->Args({5000000, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GroupByKeys(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const auto view = census_keys(records).view();
  for (auto _ : state) benchmark::DoNotOptimize(sdc::group_by_keys(view).record_class.data());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_GroupByKeys)->ArgNames({"records", "threads"})->Args({5000000, 1})->Args({5000000, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

/// The ceiling: gather 8-byte values at random positions of an array as large as the class table.
void BM_RandomGather(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<double> table(n, 1.0);
  std::vector<std::uint32_t> index(n);
  std::iota(index.begin(), index.end(), 0U);
  std::shuffle(index.begin(), index.end(), std::mt19937_64(1));
  for (auto _ : state) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += table[index[i]];
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_RandomGather)->ArgNames({"records"})->Arg(5000000)->Unit(benchmark::kMillisecond);

}  // namespace
