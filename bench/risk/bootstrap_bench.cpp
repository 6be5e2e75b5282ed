// Bootstrap replicates of the global risk on a census-shaped file: the cluster bootstrap over
// households (the target: B = 1000 on 1 million records in under 15 s on 2 cores), the plan
// that puts the records in canonical order, and the replicate multiplicities alone.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "bench/risk/census_keys.h"
#include "kernels/bootstrap/replicate_risk.h"
#include "kernels/core/key_grouping.h"

namespace {

using sdc::bench::zipf_sampler;

struct CensusRecords {
  std::vector<std::uint32_t> record_class;
  std::vector<std::uint64_t> household;
  std::vector<double> weights;
  std::uint64_t households = 0;
  std::size_t classes = 0;
};

/// Households of 1..4 persons (mean 2.5) with eight census-like keys: sex, age (101), marital status,
/// citizenship (Zipf over 60), municipality (Zipf over 2000; shared by the household), education,
/// occupation, household type (shared). Design weights 10..100 per household. Fixed seed.
const CensusRecords& census_records(std::size_t records) {
  static std::map<std::size_t, CensusRecords> cache;
  auto& census = cache[records];
  if (!census.record_class.empty()) return census;
  std::mt19937_64 generator(2026);
  const auto zipf = [&](int levels) { return zipf_sampler(generator, levels); };
  auto citizenship = zipf(60);
  auto municipality = zipf(2000);
  std::vector<std::vector<std::int32_t>> codes(8);
  std::uint64_t household = 0;
  while (census.household.size() < records) {
    const std::uint64_t size = 1 + generator() % 4;  // 1..4, mean 2.5
    const std::int32_t area = municipality();
    const auto type = static_cast<std::int32_t>(generator() % 10);
    const double weight = 10.0 + static_cast<double>(generator() % 9001) / 100.0;
    for (std::uint64_t p = 0; p < size && census.household.size() < records; ++p) {
      codes[0].push_back(static_cast<std::int32_t>(generator() % 2));
      codes[1].push_back(static_cast<std::int32_t>(generator() % 101));
      codes[2].push_back(static_cast<std::int32_t>(generator() % 5));
      codes[3].push_back(citizenship());
      codes[4].push_back(area);
      codes[5].push_back(static_cast<std::int32_t>(generator() % 8));
      codes[6].push_back(static_cast<std::int32_t>(generator() % 40));
      codes[7].push_back(type);
      census.household.push_back(household);
      census.weights.push_back(weight);
    }
    ++household;
  }
  census.households = household;
  sdc::KeyColumns keys;
  keys.level_counts = {2, 101, 5, 60, 2000, 8, 40, 10};
  for (const auto& c : codes) keys.codes.emplace_back(c);
  sdc::KeyGrouping grouping = sdc::group_by_keys(keys);
  census.classes = grouping.class_count();
  census.record_class = std::move(grouping.record_class);
  return census;
}

void set_counters(benchmark::State& state, const CensusRecords& census) {
  state.counters["households"] = static_cast<double>(census.households);
  state.counters["classes"] = static_cast<double>(census.classes);
}

void BM_BootstrapRisk_ClusterPoisson(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const auto replicates = static_cast<std::uint64_t>(state.range(1));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  const auto& census = census_records(records);
  const auto plan = sdc::make_replicate_risk_plan(census.record_class, census.household, census.weights, {});
  const auto design = sdc::ReplicateDesign::poisson(1);
  for (auto _ : state) {
    const auto series = sdc::replicate_risk_finalize(sdc::replicate_risk_local(plan, design, 0, replicates));
    benchmark::DoNotOptimize(series.global_risk.data());
    state.counters["mean_global_risk"] =
        std::accumulate(series.global_risk.begin(), series.global_risk.end(), 0.0) / static_cast<double>(replicates);
  }
  set_counters(state, census);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records) *
                          static_cast<std::int64_t>(replicates));
}
BENCHMARK(BM_BootstrapRisk_ClusterPoisson)
    ->ArgNames({"records", "replicates", "threads"})
    ->Args({1000000, 1000, 2})
    ->Args({1000000, 100, 1})
    ->Args({1000000, 100, 2})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_BootstrapRisk_ClusterMultinomial(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const auto replicates = static_cast<std::uint64_t>(state.range(1));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  const auto& census = census_records(records);
  const auto plan = sdc::make_replicate_risk_plan(census.record_class, census.household, census.weights, {});
  const auto design = sdc::ReplicateDesign::multinomial(1, census.households);
  for (auto _ : state) {
    const auto series = sdc::replicate_risk_finalize(sdc::replicate_risk_local(plan, design, 0, replicates));
    benchmark::DoNotOptimize(series.global_risk.data());
  }
  set_counters(state, census);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records) *
                          static_cast<std::int64_t>(replicates));
}
BENCHMARK(BM_BootstrapRisk_ClusterMultinomial)
    ->ArgNames({"records", "replicates", "threads"})
    ->Args({1000000, 100, 2})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_BootstrapRisk_Plan(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const auto& census = census_records(records);
  for (auto _ : state) {
    const auto plan = sdc::make_replicate_risk_plan(census.record_class, census.household, census.weights, {});
    benchmark::DoNotOptimize(plan.record_unit.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_BootstrapRisk_Plan)
    ->ArgNames({"records", "threads"})
    ->Args({1000000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// Multiplicities alone: 400 000 households x 100 replicates.
void BM_ReplicateMultiplicities(benchmark::State& state) {
  const auto units = static_cast<std::uint64_t>(state.range(0));
  const bool multinomial = state.range(1) != 0;
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  std::vector<std::uint64_t> ids(units);
  std::iota(ids.begin(), ids.end(), 0);
  const auto design = multinomial ? sdc::ReplicateDesign::multinomial(1, units) : sdc::ReplicateDesign::poisson(1);
  std::vector<std::uint32_t> out(units * 100);
  for (auto _ : state) {
    sdc::fill_multiplicities(design, 0, 100, ids, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(units) * 100);
}
BENCHMARK(BM_ReplicateMultiplicities)
    ->ArgNames({"units", "multinomial", "threads"})
    ->Args({400000, 0, 2})
    ->Args({400000, 1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
