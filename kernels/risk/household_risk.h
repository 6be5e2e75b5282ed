#pragma once
// Household risk, global risk, the risk threshold for a target global risk (docs/methods risk.md §5)
// and the file-level marketer risks against an external identification file (§6).
//
// Shapes:
//   household_risk                  (b) block-local: a household lives on one rank (§10), its
//                                   members contiguous; each household is computed alone.
//   global_risk_local / _merge      (a) mergeable partials: an exact sum of risks and a record count;
//   global_risk_finalize                the same bits for any split of the records.
//   risk_histogram_local / _merge   (a) mergeable partials: distinct risk values with their counts
//   risk_threshold                      (integer counts; the threshold and the quantiles depend on the
//   histogram_quantiles                 multiset only).
//   marketer_risk_local / _merge    (a) mergeable partials over classes (each global class counted in
//   marketer_risk_finalize              exactly one partial): counts and exact sums.
// Floating-point sums are ExactSum (exact until read), so merge order never changes a result.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/bootstrap/quantiles.h"
#include "kernels/core/exact_sum.h"
#include "kernels/risk/individual_risk.h"

namespace sdc {

// ---- household risk ----------------------------------------------------------------------------

/// r_hh = 1 - Π_{i ∈ hh} (1 - r_i), assigned to every member. `household_ids` runs of equal ids are
/// the households (records sorted by household id, as the data model guarantees). Compat evaluates
/// the product as written, in record order; native evaluates -expm1(Σ log1p(-r_i)), the same value
/// without the cancellation of 1 - Π for small risks.
std::vector<double> household_risk(std::span<const std::int64_t> household_ids, std::span<const double> risk,
                                   RiskMode mode);

// ---- global risk -------------------------------------------------------------------------------

struct GlobalRiskPartial {
  ExactSum expected;         ///< Σ r_i, exact
  std::int64_t records = 0;  ///< n
};

/// The partial of a block of per-record risks (individual or household risks).
GlobalRiskPartial global_risk_local(std::span<const double> risk);
/// Adds `from` to `into`; associative and commutative.
void global_risk_merge(GlobalRiskPartial& into, const GlobalRiskPartial& from);

struct GlobalRisk {
  std::int64_t records = 0;
  double expected_reidentifications = 0.0;  ///< ER = Σ r_i (ER_hh for household risks)
  double risk = 0.0;                        ///< ER / n (0 for no records)
  double percent = 0.0;                     ///< 100 · ER / n
};
GlobalRisk global_risk_finalize(const GlobalRiskPartial& total);

// ---- threshold for a target global risk --------------------------------------------------------

/// Distinct risk values, descending, with how many records have each.
struct RiskHistogram {
  std::vector<double> values;
  std::vector<std::int64_t> counts;
};

RiskHistogram risk_histogram_local(std::span<const double> risk);
/// The union of two histograms, counts added for equal values; associative and commutative.
void risk_histogram_merge(RiskHistogram& into, const RiskHistogram& from);

struct RiskThreshold {
  /// The risk r_j such that lowering every higher risk to r_j meets the target; 0 when no value
  /// does; the largest risk when the file is already safe.
  double threshold = 0.0;
  /// Σ r < ρ·n: the target already holds (the reference reports NA for the threshold).
  bool already_safe = false;
};

/// The exact sample quantiles of the risks the histogram counts: the order statistics and interpolation
/// of sample_quantiles (kernels/bootstrap/quantiles.h) read off the cumulative counts, without another
/// pass over the records. NaN quantiles when it counts no record. A risk of -0.0 reads as 0.0, as the
/// histogram counts it.
SampleQuantiles histogram_quantiles(const RiskHistogram& histogram, std::span<const double> probabilities,
                                    const QuantileOptions& options = {});

/// risk.md §5: sort r descending, T = ρ·n, S = Σ r. S < T -> already safe. Otherwise the first j
/// (at the start of a run of equal values) with Σ_{i>=j} r_i + r_j·j < T gives r_j; none gives 0.
/// The test sums are exact before the comparison. Throws ParameterError unless 0 < ρ < 1.
RiskThreshold risk_threshold(const RiskHistogram& histogram, double rho);

// ---- marketer risks (§6) -----------------------------------------------------------------------

struct MarketerRiskPartial {
  std::int64_t classes = 0;          ///< J
  std::int64_t records = 0;          ///< n
  std::int64_t invalid_records = 0;  ///< n_r: records in classes with f > F
  ExactSum certain;                  ///< Σ_i 1 / max(F_i, f_i)
  ExactSum valid;                    ///< Σ_{valid i} 1 / F_i
};

/// Classes of the internal file D with sizes `f` and their counts `F` in the external file E.
MarketerRiskPartial marketer_risk_local(std::span<const std::int64_t> f, std::span<const double> F);
/// Adds `from` to `into`; associative and commutative.
void marketer_risk_merge(MarketerRiskPartial& into, const MarketerRiskPartial& from);

struct MarketerRisk {
  double im = 0.0;    ///< J / n
  double cem = 0.0;   ///< (1/n) Σ_i 1 / max(F_i, f_i)
  double orem = 0.0;  ///< Σ_valid (1/F_i) / (n - n_r); 0 when no record is valid
  double arem = 0.0;  ///< Σ_valid (1/F_i) / n
};
MarketerRisk marketer_risk_finalize(const MarketerRiskPartial& total);

}  // namespace sdc
