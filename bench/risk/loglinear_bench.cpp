// Log-linear τ1/τ2 on census-shaped keys: IPF fits (independence, all two-way), one fitted-margin pass of
// the all-two-way model on the full 8-key grid, the risk step on the classes of 10⁶ records and one
// parametric-bootstrap draw over a grid.

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <map>
#include <random>

#include "bench/risk/census_keys.h"
#include "kernels/risk/frequency_count.h"
#include "kernels/risk/loglinear.h"

namespace {

using sdc::bench::zipf_sampler;

/// Eight keys with census-like levels: sex 2, age 100, marital status 5, citizenship 20 (Zipf),
/// municipality 50 (Zipf), education 7 (associated with age), occupation 10, area 300 (Zipf). Grid
/// 2.1e9 cells. Fixed seed; benchmarks may use <random>.
struct Sample {
  std::vector<std::int32_t> levels{2, 100, 5, 20, 50, 7, 10, 300};
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<double> weights;
  // The sample classes.
  std::vector<std::int32_t> class_keys;
  std::vector<std::int64_t> f;
  std::vector<double> weight_sums;
  std::vector<double> inverse_weight_sums;

  sdc::LogLinearClasses classes() const { return {levels.size(), class_keys, f, weight_sums, inverse_weight_sums}; }
};

const Sample& sample(std::size_t records) {
  static std::map<std::size_t, Sample> cache;
  Sample& s = cache[records];
  if (!s.codes.empty()) return s;
  std::mt19937_64 generator(2026);
  const auto zipf = [&](int levels) { return zipf_sampler(generator, levels); };
  auto citizenship = zipf(20);
  auto municipality = zipf(50);
  auto area = zipf(300);
  s.codes.assign(8, std::vector<std::int32_t>(records));
  s.weights.resize(records);
  for (std::size_t i = 0; i < records; ++i) {
    const auto age = static_cast<std::int32_t>(generator() % 100);
    s.codes[0][i] = static_cast<std::int32_t>(generator() % 2);
    s.codes[1][i] = age;
    s.codes[2][i] = static_cast<std::int32_t>(generator() % 5);
    s.codes[3][i] = citizenship();
    s.codes[4][i] = municipality();
    s.codes[5][i] = static_cast<std::int32_t>((static_cast<std::uint64_t>(age / 20) + generator() % 3) % 7);
    s.codes[6][i] = static_cast<std::int32_t>(generator() % 10);
    s.codes[7][i] = area();
    s.weights[i] = 20.0 + static_cast<double>(generator() % 10000) / 100.0;
  }
  sdc::KeyColumns keys;
  keys.level_counts = s.levels;
  for (const auto& c : s.codes) keys.codes.emplace_back(c);
  const auto local = sdc::frequency_count_local(keys, s.weights);
  const auto& classes = local.classes;
  s.class_keys = classes.class_keys;
  s.f = classes.counts;
  std::vector<sdc::ExactSum> inverse(classes.class_count());
  for (std::size_t i = 0; i < records; ++i) inverse[local.record_class[i]].add(1.0 / s.weights[i]);
  for (std::size_t c = 0; c < classes.class_count(); ++c) {
    s.weight_sums.push_back(classes.weights[c].value());
    s.inverse_weight_sums.push_back(inverse[c].value());
  }
  return s;
}

/// The first `key_count` keys of the sample, with classes regrouped on them.
sdc::LogLinearModelSpec model_of(bool two_way, std::size_t key_count) {
  const auto& s = sample(1000000);
  const std::vector<std::int32_t> levels(s.levels.begin(), s.levels.begin() + static_cast<std::ptrdiff_t>(key_count));
  return sdc::canonical_model(two_way ? sdc::all_two_way_model(levels) : sdc::independence_model(levels));
}

sdc::MarginCounts margins_of(const sdc::LogLinearModelSpec& spec) {
  const auto& s = sample(1000000);
  sdc::KeyColumns keys;
  keys.level_counts = spec.level_counts;
  for (std::size_t j = 0; j < spec.key_count(); ++j) keys.codes.emplace_back(s.codes[j]);
  return sdc::loglinear_margins_local(spec, keys);
}

void BM_LogLinear_Fit(benchmark::State& state) {
  const bool two_way = state.range(0) != 0;
  const auto key_count = static_cast<std::size_t>(state.range(1));
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(2)));
  const auto spec = model_of(two_way, key_count);
  const auto observed = margins_of(spec);
  for (auto _ : state) {
    const auto fit = sdc::fit_loglinear(spec, observed);
    benchmark::DoNotOptimize(fit.factors.data());
    state.counters["sweeps"] = fit.sweeps;
    state.counters["converged"] = fit.converged ? 1 : 0;
    state.counters["stream"] = fit.method == sdc::FittedMarginMethod::kGridStream ? 1 : 0;
  }
  state.counters["grid_cells"] = static_cast<double>(sdc::loglinear_grid_size(spec));
}
BENCHMARK(BM_LogLinear_Fit)
    ->ArgNames({"two_way", "keys", "threads"})
    ->Args({0, 8, 1})
    ->Args({0, 8, 2})
    ->Args({1, 4, 2})
    ->Args({1, 5, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

/// One fitted two-way margin of the all-two-way model on the first `keys` keys (8 keys: 2.1e10 grid
/// cells): the unit of work of one IPF step; a sweep does one per pair of keys.
void BM_LogLinear_AllTwoWayMarginPass(benchmark::State& state) {
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(0)));
  const auto spec = model_of(true, static_cast<std::size_t>(state.range(1)));
  sdc::LogLinearFit fit;
  for (const auto& g : spec.generators) {
    std::uint64_t cells = 1;
    for (auto j : g) cells *= static_cast<std::uint64_t>(spec.level_counts[j]);
    fit.factors.emplace_back(cells, 1e-3);
  }
  const std::vector<std::size_t> target{0, 1};
  for (auto _ : state) benchmark::DoNotOptimize(sdc::loglinear_fitted_margin(spec, fit, target).data());
  state.SetItemsProcessed(static_cast<std::int64_t>(sdc::loglinear_grid_size(spec)));
  state.counters["grid_cells"] = static_cast<double>(sdc::loglinear_grid_size(spec));
}
BENCHMARK(BM_LogLinear_AllTwoWayMarginPass)
    ->ArgNames({"threads", "keys"})
    ->Args({2, 6})
    ->Args({2, 7})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LogLinear_Risk(benchmark::State& state) {
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(0)));
  const auto& s = sample(1000000);
  const auto spec = model_of(false, 8);
  const auto fit = sdc::fit_loglinear(spec, margins_of(spec));
  const auto classes = s.classes();
  for (auto _ : state) {
    for (auto mode : {sdc::RiskMode::kNative, sdc::RiskMode::kCompat}) {
      const sdc::LogLinearRiskOptions options{.mode = mode};
      const auto risk = sdc::loglinear_risk_finalize(sdc::loglinear_risk_local(spec, fit, classes, options), options);
      benchmark::DoNotOptimize(risk.tau1);
      state.counters[mode == sdc::RiskMode::kNative ? "tau1" : "gr1"] = risk.tau1;
      state.counters["uniques"] = static_cast<double>(risk.sample_uniques);
    }
  }
  state.counters["classes"] = static_cast<double>(s.f.size());
}
BENCHMARK(BM_LogLinear_Risk)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LogLinear_ParametricDraw(benchmark::State& state) {
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(state.range(1)));
  const auto spec = model_of(true, static_cast<std::size_t>(state.range(0)));
  const auto fit = sdc::fit_loglinear(spec, margins_of(spec));
  const std::uint64_t grid = sdc::loglinear_grid_size(spec);
  std::uint64_t b = 0;
  for (auto _ : state) {
    const auto draw = sdc::draw_parametric_replicate(spec, fit, 1, b++, 0, grid);
    benchmark::DoNotOptimize(draw.unique_cells.data());
    state.counters["uniques"] = static_cast<double>(draw.unique_cells.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(grid));
}
BENCHMARK(BM_LogLinear_ParametricDraw)
    ->ArgNames({"keys", "threads"})
    ->Args({5, 2})
    ->Args({6, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
