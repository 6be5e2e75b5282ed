#include "kernels/risk/individual_risk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace sdc {
namespace {

// Half a unit in the last digit that risk.md prints.
constexpr double kHalf8 = 0.5e-8;

// risk.md §11 "E francdat": f and F as printed there.
const std::vector<double> kFrancdatF{2, 2, 2, 1, 1, 1, 1, 2};
const std::vector<double> kFrancdatFWeighted{110, 84.5, 84.5, 17, 541, 8, 5, 110};

TEST(IndividualRisk, ReproducesTheFrancdatOracle) {
  const std::vector<double> expected{0.01714426, 0.02204233, 0.02204233, 0.17707583,
                                     0.01165448, 0.29706308, 0.40235948, 0.01714426};
  for (auto mode : {RiskMode::kNative, RiskMode::kCompat}) {
    for (auto method : {IndividualRiskMethod::kApprox, IndividualRiskMethod::kExact}) {
      const auto result = individual_risk(kFrancdatF, kFrancdatFWeighted, {.method = method, .mode = mode});
      ASSERT_FALSE(result.invalid_class.has_value());
      EXPECT_EQ(result.non_integer_zero_classes, 0);
      ASSERT_EQ(result.risk.size(), expected.size());
      for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(result.risk[k], expected[k], kHalf8) << k;
    }
  }
}

TEST(IndividualRisk, ReproducesTheMissingValuesOracleWithItsNonIntegerQuirk) {
  // risk.md §11 "E missing values", α = 0.5; the zeros are the f = 1.5 quirk.
  const std::vector<double> f{2.5, 1.5, 4, 2.5, 2, 1.5, 1.5, 2.5};
  const std::vector<double> F{129.5, 65, 194.5, 292.5, 553.5, 278.5, 13.5, 129.5};
  const std::vector<double> expected{0.01270648, 0, 0.006808511, 0.005665722, 0.003552522, 0, 0, 0.01270648};
  const std::vector<double> tolerance{kHalf8, 0, 0.5e-9, 0.5e-9, 0.5e-9, 0, 0, kHalf8};

  const auto compat = individual_risk(f, F, {.mode = RiskMode::kCompat});
  const auto native = individual_risk(f, F, {.mode = RiskMode::kNative});
  ASSERT_EQ(compat.risk.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_NEAR(compat.risk[k], expected[k], tolerance[k]) << k;
  EXPECT_EQ(native.risk, compat.risk);

  EXPECT_EQ(compat.non_integer_zero_classes, 0);
  EXPECT_FALSE(compat.first_non_integer_zero_class.has_value());
  EXPECT_EQ(native.non_integer_zero_classes, 3);
  EXPECT_EQ(native.first_non_integer_zero_class, std::optional<std::size_t>(1));
}

struct BfCase {
  double f;
  double p;
  double exact;
  double approx;  // the closed form; for f <= 2 the closed form is exact
};

TEST(IndividualRisk, ReproducesTheClosedFormsVersusExactOracle) {
  // risk.md §11 "E B-F closed forms vs exact", printed to 6 decimals.
  const std::vector<BfCase> cases{{1, 0.01, 0.046517, 0.046517}, {1, 0.1, 0.255843, 0.255843},
                                  {2, 0.1, 0.082684, 0.082684},  {3, 0.1, 0.046368, 0.047619},
                                  {3, 0.5, 0.193147, 0.2},       {4, 0.1, 0.031885, 0.032258},
                                  {5, 0.1, 0.024235, 0.024390},  {5, 0.5, 0.109814, 0.111111}};
  for (const auto& c : cases) {
    EXPECT_NEAR(benedetti_franconi_exact(c.f, c.p), c.exact, 0.5e-6) << c.f << ' ' << c.p;
    EXPECT_NEAR(benedetti_franconi_closed_form(c.f, c.p), c.approx, 0.5e-6) << c.f << ' ' << c.p;

    // Through the class-level entry point: F = f/p.
    const std::vector<double> f{c.f};
    const std::vector<double> F{c.f / c.p};
    const auto exact = individual_risk(f, F, {.method = IndividualRiskMethod::kExact});
    const auto approx = individual_risk(f, F, {.method = IndividualRiskMethod::kApprox});
    EXPECT_NEAR(exact.risk.at(0), c.exact, 0.5e-6);
    EXPECT_NEAR(approx.risk.at(0), c.approx, 0.5e-6);
  }
}

TEST(IndividualRisk, ExactQuadratureMatchesTheClosedFormsToRounding) {
  // Up to p = 0.9: nearer 1 the f = 2 closed form cancels (p/q - (p/q)² ln(1/p) with q -> 0) and is
  // the less accurate of the two.
  for (double p : {1e-12, 1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9}) {
    for (double f : {1.0, 2.0}) {
      const double closed = benedetti_franconi_closed_form(f, p);
      EXPECT_NEAR(benedetti_franconi_exact(f, p), closed, 1e-13 * closed) << f << ' ' << p;
    }
  }
}

TEST(IndividualRisk, ExactQuadratureMatchesTheIntegerRecursion) {
  // ∫₀¹ s^(f-1) p/(p+qs) ds = p/(q(f-1)) - (p/q)·r(f-1): stable upward while p/q < 1.
  for (double p : {1e-9, 1e-4, 0.05, 0.2, 0.4}) {
    const double q = 1.0 - p;
    double r = benedetti_franconi_closed_form(1.0, p);
    for (int f = 2; f <= 40; ++f) {
      r = p / (q * (f - 1)) - p / q * r;
      EXPECT_NEAR(benedetti_franconi_exact(f, p), r, 1e-12 * r) << f << ' ' << p;
    }
  }
}

TEST(IndividualRisk, ExactLiesBelowTheApproximationForLargerClasses) {
  for (double f : {2.5, 3.0, 10.0, 1000.0, 1e6}) {
    for (double p : {1e-8, 0.01, 0.5, 0.99}) {
      const double exact = benedetti_franconi_exact(f, p);
      EXPECT_GT(exact, 0.0);
      EXPECT_LE(exact, benedetti_franconi_closed_form(f, p) * (1 + 1e-14)) << f << ' ' << p;
      EXPECT_GE(exact, p / f * (1 - 1e-14)) << f << ' ' << p;
    }
  }
}

TEST(IndividualRisk, CensusClassesGetOneOverFTimesQual) {
  const std::vector<double> f{1, 3, 1.5};
  const auto result = individual_risk(f, f, {.qual = 0.5});
  EXPECT_EQ(result.risk, (std::vector<double>{0.5, 0.5 / 3, 0.5 / 1.5}));
  EXPECT_EQ(result.non_integer_zero_classes, 0);
}

TEST(IndividualRisk, QualScalesEveryWeightedRisk) {
  const auto plain = individual_risk(kFrancdatF, kFrancdatFWeighted, {});
  const auto scaled = individual_risk(kFrancdatF, kFrancdatFWeighted, {.qual = 0.8});
  for (std::size_t k = 0; k < plain.risk.size(); ++k) EXPECT_EQ(scaled.risk[k], plain.risk[k] * 0.8);
}

TEST(IndividualRisk, UnweightedRiskIsOneOverF) {
  const std::vector<double> f{1, 2, 4};
  const auto result = individual_risk(f, {}, {.qual = 0.5, .weighted = false});
  EXPECT_EQ(result.risk, (std::vector<double>{1.0, 0.5, 0.25}));
}

TEST(IndividualRisk, NativeModeReportsAClassWithFBelowF) {
  const std::vector<double> f{2, 3, 1};
  const std::vector<double> F{10, 2.5, 0.5};
  const auto native = individual_risk(f, F, {.mode = RiskMode::kNative});
  EXPECT_EQ(native.invalid_class, std::optional<std::size_t>(1));
  EXPECT_TRUE(native.risk.empty());

  const auto compat = individual_risk(f, F, {.mode = RiskMode::kCompat});
  EXPECT_FALSE(compat.invalid_class.has_value());
  ASSERT_EQ(compat.risk.size(), 3U);
  EXPECT_EQ(compat.risk[1], benedetti_franconi_closed_form(3, 3 / 2.5));
  EXPECT_EQ(compat.risk[2], benedetti_franconi_closed_form(1, 2.0));
}

TEST(IndividualRisk, NativeModeRejectsNonPositiveOrNonFiniteCounts) {
  EXPECT_TRUE(individual_risk(std::vector<double>{0}, std::vector<double>{4}, {}).invalid_class.has_value());
  EXPECT_TRUE(individual_risk(std::vector<double>{1}, std::vector<double>{std::nan("")}, {}).invalid_class.has_value());
  EXPECT_TRUE(individual_risk(std::vector<double>{-1}, {}, {.weighted = false}).invalid_class.has_value());
}

}  // namespace
}  // namespace sdc
