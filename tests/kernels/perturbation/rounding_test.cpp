#include "kernels/perturbation/rounding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "kernels/core/error.h"

namespace sdc {
namespace {

double posterior_of(std::int64_t count, std::int64_t rounded, std::int64_t base, BaseRounding rule) {
  for (const auto& entry : base_rounding_posterior(rounded, base, rule))
    if (entry.count == count) return entry.probability;
  return 0.0;
}

// perturbation.md §6, "E rounding": B = 10: E[(R − r)²] = 8.5 (modified conventional), 28.5 (50/50),
// 16.5 (unbiased); B = 5 conventional: 2.
TEST(Rounding, SquaredErrorOracles) {
  EXPECT_DOUBLE_EQ(base_rounding_moments(10, BaseRounding::kModifiedConventional).squared_error, 8.5);
  EXPECT_DOUBLE_EQ(base_rounding_moments(10, BaseRounding::kZeroRestricted).squared_error, 28.5);
  EXPECT_DOUBLE_EQ(base_rounding_moments(10, BaseRounding::kUnbiased).squared_error, 16.5);
  EXPECT_DOUBLE_EQ(base_rounding_moments(5, BaseRounding::kConventional).squared_error, 2.0);
}

// The closed forms of §5 for several bases.
TEST(Rounding, MomentsFollowTheClosedForms) {
  for (std::int64_t base = 2; base <= 12; ++base) {
    const double b = static_cast<double>(base);
    for (auto rule : {BaseRounding::kConventional, BaseRounding::kModifiedConventional, BaseRounding::kZeroRestricted,
                      BaseRounding::kUnbiased}) {
      const BaseRoundingMoments m = base_rounding_moments(base, rule);
      EXPECT_NEAR(m.residual_mean, (b - 1) / 2, 1e-12);
      EXPECT_NEAR(m.residual_variance, (b * b - 1) / 12, 1e-12);
      const bool conventional_even = rule == BaseRounding::kConventional && base % 2 == 0;
      EXPECT_NEAR(m.rounded_mean, conventional_even ? b / 2 : (b - 1) / 2, 1e-12) << base;
      EXPECT_NEAR(m.rounded_variance, conventional_even ? b * b / 4 : (b * b - 1) / 4, 1e-12) << base;
      // All but conventional with even B are sum-unbiased (the source's "50/50 is sum-biased" is an erratum).
      EXPECT_EQ(m.sum_unbiased, !conventional_even) << base;
      // Only the unbiased rule has E[R(r) | r] = r, except at B = 2, where r = 1 = B/2 goes up or down
      // with ½ under the modified conventional and the 50/50 rules too.
      const bool halves_at_two =
          base == 2 && (rule == BaseRounding::kModifiedConventional || rule == BaseRounding::kZeroRestricted);
      EXPECT_EQ(m.unbiased_per_residual, rule == BaseRounding::kUnbiased || halves_at_two) << base;
    }
    EXPECT_NEAR(base_rounding_moments(base, BaseRounding::kUnbiased).squared_error, (b * b - 1) / 6, 1e-12);
    EXPECT_NEAR(base_rounding_moments(base, BaseRounding::kZeroRestricted).squared_error, (b - 1) * (2 * b - 1) / 6,
                1e-12);
    if (base % 2 == 0)
      EXPECT_NEAR(base_rounding_moments(base, BaseRounding::kModifiedConventional).squared_error, (b * b + 2) / 12,
                  1e-12);
    else
      EXPECT_NEAR(base_rounding_moments(base, BaseRounding::kConventional).squared_error, (b * b - 1) / 12, 1e-12);
  }
}

// "P[x = 19 | R = 20] = 0.09 and P[x = 20 | R = 20] = 0.1 (unbiased, B = 10)", and the posteriors of §5
// with their errata (the unbiased rule's r/B², the modified conventional rule's 2/(B + 1) at 0).
TEST(Rounding, PosteriorOracles) {
  EXPECT_NEAR(posterior_of(19, 20, 10, BaseRounding::kUnbiased), 0.09, 1e-15);
  EXPECT_NEAR(posterior_of(20, 20, 10, BaseRounding::kUnbiased), 0.1, 1e-15);
  const std::int64_t base = 7;
  const double b = 7.0;
  for (std::int64_t r = 1; r < base; ++r) {
    EXPECT_NEAR(posterior_of(14 - base + r, 14, base, BaseRounding::kUnbiased), static_cast<double>(r) / (b * b),
                1e-15);
    EXPECT_NEAR(posterior_of(14 + r, 14, base, BaseRounding::kUnbiased), (b - static_cast<double>(r)) / (b * b), 1e-15);
    EXPECT_NEAR(posterior_of(r, 0, base, BaseRounding::kUnbiased), 2 * (b - static_cast<double>(r)) / (b * (b + 1)),
                1e-15);
    EXPECT_NEAR(posterior_of(14 + r, 14, base, BaseRounding::kZeroRestricted), 1 / (2 * b), 1e-15);
    EXPECT_NEAR(posterior_of(r, 0, base, BaseRounding::kZeroRestricted), 1 / (b + 1), 1e-15);
  }
  EXPECT_NEAR(posterior_of(14, 14, base, BaseRounding::kZeroRestricted), 1 / b, 1e-15);
  EXPECT_NEAR(posterior_of(0, 0, base, BaseRounding::kZeroRestricted), 2 / (b + 1), 1e-15);
  EXPECT_NEAR(posterior_of(12, 14, base, BaseRounding::kConventional), 1 / b, 1e-15);
  EXPECT_NEAR(posterior_of(0, 0, base, BaseRounding::kConventional), 2 / (b + 1), 1e-15);
  // Modified conventional at 0, even B = 10: 2/(B + 1), and 1/(B + 1) at r = B/2.
  EXPECT_NEAR(posterior_of(0, 0, 10, BaseRounding::kModifiedConventional), 2.0 / 11, 1e-15);
  EXPECT_NEAR(posterior_of(5, 0, 10, BaseRounding::kModifiedConventional), 1.0 / 11, 1e-15);
  for (auto rule : {BaseRounding::kConventional, BaseRounding::kModifiedConventional, BaseRounding::kZeroRestricted,
                    BaseRounding::kUnbiased}) {
    double total = 0.0;
    for (const auto& entry : base_rounding_posterior(30, 10, rule)) total += entry.probability;
    EXPECT_NEAR(total, 1.0, 1e-15);
  }
}

TEST(Rounding, RulesRoundAsDefined) {
  EXPECT_EQ(round_to_base(25, 10, BaseRounding::kConventional, 0.99), 30);
  EXPECT_EQ(round_to_base(24, 10, BaseRounding::kConventional, 0.0), 20);
  EXPECT_EQ(round_to_base(25, 10, BaseRounding::kModifiedConventional, 0.49), 30);
  EXPECT_EQ(round_to_base(25, 10, BaseRounding::kModifiedConventional, 0.5), 20);
  EXPECT_EQ(round_to_base(20, 10, BaseRounding::kZeroRestricted, 0.0), 20);
  EXPECT_EQ(round_to_base(21, 10, BaseRounding::kZeroRestricted, 0.4), 30);
  EXPECT_EQ(round_to_base(21, 10, BaseRounding::kUnbiased, 0.09), 30);
  EXPECT_EQ(round_to_base(21, 10, BaseRounding::kUnbiased, 0.1), 20);
  EXPECT_THROW(round_to_base(21, 1, BaseRounding::kUnbiased, 0.1), ParameterError);
  EXPECT_THROW(round_to_base(-1, 10, BaseRounding::kUnbiased, 0.1), ParameterError);
}

// §5: 1 222 221 → 1 230 000 with probability 2 221/10 000, else 1 220 000.
TEST(Rounding, UnbiasedStochasticRoundingOfTheSurveyExample) {
  const double v = 1'222'221.0;
  const double unit = stochastic_rounding_unit(v, 10.0);
  EXPECT_EQ(unit, 10'000.0);
  EXPECT_EQ(round_unbiased(v, unit, 0.2220), 1'230'000.0);
  EXPECT_EQ(round_unbiased(v, unit, 0.2222), 1'220'000.0);
  EXPECT_EQ(stochastic_rounding_unit(54'321.0, 10.0), 1'000.0);
  EXPECT_EQ(stochastic_rounding_unit(999.0, 10.0), 10.0);
  // Unbiased: the mean over evenly spread u is the value.
  double sum = 0.0;
  constexpr int kDraws = 10'000;
  for (int i = 0; i < kDraws; ++i) sum += round_unbiased(v, unit, (i + 0.5) / kDraws);
  EXPECT_NEAR(sum / kDraws, v, 1e-6 * v);
}

TEST(Rounding, RoundingSetAttractionIntervals) {
  EXPECT_EQ(round_to_set(0.0, 10.0, 47.0), 0.0);
  EXPECT_EQ(round_to_set(4.9, 10.0, 47.0), 0.0);
  EXPECT_EQ(round_to_set(5.0, 10.0, 47.0), 10.0);  // the tie at p_0 + b/2 goes up
  EXPECT_EQ(round_to_set(34.99, 10.0, 47.0), 30.0);
  EXPECT_EQ(round_to_set(47.0, 10.0, 47.0), 50.0);  // [p_r − b/2, max] with p_r = 50
  EXPECT_EQ(round_to_set(44.0, 10.0, 44.0), 40.0);
  EXPECT_THROW(round_to_set(-1.0, 10.0, 47.0), ParameterError);
}

}  // namespace
}  // namespace sdc
