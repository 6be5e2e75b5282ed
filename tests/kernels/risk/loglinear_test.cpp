#include "kernels/risk/loglinear.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "kernels/core/error.h"

namespace sdc {
namespace {

/// A sample class list owned by the test, with a view for the kernel.
struct ClassList {
  std::size_t key_count = 0;
  std::vector<std::int32_t> keys;
  std::vector<std::int64_t> f;
  std::vector<double> weight_sums;
  std::vector<double> inverse_weight_sums;

  LogLinearClasses view() const { return {key_count, keys, f, weight_sums, inverse_weight_sums}; }
  /// Classes [first, last) only: one block of a split.
  ClassList slice(std::size_t first, std::size_t last) const {
    ClassList part;
    part.key_count = key_count;
    part.keys.assign(keys.begin() + static_cast<std::ptrdiff_t>(first * key_count),
                     keys.begin() + static_cast<std::ptrdiff_t>(last * key_count));
    const auto b = static_cast<std::ptrdiff_t>(first);
    const auto e = static_cast<std::ptrdiff_t>(last);
    part.f.assign(f.begin() + b, f.begin() + e);
    if (!weight_sums.empty()) part.weight_sums.assign(weight_sums.begin() + b, weight_sums.begin() + e);
    if (!inverse_weight_sums.empty()) {
      part.inverse_weight_sums.assign(inverse_weight_sums.begin() + b, inverse_weight_sums.begin() + e);
    }
    return part;
  }
};

/// risk.md §11 "E log-linear toy": the 2×2 sample table [[1,3],[4,2]], every record of weight `weight`.
ClassList toy_table(double weight) {
  ClassList classes;
  classes.key_count = 2;
  classes.keys = {0, 0, 0, 1, 1, 0, 1, 1};
  classes.f = {1, 3, 4, 2};
  for (std::int64_t f : classes.f) {
    classes.weight_sums.push_back(static_cast<double>(f) * weight);
    classes.inverse_weight_sums.push_back(static_cast<double>(f) / weight);
  }
  return classes;
}

struct Fitted {
  LogLinearModelSpec spec;
  MarginCounts observed;
  LogLinearFit fit;
};

Fitted fit_on(const LogLinearModelSpec& model, const ClassList& classes, const LogLinearFitOptions& options = {}) {
  Fitted fitted;
  fitted.spec = canonical_model(model);
  fitted.observed = loglinear_margins_from_classes(fitted.spec, classes.view());
  fitted.fit = fit_loglinear(fitted.spec, fitted.observed, options);
  return fitted;
}

/// Fixed pseudo-random classes on a grid with empty cells: f_k in 0..3 drawn from a tiny LCG on the
/// cell index, skewed so that the keys are associated.
ClassList random_classes(const std::vector<std::int32_t>& levels, std::uint64_t salt) {
  ClassList classes;
  classes.key_count = levels.size();
  std::uint64_t grid = 1;
  for (auto l : levels) grid *= static_cast<std::uint64_t>(l);
  std::vector<std::int32_t> cell(levels.size());
  for (std::uint64_t k = 0; k < grid; ++k) {
    std::uint64_t rest = k;
    for (std::size_t j = levels.size(); j-- > 0;) {
      cell[j] = static_cast<std::int32_t>(rest % static_cast<std::uint64_t>(levels[j]));
      rest /= static_cast<std::uint64_t>(levels[j]);
    }
    std::uint64_t x = (k + 1) * 6364136223846793005ULL + salt * 1442695040888963407ULL;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    auto f = static_cast<std::int64_t>(x % 4);
    if (levels.size() >= 2 && cell[0] == cell[1] % levels[0]) f += 2;  // association of keys 0 and 1
    if (f == 0) continue;
    classes.keys.insert(classes.keys.end(), cell.begin(), cell.end());
    classes.f.push_back(f);
    const double weight = 2.0 + static_cast<double>(x % 7);
    classes.weight_sums.push_back(static_cast<double>(f) * weight);
    classes.inverse_weight_sums.push_back(static_cast<double>(f) / weight);
  }
  return classes;
}

double observed_total(const ClassList& classes) {
  double n = 0;
  for (auto f : classes.f) n += static_cast<double>(f);
  return n;
}

// ---- risk.md §11 "E log-linear toy" ----

TEST(LogLinearToyOracle, IndependenceFitGivesMu11OfTwo) {
  const ClassList toy = toy_table(2.5);
  const Fitted fitted = fit_on(independence_model(std::vector<std::int32_t>{2, 2}), toy);
  EXPECT_TRUE(fitted.fit.converged);
  EXPECT_NEAR(loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{0, 0}), 2.0, 1e-12);
  EXPECT_NEAR(loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{1, 1}), 3.0, 1e-12);
  EXPECT_NEAR(fitted.fit.fitted_total, 10.0, 1e-12);
}

TEST(LogLinearToyOracle, PaperFormulaWithSamplingFraction04) {
  const ClassList toy = toy_table(2.5);
  const Fitted fitted = fit_on(independence_model(std::vector<std::int32_t>{2, 2}), toy);
  // Scalar π = 0.4, and per class π_k = f_k / F_k = 1/2.5: the same value.
  for (const std::optional<double> pi : {std::optional<double>(0.4), std::optional<double>()}) {
    const LogLinearRiskOptions options{.mode = RiskMode::kNative, .sampling_fraction = pi};
    const auto risk =
        loglinear_risk_finalize(loglinear_risk_local(fitted.spec, fitted.fit, toy.view(), options), options);
    EXPECT_NEAR(risk.tau1, 0.0497871, 0.5e-7);
    EXPECT_NEAR(risk.tau2, 0.3167376, 0.5e-7);
    EXPECT_EQ(risk.sample_uniques, 1);
  }
  const UniqueRisk unique = loglinear_unique_risk(2.0, 0.4);
  EXPECT_NEAR(unique.reidentification, 0.0497871, 0.5e-7);
  EXPECT_NEAR(unique.expected_inverse, 0.3167376, 0.5e-7);
}

TEST(LogLinearToyOracle, SdcMicroConventionWithWeights25) {
  const ClassList toy = toy_table(2.5);
  const Fitted fitted = fit_on(independence_model(std::vector<std::int32_t>{2, 2}), toy);
  const LogLinearRiskOptions options{.mode = RiskMode::kCompat};
  const auto risk =
      loglinear_risk_finalize(loglinear_risk_local(fitted.spec, fitted.fit, toy.view(), options), options);
  EXPECT_NEAR(risk.tau1, 0.07529855, 0.5e-8);
  EXPECT_NEAR(risk.tau2, 0.14558454, 0.5e-8);
  EXPECT_EQ(risk.kept_classes, 4);
}

TEST(LogLinearToyOracle, SdcMicroConventionWithWeights2GivesNaNGr2) {
  const ClassList toy = toy_table(2.0);
  const Fitted fitted = fit_on(independence_model(std::vector<std::int32_t>{2, 2}), toy);
  const LogLinearRiskOptions options{.mode = RiskMode::kCompat};
  const auto risk =
      loglinear_risk_finalize(loglinear_risk_local(fitted.spec, fitted.fit, toy.view(), options), options);
  EXPECT_NEAR(risk.tau1, 0.09196986, 0.5e-8);
  EXPECT_TRUE(std::isnan(risk.tau2));
}

TEST(LogLinearRisk, CompatBoundDropsLargerClasses) {
  const ClassList toy = toy_table(2.5);
  const Fitted fitted = fit_on(independence_model(std::vector<std::int32_t>{2, 2}), toy);
  const LogLinearRiskOptions options{.mode = RiskMode::kCompat, .bound = 2.0};
  const auto risk =
      loglinear_risk_finalize(loglinear_risk_local(fitted.spec, fitted.fit, toy.view(), options), options);
  EXPECT_EQ(risk.kept_classes, 2);  // f = 1 and f = 2
  EXPECT_NEAR(risk.tau1, std::exp(-1.2) / 2, 1e-15);
}

TEST(LogLinearRisk, NativeRejectsWeightsBelowOne) {
  ClassList toy = toy_table(2.5);
  toy.weight_sums[0] = 0.5;
  const Fitted fitted = fit_on(independence_model(std::vector<std::int32_t>{2, 2}), toy);
  EXPECT_THROW(loglinear_risk_local(fitted.spec, fitted.fit, toy.view(), {}), InvalidInput);
  EXPECT_THROW(loglinear_risk_local(fitted.spec, fitted.fit, toy.view(), {.sampling_fraction = 1.5}), ParameterError);
}

// ---- IPF ----

TEST(LogLinearFit, IpfMatchesTheClosedFormForIndependence) {
  const std::vector<std::int32_t> levels{3, 4, 2, 5};
  const ClassList classes = random_classes(levels, 1);
  const Fitted fitted = fit_on(independence_model(levels), classes);
  EXPECT_TRUE(fitted.fit.converged);
  EXPECT_EQ(fitted.fit.sweeps, 2);
  const double n = observed_total(classes);
  // μ_k = n Π_j (n_{j,k_j} / n).
  std::vector<std::vector<double>> one_way(levels.size());
  for (std::size_t j = 0; j < levels.size(); ++j) {
    one_way[j].assign(static_cast<std::size_t>(levels[j]), 0.0);
    for (std::size_t c = 0; c < classes.f.size(); ++c) {
      one_way[j][static_cast<std::size_t>(classes.keys[c * levels.size() + j])] += static_cast<double>(classes.f[c]);
    }
  }
  for (std::int32_t a = 0; a < 3; ++a) {
    for (std::int32_t b = 0; b < 4; ++b) {
      for (std::int32_t d = 0; d < 5; ++d) {
        const std::vector<std::int32_t> cell{a, b, 1, d};
        double expected = n;
        for (std::size_t j = 0; j < 4; ++j) expected *= one_way[j][static_cast<std::size_t>(cell[j])] / n;
        EXPECT_NEAR(loglinear_fitted_cell(fitted.spec, fitted.fit, cell), expected, 1e-10 * expected);
      }
    }
  }
}

TEST(LogLinearFit, IpfMatchesTheClosedFormForADecomposableModel) {
  // [01][12][3]: μ = n_{01} n_{12} / n_1 · n_3 / n.
  const std::vector<std::int32_t> levels{3, 4, 3, 2};
  const ClassList classes = random_classes(levels, 2);
  LogLinearModelSpec model{.level_counts = levels, .generators = {{0, 1}, {1, 2}, {3}}, .structural_zeros = {}};
  const Fitted fitted = fit_on(model, classes);
  EXPECT_TRUE(fitted.fit.converged);
  const double n = observed_total(classes);
  std::map<std::pair<int, int>, double> n01;
  std::map<std::pair<int, int>, double> n12;
  std::map<int, double> n1;
  std::map<int, double> n3;
  for (std::size_t c = 0; c < classes.f.size(); ++c) {
    const auto* k = &classes.keys[c * 4];
    const auto f = static_cast<double>(classes.f[c]);
    n01[{k[0], k[1]}] += f;
    n12[{k[1], k[2]}] += f;
    n1[k[1]] += f;
    n3[k[3]] += f;
  }
  for (std::int32_t a = 0; a < 3; ++a) {
    for (std::int32_t b = 0; b < 4; ++b) {
      for (std::int32_t d = 0; d < 3; ++d) {
        for (std::int32_t e = 0; e < 2; ++e) {
          const double expected = n1[b] > 0 ? n01[{a, b}] * n12[{b, d}] / n1[b] * n3[e] / n : 0.0;
          const double mu = loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{a, b, d, e});
          EXPECT_NEAR(mu, expected, 1e-9 * std::max(expected, 1e-3));
        }
      }
    }
  }
}

TEST(LogLinearFit, AllTwoWayReproducesTheObservedTwoWayMargins) {
  const std::vector<std::int32_t> levels{3, 4, 2, 3};
  const ClassList classes = random_classes(levels, 3);
  const Fitted fitted = fit_on(all_two_way_model(levels), classes);
  EXPECT_TRUE(fitted.fit.converged);
  EXPECT_GT(fitted.fit.sweeps, 2);
  ASSERT_EQ(fitted.spec.generators.size(), 6U);
  for (std::size_t g = 0; g < fitted.spec.generators.size(); ++g) {
    const auto margin = loglinear_fitted_margin(fitted.spec, fitted.fit, fitted.spec.generators[g]);
    ASSERT_EQ(margin.size(), fitted.observed.counts[g].size());
    for (std::size_t k = 0; k < margin.size(); ++k) {
      EXPECT_NEAR(margin[k], static_cast<double>(fitted.observed.counts[g][k]), 1e-7) << g << ' ' << k;
    }
  }
}

TEST(LogLinearFit, GridStreamingAgreesWithVariableElimination) {
  const std::vector<std::int32_t> levels{3, 4, 2, 3};
  const ClassList classes = random_classes(levels, 4);
  LogLinearModelSpec model = all_two_way_model(levels);
  model.structural_zeros = {0, 0, 0, 0, 2, 3, 1, 2};
  const Fitted eliminated = fit_on(model, classes);
  const Fitted streamed = fit_on(model, classes, {.elimination_limit = 0});
  EXPECT_EQ(eliminated.fit.method, FittedMarginMethod::kElimination);
  EXPECT_EQ(streamed.fit.method, FittedMarginMethod::kGridStream);
  EXPECT_EQ(eliminated.fit.sweeps, streamed.fit.sweeps);
  for (std::size_t g = 0; g < eliminated.fit.factors.size(); ++g) {
    for (std::size_t k = 0; k < eliminated.fit.factors[g].size(); ++k) {
      const double a = eliminated.fit.factors[g][k];
      EXPECT_NEAR(a, streamed.fit.factors[g][k], 1e-12 * std::max(1.0, std::fabs(a)));
    }
  }
}

TEST(LogLinearFit, StructuralZerosCarryNoMass) {
  // Quasi-independence on a 2×2 table with cell (0,1) excluded: three free cells, three parameters,
  // so the fit reproduces the observed counts.
  ClassList classes;
  classes.key_count = 2;
  classes.keys = {0, 0, 1, 0, 1, 1};
  classes.f = {5, 2, 7};
  LogLinearModelSpec model = independence_model(std::vector<std::int32_t>{2, 2});
  model.structural_zeros = {0, 1};
  for (std::uint64_t limit : {std::uint64_t{1} << 24, std::uint64_t{0}}) {
    const Fitted fitted = fit_on(model, classes, {.elimination_limit = limit});
    EXPECT_TRUE(fitted.fit.converged);
    EXPECT_EQ(loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{0, 1}), 0.0);
    EXPECT_NEAR(loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{0, 0}), 5.0, 1e-7);
    EXPECT_NEAR(loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{1, 0}), 2.0, 1e-7);
    EXPECT_NEAR(loglinear_fitted_cell(fitted.spec, fitted.fit, std::vector<std::int32_t>{1, 1}), 7.0, 1e-7);
    EXPECT_NEAR(fitted.fit.fitted_total, 14.0, 1e-7);
  }
}

TEST(LogLinearFit, MarginsFromRecordsEqualMarginsFromClassesAndMergeAcrossBlocks) {
  const std::vector<std::int32_t> levels{3, 4, 2};
  const ClassList classes = random_classes(levels, 5);
  const LogLinearModelSpec spec = canonical_model(all_two_way_model(levels));
  std::vector<std::vector<std::int32_t>> columns(3);
  for (std::size_t c = 0; c < classes.f.size(); ++c) {
    for (std::int64_t r = 0; r < classes.f[c]; ++r) {
      for (std::size_t j = 0; j < 3; ++j) columns[j].push_back(classes.keys[c * 3 + j]);
    }
  }
  KeyColumns keys;
  keys.level_counts = levels;
  for (const auto& column : columns) keys.codes.emplace_back(column);
  const MarginCounts whole = loglinear_margins_from_classes(spec, classes.view());
  EXPECT_EQ(loglinear_margins_local(spec, keys).counts, whole.counts);
  const std::size_t half = classes.f.size() / 2;
  MarginCounts merged = loglinear_margins_from_classes(spec, classes.slice(0, half).view());
  loglinear_margins_merge(merged, loglinear_margins_from_classes(spec, classes.slice(half, classes.f.size()).view()));
  EXPECT_EQ(merged.counts, whole.counts);
  EXPECT_EQ(whole.total(), static_cast<std::int64_t>(observed_total(classes)));
}

TEST(LogLinearFit, ResultsDoNotDependOnTheThreadCount) {
  const std::vector<std::int32_t> levels{5, 4, 3, 6};
  const ClassList classes = random_classes(levels, 6);
  std::vector<Fitted> fits;
  std::vector<ParametricDraw> draws;
  std::vector<double> taus;
  for (std::size_t threads : {1U, 2U, 4U}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    for (std::uint64_t elimination_limit : {std::uint64_t{1} << 24, std::uint64_t{0}}) {
      fits.push_back(fit_on(all_two_way_model(levels), classes, {.elimination_limit = elimination_limit}));
      const Fitted& fitted = fits.back();
      const auto risk = loglinear_risk_local(fitted.spec, fitted.fit, classes.view(), {});
      taus.push_back(risk.tau1.value());
      taus.push_back(risk.tau2.value());
      draws.push_back(draw_parametric_replicate(fitted.spec, fitted.fit, 7, 3, 0, loglinear_grid_size(fitted.spec)));
    }
  }
  for (std::size_t i = 2; i < fits.size(); ++i) {
    EXPECT_EQ(fits[i].fit.factors, fits[i % 2].fit.factors) << i;
    EXPECT_EQ(std::memcmp(&taus[2 * i], &taus[2 * (i % 2)], 2 * sizeof(double)), 0) << i;
    EXPECT_EQ(draws[i].margins.counts, draws[i % 2].margins.counts) << i;
    EXPECT_EQ(draws[i].unique_cells, draws[i % 2].unique_cells) << i;
  }
}

TEST(LogLinearFit, StreamedAndEliminatedMarginsOverManyChunksDoNotDependOnTheThreadCount) {
  // 3.6e6 grid cells: several streamed chunks and many parallel ranges of the elimination.
  LogLinearModelSpec spec = canonical_model(all_two_way_model(std::vector<std::int32_t>{40, 30, 50, 60}));
  spec.structural_zeros = {1, 2, 3, 4, 39, 29, 49, 59};
  LogLinearFit fit;
  for (std::size_t g = 0; g < spec.generators.size(); ++g) {
    const auto cells =
        static_cast<std::size_t>(spec.level_counts[spec.generators[g][0]] * spec.level_counts[spec.generators[g][1]]);
    fit.factors.emplace_back(cells);
    for (std::size_t k = 0; k < cells; ++k) fit.factors[g][k] = 0.05 + 0.01 * static_cast<double>((k * 7 + g) % 13);
  }
  const std::vector<std::size_t> target{1, 2};
  std::vector<std::vector<double>> streamed;
  std::vector<std::vector<double>> eliminated;
  std::vector<ParametricDraw> draws;
  for (std::size_t threads : {1U, 2U, 4U}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    streamed.push_back(loglinear_fitted_margin(spec, fit, target, {.elimination_limit = 0}));
    eliminated.push_back(loglinear_fitted_margin(spec, fit, target));
    draws.push_back(draw_parametric_replicate(spec, fit, 3, 0, 0, loglinear_grid_size(spec)));
  }
  for (std::size_t i = 1; i < streamed.size(); ++i) {
    EXPECT_EQ(streamed[i], streamed[0]);
    EXPECT_EQ(eliminated[i], eliminated[0]);
    EXPECT_EQ(draws[i].margins.counts, draws[0].margins.counts);
    EXPECT_EQ(draws[i].unique_cells, draws[0].unique_cells);
  }
  for (std::size_t k = 0; k < streamed[0].size(); ++k) {
    EXPECT_NEAR(streamed[0][k], eliminated[0][k], 1e-11 * eliminated[0][k]);
  }
}

TEST(LogLinearRisk, SplitClassesMergeToTheSameBits) {
  const std::vector<std::int32_t> levels{5, 4, 3, 6};
  const ClassList classes = random_classes(levels, 8);
  const Fitted fitted = fit_on(all_two_way_model(levels), classes);
  for (RiskMode mode : {RiskMode::kNative, RiskMode::kCompat}) {
    const LogLinearRiskOptions options{.mode = mode};
    const auto whole =
        loglinear_risk_finalize(loglinear_risk_local(fitted.spec, fitted.fit, classes.view(), options), options);
    const std::size_t third = classes.f.size() / 3;
    auto merged =
        loglinear_risk_local(fitted.spec, fitted.fit, classes.slice(2 * third, classes.f.size()).view(), options);
    loglinear_risk_merge(merged,
                         loglinear_risk_local(fitted.spec, fitted.fit, classes.slice(0, third).view(), options));
    loglinear_risk_merge(
        merged, loglinear_risk_local(fitted.spec, fitted.fit, classes.slice(third, 2 * third).view(), options));
    const auto split = loglinear_risk_finalize(merged, options);
    EXPECT_EQ(std::memcmp(&split.tau1, &whole.tau1, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&split.tau2, &whole.tau2, sizeof(double)), 0);
    EXPECT_EQ(split.sample_uniques, whole.sample_uniques);
    EXPECT_GT(whole.sample_uniques, 0);
  }
}

// ---- model selection ----

TEST(LogLinearSelection, ToyIndependenceLikelihoodAndParameters) {
  const ClassList toy = toy_table(2.5);
  const std::vector<LogLinearModelSpec> candidates{independence_model(std::vector<std::int32_t>{2, 2}),
                                                   all_two_way_model(std::vector<std::int32_t>{2, 2})};
  const auto selection = select_loglinear_model(candidates, toy.view());
  ASSERT_EQ(selection.candidates.size(), 2U);
  // logL = Σ f log μ − μ − log f! with μ = (2, 2, 3, 3), f = (1, 3, 4, 2).
  const double independence = 4 * std::log(2.0) + 6 * std::log(3.0) - 10 - std::log(288.0);
  const double saturated = 3 * std::log(3.0) + 4 * std::log(4.0) + 2 * std::log(2.0) - 10 - std::log(288.0);
  EXPECT_NEAR(selection.candidates[0].log_likelihood, independence, 1e-12);
  EXPECT_NEAR(selection.candidates[1].log_likelihood, saturated, 1e-9);
  EXPECT_EQ(selection.candidates[0].parameters, 3);
  EXPECT_EQ(selection.candidates[1].parameters, 4);
  EXPECT_NEAR(selection.candidates[0].deviance, 2 * (saturated - independence), 1e-9);
  EXPECT_NEAR(selection.candidates[1].deviance, 0.0, 1e-9);
  EXPECT_NEAR(selection.candidates[0].aic, -2 * independence + 6, 1e-12);
  EXPECT_NEAR(selection.candidates[0].bic, -2 * independence + 3 * std::log(10.0), 1e-12);
  // The 2×2 association is weak: both criteria keep independence.
  EXPECT_EQ(selection.best_by_aic, 0U);
  EXPECT_EQ(selection.best_by_bic, 0U);
}

TEST(LogLinearSelection, ParameterCountsFollowTheHierarchicalClosure) {
  const std::vector<std::int32_t> levels{2, 3, 4};
  EXPECT_EQ(loglinear_parameter_count(canonical_model(independence_model(levels))), 1 + 1 + 2 + 3);
  EXPECT_EQ(loglinear_parameter_count(canonical_model(all_two_way_model(levels))), 7 + 2 + 3 + 6);
  const LogLinearModelSpec saturated{.level_counts = levels, .generators = {{0, 1, 2}}, .structural_zeros = {}};
  EXPECT_EQ(loglinear_parameter_count(canonical_model(saturated)), 24);
}

TEST(LogLinearSelection, AssociatedKeysChooseTheTwoWayModel) {
  const std::vector<std::int32_t> levels{4, 4, 3};
  ClassList classes = random_classes(levels, 9);
  for (std::size_t c = 0; c < classes.f.size(); ++c) {
    if (classes.keys[c * 3] == classes.keys[c * 3 + 1]) classes.f[c] += 20;  // strong 0–1 association
  }
  const LogLinearModelSpec pair{.level_counts = levels, .generators = {{0, 1}, {2}}, .structural_zeros = {}};
  const std::vector<LogLinearModelSpec> candidates{independence_model(levels), pair, all_two_way_model(levels)};
  const auto selection = select_loglinear_model(candidates, classes.view());
  EXPECT_EQ(selection.best_by_bic, 1U);
  EXPECT_LT(selection.candidates[1].aic, selection.candidates[0].aic);
  EXPECT_GE(selection.candidates[2].log_likelihood, selection.candidates[1].log_likelihood - 1e-9);
}

// ---- parametric bootstrap ----

TEST(LogLinearBootstrap, PoissonDrawsHaveTheRightMeanAndVariance) {
  const RecordRng rng(11, StepId::kBootstrapParametric);
  for (double mean : {0.05, 1.0, 4.5, 9.9, 10.0, 37.0, 1234.5}) {
    constexpr int kDraws = 40000;
    double sum = 0;
    double sum_squares = 0;
    for (int i = 0; i < kDraws; ++i) {
      const auto x = static_cast<double>(poisson_draw(rng, {.unit = static_cast<std::uint64_t>(i)}, mean));
      sum += x;
      sum_squares += x * x;
    }
    const double sample_mean = sum / kDraws;
    const double sample_variance = sum_squares / kDraws - sample_mean * sample_mean;
    EXPECT_NEAR(sample_mean, mean, 5 * std::sqrt(mean / kDraws)) << mean;
    // Var of the sample variance of a Poisson ≈ (μ + 2μ²)/n.
    EXPECT_NEAR(sample_variance, mean, 5 * std::sqrt((mean + 2 * mean * mean) / kDraws)) << mean;
  }
}

TEST(LogLinearBootstrap, SmallMeanDrawsMatchThePoissonProbabilities) {
  const RecordRng rng(12, StepId::kBootstrapParametric);
  constexpr int kDraws = 40000;
  const double mean = 0.7;
  std::vector<int> histogram(6, 0);
  for (int i = 0; i < kDraws; ++i) {
    const auto x = poisson_draw(rng, {.unit = static_cast<std::uint64_t>(i), .replicate = 2}, mean);
    ++histogram[static_cast<std::size_t>(std::min<std::int64_t>(x, 5))];
  }
  double probability = std::exp(-mean);
  for (int k = 0; k < 5; ++k) {
    const double expected = kDraws * probability;
    EXPECT_NEAR(histogram[static_cast<std::size_t>(k)], expected, 5 * std::sqrt(expected) + 1) << k;
    probability *= mean / (k + 1);
  }
}

TEST(LogLinearBootstrap, MeanOfReplicateMarginsMatchesTheFittedMargins) {
  const std::vector<std::int32_t> levels{3, 4, 2, 3};
  const ClassList classes = random_classes(levels, 10);
  const Fitted fitted = fit_on(all_two_way_model(levels), classes);
  const std::uint64_t grid = loglinear_grid_size(fitted.spec);
  constexpr int kReplicates = 300;
  std::vector<std::vector<double>> sums;
  for (const auto& table : fitted.observed.counts) sums.emplace_back(table.size(), 0.0);
  for (int b = 0; b < kReplicates; ++b) {
    const auto draw = draw_parametric_replicate(fitted.spec, fitted.fit, 99, static_cast<std::uint64_t>(b), 0, grid);
    for (std::size_t g = 0; g < sums.size(); ++g) {
      for (std::size_t k = 0; k < sums[g].size(); ++k) sums[g][k] += static_cast<double>(draw.margins.counts[g][k]);
    }
  }
  for (std::size_t g = 0; g < sums.size(); ++g) {
    const auto margin = loglinear_fitted_margin(fitted.spec, fitted.fit, fitted.spec.generators[g]);
    for (std::size_t k = 0; k < margin.size(); ++k) {
      // The margin of f* is Poisson(fitted margin): the mean of B replicates has sd sqrt(μ/B).
      EXPECT_NEAR(sums[g][k] / kReplicates, margin[k], 5 * std::sqrt(margin[k] / kReplicates) + 1e-12) << g << ' ' << k;
    }
  }
}

TEST(LogLinearBootstrap, CellRangesMergeToTheWholeGrid) {
  const std::vector<std::int32_t> levels{3, 4, 2, 3};
  const ClassList classes = random_classes(levels, 13);
  const Fitted fitted = fit_on(all_two_way_model(levels), classes);
  const std::uint64_t grid = loglinear_grid_size(fitted.spec);
  const auto whole = draw_parametric_replicate(fitted.spec, fitted.fit, 5, 1, 0, grid);
  auto first = draw_parametric_replicate(fitted.spec, fitted.fit, 5, 1, 0, 29);
  const auto second = draw_parametric_replicate(fitted.spec, fitted.fit, 5, 1, 29, grid);
  loglinear_margins_merge(first.margins, second.margins);
  first.unique_cells.insert(first.unique_cells.end(), second.unique_cells.begin(), second.unique_cells.end());
  EXPECT_EQ(first.margins.counts, whole.margins.counts);
  EXPECT_EQ(first.unique_cells, whole.unique_cells);
  EXPECT_TRUE(std::is_sorted(whole.unique_cells.begin(), whole.unique_cells.end()));
}

TEST(LogLinearBootstrap, TauReplicateRefitsAndIsReproducible) {
  const std::vector<std::int32_t> levels{3, 4, 2, 3};
  const ClassList classes = random_classes(levels, 14);
  const Fitted fitted = fit_on(independence_model(levels), classes);
  const auto a = tau_replicate(fitted.spec, fitted.fit, 4, 21, 0.1);
  const auto b = tau_replicate(fitted.spec, fitted.fit, 4, 21, 0.1);
  const auto c = tau_replicate(fitted.spec, fitted.fit, 5, 21, 0.1);
  EXPECT_TRUE(a.converged);
  EXPECT_EQ(a.tau1, b.tau1);
  EXPECT_EQ(a.tau2, b.tau2);
  EXPECT_NE(a.tau2, c.tau2);
  EXPECT_GT(a.sample_uniques, 0);
  EXPECT_LE(a.tau1, a.tau2);
  EXPECT_LE(a.tau2, static_cast<double>(a.sample_uniques));
}

// ---- errors ----

TEST(LogLinearModel, RejectsBadSpecsAndCodes) {
  const std::vector<std::int32_t> levels{2, 3};
  EXPECT_THROW(canonical_model({.level_counts = levels, .generators = {{0, 2}}, .structural_zeros = {}}),
               ParameterError);
  EXPECT_THROW(canonical_model({.level_counts = {2, 0}, .generators = {{0}}, .structural_zeros = {}}), ParameterError);
  EXPECT_THROW(canonical_model({.level_counts = levels, .generators = {{0}}, .structural_zeros = {0, 3}}),
               ParameterError);
  const LogLinearModelSpec spec =
      canonical_model({.level_counts = levels, .generators = {{1, 0}, {0}}, .structural_zeros = {}});
  ASSERT_EQ(spec.generators.size(), 1U);
  EXPECT_EQ(spec.generators[0], (std::vector<std::size_t>{0, 1}));
  ClassList classes;
  classes.key_count = 2;
  classes.keys = {0, 3};
  classes.f = {1};
  EXPECT_THROW(loglinear_margins_from_classes(spec, classes.view()), InvalidInput);
}

}  // namespace
}  // namespace sdc
