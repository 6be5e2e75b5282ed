#include "kernels/risk/nb_smoothing.h"

#include <absl/container/flat_hash_map.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/key_grouping.h"

namespace sdc {
namespace {

// ---- special functions -------------------------------------------------------------------------
// Written here because the C++ library has lgamma but no digamma or trigamma (Boost.Math is not a
// dependency). Both use the upward recurrence to x >= 10, then the asymptotic (Stirling) series,
// whose first omitted term is below 1e-13 / x^12 there.

double digamma(double x) {
  double shift = 0.0;
  while (x < 10.0) {
    shift -= 1.0 / x;
    x += 1.0;
  }
  const double inv = 1.0 / x;
  const double inv2 = inv * inv;
  const double series =
      inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))));
  return shift + std::log(x) - 0.5 * inv - series;
}

double trigamma(double x) {
  double shift = 0.0;
  while (x < 10.0) {
    shift += 1.0 / (x * x);
    x += 1.0;
  }
  const double inv = 1.0 / x;
  const double inv2 = inv * inv;
  const double series =
      inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (1.0 / 30 - inv2 * (5.0 / 66)))));
  return shift + inv + 0.5 * inv2 + series;
}

// Up to this count the sums over ν = 0..f-1 are taken term by term: exact in the Poisson limit
// (small a), where lgamma(f + 1/a) - lgamma(1/a) cancels badly. Beyond it, digamma and friends.
constexpr double kDirectSumLimit = 256.0;

/// The count terms of one cell for a = 1/α:
///   log_rising = Σ ln(1 + aν) = lnΓ(f+α) - lnΓ(α) + f ln a,
///   s1 = Σ 1/(ν + α) = ψ(f+α) - ψ(α),   s2 = Σ 1/(1 + aν)² = α²(ψ'(α) - ψ'(f+α)).
struct CountSums {
  double log_rising = 0.0;
  double s1 = 0.0;
  double s2 = 0.0;
};

CountSums count_sums(double f, double a, bool with_derivatives) {
  CountSums sums;
  if (f == 0.0) return sums;
  if (f == 1.0) return {0.0, a, 1.0};
  if (f <= kDirectSumLimit) {
    const int count = static_cast<int>(f);
    for (int nu = 0; nu < count; ++nu) {
      const double q = 1.0 + a * nu;
      sums.log_rising += std::log1p(a * nu);
      if (with_derivatives) {
        sums.s1 += a / q;
        sums.s2 += 1.0 / (q * q);
      }
    }
    return sums;
  }
  const double alpha = 1.0 / a;
  sums.log_rising = std::lgamma(f + alpha) - std::lgamma(alpha) + f * std::log(a);
  if (with_derivatives) {
    sums.s1 = digamma(f + alpha) - digamma(alpha);
    sums.s2 = alpha * alpha * (trigamma(alpha) - trigamma(f + alpha));
  }
  return sums;
}

// ---- likelihood ----------------------------------------------------------------------------------

struct Evaluation {
  double value = 0.0;
  double d_a = 0.0;
  double d_aa = 0.0;
  Eigen::VectorXd d_theta;
  Eigen::VectorXd d_theta_a;
  Eigen::MatrixXd d_theta_theta;
};

/// ℓ written without ln a terms that cancel: per cell
///   Σ ln(1 + aν) + f·η - (f + 1/a)·ln(1 + aμ) - lnΓ(f + 1),   η = log μ,
/// equal to §8.3 (lnΓ(f+α) - lnΓ(α) = Σ ln(1 + aν) - f ln a and f ln(μ/(μ+α)) = f(ln a + η - ln(1 + aμ))).
/// Returns -inf when μ overflows, so that a line search rejects the point.
double evaluate(const Eigen::MatrixXd& design, std::span<const double> f, double a, const Eigen::VectorXd& theta,
                Evaluation* derivatives) {
  const Eigen::Index cells = design.rows();
  const Eigen::VectorXd eta = design * theta;
  Eigen::VectorXd residual_weight;
  Eigen::VectorXd cross_weight;
  Eigen::VectorXd curvature_weight;
  if (derivatives != nullptr) {
    residual_weight.resize(cells);
    cross_weight.resize(cells);
    curvature_weight.resize(cells);
    derivatives->d_a = 0.0;
    derivatives->d_aa = 0.0;
  }
  double value = 0.0;
  for (Eigen::Index c = 0; c < cells; ++c) {
    const double fc = f[static_cast<std::size_t>(c)];
    const double mu = std::exp(eta[c]);
    if (!std::isfinite(mu)) return -std::numeric_limits<double>::infinity();
    const double log_q = std::log1p(a * mu);
    const double q = 1.0 + a * mu;
    const CountSums sums = count_sums(fc, a, derivatives != nullptr);
    value += sums.log_rising + fc * eta[c] - (fc + 1.0 / a) * log_q;
    if (fc > 1.0) value -= std::lgamma(fc + 1.0);  // lnΓ(f + 1) = 0 for the common f = 0, 1
    if (derivatives == nullptr) continue;
    const double excess = fc - mu;
    const double inv_a = 1.0 / a;
    derivatives->d_a += inv_a * inv_a * (log_q - sums.s1) + excess / (a * q);
    derivatives->d_aa += -2.0 * inv_a * inv_a * inv_a * (log_q - sums.s1) + inv_a * inv_a * (mu / q - sums.s2) -
                         excess * (1.0 + 2.0 * a * mu) / (a * a * q * q);
    residual_weight[c] = excess / q;
    cross_weight[c] = -excess * mu / (q * q);
    curvature_weight[c] = (1.0 + a * fc) * mu / (q * q);
  }
  if (derivatives != nullptr) {
    derivatives->value = value;
    derivatives->d_theta.noalias() = design.transpose() * residual_weight;
    derivatives->d_theta_a.noalias() = design.transpose() * cross_weight;
    const Eigen::MatrixXd weighted = design.array().colwise() * curvature_weight.array();
    derivatives->d_theta_theta.noalias() = -(design.transpose() * weighted);
  }
  return value;
}

// ---- the fit -------------------------------------------------------------------------------------

constexpr int kMaxIterations = 100;
constexpr double kObjectiveTolerance = 1e-10;
constexpr double kStepTolerance = 1e-8;
constexpr double kArmijo = 1e-4;
constexpr int kMaxHalvings = 60;

double penalised(double likelihood, const Eigen::VectorXd& theta) {
  return likelihood - 0.5 * kNbThetaRidge * theta.squaredNorm();
}

/// Solves (A + rI) s = g for the smallest r in {0, 1e-10·scale·10^k} that makes A + rI positive
/// definite (Newton–ridge, as SAS's NRRIDG).
Eigen::VectorXd ridge_solve(const Eigen::MatrixXd& negated_hessian, const Eigen::VectorXd& gradient) {
  const double scale = std::max(1.0, negated_hessian.diagonal().cwiseAbs().maxCoeff());
  double ridge = 0.0;
  for (int attempt = 0; attempt < 40; ++attempt) {
    Eigen::MatrixXd shifted = negated_hessian;
    shifted.diagonal().array() += ridge;
    Eigen::LLT<Eigen::MatrixXd> cholesky(shifted);
    if (cholesky.info() == Eigen::Success) {
      Eigen::VectorXd step = cholesky.solve(gradient);
      if (step.allFinite()) return step;
    }
    ridge = ridge == 0.0 ? 1e-10 * scale : ridge * 10.0;
  }
  return gradient / scale;  // steepest ascent, scaled; not reached for finite input
}

}  // namespace

// ---- neighbourhoods ------------------------------------------------------------------------------

std::vector<std::int32_t> nb_neighbourhood_offsets(const NbNeighbourhoodShape& shape) {
  if (shape.sup_radius < 0)
    throw ParameterError("NB smoothing: the neighbourhood radius c must be >= 0, got " +
                         std::to_string(shape.sup_radius));
  if (shape.l1_radius && *shape.l1_radius < 0)
    throw ParameterError("NB smoothing: the neighbourhood l1 radius d must be >= 0, got " +
                         std::to_string(*shape.l1_radius));
  const std::size_t v = shape.varying_keys;
  const std::int32_t c = shape.sup_radius;
  std::vector<std::int32_t> offsets;
  std::vector<std::int32_t> delta(v, -c);
  // Odometer over [-c, c]^v, last key fastest: lexicographic order.
  while (true) {
    std::int32_t l1 = 0;
    for (std::int32_t d : delta) l1 += d < 0 ? -d : d;
    if (!shape.l1_radius || l1 <= *shape.l1_radius) offsets.insert(offsets.end(), delta.begin(), delta.end());
    std::size_t j = v;
    while (j > 0 && delta[j - 1] == c) delta[--j] = -c;
    if (j == 0) break;
    ++delta[j - 1];
  }
  return offsets;
}

Eigen::MatrixXd nb_design_matrix(std::span<const std::int32_t> offsets, std::size_t varying_keys,
                                 std::int32_t polynomial_degree) {
  if (polynomial_degree < 1)
    throw ParameterError("NB smoothing: the polynomial degree t must be >= 1, got " +
                         std::to_string(polynomial_degree));
  const auto t = static_cast<std::size_t>(polynomial_degree);
  const std::size_t rows = varying_keys == 0 ? 1 : offsets.size() / varying_keys;
  const auto columns = static_cast<Eigen::Index>(1 + varying_keys * t);
  Eigen::MatrixXd design(static_cast<Eigen::Index>(rows), columns);
  for (std::size_t o = 0; o < rows; ++o) {
    const auto row = static_cast<Eigen::Index>(o);
    design(row, 0) = 1.0;
    for (std::size_t j = 0; j < varying_keys; ++j) {
      const double delta = offsets[o * varying_keys + j];
      double power = 1.0;
      for (std::size_t s = 0; s < t; ++s) {
        power *= delta;
        design(row, static_cast<Eigen::Index>(1 + j * t + s)) = power;
      }
    }
  }
  return design;
}

// ---- the local model -----------------------------------------------------------------------------

NbLikelihood nb_log_likelihood(const Eigen::MatrixXd& design, std::span<const double> f, double a,
                               const Eigen::VectorXd& theta) {
  SDC_CHECK(static_cast<std::size_t>(design.rows()) == f.size(), "one count per design row");
  Evaluation e;
  const double value = evaluate(design, f, a, theta, &e);
  NbLikelihood out;
  const Eigen::Index p = design.cols();
  out.value = value;
  out.gradient.resize(p + 1);
  out.hessian.resize(p + 1, p + 1);
  if (!std::isfinite(value)) {
    out.gradient.setConstant(std::numeric_limits<double>::quiet_NaN());
    out.hessian.setConstant(std::numeric_limits<double>::quiet_NaN());
    return out;
  }
  out.gradient[0] = e.d_a;
  out.gradient.tail(p) = e.d_theta;
  out.hessian(0, 0) = e.d_aa;
  out.hessian.block(1, 0, p, 1) = e.d_theta_a;
  out.hessian.block(0, 1, 1, p) = e.d_theta_a.transpose();
  out.hessian.block(1, 1, p, p) = e.d_theta_theta;
  return out;
}

double nb_log_likelihood_value(const Eigen::MatrixXd& design, std::span<const double> f, double a,
                               const Eigen::VectorXd& theta) {
  SDC_CHECK(static_cast<std::size_t>(design.rows()) == f.size(), "one count per design row");
  return evaluate(design, f, a, theta, nullptr);
}

NbLocalFit nb_fit_local_model(const Eigen::MatrixXd& design, std::span<const double> f) {
  SDC_CHECK(static_cast<std::size_t>(design.rows()) == f.size() && !f.empty(), "one count per design row");
  const Eigen::Index p = design.cols();
  const double log_min = std::log(kNbMinA);
  const double log_max = std::log(kNbMaxA);

  // Start at the method-of-moments dispersion of the neighbourhood and its mean level.
  const double n = static_cast<double>(f.size());
  const double mean = std::accumulate(f.begin(), f.end(), 0.0) / n;
  double variance = 0.0;
  for (double x : f) variance += (x - mean) * (x - mean);
  variance /= n;
  const double a0 = mean > 0.0 ? std::clamp((variance - mean) / (mean * mean), 1e-2, 1e2) : 1.0;

  double log_a = std::log(a0);
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(p);
  theta[0] = std::log(std::max(mean, 1e-3));

  NbLocalFit fit;
  Evaluation e;
  double objective = penalised(evaluate(design, f, std::exp(log_a), theta, &e), theta);
  for (int iteration = 1; iteration <= kMaxIterations; ++iteration) {
    fit.iterations = iteration;
    const double a = std::exp(log_a);
    // Gradient and Hessian of the penalised objective in (ln a, θ).
    Eigen::VectorXd gradient(p + 1);
    Eigen::MatrixXd hessian(p + 1, p + 1);
    gradient[0] = a * e.d_a;
    gradient.tail(p) = e.d_theta - kNbThetaRidge * theta;
    hessian(0, 0) = a * a * e.d_aa + a * e.d_a;
    hessian.block(1, 0, p, 1) = a * e.d_theta_a;
    hessian.block(0, 1, 1, p) = a * e.d_theta_a.transpose();
    hessian.block(1, 1, p, p) = e.d_theta_theta;
    hessian.block(1, 1, p, p).diagonal().array() -= kNbThetaRidge;

    // A bound on ln a that the gradient pushes against stays active for this step.
    const bool hold_a = (log_a <= log_min && gradient[0] < 0.0) || (log_a >= log_max && gradient[0] > 0.0);
    Eigen::VectorXd step = Eigen::VectorXd::Zero(p + 1);
    if (hold_a) {
      step.tail(p) = ridge_solve(-hessian.block(1, 1, p, p), gradient.tail(p));
    } else {
      step = ridge_solve(-hessian, gradient);
    }

    double t = 1.0;
    bool accepted = false;
    double next_log_a = log_a;
    Eigen::VectorXd next_theta;
    double next_objective = objective;
    for (int halving = 0; halving < kMaxHalvings; ++halving, t *= 0.5) {
      next_log_a = std::clamp(log_a + t * step[0], log_min, log_max);
      next_theta = theta + t * step.tail(p);
      const double ascent = gradient[0] * (next_log_a - log_a) + gradient.tail(p).dot(next_theta - theta);
      next_objective = penalised(evaluate(design, f, std::exp(next_log_a), next_theta, nullptr), next_theta);
      if (std::isfinite(next_objective) && next_objective >= objective + kArmijo * std::max(0.0, ascent)) {
        accepted = true;
        break;
      }
    }
    if (!accepted) {
      // No ascent left even for tiny steps: a maximum to within rounding.
      fit.converged = true;
      break;
    }
    const double change = std::max(std::fabs(next_log_a - log_a), (next_theta - theta).cwiseAbs().maxCoeff());
    const double gain = next_objective - objective;
    log_a = next_log_a;
    theta = next_theta;
    objective = penalised(evaluate(design, f, std::exp(log_a), theta, &e), theta);
    if (std::fabs(gain) < kObjectiveTolerance || change < kStepTolerance) {
      fit.converged = true;
      break;
    }
  }
  fit.a = std::exp(log_a);
  fit.theta = std::move(theta);
  fit.objective = objective;
  return fit;
}

// ---- risk of a sample unique ---------------------------------------------------------------------

NbUniqueRisk nb_unique_risk(double mu, double alpha, double sampling_fraction) {
  NbUniqueRisk risk;
  risk.mu = mu;
  risk.alpha = alpha;
  const double scaled = mu / sampling_fraction;
  // 1 - ρ = μ(1 - π)/π / (μ/π + α), formed directly: ρ is near 1 for large α.
  const double one_minus_rho = (scaled - mu) / (scaled + alpha);
  risk.rho = (mu + alpha) / (scaled + alpha);
  if (!(one_minus_rho > 0.0)) {
    risk.rho = 1.0;
    risk.population_unique_probability = 1.0;
    risk.expected_inverse_population = 1.0;
    return risk;
  }
  const double log_rho = std::log1p(-one_minus_rho);
  risk.population_unique_probability = std::exp((1.0 + alpha) * log_rho);
  risk.expected_inverse_population = risk.rho * -std::expm1(alpha * log_rho) / (alpha * one_minus_rho);
  return risk;
}

// ---- the kernel ----------------------------------------------------------------------------------

void nb_smoothing_merge(NbSmoothingPartial& into, const NbSmoothingPartial& from) {
  into.tau1.merge(from.tau1);
  into.tau2.merge(from.tau2);
  into.sample_uniques += from.sample_uniques;
  into.not_converged += from.not_converged;
}

NbSmoothingTotals nb_smoothing_finalize(const NbSmoothingPartial& total) {
  return {total.sample_uniques, total.not_converged, total.tau1.value(), total.tau2.value()};
}

namespace {

std::string ordinal_key_label(const NbSampleClasses& classes, std::size_t j) {
  if (j < classes.ordinal_key_names.size()) return "ordinal key '" + std::string(classes.ordinal_key_names[j]) + "'";
  return "ordinal key " + std::to_string(j + 1);
}

void validate(const NbSampleClasses& classes) {
  const std::size_t n = classes.class_count();
  SDC_CHECK(classes.fixed_keys.size() == n * classes.fixed_key_count, "fixed key codes: one tuple per class");
  SDC_CHECK(classes.ordinal_keys.size() == n * classes.ordinal_key_count, "ordinal key codes: one tuple per class");
  SDC_CHECK(classes.ordinal_levels.size() == classes.ordinal_key_count, "one level count per ordinal key");
  if (classes.sampling_fraction.size() != 1 && classes.sampling_fraction.size() != n)
    throw InvalidInput("NB smoothing: the sampling fraction must be one value or one per class (" + std::to_string(n) +
                       " classes), got " + std::to_string(classes.sampling_fraction.size()));
  for (std::size_t j = 0; j < classes.ordinal_key_count; ++j)
    if (classes.ordinal_levels[j] < 1)
      throw InvalidInput("NB smoothing: " + ordinal_key_label(classes, j) + " has no levels");
  for (std::size_t c = 0; c < n; ++c) {
    if (classes.counts[c] < 1)
      throw InvalidInput("NB smoothing: class " + std::to_string(c) + " has a sample count below 1");
    for (std::size_t j = 0; j < classes.ordinal_key_count; ++j) {
      const std::int32_t code = classes.ordinal_keys[c * classes.ordinal_key_count + j];
      if (code < 0 || code >= classes.ordinal_levels[j])
        throw InvalidInput("NB smoothing: class " + std::to_string(c) + " has a code of " +
                           ordinal_key_label(classes, j) + " outside its range 0.." +
                           std::to_string(classes.ordinal_levels[j] - 1) + " (missing ordinal keys are not supported)");
    }
  }
  for (std::size_t c = 0; c < classes.sampling_fraction.size(); ++c) {
    const double pi = classes.sampling_fraction[c];
    if (!(pi > 0.0 && pi <= 1.0))
      throw InvalidInput("NB smoothing: the sampling fraction of class " + std::to_string(c) + " must lie in (0, 1]");
  }
}

}  // namespace

NbSmoothingLocal nb_smoothing_local(const NbSampleClasses& classes, const NbSmoothingOptions& options) {
  const std::size_t n = classes.class_count();
  const std::size_t v = classes.ordinal_key_count;
  const std::vector<std::int32_t> offsets = nb_neighbourhood_offsets({v, options.sup_radius, options.l1_radius});
  const Eigen::MatrixXd design = nb_design_matrix(offsets, v, options.polynomial_degree);
  validate(classes);

  // Cells are indexed by one 64-bit code: (fixed-key group) x (mixed-radix ordinal codes).
  std::vector<std::size_t> by_fixed(n);
  std::iota(by_fixed.begin(), by_fixed.end(), std::size_t{0});
  const std::size_t fk = classes.fixed_key_count;
  const auto fixed_tuple = [&](std::size_t c) { return classes.fixed_keys.subspan(c * fk, fk); };
  std::sort(by_fixed.begin(), by_fixed.end(), [&](std::size_t x, std::size_t y) {
    const int order = compare_key_tuples(fixed_tuple(x), fixed_tuple(y));
    return order != 0 ? order < 0 : x < y;
  });
  std::vector<std::uint64_t> group(n);
  std::uint64_t groups = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && compare_key_tuples(fixed_tuple(by_fixed[i - 1]), fixed_tuple(by_fixed[i])) != 0) ++groups;
    group[by_fixed[i]] = groups;
  }
  if (n > 0) ++groups;

  std::vector<std::uint64_t> stride(v);
  std::uint64_t ordinal_space = 1;
  constexpr std::uint64_t kCodeLimit = std::uint64_t{1} << 62;
  for (std::size_t j = v; j-- > 0;) {
    stride[j] = ordinal_space;
    const auto levels = static_cast<std::uint64_t>(classes.ordinal_levels[j]);
    if (ordinal_space > kCodeLimit / levels)
      throw ParameterError(
          "NB smoothing: the ordinal keys span more than 2^62 cells; use fewer or coarser ordinal keys");
    ordinal_space *= levels;
  }
  if (groups > 0 && ordinal_space > kCodeLimit / groups)
    throw ParameterError(
        "NB smoothing: the fixed-key groups times the ordinal cells exceed 2^62; "
        "split the classes by their fixed keys first");
  const auto cell_code = [&](std::size_t c) {
    std::uint64_t code = group[c] * ordinal_space;
    for (std::size_t j = 0; j < v; ++j) code += static_cast<std::uint64_t>(classes.ordinal_keys[c * v + j]) * stride[j];
    return code;
  };

  absl::flat_hash_map<std::uint64_t, std::size_t> cell_class;
  cell_class.reserve(n);
  for (std::size_t c = 0; c < n; ++c) {
    const auto [it, inserted] = cell_class.emplace(cell_code(c), c);
    if (!inserted)
      throw InvalidInput("NB smoothing: classes " + std::to_string(it->second) + " and " + std::to_string(c) +
                         " have the same key tuple");
  }

  NbSmoothingLocal local;
  for (std::size_t c = 0; c < n; ++c)
    if (classes.counts[c] == 1) local.unique_class.push_back(c);
  const std::size_t uniques = local.unique_class.size();
  local.risk.resize(uniques);
  local.iterations.resize(uniques);
  std::vector<std::uint8_t> converged(uniques, 0);

  const std::size_t cells = design.rows() > 0 ? static_cast<std::size_t>(design.rows()) : 0;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, uniques, 4), [&](const tbb::blocked_range<std::size_t>& range) {
    std::vector<double> f;
    std::vector<Eigen::Index> kept_rows;
    f.reserve(cells);
    kept_rows.reserve(cells);
    for (std::size_t u = range.begin(); u != range.end(); ++u) {
      const std::size_t k = local.unique_class[u];
      const std::uint64_t centre = cell_code(k);
      f.clear();
      kept_rows.clear();
      for (std::size_t o = 0; o < cells; ++o) {
        std::int64_t shift = 0;
        bool in_range = true;
        for (std::size_t j = 0; j < v; ++j) {
          const std::int32_t code = classes.ordinal_keys[k * v + j] + offsets[o * v + j];
          if (code < 0 || code >= classes.ordinal_levels[j]) in_range = false;
          shift += static_cast<std::int64_t>(offsets[o * v + j]) * static_cast<std::int64_t>(stride[j]);
        }
        if (!in_range) {
          if (options.out_of_range == OutOfRangeCells::kIncludeAsZero) f.push_back(0.0);
          continue;
        }
        const auto it = cell_class.find(centre + static_cast<std::uint64_t>(shift));
        f.push_back(it == cell_class.end() ? 0.0 : static_cast<double>(classes.counts[it->second]));
        kept_rows.push_back(static_cast<Eigen::Index>(o));
      }
      NbLocalFit fit;
      if (f.size() == cells) {
        fit = nb_fit_local_model(design, f);
      } else {
        fit = nb_fit_local_model(design(kept_rows, Eigen::all), f);
      }
      const double pi =
          classes.sampling_fraction.size() == 1 ? classes.sampling_fraction[0] : classes.sampling_fraction[k];
      local.risk[u] = nb_unique_risk(std::exp(fit.theta[0]), 1.0 / fit.a, pi);
      local.iterations[u] = fit.iterations;
      converged[u] = fit.converged ? 1 : 0;
    }
  });

  for (std::size_t u = 0; u < uniques; ++u) {
    local.partial.tau1.add(local.risk[u].population_unique_probability);
    local.partial.tau2.add(local.risk[u].expected_inverse_population);
    if (converged[u] == 0) ++local.partial.not_converged;
  }
  local.partial.sample_uniques = static_cast<std::int64_t>(uniques);
  local.converged = std::move(converged);
  return local;
}

}  // namespace sdc
