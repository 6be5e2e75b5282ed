#pragma once
// Primary sensitivity rules of tables: which cells must not be published as they are, by the standard
// definitions of the Statistical Disclosure Control handbook (Hundepool et al., 2012, §4.2) as
// tau-Argus applies them. A cell has n contributors, a weighted count W, a total X (of the magnitude
// variable) and its largest contributions x_1 >= x_2 >= ... with their sampling weights.
//
//   minimum frequency  sensitive when 0 < n < threshold (weighted: 0 < W < threshold)
//   p% rule            sensitive when X − x_1 − x_2 < p/100 · x_1: the second largest contributor can
//                      estimate the largest to within p% by subtracting its own value from the total
//   (n,k) dominance    sensitive when x_1 + ... + x_n > k/100 · X: the n largest make up more than k%
//
// Weighted variants (tau-Argus "apply weights"): a record of weight w counts as w units of its value,
// so the largest "units" are taken by walking the contributions in descending order, each record
// supplying up to its weight, fractional parts included: with contributions 100 (w = 2.5) and 40
// (w = 3), x_1 = 100, x_2 = 100, and the 3 largest units sum to 100 + 100 + 0.5·100 + 0.5·40 = 270.
// X is then the weighted total Σ w·x, and the frequency rule reads W. Unweighted rules count every
// record once (their weights are ignored).
//
// A rule set holds at most one frequency rule, at most one p% rule and any number of dominance rules
// ((1,75) and (2,85) at once, say). A cell's status is the first rule that fires in the order
// empty (n = 0: no rule applies), minimum frequency, p%, then the dominance rules in the order given,
// and names the dominance rule that fired.
//
// The p% and dominance rules assume non-negative contributions: a cell with a negative contribution
// (one of its listed largest, a negative total, or a total below the sum of the listed contributions,
// which only unlisted negatives explain) is InvalidInput naming the row; the caller adds the variable.
// A cell keeps only its largest contributions (tabulation.h); a negative among the others is caught
// only through the total, so the caller should check the variable's minimum once.
//
// Shape: element-wise over cells (threaded; each cell's status depends on that cell alone).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/tables/tabulation.h"

namespace sdc::tables {

struct DominanceRule {
  int n = 1;        ///< the n largest contributions, >= 1
  double k = 75.0;  ///< percent of the total, in (0, 100]
};

struct SensitivityRules {
  std::optional<std::int64_t> minimum_frequency;  ///< the threshold, >= 1
  std::optional<double> p_percent;                ///< p, in (0, 100)
  std::vector<DominanceRule> dominance;
  bool weighted = false;  ///< the weighted variants of every rule
};

/// The largest contributions the rules need per cell: the largest n of the dominance rules, and 2 for
/// the p% rule (0 for a frequency rule alone).
int top_contributions_needed(const SensitivityRules& rules);

/// ParameterError naming the parameter at fault (minimum frequency threshold, p, dominance n or k, top
/// contributions) unless the rules are valid and `top_available` contributions per cell suffice.
void check_sensitivity_rules(const SensitivityRules& rules, int top_available);

/// One cell as the rules see it.
struct SensitivityCell {
  std::int64_t contributors = 0;  ///< n
  double weighted_count = 0.0;    ///< W (read by the weighted frequency rule)
  double total = 0.0;             ///< X: Σ x, or Σ w·x for the weighted rules
  /// The largest contributions, descending by value, with their weights (at least
  /// top_contributions_needed of them, or all of the cell's records).
  std::span<const Contribution> top;
};

enum class SensitivityStatus : std::uint8_t {
  kSafe,
  kEmpty,               ///< no contributors
  kSensitiveFrequency,  ///< the minimum frequency rule fired
  kSensitivePPercent,   ///< the p% rule fired
  kSensitiveDominance,  ///< a dominance rule fired (dominance_rule says which)
};

struct CellSensitivity {
  SensitivityStatus status = SensitivityStatus::kSafe;
  int dominance_rule = -1;  ///< index into SensitivityRules::dominance when a dominance rule fired
  friend bool operator==(const CellSensitivity&, const CellSensitivity&) = default;
};

bool is_sensitive(SensitivityStatus status);

/// The sum of the `units` largest units of the contributions (weighted: each record supplies up to
/// its weight; unweighted: one unit per record). Fewer units than asked when the list runs out.
double largest_units_sum(std::span<const Contribution> top, double units, bool weighted);

/// One cell's status (the rules checked already). InvalidInput for a negative contribution when the
/// p% or a dominance rule applies; ParameterError naming "top contributions" when the cell lists
/// too few of its records for the rules (weights below 1 need more records than units).
CellSensitivity classify_cell(const SensitivityCell& cell, const SensitivityRules& rules);

/// Every cell, in parallel, after check_sensitivity_rules(rules, top_available).
std::vector<CellSensitivity> classify_cells(std::span<const SensitivityCell> cells, const SensitivityRules& rules,
                                            int top_available);

}  // namespace sdc::tables
