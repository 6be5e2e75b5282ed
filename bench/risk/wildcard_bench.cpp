// f/F with missing keys as wildcards (risk.md §1) on census-shaped keys, the local kernel path:
// patterns (grouping), the pattern lattice, per-record assign. The complete file against the same
// file with 1% of the municipality key missing; the missing case should cost at most 2x.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <random>

#include "bench/risk/census_keys.h"
#include "kernels/risk/wildcard_frequency.h"

namespace {

constexpr std::size_t kMunicipality = 4;

/// The census keys with `missing_permille` of the municipality codes set missing (fixed seed).
const sdc::bench::CensusKeys& keys_with_missing(std::size_t records, int missing_permille) {
  static std::map<std::pair<std::size_t, int>, sdc::bench::CensusKeys> cache;
  auto& keys = cache[{records, missing_permille}];
  if (!keys.codes.empty()) return keys;
  keys = sdc::bench::census_keys(records);
  std::mt19937_64 generator(7);
  std::bernoulli_distribution missing(missing_permille / 1000.0);
  for (auto& code : keys.codes[kMunicipality])
    if (missing(generator)) code = -1;
  return keys;
}

void BM_WildcardFrequency_Local(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const auto& keys = keys_with_missing(records, static_cast<int>(state.range(1)));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  const auto view = keys.view();
  for (auto _ : state) {
    const auto local = sdc::frequency_count_local(view, keys.weights);
    const auto patterns = sdc::wildcard_frequency(local.classes, keys.levels, 0.5);
    auto per_record = sdc::wildcard_frequency_assign(local.record_class, patterns);
    benchmark::DoNotOptimize(per_record.fk.data());
    state.counters["patterns"] = static_cast<double>(local.classes.class_count());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_WildcardFrequency_Local)
    ->ArgNames({"records", "missing_permille", "threads"})
    ->Args({5000000, 0, 1})
    ->Args({5000000, 10, 1})
    ->Args({5000000, 0, 2})
    ->Args({5000000, 10, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
