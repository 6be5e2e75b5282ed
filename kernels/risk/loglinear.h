#pragma once
// Log-linear model disclosure risk τ1, τ2 (Skinner and Holmes 1998; Skinner and Shlomo 2008; Elamir and
// Skinner 2006; docs/methods risk.md §7): hierarchical Poisson log-linear models fitted by IPF on the
// grid of observed levels of the key variables, model selection by AIC/BIC, the per-unique risks and the
// parametric bootstrap draw f*_k ~ Poisson(μ̂_k) (bootstrap.md).
//
// Shape (a), mergeable partials, around one small global solve:
//   loglinear_margins_local / _from_classes   records or classes of one block -> dense margin counts
//   loglinear_margins_merge                   two margin-count sets -> their sum (associative, exact)
//   fit_loglinear                             merged margins -> fitted factors (every rank, same bits)
//   loglinear_loglik_local / loglinear_risk_local   classes of one block -> ExactSum partials
//   loglinear_risk_merge / _finalize          partials -> τ1, τ2 (or sdcMicro's gr1, gr2)
//   draw_parametric_replicate                 a range of grid cells -> margins of f* and its uniques
// The sample classes never leave their rank: risk and likelihood are element-wise per class given the
// fitted factors, and their sums are exact until read, so any split of the classes gives the same bits.
//
// The fitted table is kept as a product of factors μ_k = Π_g u_g(k_g), one dense factor per generator
// margin g, so the cross-classification (often 10⁹ cells) is never materialised. Fitted margins come from
// variable elimination on the factor graph (sum-product over the factors, eliminating the keys outside
// the margin one by one: cheap for decomposable and sparse models, e.g. independence costs Σ_j L_j per
// margin); when an intermediate table would exceed `elimination_limit` cells the grid is streamed in
// fixed chunks instead. Both are deterministic: every output cell is a sum in a fixed order, and chunk
// partials are folded in chunk order, whatever the number of threads.
//
// Conventions (both modes treat every key as categorical):
//   native (paper): v_k = μ_k (1 − π_k)/π_k; τ1 = Σ_{f=1} e^{−v}, τ2 = Σ_{f=1} (1 − e^{−v})/v, with
//     π a scalar sampling fraction or, per class, π_k = f_k / F_k (F_k = Σ w).
//   compat (sdcMicro 5.8.1 modRisk, method "default"): π̃_k = Σ_{i∈k} 1/w_i, v_k = (1 − π̃_k) μ_k, kept
//     cells 0 < f ≤ bound and not (μ = 0 and f > 0), gr1 and gr2 averages over the kept cells, gr2 NaN
//     when a kept cell has π̃ = 1. Deliberate difference: sdcMicro enters numeric key columns as linear
//     terms; our keys are categorical codes, so compat always fits factors (as the risk.md oracle does).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/key_grouping.h"
#include "kernels/core/record_rng.h"
#include "kernels/risk/individual_risk.h"

namespace sdc {

/// A hierarchical log-linear model. Grid cells are key tuples (k_0, …, k_{m−1}), 0 <= k_j < L_j, with
/// linear index row-major (key 0 slowest). A margin table over keys j_1 < … < j_r is row-major too.
struct LogLinearModelSpec {
  std::vector<std::int32_t> level_counts;            ///< L_j >= 1: the observed levels of key j
  std::vector<std::vector<std::size_t>> generators;  ///< the margins fitted, as key indices
  /// Structural zeros: cells outside the model (μ = 0, no likelihood), as flat key tuples.
  std::vector<std::int32_t> structural_zeros;

  std::size_t key_count() const { return level_counts.size(); }
};

LogLinearModelSpec independence_model(std::span<const std::int32_t> level_counts);
LogLinearModelSpec all_two_way_model(std::span<const std::int32_t> level_counts);

/// Checks the spec and puts it in canonical form: keys of a generator sorted, duplicate generators
/// and generators contained in another removed (IPF order of the rest kept), keys absent from every
/// generator added as one-way terms, structural zeros sorted and deduplicated. Throws ParameterError.
LogLinearModelSpec canonical_model(const LogLinearModelSpec& spec);

/// Number of cells of the grid (throws ParameterError when it overflows 64 bits).
std::uint64_t loglinear_grid_size(const LogLinearModelSpec& spec);

/// Dense observed counts, one table per generator of the (canonical) spec.
struct MarginCounts {
  std::vector<std::vector<std::int64_t>> counts;  ///< counts[g][margin cell]
  std::int64_t total() const;                     ///< n: the sum of any one table
};

/// Local step from records: codes must lie in 0..L_j−1 (InvalidInput naming the key otherwise).
MarginCounts loglinear_margins_local(const LogLinearModelSpec& spec, const KeyColumns& keys);

/// One block's sample classes: the part of the class list (risk.md §1) this rank holds.
struct LogLinearClasses {
  std::size_t key_count = 0;
  std::span<const std::int32_t> keys;           ///< class c's tuple: [c*key_count, (c+1)*key_count)
  std::span<const std::int64_t> sample_counts;  ///< f_k >= 1
  std::span<const double> weight_sums;          ///< F_k = Σ w (native per-class π); may be empty
  std::span<const double> inverse_weight_sums;  ///< π̃_k = Σ 1/w (compat); may be empty

  std::size_t class_count() const { return sample_counts.size(); }
  std::span<const std::int32_t> key(std::size_t c) const { return keys.subspan(c * key_count, key_count); }
};

/// Local step from classes (each class adds f_k to its margin cells).
MarginCounts loglinear_margins_from_classes(const LogLinearModelSpec& spec, const LogLinearClasses& classes);

/// Adds `from` into `into` (integer counts: any merge order gives the same result).
void loglinear_margins_merge(MarginCounts& into, const MarginCounts& from);

struct LogLinearFitOptions {
  double tolerance = 1e-8;  ///< max over margin cells of |fit − obs| / max(obs, 1), measured each sweep
  int max_sweeps = 1000;
  /// Largest intermediate table (cells) variable elimination may build; beyond it the grid is streamed.
  std::uint64_t elimination_limit = std::uint64_t{1} << 24;
};

/// One key summed out by variable elimination: the product of the live tables holding `key`, over
/// the keys of `scope` (sorted, `key` among them), summed over `key`, becomes one table. An empty
/// scope means no table holds the key: summing it out multiplies by its number of levels.
struct EliminationStep {
  std::size_t key = 0;
  std::vector<std::size_t> scope;
};

/// The order in which variable elimination sums out the keys outside `target` (sorted): greedily the
/// key whose product touches the fewest cells, of equal work the one with most levels. None when an
/// intermediate table would exceed `limit` cells: the fitted margin over `target` then streams the
/// grid. The order depends on the model alone, so the step that checks a model's cost and the fit
/// that runs it take the same one.
std::optional<std::vector<EliminationStep>> loglinear_elimination_plan(const LogLinearModelSpec& spec,
                                                                       const std::vector<std::size_t>& target,
                                                                       std::uint64_t limit);

/// Grid cells one IPF sweep streams: the grid for every generator whose margin has no elimination
/// plan within `options.elimination_limit`, 0 when every margin comes from elimination.
std::uint64_t loglinear_streamed_cells_per_sweep(const LogLinearModelSpec& spec, const LogLinearFitOptions& options);

enum class FittedMarginMethod {
  kElimination,  ///< variable elimination on the factor graph
  kGridStream,   ///< the grid streamed in fixed chunks
};

struct LogLinearFit {
  std::vector<std::vector<double>> factors;  ///< u_g per margin cell of generator g of the canonical spec
  int sweeps = 0;                            ///< full IPF sweeps run
  bool converged = false;
  double max_relative_change = 0.0;                              ///< of the last sweep
  double fitted_total = 0.0;                                     ///< Σ μ over the non-structural grid cells
  FittedMarginMethod method = FittedMarginMethod::kElimination;  ///< of the last fitted margin
};

/// IPF: each sweep visits the generators in order and sets u_g <- u_g · obs_g / fit_g. Starts from
/// u ≡ 1, or from `start` (a fit of the same spec: a warm start for bootstrap refits). `spec` must be
/// canonical and `observed` built for it. Runs on the threads of the current TBB arena.
LogLinearFit fit_loglinear(const LogLinearModelSpec& spec, const MarginCounts& observed,
                           const LogLinearFitOptions& options = {}, const LogLinearFit* start = nullptr);

/// Σ μ over the grid cells outside `keys`, as a dense table over `keys` (strictly increasing indices).
std::vector<double> loglinear_fitted_margin(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                            std::span<const std::size_t> keys, const LogLinearFitOptions& options = {});

/// μ of one cell: Π_g u_g(k_g); 0 for a structural zero.
double loglinear_fitted_cell(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                             std::span<const std::int32_t> cell);

// ---- model selection ----

/// Free parameters of the hierarchical model: Σ over the terms of its closure (every subset of a
/// generator, the empty set being the intercept) of Π_{j in term} (L_j − 1). The grid is that of the
/// observed levels, so no key has an empty level and every one-way term is estimable. Zero cells of
/// higher observed margins are not deducted (their estimates sit on the boundary, μ = 0), nor are
/// structural zeros: the count is the classical one of Bishop, Fienberg and Holland.
std::int64_t loglinear_parameter_count(const LogLinearModelSpec& spec);

/// Local step of the log-likelihood: Σ over the block's classes of f log μ − log f!. Exact until read.
/// A class with μ = 0 (a structural zero or an empty fitted margin) makes the likelihood −∞: reported by
/// `impossible_classes`.
struct LogLikelihoodPartial {
  ExactSum class_term;
  std::int64_t impossible_classes = 0;
};

/// Adds `from` to `into`; associative and commutative.
inline void loglinear_loglik_merge(LogLikelihoodPartial& into, const LogLikelihoodPartial& from) {
  into.class_term.merge(from.class_term);
  into.impossible_classes += from.impossible_classes;
}
LogLikelihoodPartial loglinear_loglik_local(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                            const LogLinearClasses& classes);

struct LogLinearScore {
  double log_likelihood = 0.0;  ///< Poisson: Σ_k (f log μ − μ − log f!) over the grid
  double deviance = 0.0;        ///< G² = 2 Σ f log(f/μ) − 2 (n − Σ μ), against the saturated model
  std::int64_t parameters = 0;  ///< loglinear_parameter_count
  double aic = 0.0;             ///< −2 logL + 2 parameters
  double bic = 0.0;             ///< −2 logL + parameters · ln n
  int sweeps = 0;
  bool converged = false;
};

/// `loglik` is the merged partial over every class; `saturated_term` = Σ f log f − log f! over every
/// class (the same for all candidates; loglinear_saturated_local), n = the sample size.
LogLinearScore score_loglinear_model(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                     const LogLikelihoodPartial& loglik, const ExactSum& saturated_term,
                                     std::int64_t sample_size);
ExactSum loglinear_saturated_local(const LogLinearClasses& classes);

struct LogLinearSelection {
  std::vector<LogLinearScore> candidates;  ///< in the order given
  std::size_t best_by_aic = 0;             ///< smallest AIC (first on ties)
  std::size_t best_by_bic = 0;             ///< smallest BIC (first on ties)
};
LogLinearSelection choose_loglinear_model(std::span<const LogLinearScore> scores);

/// The whole selection on one block (tests, single-process callers): canonicalises and fits every
/// candidate on the margins of `classes`, scores it, chooses.
LogLinearSelection select_loglinear_model(std::span<const LogLinearModelSpec> candidates,
                                          const LogLinearClasses& classes, const LogLinearFitOptions& options = {});

// ---- risk ----

struct LogLinearRiskOptions {
  RiskMode mode = RiskMode::kNative;
  /// Native: a scalar sampling fraction π in (0, 1]; absent = per class π_k = f_k / F_k.
  std::optional<double> sampling_fraction{};
  /// Compat: sdcMicro's `bound`, cells with f > bound are dropped.
  double bound = std::numeric_limits<double>::infinity();
};

/// Native risk of one sample unique: P(F = 1 | f = 1) = e^{−v} and E[1/F | f = 1] = (1 − e^{−v})/v
/// (= −expm1(−v)/v, 1 at v = 0) with v = μ (1 − π)/π.
struct UniqueRisk {
  double reidentification = 0.0;
  double expected_inverse = 0.0;
};
UniqueRisk loglinear_unique_risk(double mu, double sampling_fraction);

struct LogLinearRiskPartial {
  ExactSum tau1;  ///< native: Σ e^{−v}; compat: the numerator of gr1
  ExactSum tau2;  ///< native: Σ (1 − e^{−v})/v; compat: the numerator of gr2
  std::int64_t sample_uniques = 0;
  std::int64_t kept_classes = 0;  ///< compat: K'
  bool unit_inclusion = false;    ///< compat: a kept class has π̃ = 1 (gr2 becomes NaN)
};

/// Local step over one block's classes. Native mode throws InvalidInput when a class has no valid
/// sampling fraction (F_k < f_k, π outside (0, 1]) or a sample unique lies in a structural zero.
LogLinearRiskPartial loglinear_risk_local(const LogLinearModelSpec& spec, const LogLinearFit& fit,
                                          const LogLinearClasses& classes, const LogLinearRiskOptions& options);
void loglinear_risk_merge(LogLinearRiskPartial& into, const LogLinearRiskPartial& from);

struct LogLinearRisk {
  double tau1 = 0.0;  ///< native τ̂1; compat gr1
  double tau2 = 0.0;  ///< native τ̂2; compat gr2 (NaN as in the reference)
  std::int64_t sample_uniques = 0;
  std::int64_t kept_classes = 0;
};
LogLinearRisk loglinear_risk_finalize(const LogLinearRiskPartial& total, const LogLinearRiskOptions& options);

// ---- parametric bootstrap ----

/// A Poisson(mean) draw from the counter `counter` (its `attempt` word is used for rejections):
/// inversion by sequential search for mean < 10, Hörmann's transformed rejection (PTRS, 1993) above.
std::int64_t poisson_draw(const RecordRng& rng, DrawCounter counter, double mean);

struct ParametricDraw {
  MarginCounts margins;                     ///< observed margins of f* (for the refit)
  std::vector<std::uint64_t> unique_cells;  ///< linear grid indices with f* = 1, increasing
};

/// f*_k ~ Poisson(μ_k) for the grid cells with linear index in [cell_begin, cell_end), streamed in
/// chunks. Counter: RecordRng(seed, kBootstrapParametric), unit = linear grid index, replicate = b.
/// Ranges merge: add the margins, concatenate the uniques in range order.
ParametricDraw draw_parametric_replicate(const LogLinearModelSpec& spec, const LogLinearFit& fit, std::uint64_t seed,
                                         std::uint64_t replicate, std::uint64_t cell_begin, std::uint64_t cell_end);

struct TauReplicate {
  double tau1 = 0.0;
  double tau2 = 0.0;
  std::int64_t sample_uniques = 0;
  int sweeps = 0;
  bool converged = false;
};

/// One replicate b of the parametric bootstrap of τ: draw f* over the whole grid, refit (warm start
/// from `fit`), and sum the native risks of the uniques of f* with the scalar sampling fraction
/// (a per-class π is undefined for cells the sample did not observe).
TauReplicate tau_replicate(const LogLinearModelSpec& spec, const LogLinearFit& fit, std::uint64_t replicate,
                           std::uint64_t seed, double sampling_fraction, const LogLinearFitOptions& options = {});

}  // namespace sdc
