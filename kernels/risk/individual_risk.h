#pragma once
// Individual re-identification risk of Benedetti and Franconi (sdcMicro indivRisk; docs/methods risk.md
// §4). Model: F_k - f_k | f_k ~ NegBin(f_k, p_k) with p_k = f_k / F_k; the risk of a record of class k
// is r_k = E[1/F_k | f_k] = ∫₀¹ t^(f-1) (p / (1 - q t))^f dt, q = 1 - p.
//
// Shape: element-wise. Each class (or record) maps to its risk from its own (f, F) alone, so there
// is no reduction and nothing to merge: a distributed composition evaluates the classes where they
// live and joins the risks back to the records. Sums of risks are in household_risk.h.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sdc {

/// How the f > 2 branch is evaluated.
enum class IndividualRiskMethod {
  kApprox,  ///< r = p / (f - q) (sdcMicro's default "approx")
  kExact,   ///< the integral, by composite Gauss–Legendre quadrature
};

/// Conventions: `kCompat` reproduces the reference's values silently; `kNative` gives the same
/// values but reports the classes where the reference's conventions are doubtful.
enum class RiskMode {
  kNative,
  kCompat,
};

struct IndividualRiskOptions {
  IndividualRiskMethod method = IndividualRiskMethod::kApprox;
  RiskMode mode = RiskMode::kNative;
  double qual = 1.0;     ///< final correction factor, multiplies every weighted risk
  bool weighted = true;  ///< false = population data (sdcMicro survey = FALSE): r = 1/f, F unused
};

struct IndividualRiskResult {
  /// One risk per input class. Empty when `invalid_class` is set.
  std::vector<double> risk;
  /// Native mode only: the first class whose (f, F) the model cannot take (F < f, i.e. weights
  /// below 1; f <= 0; a non-finite count). The caller raises the error naming it; no risks are
  /// returned. Compat mode computes such classes as the reference does and leaves this empty.
  std::optional<std::size_t> invalid_class;
  /// Native mode only: classes with a non-integer f below 2 other than f == 1 (e.g. f = 1.5 from
  /// missing-value weighting, α < 1). They match none of the reference's branches and get r = 0,
  /// in both modes; native mode counts them so that the caller can warn.
  std::int64_t non_integer_zero_classes = 0;
  std::optional<std::size_t> first_non_integer_zero_class;
};

/// Risks of classes with sample counts `f` and weighted counts `F` (one entry per class, or per
/// record: the map is element-wise). `F` may be empty when `options.weighted` is false.
/// Branches, in order: f == F -> 1/f; f == 1, f == 2 -> closed forms; f > 2 -> approx or exact;
/// anything else -> 0. Then every weighted risk is multiplied by `qual`.
IndividualRiskResult individual_risk(std::span<const double> f, std::span<const double> F,
                                     const IndividualRiskOptions& options);

/// The closed forms for one class with p = f/F < 1: f = 1: (p/q) ln(1/p); f = 2: p/q - (p/q)² ln(1/p);
/// f > 2: p / (f - q). Returns 0 for any other f (the reference's non-integer quirk).
double benedetti_franconi_closed_form(double f, double p);

/// The exact risk ∫₀¹ t^(f-1) (p / (1 - q t))^f dt for f > 0, p > 0, to about 1e-15 relative.
/// Evaluated as (1/f) ∫₀^∞ e^(-y) p / (p + q e^(-y/f)) dy (substituting s = p t / (1 - q t), then
/// s = e^(-y/f)): the integrand is smooth, with poles no closer than f·π to the real axis, so
/// 16-point Gauss–Legendre on unit panels converges to rounding; the panels stop once e^(-y) is
/// below 1e-17 of the lower bound p of f·r.
double benedetti_franconi_exact(double f, double p);

}  // namespace sdc
