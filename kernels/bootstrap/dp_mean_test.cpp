#include "kernels/bootstrap/dp_mean_test.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc {
namespace {

using Matrix = Eigen::MatrixXd;
using Vector = Eigen::VectorXd;

constexpr std::uint64_t kReleaseReplicate = 0;
constexpr std::uint64_t kSampleX = 0;
constexpr std::uint64_t kSampleY = 1;
// Far beyond any acceptance rate the angular central Gaussian envelope gives (Kent et al. bound the
// expected number of attempts); reaching it means the sampler is broken, not unlucky.
constexpr std::uint64_t kMaxEigenvectorAttempts = 1'000'000;

std::size_t packed_index(std::size_t j, std::size_t k) { return j * (j + 1) / 2 + k; }

std::string variable_label(std::span<const std::string> names, std::size_t j) {
  if (j < names.size()) return "variable '" + names[j] + "'";
  return "variable " + std::to_string(j) + " (0-based column)";
}

Matrix to_matrix(std::span<const double> row_major, std::size_t d) {
  Matrix m(static_cast<Eigen::Index>(d), static_cast<Eigen::Index>(d));
  for (std::size_t j = 0; j < d; ++j)
    for (std::size_t k = 0; k < d; ++k)
      m(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k)) = row_major[j * d + k];
  return m;
}

std::vector<double> to_row_major(const Matrix& m) {
  const auto d = static_cast<std::size_t>(m.rows());
  std::vector<double> out(d * d);
  for (std::size_t j = 0; j < d; ++j)
    for (std::size_t k = 0; k < d; ++k) out[j * d + k] = m(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k));
  return out;
}

Vector to_vector(std::span<const double> values) {
  Vector v(static_cast<Eigen::Index>(values.size()));
  for (std::size_t j = 0; j < values.size(); ++j) v(static_cast<Eigen::Index>(j)) = values[j];
  return v;
}

std::uint64_t draw_word(std::uint64_t purpose, std::uint64_t block) { return (purpose << 32U) | block; }

std::uint64_t eigenvector_purpose(std::size_t step) {
  return static_cast<std::uint64_t>(DpDrawPurpose::kEigenvector) + step;
}

/// Adds Laplace(0, scale) to each value, four draws per Philox block.
void add_laplace(const RecordRng& rng, std::uint64_t sample, DpDrawPurpose purpose, std::uint64_t replicate,
                 double scale, std::span<double> values) {
  for (std::size_t k = 0; k < values.size(); k += 4) {
    const auto block = rng.bits({sample, draw_word(static_cast<std::uint64_t>(purpose), k / 4), replicate, 0});
    for (std::size_t w = 0; w < 4 && k + w < values.size(); ++w) values[k + w] += laplace_from_bits(block[w], scale);
  }
}

/// Standard normals, four per Philox block (two Box-Muller pairs); `counter.draw` is the first block.
void fill_normals(const RecordRng& rng, DrawCounter counter, std::span<double> out) {
  const std::uint64_t first_block = counter.draw;
  for (std::size_t k = 0; k < out.size(); k += 4) {
    counter.draw = first_block + k / 4;
    const auto block = rng.bits(counter);
    const auto [a, b] = normal_pair_from_bits(block[0], block[1]);
    const auto [c, e] = normal_pair_from_bits(block[2], block[3]);
    const double four[4] = {a, b, c, e};
    for (std::size_t w = 0; w < 4 && k + w < out.size(); ++w) out[k + w] = four[w];
  }
}

/// A unit vector from the Bingham density ∝ exp(κ uᵀCu) on the sphere of dimension q - 1 (Algorithm 4):
/// Kent, Ganeiber & Mardia's (2013) rejection sampler. With A = κ(λ_max I - C) ⪰ 0 the density is
/// ∝ exp(-uᵀAu); the envelope is the angular central Gaussian with Ω = I + 2A/b, b solving
/// Σ 1/(b + 2a_i) = 1, and M = exp(-(q - b)/2) (q/b)^(q/2) bounds the ratio, so a proposal u is accepted
/// with probability exp(-uᵀAu) (uᵀΩu)^(q/2) / M <= 1. (The paper prints the factor (uᵀΩu)^(q/2) in the
/// denominator; that is not a probability bound, Kent et al.'s ratio is used.) Everything runs in the
/// eigenbasis of C, where A and Ω are diagonal.
Vector sample_bingham(const Matrix& c, double concentration, const RecordRng& rng, std::uint64_t sample,
                      std::size_t step) {
  const Eigen::Index q = c.rows();
  const Eigen::SelfAdjointEigenSolver<Matrix> eigen(c);
  const Vector& values = eigen.eigenvalues();  // ascending
  Vector a(q);
  for (Eigen::Index i = 0; i < q; ++i) a(i) = std::max(0.0, concentration * (values(q - 1) - values(i)));
  a(q - 1) = 0.0;

  // Σ 1/(b + 2a_i) falls from +∞ (a_max-eigenvector term) to at most 1 at b = q: bisect.
  const auto qd = static_cast<double>(q);
  double low = 0.0;
  double high = qd;
  for (int iteration = 0; iteration < 200 && high - low > 1e-15 * high; ++iteration) {
    const double mid = 0.5 * (low + high);
    double sum = 0.0;
    for (Eigen::Index i = 0; i < q; ++i) sum += 1.0 / (mid + 2.0 * a(i));
    (sum > 1.0 ? low : high) = mid;
  }
  const double b = high;
  const Vector omega = (Vector::Ones(q) + (2.0 / b) * a).eval();
  const double log_bound = -0.5 * (qd - b) + 0.5 * qd * std::log(qd / b);

  const auto normal_blocks = static_cast<std::uint64_t>((q + 3) / 4);
  const std::uint64_t purpose = eigenvector_purpose(step);
  std::vector<double> z(static_cast<std::size_t>(q));
  Vector y(q);
  for (std::uint64_t attempt = 0; attempt < kMaxEigenvectorAttempts; ++attempt) {
    fill_normals(rng, {sample, draw_word(purpose, 0), kReleaseReplicate, attempt}, z);
    for (Eigen::Index i = 0; i < q; ++i) y(i) = z[static_cast<std::size_t>(i)] / std::sqrt(omega(i));
    const double norm = y.norm();
    if (norm == 0.0) continue;  // both Box-Muller radii 0: probability below 2^-100
    y /= norm;
    const double quadratic_a = (a.array() * y.array().square()).sum();
    const double quadratic_omega = (omega.array() * y.array().square()).sum();
    const double log_accept = -quadratic_a + 0.5 * qd * std::log(quadratic_omega) - log_bound;
    const double u = rng.uniform({sample, draw_word(purpose, normal_blocks), kReleaseReplicate, attempt});
    if (std::log(u) < log_accept) return eigen.eigenvectors() * y;
  }
  SDC_CHECK(false, "the Bingham eigenvector sampler accepts within its attempt limit");
  return {};
}

/// The ED mechanism (Algorithm 5) on one sample's covariance with budget ε/4; returns Σ^DP.
Matrix ed_covariance(const SampleMoments& moments, std::uint64_t sample, const DpMeanTestOptions& options,
                     const RecordRng& rng) {
  const std::size_t d = moments.dimension();
  const auto di = static_cast<Eigen::Index>(d);
  const double scale = static_cast<double>(d) * options.bound * options.bound / static_cast<double>(moments.count);
  const Matrix c = to_matrix(moments.covariance, d) / scale;
  const double budget = options.epsilon / 4.0;
  const double part = d == 1 ? budget : budget / static_cast<double>(d + 1);

  const Eigen::SelfAdjointEigenSolver<Matrix> eigen(c, Eigen::EigenvaluesOnly);
  std::vector<double> lambda(d);
  for (std::size_t i = 0; i < d; ++i) lambda[i] = eigen.eigenvalues()(di - 1 - static_cast<Eigen::Index>(i));
  add_laplace(rng, sample, DpDrawPurpose::kEigenvalueNoise, kReleaseReplicate, 2.0 / part, lambda);
  for (double& value : lambda) value = std::fabs(value);

  Matrix released = Matrix::Zero(di, di);
  Matrix basis = Matrix::Identity(di, di);  // rows: orthonormal basis of the subspace still to fill
  for (std::size_t step = 0; step + 1 < d; ++step) {
    const Matrix restricted = basis * c * basis.transpose();
    const Vector u = sample_bingham(restricted, part / 4.0, rng, sample, step);
    const Vector v = basis.transpose() * u;
    released += lambda[step] * v * v.transpose();
    // The Householder reflection taking u to ±e1: its other columns span u's complement in the subspace.
    const Eigen::HouseholderQR<Matrix> reflection{Matrix(u)};
    const Matrix q_full = reflection.householderQ();
    basis = (q_full.rightCols(q_full.cols() - 1).transpose() * basis).eval();
  }
  const Vector last = basis.row(0).transpose();
  released += lambda[d - 1] * last * last.transpose();
  return scale * (0.5 * (released + released.transpose()));
}

double pooled_t2_of(std::uint64_t count_x, const Vector& difference, const Matrix& covariance_x, std::uint64_t count_y,
                    const Matrix& covariance_y, double diagonal_correction, Eigen::LLT<Matrix>* factor_out) {
  const auto n1 = static_cast<double>(count_x);
  const auto n2 = static_cast<double>(count_y);
  Matrix pooled = ((n1 - 1.0) * covariance_x + (n2 - 1.0) * covariance_y) / (n1 + n2 - 2.0);
  pooled.diagonal().array() += diagonal_correction;
  Eigen::LLT<Matrix> factor(pooled);
  if (factor.info() != Eigen::Success)
    throw InvalidInput(
        "DP mean test: the pooled covariance matrix is not positive definite (a variable is constant, or a linear "
        "combination of others, in both samples)");
  const Vector whitened = factor.matrixL().solve(difference);
  if (factor_out != nullptr) *factor_out = factor;
  return n1 * n2 / (n1 + n2) * whitened.squaredNorm();
}

void check_pair(std::uint64_t count_x, std::size_t dimension_x, std::uint64_t count_y, std::size_t dimension_y) {
  if (dimension_x == 0 || dimension_x != dimension_y)
    throw ParameterError("DP mean test: samples X and Y must have the same number (at least one) of variables; X has " +
                         std::to_string(dimension_x) + ", Y has " + std::to_string(dimension_y));
  if (count_x < 2 || count_y < 2) throw ParameterError("DP mean test: samples X and Y need at least two records each");
}

/// What every bootstrap replicate shares: square roots of Σ^DP/n and the factor of the pooled S.
struct BootstrapPlan {
  std::size_t dimension = 0;
  Matrix root_x;
  Matrix root_y;
  Eigen::LLT<Matrix> pooled;
  double factor = 0.0;
  double noise_x = 0.0;
  double noise_y = 0.0;
};

Matrix symmetric_root(const Matrix& psd, double divisor) {
  const Eigen::SelfAdjointEigenSolver<Matrix> eigen(psd);
  const Vector roots = (eigen.eigenvalues().array().max(0.0) / divisor).sqrt().matrix();
  return eigen.eigenvectors() * roots.asDiagonal() * eigen.eigenvectors().transpose();
}

BootstrapPlan make_bootstrap_plan(const PrivatizedMoments& x, const PrivatizedMoments& y,
                                  const DpMeanTestOptions& options) {
  validate_dp_mean_test_options(options);
  check_pair(x.count, x.dimension(), y.count, y.dimension());
  BootstrapPlan plan;
  plan.dimension = x.dimension();
  const Matrix cx = to_matrix(x.covariance, plan.dimension);
  const Matrix cy = to_matrix(y.covariance, plan.dimension);
  plan.root_x = symmetric_root(cx, static_cast<double>(x.count));
  plan.root_y = symmetric_root(cy, static_cast<double>(y.count));
  plan.noise_x = dp_mean_noise_scale(x.count, plan.dimension, options);
  plan.noise_y = dp_mean_noise_scale(y.count, plan.dimension, options);
  const double correction = 2.0 * plan.noise_x * plan.noise_x + 2.0 * plan.noise_y * plan.noise_y;
  const auto n1 = static_cast<double>(x.count);
  const auto n2 = static_cast<double>(y.count);
  pooled_t2_of(x.count, Vector::Zero(static_cast<Eigen::Index>(plan.dimension)), cx, y.count, cy, correction,
               &plan.pooled);
  plan.factor = n1 * n2 / (n1 + n2);
  return plan;
}

double bootstrap_replicate(const BootstrapPlan& plan, const RecordRng& rng, std::uint64_t replicate) {
  const std::size_t d = plan.dimension;
  std::vector<double> normals(d);
  std::vector<double> mean_x(d, 0.0);
  std::vector<double> mean_y(d, 0.0);
  fill_normals(rng, {kSampleX, draw_word(static_cast<std::uint64_t>(DpDrawPurpose::kBootstrapMean), 0), replicate, 0},
               normals);
  const Vector sampled_x = plan.root_x * to_vector(normals);
  fill_normals(rng, {kSampleY, draw_word(static_cast<std::uint64_t>(DpDrawPurpose::kBootstrapMean), 0), replicate, 0},
               normals);
  const Vector sampled_y = plan.root_y * to_vector(normals);
  add_laplace(rng, kSampleX, DpDrawPurpose::kMeanNoise, replicate, plan.noise_x, mean_x);
  add_laplace(rng, kSampleY, DpDrawPurpose::kMeanNoise, replicate, plan.noise_y, mean_y);
  const Vector difference = sampled_x + to_vector(mean_x) - sampled_y - to_vector(mean_y);
  return plan.factor * plan.pooled.matrixL().solve(difference).squaredNorm();
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27U)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31U);
}

}  // namespace

// ---- moments ----

MeanTestMomentsPartial mean_test_moments_local(std::span<const std::span<const double>> columns, double bound,
                                               std::span<const std::string> variable_names) {
  if (!(bound > 0.0) || !std::isfinite(bound)) throw ParameterError("DP mean test: the bound m must be finite and > 0");
  MeanTestMomentsPartial partial;
  partial.dimension = columns.size();
  partial.sums.resize(partial.dimension);
  partial.cross_products.resize(partial.dimension * (partial.dimension + 1) / 2);
  if (columns.empty()) return partial;
  const std::size_t records = columns.front().size();
  for (std::size_t j = 0; j < columns.size(); ++j) {
    if (columns[j].size() != records)
      throw InvalidInput("DP mean test: " + variable_label(variable_names, j) +
                         " has a different number of records than the first variable");
    for (double value : columns[j])
      if (!(std::fabs(value) <= bound))
        throw InvalidInput("DP mean test: " + variable_label(variable_names, j) +
                           " has a value that is missing, not finite or outside [-m, m]; the privacy guarantee "
                           "assumes every value within the bound m");
  }
  partial.count = records;
  for (std::size_t i = 0; i < records; ++i) {
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const double xj = columns[j][i];
      partial.sums[j].add(xj);
      for (std::size_t k = 0; k <= j; ++k) partial.cross_products[packed_index(j, k)].add(xj * columns[k][i]);
    }
  }
  return partial;
}

void mean_test_moments_merge(MeanTestMomentsPartial& into, const MeanTestMomentsPartial& from) {
  if (into.dimension != from.dimension)
    throw ParameterError("DP mean test: partial moments of different numbers of variables cannot be merged");
  into.count += from.count;
  for (std::size_t j = 0; j < into.sums.size(); ++j) into.sums[j].merge(from.sums[j]);
  for (std::size_t j = 0; j < into.cross_products.size(); ++j) into.cross_products[j].merge(from.cross_products[j]);
}

SampleMoments mean_test_moments_finalize(const MeanTestMomentsPartial& total) {
  if (total.count < 2) throw InvalidInput("DP mean test: a sample needs at least two records");
  const std::size_t d = total.dimension;
  const auto n = static_cast<double>(total.count);
  SampleMoments moments;
  moments.count = total.count;
  moments.mean.resize(d);
  moments.covariance.resize(d * d);
  std::vector<double> sums(d);
  for (std::size_t j = 0; j < d; ++j) {
    sums[j] = total.sums[j].value();
    moments.mean[j] = sums[j] / n;
  }
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k <= j; ++k) {
      // Σ x_j x_k - s_j s_k / n, the product's rounding error recovered by fma and summed exactly.
      ExactSum centred = total.cross_products[packed_index(j, k)];
      const double product = sums[j] * sums[k];
      centred.add(-product / n);
      centred.add(-std::fma(sums[j], sums[k], -product) / n);
      const double value = centred.value() / (n - 1.0);
      moments.covariance[j * d + k] = value;
      moments.covariance[k * d + j] = value;
    }
  }
  return moments;
}

// ---- the test ----

void validate_dp_mean_test_options(const DpMeanTestOptions& options) {
  if (!(options.epsilon > 0.0) || !std::isfinite(options.epsilon))
    throw ParameterError("DP mean test: the privacy budget epsilon must be finite and > 0");
  if (!(options.bound > 0.0) || !std::isfinite(options.bound))
    throw ParameterError("DP mean test: the bound m must be finite and > 0");
  if (!(options.alpha > 0.0 && options.alpha < 1.0)) throw ParameterError("DP mean test: alpha must lie in (0, 1)");
  critical_value_rank(options.replicates, options.alpha);  // throws ParameterError when B is too small for α
}

double dp_mean_noise_scale(std::uint64_t count, std::size_t dimension, const DpMeanTestOptions& options) {
  return 2.0 * options.bound * static_cast<double>(dimension) / (static_cast<double>(count) * (options.epsilon / 4.0));
}

PrivatizedMoments privatize_moments(const SampleMoments& moments, std::uint64_t sample,
                                    const DpMeanTestOptions& options) {
  validate_dp_mean_test_options(options);
  const std::size_t d = moments.dimension();
  if (d == 0 || moments.covariance.size() != d * d || moments.count < 2)
    throw ParameterError(
        "DP mean test: a sample's moments need at least one variable, two records and a d × d covariance");
  for (double value : moments.mean)
    if (!(std::fabs(value) <= options.bound))
      throw InvalidInput("DP mean test: a sample mean lies outside [-m, m]; the data exceed the bound m");
  const RecordRng rng(options.seed, StepId::kDpMeanTest);
  PrivatizedMoments released;
  released.count = moments.count;
  released.mean = moments.mean;
  add_laplace(rng, sample, DpDrawPurpose::kMeanNoise, kReleaseReplicate, dp_mean_noise_scale(moments.count, d, options),
              released.mean);
  released.covariance = to_row_major(ed_covariance(moments, sample, options, rng));
  return released;
}

double pooled_t2(std::uint64_t count_x, std::span<const double> mean_x, std::span<const double> covariance_x,
                 std::uint64_t count_y, std::span<const double> mean_y, std::span<const double> covariance_y,
                 double diagonal_correction) {
  check_pair(count_x, mean_x.size(), count_y, mean_y.size());
  const std::size_t d = mean_x.size();
  if (covariance_x.size() != d * d || covariance_y.size() != d * d)
    throw ParameterError("DP mean test: a covariance matrix is not d × d for the d variables of the means");
  return pooled_t2_of(count_x, to_vector(mean_x) - to_vector(mean_y), to_matrix(covariance_x, d), count_y,
                      to_matrix(covariance_y, d), diagonal_correction, nullptr);
}

double hotelling_t2(const SampleMoments& x, const SampleMoments& y) {
  return pooled_t2(x.count, x.mean, x.covariance, y.count, y.mean, y.covariance, 0.0);
}

double dp_t2(const PrivatizedMoments& x, const PrivatizedMoments& y, const DpMeanTestOptions& options) {
  validate_dp_mean_test_options(options);
  const double noise_x = dp_mean_noise_scale(x.count, x.dimension(), options);
  const double noise_y = dp_mean_noise_scale(y.count, y.dimension(), options);
  return pooled_t2(x.count, x.mean, x.covariance, y.count, y.mean, y.covariance,
                   2.0 * noise_x * noise_x + 2.0 * noise_y * noise_y);
}

void dp_bootstrap_replicates(const PrivatizedMoments& x, const PrivatizedMoments& y, const DpMeanTestOptions& options,
                             std::uint64_t first_replicate, std::span<double> out) {
  if (first_replicate == 0)
    throw ParameterError("DP mean test: bootstrap replicates are numbered from 1 (0 is the released statistic)");
  const BootstrapPlan plan = make_bootstrap_plan(x, y, options);
  const RecordRng rng(options.seed, StepId::kDpMeanTest);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, out.size(), 16),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t i = range.begin(); i != range.end(); ++i)
                        out[i] = bootstrap_replicate(plan, rng, first_replicate + i);
                    });
}

std::vector<double> dp_bootstrap_replicates(const PrivatizedMoments& x, const PrivatizedMoments& y,
                                            const DpMeanTestOptions& options) {
  std::vector<double> out(options.replicates);
  dp_bootstrap_replicates(x, y, options, 1, out);
  return out;
}

double regularized_gamma_p(double a, double x) {
  if (!(a > 0.0) || !(x >= 0.0)) throw ParameterError("regularized_gamma_p: needs a > 0 and x >= 0");
  if (x == 0.0) return 0.0;
  if (std::isinf(x)) return 1.0;
  const double log_prefix = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1.0) {
    // P(a, x) = e^-x x^a / Γ(a) · Σ_k x^k / (a (a + 1) ... (a + k)): terms shrink once k > x - a.
    double term = 1.0 / a;
    double sum = term;
    for (int k = 1; k < 100000; ++k) {
      term *= x / (a + k);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return std::min(1.0, sum * std::exp(log_prefix));
  }
  // Q(a, x) = e^-x x^a / Γ(a) · 1 / (x + 1 - a - 1·(1 - a) / (x + 3 - a - 2·(2 - a) / (x + 5 - a - ...))),
  // evaluated by the modified Lentz method; it converges quickly for x >= a + 1.
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a;
  double c = 1.0 / kTiny;
  double d = 1.0 / b;
  double h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::max(0.0, 1.0 - std::exp(log_prefix) * h);
}

double chi_square_quantile(double p, double degrees_of_freedom) {
  if (!(p > 0.0 && p < 1.0)) throw ParameterError("chi-square quantile: the probability must lie in (0, 1)");
  if (!(degrees_of_freedom > 0.0) || !std::isfinite(degrees_of_freedom))
    throw ParameterError("chi-square quantile: the degrees of freedom must be finite and > 0");
  const double a = degrees_of_freedom / 2.0;
  double low = 0.0;
  double high = std::max(1.0, degrees_of_freedom);
  while (regularized_gamma_p(a, high / 2.0) < p) {
    low = high;
    high *= 2.0;
  }
  for (int iteration = 0; iteration < 400 && high - low > 4e-16 * high; ++iteration) {
    const double mid = 0.5 * (low + high);
    (regularized_gamma_p(a, mid / 2.0) < p ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

DpMeanTestResult dp_mean_test(const SampleMoments& x, const SampleMoments& y, const DpMeanTestOptions& options) {
  validate_dp_mean_test_options(options);
  check_pair(x.count, x.dimension(), y.count, y.dimension());
  DpMeanTestResult result;
  result.released_x = privatize_moments(x, kSampleX, options);
  result.released_y = privatize_moments(y, kSampleY, options);
  result.statistic = dp_t2(result.released_x, result.released_y, options);
  const auto replicates = dp_bootstrap_replicates(result.released_x, result.released_y, options);
  result.bootstrap = bootstrap_critical_value(replicates, options.alpha);
  result.chi_square_critical = chi_square_quantile(1.0 - options.alpha, static_cast<double>(x.dimension()));
  result.reject_bootstrap = result.statistic > result.bootstrap.value;
  result.reject_asymptotic = result.statistic > result.chi_square_critical;
  return result;
}

// ---- Monte Carlo of Sect. 4 ----

namespace {
constexpr double kSqrt3 = 1.7320508075688772935274463415059;
}

SampleMoments simulate_cube_sample(const DpLevelStudyOptions& options, std::uint64_t trial, std::uint64_t sample) {
  const std::size_t d = options.dimension;
  const std::uint64_t n = options.group_size;
  if (d == 0 || n < 2) throw ParameterError("DP level study: needs at least one variable and two records per sample");
  const double offset = sample == kSampleY ? options.shift / std::sqrt(static_cast<double>(d)) : 0.0;
  const RecordRng rng(options.seed, StepId::kRiskSimulation);
  if (options.simulation == DpSampleSimulation::kRecords) {
    std::vector<std::vector<double>> columns(d, std::vector<double>(n));
    for (std::uint64_t i = 0; i < n; ++i) {
      for (std::size_t k = 0; k < d; k += 4) {
        const auto block = rng.bits({i, draw_word(sample, k / 4), trial, 0});
        for (std::size_t w = 0; w < 4 && k + w < d; ++w)
          columns[k + w][i] = offset + kSqrt3 * (2.0 * RecordRng::uniform_from_bits(block[w]) - 1.0);
      }
    }
    std::vector<std::span<const double>> spans(columns.begin(), columns.end());
    return mean_test_moments_finalize(mean_test_moments_local(spans, kSqrt3 + std::fabs(offset)));
  }
  std::vector<double> z(d + d * (d + 1) / 2);
  fill_normals(rng, {sample, 0, trial, 1}, z);
  const auto nd = static_cast<double>(n);
  SampleMoments moments;
  moments.count = n;
  moments.mean.resize(d);
  moments.covariance.resize(d * d);
  for (std::size_t j = 0; j < d; ++j) moments.mean[j] = offset + z[j] / std::sqrt(nd);
  std::size_t next = d;
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t k = 0; k <= j; ++k) {
      const double value = j == k ? 1.0 + std::sqrt(0.8 / nd) * z[next] : z[next] / std::sqrt(nd);
      ++next;
      moments.covariance[j * d + k] = value;
      moments.covariance[k * d + j] = value;
    }
  }
  return moments;
}

std::uint64_t dp_level_study_trial_seed(std::uint64_t seed, std::uint64_t trial) {
  return splitmix64(splitmix64(seed) ^ trial);
}

DpLevelStudyResult dp_mean_test_level_study(const DpLevelStudyOptions& options) {
  DpMeanTestOptions test;
  test.epsilon = options.epsilon;
  test.bound =
      kSqrt3 + std::fabs(options.shift) / std::sqrt(static_cast<double>(std::max<std::size_t>(1, options.dimension)));
  test.alpha = options.alpha;
  test.replicates = options.replicates;
  validate_dp_mean_test_options(test);
  std::vector<std::uint8_t> bootstrap(options.trials, 0);
  std::vector<std::uint8_t> asymptotic(options.trials, 0);
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, options.trials, 1),
                    [&](const tbb::blocked_range<std::uint64_t>& range) {
                      for (std::uint64_t trial = range.begin(); trial != range.end(); ++trial) {
                        DpMeanTestOptions trial_test = test;
                        trial_test.seed = dp_level_study_trial_seed(options.seed, trial);
                        const auto result = dp_mean_test(simulate_cube_sample(options, trial, kSampleX),
                                                         simulate_cube_sample(options, trial, kSampleY), trial_test);
                        bootstrap[trial] = result.reject_bootstrap ? 1 : 0;
                        asymptotic[trial] = result.reject_asymptotic ? 1 : 0;
                      }
                    });
  DpLevelStudyResult result;
  result.trials = options.trials;
  for (std::uint64_t trial = 0; trial < options.trials; ++trial) {
    result.bootstrap_rejections += bootstrap[trial];
    result.asymptotic_rejections += asymptotic[trial];
  }
  return result;
}

}  // namespace sdc
