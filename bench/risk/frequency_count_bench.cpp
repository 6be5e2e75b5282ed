// fk/Fk on census-shaped keys: the grouping kernel at 1 and 2 threads, the risk chain of `sdc risk`
// (counts, individual and household risk) on 5 million persons in 2 million households, and a
// random-gather ceiling that bounds any grouping that touches per-class state in record order.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <numeric>
#include <random>

#include "bench/risk/census_keys.h"
#include "kernels/risk/frequency_count.h"
#include "kernels/risk/household_risk.h"
#include "kernels/risk/individual_risk.h"

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
    ->Args({1 << 20, 1})
    ->Args({1 << 20, 2})
    ->Args({5000000, 1})
    ->Args({5000000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// The computation the target names: fk, fk_weighted, the Benedetti–Franconi individual risk
/// (element-wise, in parallel blocks as sdc risk evaluates it), the household risk and the global
/// risk, on 5 million persons in households of 2.5 persons on average (2 million households).
void BM_RiskChain(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const auto& keys = census_keys(records);
  const auto view = keys.view();
  std::vector<std::int64_t> households(records);
  for (std::size_t i = 0; i < records; ++i) households[i] = static_cast<std::int64_t>(i * 2 / 5);
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  for (auto _ : state) {
    auto local = sdc::frequency_count_local(view, keys.weights);
    std::vector<double> class_weights(local.classes.class_count());
    for (std::size_t c = 0; c < class_weights.size(); ++c) class_weights[c] = local.classes.weights[c].value();
    auto per_record = sdc::frequency_count_assign(local.record_class, local.classes.counts, class_weights);
    std::vector<double> risk(records);
    tbb::parallel_for(std::size_t{0}, (records + kBlock - 1) / kBlock, [&](std::size_t b) {
      const std::size_t begin = b * kBlock;
      const std::size_t size = std::min(kBlock, records - begin);
      const auto part = sdc::individual_risk(std::span<const double>(per_record.fk).subspan(begin, size),
                                             std::span<const double>(per_record.fk_weighted).subspan(begin, size), {});
      std::copy(part.risk.begin(), part.risk.end(), risk.begin() + static_cast<std::ptrdiff_t>(begin));
    });
    const auto household = sdc::household_risk(households, risk, sdc::RiskMode::kNative);
    const auto global = sdc::global_risk_finalize(sdc::global_risk_local(household));
    benchmark::DoNotOptimize(global.expected_reidentifications);
    state.counters["classes"] = static_cast<double>(local.classes.class_count());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_RiskChain)
    ->ArgNames({"records", "threads"})
    ->Args({5000000, 1})
    ->Args({5000000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_GroupByKeys(benchmark::State& state) {
  const auto records = static_cast<std::size_t>(state.range(0));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const auto view = census_keys(records).view();
  for (auto _ : state) benchmark::DoNotOptimize(sdc::group_by_keys(view).record_class.data());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}
BENCHMARK(BM_GroupByKeys)
    ->ArgNames({"records", "threads"})
    ->Args({5000000, 1})
    ->Args({5000000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

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
