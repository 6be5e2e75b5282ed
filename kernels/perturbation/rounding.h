#pragma once
// Rounding as masking (docs/methods perturbation.md §5): deterministic rounding to a rounding set,
// unbiased stochastic rounding with units by magnitude (Survey of Consumer Finances practice), and the
// four base-B rules for counts of Cox & Kim with their moments and posteriors. Rounding a cell or a
// value is element-wise: a draw is the uniform u of the caller's counter-based generator (keyed by the
// cell or record id), so results do not depend on ranks or threads. The table steps (random rounding
// of frequency tables) build on these; the moments and posteriors are what a report states about the
// protection a rule gives.

#include <cstdint>
#include <vector>

namespace sdc {

/// Deterministic rounding to the points p_i = b·i: v goes to the point whose attraction interval
/// [p_i − b/2, p_i + b/2) holds it (a tie at p_i + b/2 goes up); the first interval is [0, b/2), the
/// last [p_r − b/2, max_value] with p_r the largest point not above max_value + b/2. v in [0, max_value].
double round_to_set(double value, double base, double max_value);

/// The unit of unbiased stochastic rounding by magnitude: |v| >= 1 000 000 -> 10 000;
/// 10 000 <= |v| < 1 000 000 -> 1 000; below, `small_unit`.
double stochastic_rounding_unit(double value, double small_unit);

/// Unbiased stochastic rounding to a multiple of `unit`: up with probability (v mod unit)/unit, down
/// otherwise (u uniform on [0, 1): up when u < that share). E[result] = v.
double round_unbiased(double value, double unit, double u);

/// The base-B rules for a count x = qB + r, r in 0..B−1 (Cox & Kim).
enum class BaseRounding {
  kConventional,          ///< nearest multiple; r = B/2 (even B) up
  kModifiedConventional,  ///< nearest; r = B/2 (even B) up or down with ½ each
  kZeroRestricted,        ///< 50/50: r = 0 stays, every r >= 1 up or down with ½ each
  kUnbiased,              ///< up with probability r/B
};

/// The probability that a count of residual r is rounded up under `rule`.
double round_up_probability(std::int64_t residual, std::int64_t base, BaseRounding rule);

/// x rounded to a multiple of `base` (x >= 0, base >= 2); u uniform on [0, 1): up when u < the
/// probability of rounding up.
std::int64_t round_to_base(std::int64_t count, std::int64_t base, BaseRounding rule, double u);

/// Moments with the residual r uniform on 0..B−1: of r itself, of the rounded residual R(r) in {0, B},
/// and the expected squared rounding error E[(R − r)²]; `unbiased_per_residual` is whether
/// E[R(r) | r] = r for every r, `sum_unbiased` whether E[R] = E[r].
struct BaseRoundingMoments {
  double residual_mean = 0.0;
  double residual_variance = 0.0;
  double rounded_mean = 0.0;
  double rounded_variance = 0.0;
  double squared_error = 0.0;
  bool unbiased_per_residual = false;
  bool sum_unbiased = false;
};
BaseRoundingMoments base_rounding_moments(std::int64_t base, BaseRounding rule);

/// P[x | R = rounded] for a uniform prior over the counts that can round to `rounded` (2B − 1 of them
/// for rounded > 0: (q − 1)B + 1 … (q + 1)B − 1; B for rounded = 0: 0 … B − 1), in increasing x.
struct CountPosterior {
  std::int64_t count = 0;
  double probability = 0.0;
};
std::vector<CountPosterior> base_rounding_posterior(std::int64_t rounded, std::int64_t base, BaseRounding rule);

}  // namespace sdc
