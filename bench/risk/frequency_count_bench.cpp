// fk/Fk on census-shaped keys: the grouping kernel at 1 and 2 threads, and a random-gather ceiling
// that bounds any grouping that touches per-class state in record order.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <cmath>
#include <numeric>
#include <random>

#include "kernels/risk/frequency_count.h"

namespace {

struct CensusKeys {
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<std::int32_t> levels;
  std::vector<double> weights;
  sdc::KeyColumns view() const {
    sdc::KeyColumns keys;
    keys.level_counts = levels;
    for (const auto& c : codes) keys.codes.emplace_back(c);
    return keys;
  }
};

/// Eight census-like keys: sex, age, marital status, citizenship (Zipf), municipality (Zipf over
/// 2000 areas), education, occupation, household type. Fixed seed; benchmarks may use <random>.
const CensusKeys& census_keys(std::size_t records) {
  static std::map<std::size_t, CensusKeys> cache;
  auto& keys = cache[records];
  if (!keys.codes.empty()) return keys;
  std::mt19937_64 generator(2026);
  const auto zipf = [&](int levels) {
    std::vector<double> cumulative(static_cast<std::size_t>(levels));
    double total = 0;
    for (int i = 0; i < levels; ++i) cumulative[static_cast<std::size_t>(i)] = (total += 1.0 / (i + 1.0));
    return [&generator, cumulative, total]() {
      const double u = std::uniform_real_distribution<double>(0, total)(generator);
      return static_cast<std::int32_t>(std::lower_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin());
    };
  };
  keys.levels = {2, 101, 5, 60, 2000, 8, 40, 10};
  auto citizenship = zipf(60);
  auto municipality = zipf(2000);
  keys.codes.assign(8, std::vector<std::int32_t>(records));
  keys.weights.resize(records);
  for (std::size_t i = 0; i < records; ++i) {
    keys.codes[0][i] = static_cast<std::int32_t>(generator() % 2);
    keys.codes[1][i] = static_cast<std::int32_t>(generator() % 101);
    keys.codes[2][i] = static_cast<std::int32_t>(generator() % 5);
    keys.codes[3][i] = citizenship();
    keys.codes[4][i] = municipality();
    keys.codes[5][i] = static_cast<std::int32_t>(generator() % 8);
    keys.codes[6][i] = static_cast<std::int32_t>(generator() % 40);
    keys.codes[7][i] = static_cast<std::int32_t>(generator() % 10);
    keys.weights[i] = 20.0 + static_cast<double>(generator() % 10000) / 100.0;
  }
  return keys;
}

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
