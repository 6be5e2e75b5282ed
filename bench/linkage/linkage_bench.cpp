// Record linkage at census scale: the nearest-neighbour search of 100 000 original records against
// 100 000 masked ones (p = 3 and 10) at 1 and 2 threads, the whole linkage (standardisation, search,
// counts), and the two ceilings that bound the search: the machine's double-precision multiply-add
// rate (the screening is 2p flops per pair) and its memory bandwidth (a triad over arrays far larger
// than the caches).

#include <benchmark/benchmark.h>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/distance/pairwise_tiles.h"
#include "kernels/linkage/record_linkage.h"

namespace {

/// n records of p standard normal variables and their masked versions (noise of sd 0.05), fixed seed.
struct LinkagePair {
  sdc::NumericData original;
  sdc::NumericData masked;
};

const LinkagePair& linkage_pair(std::size_t n, std::size_t p) {
  static std::vector<std::pair<std::pair<std::size_t, std::size_t>, LinkagePair>> cache;
  for (const auto& [key, pair] : cache)
    if (key == std::make_pair(n, p)) return pair;
  LinkagePair pair;
  std::mt19937_64 random(20261126);
  std::normal_distribution<double> normal;
  for (std::size_t j = 0; j < p; ++j) {
    pair.original.names.push_back("v" + std::to_string(j));
    pair.masked.names.push_back("v" + std::to_string(j));
    std::vector<double> values(n), noisy(n);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = normal(random);
      noisy[i] = values[i] + 0.05 * normal(random);
    }
    pair.original.columns.push_back(std::move(values));
    pair.masked.columns.push_back(std::move(noisy));
  }
  for (std::size_t i = 0; i < n; ++i) pair.original.row_ids.push_back(static_cast<std::int64_t>(i));
  pair.masked.row_ids = pair.original.row_ids;
  cache.emplace_back(std::make_pair(n, p), std::move(pair));
  return cache.back().second;
}

/// The search alone on prepared (standardised) points: flops = 2·p per pair of the screening.
void BM_NearestNeighbours(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto p = static_cast<std::size_t>(state.range(1));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  const auto& pair = linkage_pair(n, p);
  const auto prepared = sdc::linkage::prepare_linkage(pair.original.view(), pair.masked.view());
  for (auto _ : state) {
    auto nearest = sdc::distance::nearest_partial(prepared.queries, prepared.references, prepared.tiles);
    benchmark::DoNotOptimize(nearest.data());
  }
  const double pairs = static_cast<double>(n) * static_cast<double>(n);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(p) * pairs * 1e-9 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_NearestNeighbours)
    ->ArgNames({"records", "p", "threads"})
    ->Args({100000, 3, 1})
    ->Args({100000, 3, 2})
    ->Args({100000, 10, 1})
    ->Args({100000, 10, 2})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

/// The whole kernel of `sdc linkage` on one process: standardisation, search, counts.
void BM_RecordLinkage(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto p = static_cast<std::size_t>(state.range(1));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  const auto& pair = linkage_pair(n, p);
  for (auto _ : state) {
    auto result = sdc::linkage::record_linkage(pair.original.view(), pair.masked.view());
    benchmark::DoNotOptimize(result.linked.data());
    state.SetLabel("fractional " + std::to_string(result.fractional) + ", strict " + std::to_string(result.strict) +
                   " of " + std::to_string(result.records));
  }
}
BENCHMARK(BM_RecordLinkage)
    ->ArgNames({"records", "p", "threads"})
    ->Args({100000, 3, 2})
    ->Args({100000, 10, 2})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

using Lanes = double __attribute__((vector_size(32)));
constexpr std::int64_t kMultiplyAddSteps = 12'500'000;

/// Independent multiply-adds in registers (8 accumulators of 4 lanes); compiled, like the screening
/// micro-kernel, for AVX2 with FMA where the machine has it.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
double
multiply_add_run(double seed) {
  Lanes acc[8];
  const Lanes scale = {0.999999, 0.999999, 0.999999, 0.999999};
  const Lanes shift = {1e-9, 1e-9, 1e-9, 1e-9};
  for (std::size_t a = 0; a < 8; ++a) acc[a] = Lanes{seed + static_cast<double>(a), 1.0, 1.0, 1.0};
  for (std::int64_t step = 0; step < kMultiplyAddSteps; ++step)
    for (auto& lane : acc) lane = lane * scale + shift;
  double sum = 0.0;
  for (const auto& lane : acc) sum += lane[0] + lane[1] + lane[2] + lane[3];
  return sum;
}

/// Ceiling: the double multiply-add rate, per thread count.
void BM_CeilingMultiplyAdd(benchmark::State& state) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  tbb::global_control control(tbb::global_control::max_allowed_parallelism, threads);
  for (auto _ : state) {
    tbb::parallel_for(std::size_t{0}, threads,
                      [&](std::size_t t) { benchmark::DoNotOptimize(multiply_add_run(1.0 + static_cast<double>(t))); });
  }
  // 8 accumulators × 4 lanes × 2 flops per step.
  state.counters["GFLOP/s"] =
      benchmark::Counter(static_cast<double>(threads) * 8.0 * 4.0 * 2.0 * static_cast<double>(kMultiplyAddSteps) *
                             1e-9 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CeilingMultiplyAdd)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Ceiling: a[i] = b[i] + s·c[i] over 3 arrays of 32 MiB each (24 bytes moved per element).
void BM_CeilingTriad(benchmark::State& state) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  tbb::global_control control(tbb::global_control::max_allowed_parallelism, threads);
  constexpr std::size_t kElements = std::size_t{1} << 22;
  std::vector<double> a(kElements, 0.0), b(kElements, 1.0), c(kElements, 2.0);
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, kElements, kElements / threads),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::size_t i = range.begin(); i < range.end(); ++i) a[i] = b[i] + 3.0 * c[i];
                      });
    benchmark::DoNotOptimize(a.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(kElements) * 24);
}
BENCHMARK(BM_CeilingTriad)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
