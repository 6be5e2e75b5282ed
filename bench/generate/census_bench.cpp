// The synthetic census generator (kernels/generate/census.h): persons per second of the counting pass
// and of the whole generation (counting, layout, all rows in memory), at 1 and 2 threads.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include "kernels/generate/census.h"

namespace {

constexpr std::uint64_t kSeed = 20261121;

void add_context() {
  static const bool once = [] {
    benchmark::AddCustomContext("sdc_build_type", SDC_BUILD_TYPE);
    return true;
  }();
  (void)once;
}

/// Pass 1 only: the size (and selection) draw of every household.
void BM_Census_Count(benchmark::State& state) {
  add_context();
  const tbb::global_control threads(tbb::global_control::max_allowed_parallelism,
                                    static_cast<std::size_t>(state.range(1)));
  const sdc::generate::CensusGenerator generator({.seed = kSeed, .households = state.range(0)});
  std::int64_t persons = 0;
  for (auto _ : state) {
    const sdc::generate::CensusLayout layout(generator.count_blocks(0, generator.block_count()));
    persons = layout.persons();
    benchmark::DoNotOptimize(persons);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * persons);
  state.counters["persons"] = static_cast<double>(persons);
}
BENCHMARK(BM_Census_Count)
    ->ArgNames({"households", "threads"})
    ->Args({1000000, 1})
    ->Args({1000000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// Everything the command does before writing: generator set-up, counting pass, every row.
void BM_Census_EndToEnd(benchmark::State& state) {
  add_context();
  const tbb::global_control threads(tbb::global_control::max_allowed_parallelism,
                                    static_cast<std::size_t>(state.range(1)));
  const double fraction = static_cast<double>(state.range(2)) / 100.0;
  std::int64_t rows = 0;
  for (auto _ : state) {
    const sdc::Table table =
        sdc::generate::generate_census({.seed = kSeed, .households = state.range(0), .sample_fraction = fraction});
    rows = table.row_count();
    benchmark::DoNotOptimize(table.columns().data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * rows);
  state.counters["rows"] = static_cast<double>(rows);
}
BENCHMARK(BM_Census_EndToEnd)
    ->ArgNames({"households", "threads", "percent"})
    ->Args({100000, 1, 100})
    ->Args({100000, 2, 100})
    ->Args({1000000, 1, 100})
    ->Args({1000000, 2, 100})
    ->Args({1000000, 2, 10})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
