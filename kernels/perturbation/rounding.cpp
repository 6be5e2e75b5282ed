#include "kernels/perturbation/rounding.h"

#include <cmath>
#include <string>

#include "kernels/core/error.h"

namespace sdc {
namespace {

void check_base(std::int64_t base) {
  if (base < 2) throw ParameterError("rounding base " + std::to_string(base) + " is below 2");
}

}  // namespace

double round_to_set(double value, double base, double max_value) {
  if (!(base > 0.0)) throw ParameterError("rounding set: the step b must be positive");
  if (!(value >= 0.0 && value <= max_value)) throw ParameterError("rounding set: a value outside [0, max]");
  // The point of the interval [p_i − b/2, p_i + b/2) holding v: i = floor(v/b + 1/2), ties up.
  const double index = std::floor(value / base + 0.5);
  const double last = std::floor(max_value / base + 0.5);
  return std::min(index, last) * base;
}

double stochastic_rounding_unit(double value, double small_unit) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 1'000'000.0) return 10'000.0;
  if (magnitude >= 10'000.0) return 1'000.0;
  if (!(small_unit > 0.0)) throw ParameterError("stochastic rounding: the unit below 10 000 must be positive");
  return small_unit;
}

double round_unbiased(double value, double unit, double u) {
  if (!(unit > 0.0)) throw ParameterError("stochastic rounding: the unit must be positive");
  const double down = std::floor(value / unit) * unit;
  const double share = (value - down) / unit;
  return u < share ? down + unit : down;
}

double round_up_probability(std::int64_t residual, std::int64_t base, BaseRounding rule) {
  check_base(base);
  if (residual < 0 || residual >= base) throw ParameterError("rounding: a residual outside 0..B−1");
  const bool even = base % 2 == 0;
  const std::int64_t half = base / 2;
  switch (rule) {
    case BaseRounding::kConventional:
      return residual * 2 >= base ? 1.0 : 0.0;  // odd B: r > B/2; even B: r >= B/2
    case BaseRounding::kModifiedConventional:
      if (even && residual == half) return 0.5;
      return residual * 2 > base ? 1.0 : 0.0;
    case BaseRounding::kZeroRestricted:
      return residual == 0 ? 0.0 : 0.5;
    case BaseRounding::kUnbiased:
      return static_cast<double>(residual) / static_cast<double>(base);
  }
  return 0.0;
}

std::int64_t round_to_base(std::int64_t count, std::int64_t base, BaseRounding rule, double u) {
  check_base(base);
  if (count < 0) throw ParameterError("rounding: a negative count");
  const std::int64_t residual = count % base;
  const std::int64_t down = count - residual;
  return u < round_up_probability(residual, base, rule) ? down + base : down;
}

BaseRoundingMoments base_rounding_moments(std::int64_t base, BaseRounding rule) {
  check_base(base);
  BaseRoundingMoments out;
  const auto b = static_cast<double>(base);
  double mean_square = 0.0;
  double rounded_square = 0.0;
  out.unbiased_per_residual = true;
  for (std::int64_t r = 0; r < base; ++r) {
    const auto x = static_cast<double>(r);
    const double up = round_up_probability(r, base, rule);
    out.residual_mean += x / b;
    mean_square += x * x / b;
    out.rounded_mean += up * b / b;
    rounded_square += up * b * b / b;
    out.squared_error += (up * (b - x) * (b - x) + (1.0 - up) * x * x) / b;
    out.unbiased_per_residual = out.unbiased_per_residual && std::fabs(up * b - x) < 1e-12;
  }
  out.residual_variance = mean_square - out.residual_mean * out.residual_mean;
  out.rounded_variance = rounded_square - out.rounded_mean * out.rounded_mean;
  out.sum_unbiased = std::fabs(out.rounded_mean - out.residual_mean) < 1e-12;
  return out;
}

std::vector<CountPosterior> base_rounding_posterior(std::int64_t rounded, std::int64_t base, BaseRounding rule) {
  check_base(base);
  if (rounded < 0 || rounded % base != 0) throw ParameterError("rounding posterior: not a multiple of the base");
  std::vector<CountPosterior> out;
  const std::int64_t first = rounded == 0 ? 0 : rounded - base + 1;
  const std::int64_t last = rounded + base - 1;
  double total = 0.0;
  for (std::int64_t x = first; x <= last; ++x) {
    const std::int64_t residual = x % base;
    const double up = round_up_probability(residual, base, rule);
    // R = rounded from x: x below it rounds up to it, x at or above it rounds down to it.
    const double likelihood = x < rounded ? up : (x == rounded ? 1.0 : 1.0 - up);
    out.push_back({x, likelihood});
    total += likelihood;
  }
  for (auto& entry : out) entry.probability /= total;
  return out;
}

}  // namespace sdc
