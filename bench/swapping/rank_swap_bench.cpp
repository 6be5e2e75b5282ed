// Rank swapping of one variable (kernels/swapping/rank_swap.h): the O(n log n) Fenwick partner choice on
// 1 and 10 million values, native draws and compat's taus88, with the default top and bottom coding and
// the default window (R0 = 0.95). The reference's window scan is O(P·N²) and is not timed.

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "kernels/swapping/rank_swap.h"

namespace {

using sdc::swapping::RankSwapDraws;
using sdc::swapping::RankSwapMode;
using sdc::swapping::RankSwapOptions;

struct Values {
  std::vector<double> values;
  std::vector<std::int64_t> row_ids;
};

/// Log-normal incomes rounded to whole units, so that ties occur as in census income.
const Values& incomes(std::size_t records) {
  static std::map<std::size_t, Values> cache;
  auto [entry, inserted] = cache.try_emplace(records);
  if (!inserted) return entry->second;
  std::mt19937_64 engine(20261126);
  std::lognormal_distribution<double> income(10.0, 0.8);
  Values& data = entry->second;
  data.values.resize(records);
  data.row_ids.resize(records);
  for (std::size_t i = 0; i < records; ++i) {
    data.values[i] = std::round(income(engine));
    data.row_ids[i] = static_cast<std::int64_t>(i);
  }
  return data;
}

void run(benchmark::State& state, RankSwapMode mode) {
  const auto& data = incomes(static_cast<std::size_t>(state.range(0)));
  RankSwapOptions options;
  options.mode = mode;
  std::int64_t pairs = 0;
  for (auto _ : state) {
    RankSwapDraws draws = mode == RankSwapMode::kCompat ? RankSwapDraws::compat(1) : RankSwapDraws::native(7, 0);
    sdc::swapping::RankSwapSummary summary;
    auto swapped = sdc::swapping::rank_swap(data.values, data.row_ids, options, draws, &summary);
    benchmark::DoNotOptimize(swapped.data());
    pairs = summary.swapped_pairs;
  }
  state.counters["pairs"] = static_cast<double>(pairs);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

void BM_RankSwapNative(benchmark::State& state) { run(state, RankSwapMode::kNative); }
void BM_RankSwapCompat(benchmark::State& state) { run(state, RankSwapMode::kCompat); }

BENCHMARK(BM_RankSwapNative)->ArgName("values")->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RankSwapCompat)->ArgName("values")->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
