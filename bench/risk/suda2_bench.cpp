// SUDA2 on census-shaped keys: the level-by-level MSU search with the local subset counter, then
// the DIS scores. Target (issue): 1 million records, 8 keys, max_size 4 under 2 minutes on 2 cores.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <cmath>
#include <map>

#include "kernels/core/record_rng.h"
#include "kernels/risk/suda2.h"

namespace {

struct SyntheticKeys {
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<std::int32_t> levels;
  sdc::KeyColumns view() const {
    sdc::KeyColumns keys;
    keys.level_counts = levels;
    for (const auto& c : codes) keys.codes.emplace_back(c);
    return keys;
  }
};

/// Eight keys with census-like level counts (sex, age band, marital status, region, country of
/// birth, education, occupation, municipality), each skewed: level i has weight 1 / (i + 1)^0.8.
/// Record i's key j is drawn from word j % 4 of the Philox block (unit i, draw j / 4).
const SyntheticKeys& synthetic_keys(std::size_t records) {
  static std::map<std::size_t, SyntheticKeys> cache;
  auto& keys = cache[records];
  if (!keys.codes.empty()) return keys;
  keys.levels = {2, 100, 5, 20, 50, 7, 10, 300};
  const sdc::RecordRng rng(2026, sdc::StepId::kRiskSimulation);
  std::vector<std::vector<double>> cumulative;
  for (std::int32_t levels : keys.levels) {
    std::vector<double> c(static_cast<std::size_t>(levels));
    double total = 0;
    for (std::size_t l = 0; l < c.size(); ++l) c[l] = (total += std::pow(static_cast<double>(l) + 1.0, -0.8));
    cumulative.push_back(std::move(c));
  }
  keys.codes.assign(keys.levels.size(), std::vector<std::int32_t>(records));
  for (std::size_t i = 0; i < records; ++i) {
    for (std::size_t draw = 0; draw < 2; ++draw) {
      const auto block = rng.bits({.unit = i, .draw = draw});
      for (std::size_t word = 0; word < 4; ++word) {
        const std::size_t j = draw * 4 + word;
        const double u = sdc::RecordRng::uniform_from_bits(block[word]);
        keys.codes[j][i] = static_cast<std::int32_t>(sdc::categorical_from_uniform(u, cumulative[j]));
      }
    }
  }
  return keys;
}

void BM_Suda2_EndToEnd(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  sdc::Suda2Options options;
  options.max_size = static_cast<std::size_t>(state.range(1));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  options.contributions = state.range(3) != 0;
  const auto view = synthetic_keys(records).view();
  static const bool context_added = [] {
    benchmark::AddCustomContext("sdc_build_type", SDC_BUILD_TYPE);
    return true;
  }();
  benchmark::DoNotOptimize(context_added);
  for (auto _ : state) {
    const auto local = sdc::suda2_local(view, sdc::make_local_subset_counter(view), options);
    const auto dis = sdc::suda2_dis_scores(local.score, local.partial, view.key_count(), options);
    benchmark::DoNotOptimize(dis.data());
    state.counters["msus"] = static_cast<double>(local.partial.msu_count);
    state.counters["scored"] = static_cast<double>(local.partial.scored_records);
    state.counters["uniques"] = static_cast<double>(local.partial.unique_records);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_Suda2_EndToEnd)
    ->ArgNames({"records", "max_size", "threads", "contributions"})
    ->Args({100000, 4, 2, 0})
    ->Args({1000000, 4, 1, 0})
    ->Args({1000000, 4, 2, 0})
    ->Args({1000000, 4, 2, 1})
    ->Args({1000000, 8, 2, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
