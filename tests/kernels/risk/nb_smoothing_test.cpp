#include "kernels/risk/nb_smoothing.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/risk/individual_risk.h"

namespace sdc {
namespace {

// ---- draws for the simulations (RecordRng, StepId kRiskSimulation) ------------------------------

/// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1)·U^(1/shape).
/// Each rejection attempt takes a fresh counter block (attempt word).
double gamma_draw(const RecordRng& rng, DrawCounter counter, double shape) {
  const bool boosted = shape < 1.0;
  const double d = (boosted ? shape + 1.0 : shape) - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (counter.attempt = 0;; ++counter.attempt) {
    const auto bits = rng.bits(counter);
    const double z = normal_pair_from_bits(bits[0], bits[1]).first;
    double v = 1.0 + c * z;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = RecordRng::uniform_from_bits(bits[2]);
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) {
      double x = d * v;
      if (boosted) x *= std::pow(1.0 - RecordRng::uniform_from_bits(bits[3]), 1.0 / shape);
      return x;
    }
  }
}

/// Poisson(mean) by inversion from one uniform (means below a few hundred).
std::int64_t poisson_from_uniform(double u, double mean) {
  double p = std::exp(-mean);
  double cdf = p;
  std::int64_t x = 0;
  while (u >= cdf && p > 0.0) {
    ++x;
    p *= mean / static_cast<double>(x);
    cdf += p;
  }
  return x;
}

// ---- neighbourhoods ------------------------------------------------------------------------------

std::size_t neighbourhood_size(std::size_t keys, std::int32_t c, std::optional<std::int32_t> d = std::nullopt) {
  return nb_neighbourhood_offsets({keys, c, d}).size() / keys;
}

TEST(NbSmoothing, NeighbourhoodSizesMatchThePaper) {
  // risk.md §11 "E neighbourhood sizes" (the paper's Examples 1–3).
  EXPECT_EQ(neighbourhood_size(3, 2), 125U);
  EXPECT_EQ(neighbourhood_size(3, 3), 343U);
  EXPECT_EQ(neighbourhood_size(5, 2, 4), 581U);
  EXPECT_EQ(neighbourhood_size(5, 2, 6), 1893U);
  EXPECT_EQ(neighbourhood_size(4, 2, 4), 257U);
  EXPECT_EQ(neighbourhood_size(4, 2, 6), 545U);
  EXPECT_EQ(neighbourhood_size(4, 2, 8), 625U);
}

TEST(NbSmoothing, NeighbourhoodOffsetsAreLexicographicAndContainTheCentre) {
  const auto offsets = nb_neighbourhood_offsets({2, 1, 1});
  EXPECT_EQ(offsets, (std::vector<std::int32_t>{-1, 0, 0, -1, 0, 0, 0, 1, 1, 0}));
  const auto design = nb_design_matrix(offsets, 2, 2);
  ASSERT_EQ(design.rows(), 5);
  ASSERT_EQ(design.cols(), 5);
  // Row (-1, 0): 1, δ1, δ1², δ2, δ2².
  EXPECT_EQ(design(0, 0), 1.0);
  EXPECT_EQ(design(0, 1), -1.0);
  EXPECT_EQ(design(0, 2), 1.0);
  EXPECT_EQ(design(0, 3), 0.0);
  EXPECT_EQ(design(0, 4), 0.0);
}

// ---- formula (7) ---------------------------------------------------------------------------------

/// Formula (7) from the population parameters: μ = Nπαβ, so that ρ = (μ + α)/(μ/π + α) is
/// (Nπβ + 1)/(Nβ + 1).
NbUniqueRisk risk_from_population(double alpha, double beta, double population, double pi) {
  return nb_unique_risk(population * pi * alpha * beta, alpha, pi);
}

TEST(NbSmoothing, FormulaSevenOracleAlphaHalf) {
  const auto r = risk_from_population(0.5, 0.004, 1000, 0.1);
  EXPECT_NEAR(r.rho, 0.28, 0.5e-2);
  EXPECT_NEAR(r.rho, (1000 * 0.1 * 0.004 + 1) / (1000 * 0.004 + 1), 1e-15);
  EXPECT_NEAR(r.population_unique_probability, 0.14816, 0.5e-5);
  EXPECT_NEAR(r.expected_inverse_population, 0.36622, 0.5e-5);
}

TEST(NbSmoothing, FormulaSevenOracleAlphaTwo) {
  const auto r = risk_from_population(2, 0.001, 1000, 0.2);
  EXPECT_NEAR(r.rho, 0.6, 0.5e-1);
  EXPECT_NEAR(r.rho, 0.6, 1e-15);
  EXPECT_NEAR(r.population_unique_probability, 0.216, 0.5e-3);
  EXPECT_NEAR(r.expected_inverse_population, 0.48, 0.5e-2);
  EXPECT_NEAR(r.expected_inverse_population, 0.48, 1e-14);
}

TEST(NbSmoothing, FormulaSevenOracleAlphaFifthAgreesWithItsFormulaNotAllPrintedDigits) {
  // risk.md prints P = 0.05952, E = 0.19740 for (0.2, 0.02, 1000, 0.05). Formula (7) with
  // ρ = (Nπβ + 1)/(Nβ + 1) = 2/21 gives P = 0.0595077, E = 0.1974577 (checked independently in
  // double precision); the printed E is what ρ rounded to 0.0952 gives, and the printed P matches
  // neither. We assert the formula's values and that the printed ones are within 1e-4.
  const auto r = risk_from_population(0.2, 0.02, 1000, 0.05);
  EXPECT_NEAR(r.rho, 2.0 / 21.0, 1e-16);
  EXPECT_NEAR(r.population_unique_probability, 0.0595077, 0.5e-7);
  EXPECT_NEAR(r.expected_inverse_population, 0.1974577, 0.5e-7);
  EXPECT_NEAR(r.population_unique_probability, 0.05952, 1e-4);
  EXPECT_NEAR(r.expected_inverse_population, 0.19740, 1e-4);
}

TEST(NbSmoothing, FormulaSevenAgreesWithAMonteCarloSimulationOfTheModel) {
  // γ ~ Gamma(α = 2, β = 0.001), F ~ Poisson(Nγ), f ~ Bin(F, π = 0.2), N = 1000; among trials with
  // f = 1, the share with F = 1 and the mean of 1/F. About 23% of trials have f = 1, so 2^23 trials
  // give standard errors of 2.9e-4 (P) and 2.2e-4 (E): ±0.001 is a margin of 3.4 of them or more.
  constexpr double kAlpha = 2.0, kBeta = 0.001, kN = 1000.0, kPi = 0.2;
  constexpr std::uint64_t kTrials = std::uint64_t{1} << 23;
  constexpr std::uint64_t kBlock = std::uint64_t{1} << 16;
  constexpr std::size_t kMaxF = 128;
  const RecordRng rng(20260101, StepId::kRiskSimulation);
  std::vector<std::array<std::int64_t, kMaxF>> histograms(kTrials / kBlock);
  tbb::parallel_for(std::size_t{0}, histograms.size(), [&](std::size_t block) {
    auto& histogram = histograms[block];
    histogram.fill(0);
    for (std::uint64_t trial = block * kBlock; trial < (block + 1) * kBlock; ++trial) {
      const double gamma = kBeta * gamma_draw(rng, {trial, 0, 0, 0}, kAlpha);
      const std::int64_t F = poisson_from_uniform(rng.uniform({trial, 1, 0, 0}), kN * gamma);
      std::int64_t f = 0;
      for (std::int64_t i = 0; i < F && f < 2; ++i) {
        const auto word = static_cast<unsigned>(i % 4);
        f += rng.uniform({trial, 2 + static_cast<std::uint64_t>(i / 4), 0, 0}, word) < kPi ? 1 : 0;
      }
      if (f == 1) ++histogram[static_cast<std::size_t>(std::min<std::int64_t>(F, kMaxF - 1))];
    }
  });
  std::array<std::int64_t, kMaxF> total{};
  for (const auto& h : histograms)
    for (std::size_t F = 0; F < kMaxF; ++F) total[F] += h[F];
  ASSERT_EQ(total[kMaxF - 1], 0);
  const double uniques = static_cast<double>(std::accumulate(total.begin(), total.end(), std::int64_t{0}));
  double inverse = 0.0;
  for (std::size_t F = 1; F < kMaxF; ++F) inverse += static_cast<double>(total[F]) / static_cast<double>(F);
  const double simulated_p = static_cast<double>(total[1]) / uniques;
  const double simulated_e = inverse / uniques;
  const auto r = risk_from_population(kAlpha, kBeta, kN, kPi);
  std::cout << "Monte Carlo: " << uniques << " sample uniques, P = " << simulated_p << " (formula "
            << r.population_unique_probability << "), E = " << simulated_e << " (formula "
            << r.expected_inverse_population << ")\n";
  EXPECT_NEAR(simulated_p, r.population_unique_probability, 0.001);
  EXPECT_NEAR(simulated_e, r.expected_inverse_population, 0.001);
}

TEST(NbSmoothing, SmallAlphaReproducesBenedettiFranconi) {
  // α -> 0 with μ fixed (β -> ∞): ρ -> π, F | f ~ f + NB(f, π): P = p, E = (p/q) ln(1/p), p = π.
  for (double pi : {0.01, 0.1, 0.5}) {
    const auto r = nb_unique_risk(1.0, 1e-5, pi);
    EXPECT_NEAR(r.population_unique_probability, pi, 1e-4 * pi) << pi;
    EXPECT_NEAR(r.expected_inverse_population, benedetti_franconi_closed_form(1.0, pi), 1e-4) << pi;
  }
}

TEST(NbSmoothing, LargeAlphaReproducesThePoissonModel) {
  // α -> ∞ with αβ fixed: F - f | f ~ Poisson(v), v = μ(1 - π)/π: P = e^-v, E = (1 - e^-v)/v.
  for (const auto& [mu, pi] : std::vector<std::pair<double, double>>{{0.3, 0.1}, {2.0, 0.4}, {0.05, 0.02}}) {
    const double v = mu * (1 - pi) / pi;
    const auto r = nb_unique_risk(mu, 1e5, pi);
    EXPECT_NEAR(r.population_unique_probability, std::exp(-v), 1e-4 * std::exp(-v) + 1e-12) << mu << ' ' << pi;
    EXPECT_NEAR(r.expected_inverse_population, -std::expm1(-v) / v, 1e-4) << mu << ' ' << pi;
  }
}

TEST(NbSmoothing, SamplingFractionOneMakesEveryUniqueAPopulationUnique) {
  const auto r = nb_unique_risk(0.7, 3.0, 1.0);
  EXPECT_EQ(r.population_unique_probability, 1.0);
  EXPECT_EQ(r.expected_inverse_population, 1.0);
}

// ---- the local likelihood ------------------------------------------------------------------------

/// A 3-key neighbourhood (c = 2, 125 cells) with counts from a fixed pattern, some large.
struct Neighbourhood {
  Eigen::MatrixXd design;
  std::vector<double> f;
};

Neighbourhood patterned_neighbourhood(std::int64_t large_count) {
  Neighbourhood n;
  const auto offsets = nb_neighbourhood_offsets({3, 2, std::nullopt});
  n.design = nb_design_matrix(offsets, 3, 2);
  n.f.resize(static_cast<std::size_t>(n.design.rows()));
  for (std::size_t o = 0; o < n.f.size(); ++o) n.f[o] = static_cast<double>((o * 7 + 3) % 5 == 0 ? (o % 4) : 0);
  n.f[62] = 1.0;  // the centre
  n.f[10] = static_cast<double>(large_count);
  n.f[90] = 4.0;
  return n;
}

void expect_derivatives_match_central_differences(const Neighbourhood& n, double a, const Eigen::VectorXd& theta) {
  const Eigen::Index dim = theta.size() + 1;
  const auto at = [&](const Eigen::VectorXd& x) {
    return nb_log_likelihood(n.design, n.f, x[0], x.tail(x.size() - 1));
  };
  Eigen::VectorXd x(dim);
  x[0] = a;
  x.tail(dim - 1) = theta;
  const NbLikelihood exact = at(x);
  ASSERT_NEAR(exact.value, nb_log_likelihood_value(n.design, n.f, a, theta), 1e-12 * std::fabs(exact.value));
  const double gradient_scale = std::max(1.0, exact.gradient.cwiseAbs().maxCoeff());
  const double hessian_scale = std::max(1.0, exact.hessian.cwiseAbs().maxCoeff());
  // Five-point central differences (error O(h^4)) with h = 1e-3 of the coordinate's scale: the
  // a-derivatives cancel heavily for small a, so a small h would measure rounding, not the formula.
  for (Eigen::Index j = 0; j < dim; ++j) {
    const double h = 1e-3 * (j == 0 ? a : 1.0);
    const auto shifted = [&](double steps) {
      Eigen::VectorXd y = x;
      y[j] += steps * h;
      return y;
    };
    const auto value = [&](double steps) {
      const Eigen::VectorXd y = shifted(steps);
      return nb_log_likelihood_value(n.design, n.f, y[0], y.tail(dim - 1));
    };
    const double numeric_gradient = (-value(2) + 8 * value(1) - 8 * value(-1) + value(-2)) / (12 * h);
    EXPECT_NEAR(exact.gradient[j], numeric_gradient, 1e-7 * gradient_scale) << "a = " << a << ", component " << j;
    const Eigen::VectorXd numeric_column = (-at(shifted(2)).gradient + 8 * at(shifted(1)).gradient -
                                            8 * at(shifted(-1)).gradient + at(shifted(-2)).gradient) /
                                           (12 * h);
    for (Eigen::Index i = 0; i < dim; ++i)
      EXPECT_NEAR(exact.hessian(i, j), numeric_column[i], 1e-7 * hessian_scale)
          << "a = " << a << ", entry " << i << ',' << j;
  }
}

TEST(NbSmoothing, GradientAndHessianMatchCentralDifferences) {
  const Neighbourhood n = patterned_neighbourhood(9);
  Eigen::VectorXd theta(7);
  theta << -0.4, 0.1, -0.05, -0.2, 0.03, 0.15, -0.08;
  for (double a : {1e-3, 0.05, 0.7, 4.0, 50.0}) expect_derivatives_match_central_differences(n, a, theta);
}

TEST(NbSmoothing, LargeCountsTakeTheDigammaPathConsistently) {
  // Counts above the direct-sum limit use lgamma, digamma and trigamma: the derivatives must still
  // be those of the value.
  const Neighbourhood n = patterned_neighbourhood(3000);
  Eigen::VectorXd theta(7);
  theta << 0.5, 0.2, -0.1, 0.0, 0.02, -0.1, 0.05;
  for (double a : {0.01, 0.3, 5.0}) expect_derivatives_match_central_differences(n, a, theta);
}

TEST(NbSmoothing, FitRecoversASmoothLogQuadraticSurface) {
  // f = round(exp(quadratic)) with large counts: θ is recovered, and the rounding leaves the data
  // under-dispersed, so a goes to its lower bound (the Poisson limit).
  const auto offsets = nb_neighbourhood_offsets({2, 3, std::nullopt});
  const Eigen::MatrixXd design = nb_design_matrix(offsets, 2, 2);
  Eigen::VectorXd truth(5);
  truth << std::log(2000.0), 0.2, -0.05, -0.1, -0.08;
  const Eigen::VectorXd eta = design * truth;
  std::vector<double> f(static_cast<std::size_t>(design.rows()));
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::round(std::exp(eta[static_cast<Eigen::Index>(i)]));
  const NbLocalFit fit = nb_fit_local_model(design, f);
  EXPECT_TRUE(fit.converged);
  EXPECT_LT(fit.iterations, 100);
  for (Eigen::Index j = 0; j < truth.size(); ++j) EXPECT_NEAR(fit.theta[j], truth[j], 1e-3) << j;
  EXPECT_LT(fit.a, 1e-4);
}

TEST(NbSmoothing, FitRecoversOverdispersionAndStopsAtAStationaryPoint) {
  // A flat neighbourhood of 5 keys (c = 2, 3 125 cells) drawn from NB(α = 2, μ = 3): γ ~ Gamma,
  // f ~ Poisson. The estimate of α lies within 15% (its standard error is about 5%).
  const auto offsets = nb_neighbourhood_offsets({5, 2, std::nullopt});
  const Eigen::MatrixXd design = nb_design_matrix(offsets, 5, 2);
  const RecordRng rng(7, StepId::kRiskSimulation);
  std::vector<double> f(static_cast<std::size_t>(design.rows()));
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double gamma = gamma_draw(rng, {i, 0, 1, 0}, 2.0) / 2.0;
    f[i] = static_cast<double>(poisson_from_uniform(rng.uniform({i, 1, 1, 0}), 3.0 * gamma));
  }
  const NbLocalFit fit = nb_fit_local_model(design, f);
  EXPECT_TRUE(fit.converged);
  EXPECT_NEAR(1.0 / fit.a, 2.0, 0.3);
  EXPECT_NEAR(std::exp(fit.theta[0]), 3.0, 0.3);
  // Stationary: the penalised gradient in (ln a, θ) vanishes and the Hessian is negative definite.
  const NbLikelihood l = nb_log_likelihood(design, f, fit.a, fit.theta);
  Eigen::VectorXd gradient = l.gradient;
  gradient[0] *= fit.a;
  gradient.tail(fit.theta.size()) -= kNbThetaRidge * fit.theta;
  EXPECT_LT(gradient.cwiseAbs().maxCoeff(), 1e-4);
  Eigen::MatrixXd hessian = l.hessian;
  hessian.row(0) *= fit.a;
  hessian.col(0) *= fit.a;
  hessian(0, 0) += fit.a * l.gradient[0];
  EXPECT_LT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(hessian).eigenvalues().maxCoeff(), 0.0);
}

// ---- the kernel ----------------------------------------------------------------------------------

/// Classes of a sample as the kernel takes them: one fixed key, `ordinal` ordinal keys.
struct ClassList {
  std::size_t ordinal = 0;
  std::vector<std::int32_t> fixed, ordinal_codes, levels;
  std::vector<std::int64_t> counts;
  std::vector<double> pi;
  NbSampleClasses view() const {
    return {.fixed_key_count = 1,
            .ordinal_key_count = ordinal,
            .fixed_keys = fixed,
            .ordinal_keys = ordinal_codes,
            .ordinal_levels = levels,
            .counts = counts,
            .sampling_fraction = pi,
            .ordinal_key_names = {}};
  }
  void add(std::int32_t fixed_code, std::vector<std::int32_t> codes, std::int64_t f) {
    fixed.push_back(fixed_code);
    ordinal_codes.insert(ordinal_codes.end(), codes.begin(), codes.end());
    counts.push_back(f);
  }
};

/// A small random sample table: 2 fixed groups x 12 x 10 x 8 ordinal cells, counts from a smooth NB.
ClassList small_sample(std::uint64_t seed) {
  ClassList list;
  list.ordinal = 3;
  list.levels = {12, 10, 8};
  list.pi = {0.1};
  const RecordRng rng(seed, StepId::kRiskSimulation);
  std::uint64_t cell = 0;
  for (std::int32_t s = 0; s < 2; ++s)
    for (std::int32_t x = 0; x < 12; ++x)
      for (std::int32_t y = 0; y < 10; ++y)
        for (std::int32_t z = 0; z < 8; ++z, ++cell) {
          const double mean = std::exp(0.8 - 0.5 * std::pow((x - 5.0) / 3.0, 2) - 0.5 * std::pow((y - 4.0) / 3.0, 2) -
                                       0.1 * z - 0.3 * s);
          const double gamma = gamma_draw(rng, {cell, 0, 0, 0}, 1.5) / 1.5;
          const std::int64_t f = poisson_from_uniform(rng.uniform({cell, 1, 0, 0}), mean * gamma);
          if (f > 0) list.add(s, {x, y, z}, f);
        }
  return list;
}

TEST(NbSmoothing, IsolatedUniqueGetsAFiniteFit) {
  // A sample unique whose whole neighbourhood is empty: the quadratic terms fit the spike (they run
  // off towards -∞, held finite by the ridge on θ), so μ̂ -> f = 1 and the data look Poisson (a at
  // its lower bound); the population cell then has mean 1/π and is rarely unique: P ≈ e^-9.
  ClassList list;
  list.ordinal = 3;
  list.levels = {20, 20, 20};
  list.pi = {0.1};
  list.add(0, {10, 10, 10}, 1);
  list.add(0, {0, 0, 0}, 3);
  const auto local = nb_smoothing_local(list.view(), {});
  ASSERT_EQ(local.unique_class, (std::vector<std::size_t>{0}));
  EXPECT_EQ(local.partial.not_converged, 0);
  const auto& r = local.risk[0];
  EXPECT_NEAR(r.mu, 1.0, 1e-3);
  EXPECT_GT(r.alpha, 1e5);
  EXPECT_NEAR(r.population_unique_probability, std::exp(-9.0), 1e-5);
  EXPECT_NEAR(r.expected_inverse_population, -std::expm1(-9.0) / 9.0, 1e-4);
}

TEST(NbSmoothing, ResultsAreIdenticalForAnyThreadCountAndSplitByFixedKeys) {
  const ClassList list = small_sample(11);
  NbSmoothingLocal one_thread;
  {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 1);
    one_thread = nb_smoothing_local(list.view(), {});
  }
  const NbSmoothingLocal two_threads = nb_smoothing_local(list.view(), {});
  ASSERT_GT(one_thread.unique_class.size(), 50U);
  ASSERT_EQ(one_thread.unique_class, two_threads.unique_class);
  for (std::size_t u = 0; u < one_thread.risk.size(); ++u) {
    EXPECT_EQ(one_thread.risk[u].population_unique_probability, two_threads.risk[u].population_unique_probability);
    EXPECT_EQ(one_thread.risk[u].expected_inverse_population, two_threads.risk[u].expected_inverse_population);
  }

  // Split by the fixed key, as a distributed composition does, and merge the partials in both orders.
  ClassList parts[2];
  for (auto& part : parts) {
    part.ordinal = list.ordinal;
    part.levels = list.levels;
    part.pi = list.pi;
  }
  for (std::size_t c = 0; c < list.counts.size(); ++c)
    parts[list.fixed[c]].add(list.fixed[c],
                             {list.ordinal_codes[3 * c], list.ordinal_codes[3 * c + 1], list.ordinal_codes[3 * c + 2]},
                             list.counts[c]);
  const auto first = nb_smoothing_local(parts[0].view(), {});
  const auto second = nb_smoothing_local(parts[1].view(), {});
  NbSmoothingPartial forward = first.partial, backward = second.partial;
  nb_smoothing_merge(forward, second.partial);
  nb_smoothing_merge(backward, first.partial);
  const auto whole = nb_smoothing_finalize(one_thread.partial);
  for (const auto& merged : {nb_smoothing_finalize(forward), nb_smoothing_finalize(backward)}) {
    EXPECT_EQ(merged.tau1, whole.tau1);
    EXPECT_EQ(merged.tau2, whole.tau2);
    EXPECT_EQ(merged.sample_uniques, whole.sample_uniques);
    EXPECT_EQ(merged.not_converged, whole.not_converged);
  }
  // The per-unique risks of a part equal those of the whole (classes keep their relative order).
  ASSERT_EQ(first.risk.size() + second.risk.size(), one_thread.risk.size());
  for (std::size_t u = 0; u < first.risk.size(); ++u)
    EXPECT_EQ(first.risk[u].expected_inverse_population, one_thread.risk[u].expected_inverse_population);
  EXPECT_EQ(whole.not_converged, 0);
}

TEST(NbSmoothing, ExcludingOutOfRangeCellsChangesOnlyUniquesNearTheBoundary) {
  const ClassList list = small_sample(12);
  const auto included = nb_smoothing_local(list.view(), {});
  const auto excluded = nb_smoothing_local(list.view(), {.out_of_range = OutOfRangeCells::kExclude});
  ASSERT_EQ(included.unique_class, excluded.unique_class);
  std::size_t interior = 0, boundary_changed = 0;
  for (std::size_t u = 0; u < included.risk.size(); ++u) {
    const std::size_t c = included.unique_class[u];
    bool near_boundary = false;
    for (std::size_t j = 0; j < 3; ++j) {
      const std::int32_t code = list.ordinal_codes[3 * c + j];
      near_boundary = near_boundary || code < 2 || code >= list.levels[j] - 2;
    }
    if (near_boundary) {
      if (included.risk[u].expected_inverse_population != excluded.risk[u].expected_inverse_population)
        ++boundary_changed;
    } else {
      ++interior;
      EXPECT_EQ(included.risk[u].expected_inverse_population, excluded.risk[u].expected_inverse_population);
    }
  }
  EXPECT_GT(interior, 0U);
  EXPECT_GT(boundary_changed, 0U);
}

TEST(NbSmoothing, PerClassSamplingFractionsEnterOnlyTheRiskStep) {
  ClassList list = small_sample(13);
  const auto scalar = nb_smoothing_local(list.view(), {});
  list.pi.assign(list.counts.size(), 0.1);
  list.pi[scalar.unique_class[0]] = 0.5;
  const auto per_class = nb_smoothing_local(list.view(), {});
  const auto& r = per_class.risk[0];
  const auto expected = nb_unique_risk(scalar.risk[0].mu, scalar.risk[0].alpha, 0.5);
  EXPECT_EQ(r.population_unique_probability, expected.population_unique_probability);
  EXPECT_GT(r.population_unique_probability, scalar.risk[0].population_unique_probability);
  for (std::size_t u = 1; u < scalar.risk.size(); ++u)
    EXPECT_EQ(per_class.risk[u].expected_inverse_population, scalar.risk[u].expected_inverse_population);
}

template <typename Exception>
void expect_error(const NbSampleClasses& classes, const NbSmoothingOptions& options, const std::string& fragment) {
  try {
    nb_smoothing_local(classes, options);
    ADD_FAILURE() << "no exception; expected one mentioning " << fragment;
  } catch (const Exception& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(NbSmoothing, RejectsBadInputAndOptionsNamingTheCulprit) {
  ClassList list;
  list.ordinal = 2;
  list.levels = {5, 4};
  list.pi = {0.1};
  list.add(0, {1, 1}, 1);
  list.add(0, {2, 3}, 2);
  expect_error<ParameterError>(list.view(), {.sup_radius = -1}, "radius c");
  expect_error<ParameterError>(list.view(), {.l1_radius = -2}, "radius d");
  expect_error<ParameterError>(list.view(), {.polynomial_degree = 0}, "degree t");

  const std::vector<std::string_view> names{"age", "income"};
  ClassList bad_code = list;
  bad_code.ordinal_codes[3] = 4;
  NbSampleClasses named = bad_code.view();
  named.ordinal_key_names = names;
  expect_error<InvalidInput>(named, {}, "ordinal key 'income'");

  ClassList duplicate = list;
  duplicate.add(0, {1, 1}, 3);
  expect_error<InvalidInput>(duplicate.view(), {}, "same key tuple");

  ClassList bad_pi = list;
  bad_pi.pi = {1.5};
  expect_error<InvalidInput>(bad_pi.view(), {}, "sampling fraction");

  ClassList zero = list;
  zero.counts[1] = 0;
  expect_error<InvalidInput>(zero.view(), {}, "class 1");
}

// ---- simulation study: NB smoothing against the Argus-style estimate ------------------------------

/// A synthetic population shaped like the paper's Example 1: Sex(2) x Age groups(32) x Income
/// groups(14) x Years of study(13) = 11 648 cells, N = 37 586. The cell intensities are smooth over
/// the three ordinal keys (a log-quadratic surface with a mild age/education-income gradient) times
/// Gamma(1.5) noise, so the negative-binomial smoothing model holds locally with α ≈ 1.5.
struct Population {
  static constexpr std::int32_t kSex = 2, kAge = 32, kIncome = 14, kStudy = 13;
  static constexpr std::int64_t kSize = 37586;
  std::vector<std::uint32_t> person_cell;
  std::vector<std::int64_t> cell_count;  ///< F
};

std::size_t cell_index(std::int32_t sex, std::int32_t age, std::int32_t income, std::int32_t study) {
  return static_cast<std::size_t>(((sex * Population::kAge + age) * Population::kIncome + income) * Population::kStudy +
                                  study);
}

Population draw_population(const RecordRng& rng) {
  Population population;
  const std::size_t cells =
      cell_index(Population::kSex - 1, Population::kAge - 1, Population::kIncome - 1, Population::kStudy - 1) + 1;
  std::vector<double> cumulative(cells);
  double total = 0.0;
  for (std::int32_t s = 0; s < Population::kSex; ++s)
    for (std::int32_t a = 0; a < Population::kAge; ++a)
      for (std::int32_t i = 0; i < Population::kIncome; ++i)
        for (std::int32_t e = 0; e < Population::kStudy; ++e) {
          const std::size_t k = cell_index(s, a, i, e);
          const double income_centre = 2.0 + 0.45 * e + 0.08 * a;
          const double log_intensity = 0.05 * s - 0.5 * std::pow((a - 11.0) / 8.0, 2) -
                                       0.5 * std::pow((e - 8.0) / 3.0, 2) -
                                       0.5 * std::pow((i - income_centre) / 2.5, 2);
          total += std::exp(log_intensity) * gamma_draw(rng, {k, 0, 0, 0}, 1.5);
          cumulative[k] = total;
        }
  population.person_cell.resize(Population::kSize);
  population.cell_count.assign(cells, 0);
  for (std::size_t person = 0; person < population.person_cell.size(); ++person) {
    const std::size_t k = categorical_from_uniform(rng.uniform({person, 1, 0, 0}), cumulative);
    population.person_cell[person] = static_cast<std::uint32_t>(k);
    ++population.cell_count[k];
  }
  return population;
}

/// Sample counts f of a simple random sample of `n` persons: the n smallest keys (bits, person id).
std::vector<std::int64_t> draw_sample(const RecordRng& rng, const Population& population, std::size_t n,
                                      std::uint64_t replicate) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> keys(population.person_cell.size());
  for (std::size_t person = 0; person < keys.size(); ++person)
    keys[person] = {rng.bits({person, 2, replicate, 0})[0], static_cast<std::uint32_t>(person)};
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n), keys.end());
  std::vector<std::int64_t> f(population.cell_count.size(), 0);
  for (std::size_t i = 0; i < n; ++i) ++f[population.person_cell[keys[i].second]];
  return f;
}

TEST(NbSmoothingSimulation, BeatsTheArgusStyleEstimateOnAnExampleOneShapedPopulation) {
  constexpr int kSamples = 30;
  constexpr std::size_t kSampleSize = 3759;
  const double pi = static_cast<double>(kSampleSize) / static_cast<double>(Population::kSize);
  const RecordRng rng(1995, StepId::kRiskSimulation);
  const Population population = draw_population(rng);

  double nb_error[2] = {0, 0}, argus_error[2] = {0, 0}, truth_mean[2] = {0, 0};
  double nb_mean[2] = {0, 0}, argus_mean[2] = {0, 0};
  int nb_closer[2] = {0, 0};
  std::int64_t not_converged = 0;
  double uniques_mean = 0;
  for (int sample = 0; sample < kSamples; ++sample) {
    const auto f = draw_sample(rng, population, kSampleSize, static_cast<std::uint64_t>(sample));
    ClassList list;
    list.ordinal = 3;
    list.levels = {Population::kAge, Population::kIncome, Population::kStudy};
    list.pi = {pi};
    double truth[2] = {0, 0};
    for (std::int32_t s = 0; s < Population::kSex; ++s)
      for (std::int32_t a = 0; a < Population::kAge; ++a)
        for (std::int32_t i = 0; i < Population::kIncome; ++i)
          for (std::int32_t e = 0; e < Population::kStudy; ++e) {
            const std::size_t k = cell_index(s, a, i, e);
            if (f[k] == 0) continue;
            list.add(s, {a, i, e}, f[k]);
            if (f[k] == 1) {
              truth[0] += population.cell_count[k] == 1 ? 1.0 : 0.0;
              truth[1] += 1.0 / static_cast<double>(population.cell_count[k]);
            }
          }
    const auto local = nb_smoothing_local(list.view(), {.sup_radius = 2});
    const auto nb = nb_smoothing_finalize(local.partial);
    not_converged += nb.not_converged;
    // Argus: weights N/n, so every sample unique has F̂ = N/n and p = f/F̂ = n/N; under the
    // Benedetti–Franconi model F - 1 | f = 1 ~ NB(1, p): P(F = 1 | f = 1) = p, E[1/F | f = 1] = (p/q) ln(1/p).
    const double uniques = static_cast<double>(nb.sample_uniques);
    const double argus[2] = {uniques * pi, uniques * benedetti_franconi_closed_form(1.0, pi)};
    const double estimate[2] = {nb.tau1, nb.tau2};
    uniques_mean += uniques / kSamples;
    for (int m = 0; m < 2; ++m) {
      nb_error[m] += std::fabs(estimate[m] - truth[m]) / kSamples;
      argus_error[m] += std::fabs(argus[m] - truth[m]) / kSamples;
      truth_mean[m] += truth[m] / kSamples;
      nb_mean[m] += estimate[m] / kSamples;
      argus_mean[m] += argus[m] / kSamples;
      if (std::fabs(estimate[m] - truth[m]) < std::fabs(argus[m] - truth[m])) ++nb_closer[m];
    }
  }
  for (int m = 0; m < 2; ++m) {
    const std::string tau = m == 0 ? "tau1" : "tau2";
    std::cout << tau << ": mean true " << truth_mean[m] << ", NB |M| = 125 mean " << nb_mean[m] << " MAE "
              << nb_error[m] << ", Argus-style mean " << argus_mean[m] << " MAE " << argus_error[m] << ", NB closer in "
              << nb_closer[m] << "/" << kSamples << " samples\n";
    ::testing::Test::RecordProperty(tau + "_mae_nb", std::to_string(nb_error[m]));
    ::testing::Test::RecordProperty(tau + "_mae_argus", std::to_string(argus_error[m]));
  }
  std::cout << "mean sample uniques " << uniques_mean << ", fits not converged " << not_converged << "\n";
  EXPECT_LT(nb_error[1], argus_error[1]);
  EXPECT_LT(nb_error[0], argus_error[0]);
  EXPECT_GE(nb_closer[1], 24);
  EXPECT_GE(nb_closer[0], 24);
}

}  // namespace
}  // namespace sdc
