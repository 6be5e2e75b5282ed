// MDAV on normally distributed records at 1 and 2 threads: the compat target (100 000 × 3, k = 3) and
// the native mode at the same size and at census-block scale (1 000 000 × 3).

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/mdav.h"

namespace {

using sdc::NumericData;
using sdc::microaggregation::MdavMode;

const NumericData& normal_records(std::size_t records, std::size_t variables) {
  static std::map<std::pair<std::size_t, std::size_t>, NumericData> cache;
  auto [entry, inserted] = cache.try_emplace({records, variables});
  if (!inserted) return entry->second;
  NumericData& data = entry->second;
  std::mt19937_64 engine(20240601);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::size_t j = 0; j < variables; ++j) {
    data.names.push_back("v" + std::to_string(j));
    auto& column = data.columns.emplace_back(records);
    for (auto& value : column) value = normal(engine);
  }
  data.row_ids.resize(records);
  for (std::size_t i = 0; i < records; ++i) data.row_ids[i] = static_cast<std::int64_t>(i);
  return data;
}

void run(benchmark::State& state, MdavMode mode) {
  const auto records = static_cast<std::size_t>(state.range(0));
  const auto variables = static_cast<std::size_t>(state.range(1));
  const int k = static_cast<int>(state.range(2));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(3)));
  const auto view = normal_records(records, variables).view();
  for (auto _ : state) {
    auto result = sdc::microaggregation::mdav(view, k, mode);
    benchmark::DoNotOptimize(result.grouping.group_of_record.data());
    state.counters["groups"] = static_cast<double>(result.grouping.group_count);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(records));
}

void BM_MdavCompat(benchmark::State& state) { run(state, MdavMode::kCompat); }
void BM_MdavNative(benchmark::State& state) { run(state, MdavMode::kNative); }

BENCHMARK(BM_MdavCompat)
    ->ArgNames({"records", "vars", "k", "threads"})
    ->Args({100000, 3, 3, 1})
    ->Args({100000, 3, 3, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_MdavNative)
    ->ArgNames({"records", "vars", "k", "threads"})
    ->Args({100000, 3, 3, 1})
    ->Args({100000, 3, 3, 2})
    ->Args({1000000, 3, 3, 1})
    ->Args({1000000, 3, 3, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
