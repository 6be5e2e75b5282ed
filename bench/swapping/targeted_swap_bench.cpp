// Planning targeted record swapping (kernels/swapping/targeted_swap.h) on the coordinator: the swap of
// 1 and 4 million household summaries of a four-level geography (3 regions, 9, 36, and areas of about
// 250 households), a size profile with a fallback to any donor, about a third of the households at risk
// somewhere and 5 % quota. The distributed phases (counts, gather, return) are timed by the whole
// command (bench/RESULTS.md, "Targeted record swapping").

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "kernels/swapping/targeted_swap.h"

namespace {

using sdc::swapping::HouseholdSummaries;

const HouseholdSummaries& census_households(std::size_t count) {
  static std::map<std::size_t, HouseholdSummaries> cache;
  auto [entry, inserted] = cache.try_emplace(count);
  HouseholdSummaries& households = entry->second;
  if (!inserted) return households;
  std::mt19937_64 engine(20261126);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::uniform_int_distribution<std::int32_t> size(0, 7);
  households.levels = 4;
  households.similar_count = 1;
  const auto areas = static_cast<std::int32_t>(std::max<std::size_t>(36, count / 250));
  for (std::size_t i = 0; i < count; ++i) {
    const auto finest = static_cast<std::int32_t>(i * static_cast<std::size_t>(areas) / count);
    const std::int32_t nuts3 = finest * 36 / areas;
    households.ids.push_back(static_cast<std::int64_t>(i + 1));
    households.first_rows.push_back(0);
    households.members.push_back(size(engine) + 1);
    for (const std::int32_t code : {nuts3 / 12, nuts3 / 4, nuts3, finest}) households.geography.push_back(code);
    households.similar.push_back(households.members.back());
    // Risk 1/count rises towards the finer levels; a third of the households reach 1/2 somewhere.
    double risk = uniform(engine) < 0.01 ? 0.5 : 0.01;
    for (std::size_t h = 0; h < 4; ++h) {
      if (uniform(engine) < 0.1) risk = std::max(risk, 1.0 / (1.0 + static_cast<double>(size(engine))));
      households.risk.push_back(risk);
    }
  }
  return households;
}

void BM_TargetedSwapPlan(benchmark::State& state) {
  const auto& households = census_households(static_cast<std::size_t>(state.range(0)));
  sdc::swapping::TargetedSwapOptions options;
  options.threshold = 1.0 / 3.0;
  options.swap_fraction = 0.05;
  options.profiles = {{0}, {}};
  std::int64_t swapped = 0;
  for (auto _ : state) {
    const auto plan = sdc::swapping::plan_targeted_swap(households, options, 7);
    swapped = plan.swapped_households;
    benchmark::DoNotOptimize(plan.pairs.data());
  }
  state.counters["swapped_households"] = static_cast<double>(swapped);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

}  // namespace

BENCHMARK(BM_TargetedSwapPlan)
    ->ArgName("households")
    ->Arg(1'000'000)
    ->Arg(4'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
