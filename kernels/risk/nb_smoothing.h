#pragma once
// Rinott–Shlomo negative-binomial smoothing risk (Rinott & Shlomo, PSD 2006; docs/methods risk.md §8).
// Model: F_k ~ Poisson(N γ_k), f_k | F_k ~ Bin(F_k, π_k), γ_k ~ Gamma(α, β). For each sample unique k
// the parameters (α, μ_k = E f_k) are estimated by a local negative-binomial regression on the
// neighbourhood M_k of cells that share k's fixed (non-ordinal) keys and lie near k on its ordinal
// keys; then P(F_k = 1 | f_k = 1) and E[1/F_k | f_k = 1] follow in closed form (formula (7)), and
// τ1, τ2 are their sums over the sample uniques.
//
// Shape: (b) block-local, then (a) mergeable partials.
//   nb_smoothing_local      the sample classes of one block  -> per-unique risks (class order) and a
//                           partial of exact sums. A block must hold every class that shares a
//                           fixed-key tuple with any of its classes: a distributed composition
//                           partitions the classes by their fixed keys (hash of the fixed-key tuple
//                           -> rank), so that no neighbourhood crosses a rank. Partitioning along
//                           an ordinal key would need a halo of width c.
//   nb_smoothing_merge         partial into partial -> their sum (exact: associative and commutative)
//   nb_smoothing_finalize   the global partial -> τ̂1, τ̂2
// Within a block the sample uniques are fitted in parallel (TBB, work stealing); each fit reads only
// its own neighbourhood, so the per-unique results and the sums have the same bits for any thread
// count and any split of the fixed-key groups.
//
// Memory: a hash index of the block's classes (O(classes)), the design matrix of the neighbourhood
// shape (|M| x p, shared) and O(|M| + p²) scratch per running fit.

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/core/exact_sum.h"

namespace sdc {

// ---- neighbourhoods ----------------------------------------------------------------------------

/// What to do with neighbours whose ordinal codes lie outside 0..L_j-1.
enum class OutOfRangeCells {
  kIncludeAsZero,  ///< they count as observed cells with f = 0 (the paper's choice)
  kExclude,        ///< they are left out of the local likelihood
};

struct NbNeighbourhoodShape {
  std::size_t varying_keys = 0;                          ///< number of ordinal keys v
  std::int32_t sup_radius = 2;                           ///< c: max_j |δ_j| <= c
  std::optional<std::int32_t> l1_radius = std::nullopt;  ///< d: Σ_j |δ_j| <= d, when set
};

/// The offsets δ ∈ Z^v of a neighbourhood, in lexicographic order (the zero offset included).
/// Offset o occupies [o·v, (o+1)·v). Throws ParameterError for a negative radius.
std::vector<std::int32_t> nb_neighbourhood_offsets(const NbNeighbourhoodShape& shape);

/// The local design: one row per offset, columns (1, δ_1, δ_1², …, δ_1^t, δ_2, …, δ_v^t) — the
/// polynomial of degree t in each varying key, without cross terms. p = 1 + v·t columns.
Eigen::MatrixXd nb_design_matrix(std::span<const std::int32_t> offsets, std::size_t varying_keys,
                                 std::int32_t polynomial_degree);

// ---- the local model ---------------------------------------------------------------------------

/// Log-likelihood ℓ(a, θ) of counts f on a neighbourhood (risk.md §8.3) with its gradient and Hessian
/// with respect to (a, θ), a = 1/α first (§8.4, §8.5). log μ = design·θ.
struct NbLikelihood {
  double value = 0.0;
  Eigen::VectorXd gradient;  ///< (∂ℓ/∂a, ∂ℓ/∂θ)
  Eigen::MatrixXd hessian;
};
NbLikelihood nb_log_likelihood(const Eigen::MatrixXd& design, std::span<const double> f, double a,
                               const Eigen::VectorXd& theta);
/// ℓ alone (what the line search evaluates).
double nb_log_likelihood_value(const Eigen::MatrixXd& design, std::span<const double> f, double a,
                               const Eigen::VectorXd& theta);

inline constexpr double kNbMinA = 1e-6;  ///< bounds on a = 1/α (§8.6)
inline constexpr double kNbMaxA = 1e3;
inline constexpr double kNbThetaRidge = 1e-6;  ///< ℓ - (λ/2)|θ|² is maximised: finite for any data

struct NbLocalFit {
  double a = 1.0;
  Eigen::VectorXd theta;
  double objective = 0.0;  ///< ℓ - (λ/2)|θ|² at the estimate
  std::int32_t iterations = 0;
  bool converged = false;  ///< a stopping rule was met within 100 iterations
};

/// Maximises ℓ(a, θ) - (λ/2)|θ|² over ln a ∈ [ln 1e-6, ln 1e3] and θ (risk.md §8.6): Newton steps on
/// (ln a, θ) with the analytic Hessian, a ridge added until the negated Hessian is positive definite,
/// and a backtracking (Armijo) line search projected onto the bounds; a bound that the gradient
/// pushes against is held fixed for the step. Stops when |Δobjective| < 1e-10 or the largest step
/// component < 1e-8, after at most 100 iterations. Counts f must be integral and non-negative.
NbLocalFit nb_fit_local_model(const Eigen::MatrixXd& design, std::span<const double> f);

// ---- risk of a sample unique -------------------------------------------------------------------

struct NbUniqueRisk {
  double mu = 0.0;                             ///< μ_k = E f_k
  double alpha = 0.0;                          ///< α = 1/a
  double rho = 0.0;                            ///< ρ_k = (μ + α)/(μ/π + α) = (Nπβ + 1)/(Nβ + 1)
  double population_unique_probability = 0.0;  ///< P(F = 1 | f = 1) = ρ^(1+α)
  double expected_inverse_population = 0.0;    ///< E[1/F | f = 1] = ρ(1 - ρ^α)/(α(1 - ρ))
};

/// Formula (7) for a sample unique with estimated μ and α and sampling fraction π ∈ (0, 1]. ρ^α is
/// exp(α ln ρ) and 1 - ρ^α is -expm1(α ln ρ), so that α from 1e-6 to 1e6 loses no digits; π = 1
/// (ρ = 1) gives P = E = 1.
NbUniqueRisk nb_unique_risk(double mu, double alpha, double sampling_fraction);

// ---- the kernel --------------------------------------------------------------------------------

/// The sample classes held by one block: key tuples as codes, sample counts, sampling fractions.
struct NbSampleClasses {
  std::size_t fixed_key_count = 0;
  std::size_t ordinal_key_count = 0;
  std::span<const std::int32_t> fixed_keys;      ///< class c: [c·fixed_key_count, (c+1)·fixed_key_count)
  std::span<const std::int32_t> ordinal_keys;    ///< class c: [c·ordinal_key_count, …); codes 0..L_j-1
  std::span<const std::int32_t> ordinal_levels;  ///< L_j, the table range of ordinal key j
  std::span<const std::int64_t> counts;          ///< f_k >= 1, one per class (distinct tuples)
  /// π_k: one value for every class (a simple random sample: n/N), or one per class (e.g. f_k/F̂_k
  /// from the sampling weights, i.e. 1/F̂_k for a sample unique). Only the uniques' values are used:
  /// the local likelihood is written in μ and needs no π.
  std::span<const double> sampling_fraction;
  /// Optional names for error messages, in key order; positions are used when empty.
  std::span<const std::string_view> ordinal_key_names;

  std::size_t class_count() const { return counts.size(); }
};

struct NbSmoothingOptions {
  std::int32_t sup_radius = 2;                           ///< c
  std::optional<std::int32_t> l1_radius = std::nullopt;  ///< d
  std::int32_t polynomial_degree = 2;                    ///< t
  OutOfRangeCells out_of_range = OutOfRangeCells::kIncludeAsZero;
};

struct NbSmoothingPartial {
  ExactSum tau1;  ///< Σ P̂(F = 1 | f = 1) over sample uniques
  ExactSum tau2;  ///< Σ Ê[1/F | f = 1]
  std::int64_t sample_uniques = 0;
  std::int64_t not_converged = 0;  ///< fits that hit the iteration limit (their last iterate is used)
};

/// Adds `from` to `into`; associative and commutative, the same bits in any order.
void nb_smoothing_merge(NbSmoothingPartial& into, const NbSmoothingPartial& from);

struct NbSmoothingLocal {
  std::vector<std::size_t> unique_class;  ///< the class index of each sample unique, ascending
  std::vector<NbUniqueRisk> risk;         ///< per sample unique, in the order of unique_class
  std::vector<std::int32_t> iterations;   ///< Newton iterations of each fit
  std::vector<std::uint8_t> converged;    ///< 1 when the fit met a stopping rule, per sample unique
  NbSmoothingPartial partial;
};

/// Fits every sample unique of the block (see the shape above). Throws InvalidInput naming the key or
/// class at fault (an ordinal code outside its range, a repeated key tuple, f < 1, π outside (0, 1])
/// and ParameterError for bad options (c < 0, d < 0, t < 1, a key space too large to index in 64 bits).
NbSmoothingLocal nb_smoothing_local(const NbSampleClasses& classes, const NbSmoothingOptions& options);

struct NbSmoothingTotals {
  std::int64_t sample_uniques = 0;
  std::int64_t not_converged = 0;
  double tau1 = 0.0;
  double tau2 = 0.0;
};
NbSmoothingTotals nb_smoothing_finalize(const NbSmoothingPartial& total);

}  // namespace sdc
