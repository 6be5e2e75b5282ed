#include "kernels/risk/household_risk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// risk.md §11 "E francdat": the individual risks from the printed f and F.
std::vector<double> francdat_risks() {
  const std::vector<double> f{2, 2, 2, 1, 1, 1, 1, 2};
  const std::vector<double> F{110, 84.5, 84.5, 17, 541, 8, 5, 110};
  return individual_risk(f, F, {}).risk;
}
const std::vector<std::int64_t> kFrancdatHouseholds{1, 1, 2, 2, 2, 3, 4, 4};

TEST(GlobalRisk, ReproducesTheFrancdatOracle) {
  const auto global = global_risk_finalize(global_risk_local(francdat_risks()));
  EXPECT_EQ(global.records, 8);
  EXPECT_NEAR(global.expected_reidentifications, 0.966526, 0.5e-6);
  EXPECT_NEAR(global.risk, 0.1208158, 0.5e-7);
  EXPECT_NEAR(global.percent, 12.08158, 0.5e-5);
}

TEST(HouseholdRisk, ReproducesTheFrancdatOracle) {
  const std::vector<double> per_household{0.03880869, 0.20459435, 0.29706308, 0.41260558};
  const std::vector<std::size_t> household_of{0, 0, 1, 1, 1, 2, 3, 3};
  for (auto mode : {RiskMode::kNative, RiskMode::kCompat}) {
    const auto risk = household_risk(kFrancdatHouseholds, francdat_risks(), mode);
    ASSERT_EQ(risk.size(), 8U);
    for (std::size_t i = 0; i < risk.size(); ++i) EXPECT_NEAR(risk[i], per_household[household_of[i]], 0.5e-8) << i;

    const auto global = global_risk_finalize(global_risk_local(risk));
    EXPECT_NEAR(global.expected_reidentifications, 1.8136747, 0.5e-7);
    EXPECT_NEAR(global.risk, 0.2267093, 0.5e-7);
  }
}

TEST(HouseholdRisk, NativeFormKeepsSmallRisksAccurate) {
  const std::vector<std::int64_t> households{7, 7};
  const std::vector<double> risk{1e-12, 3e-12};
  const double expected = 1 - (1 - 1e-12) * (1 - 3e-12);  // 4e-12 - 3e-24 in exact arithmetic
  EXPECT_NEAR(household_risk(households, risk, RiskMode::kNative)[0], 4e-12 - 3e-24, 1e-26);
  EXPECT_EQ(household_risk(households, risk, RiskMode::kCompat)[0], expected);
}

TEST(HouseholdRisk, CertainRiskMakesTheHouseholdCertain) {
  const std::vector<std::int64_t> households{1, 1, 2};
  const std::vector<double> risk{1.0, 0.2, 0.3};
  for (auto mode : {RiskMode::kNative, RiskMode::kCompat}) {
    const auto out = household_risk(households, risk, mode);
    EXPECT_EQ(out[0], 1.0);
    EXPECT_EQ(out[1], 1.0);
    EXPECT_NEAR(out[2], 0.3, 1e-16);  // a one-member household keeps its risk, up to rounding
  }
}

RiskThreshold francdat_threshold(double rho) { return risk_threshold(risk_histogram_local(francdat_risks()), rho); }

TEST(RiskThreshold, ReproducesTheFrancdatOracle) {
  EXPECT_NEAR(francdat_threshold(0.05).threshold, 0.02204233, 0.5e-8);
  EXPECT_NEAR(francdat_threshold(0.10).threshold, 0.1770758, 0.5e-7);
  EXPECT_EQ(francdat_threshold(0.01).threshold, 0.0);
  for (double rho : {0.05, 0.10, 0.01}) EXPECT_FALSE(francdat_threshold(rho).already_safe);
}

TEST(RiskThreshold, AlreadySafeFileReturnsTheLargestRisk) {
  // Σ r = 0.966526 < 0.5·8: the target already holds.
  const auto threshold = francdat_threshold(0.5);
  EXPECT_TRUE(threshold.already_safe);
  EXPECT_NEAR(threshold.threshold, 0.40235948, 0.5e-8);
}

TEST(RiskThreshold, RejectsATargetOutsideTheOpenUnitInterval) {
  for (double rho : {0.0, 1.0, -0.1, 2.0, std::nan("")}) EXPECT_THROW(francdat_threshold(rho), ParameterError) << rho;
}

TEST(RiskThreshold, HistogramMergeOverAnySplitEqualsOneBlock) {
  std::mt19937 generator(3);  // test data only
  std::uniform_int_distribution<int> level(1, 40);
  std::vector<double> risk(5000);
  for (auto& r : risk) r = 1.0 / level(generator);
  const auto whole = risk_histogram_local(risk);
  const std::span<const double> all(risk);
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{1234}, std::size_t{4999}}) {
    auto merged = risk_histogram_local(all.first(cut));
    risk_histogram_merge(merged, risk_histogram_local(all.subspan(cut)));
    EXPECT_EQ(merged.values, whole.values);
    EXPECT_EQ(merged.counts, whole.counts);
  }
  auto split = risk_histogram_local(all.first(777));
  risk_histogram_merge(split, risk_histogram_local(all.subspan(777)));
  for (double rho : {0.01, 0.03, 0.05, 0.2})
    EXPECT_EQ(risk_threshold(whole, rho).threshold, risk_threshold(split, rho).threshold);
}

TEST(RiskQuantiles, FromTheHistogramEqualTheSampleQuantilesOfTheRecords) {
  std::mt19937 generator(5);  // test data only
  std::uniform_int_distribution<int> level(1, 60);
  const std::vector<double> probabilities{0.0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0};
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1000}, std::size_t{4099}}) {
    std::vector<double> risk(n);
    for (auto& r : risk) r = 1.0 / level(generator);  // many ties, as risks of equal classes are
    for (const int type : {7, 1, 6}) {
      const QuantileOptions options{quantile_type_from_number(type)};
      const SampleQuantiles expected = sample_quantiles(risk, probabilities, options);
      const SampleQuantiles got = histogram_quantiles(risk_histogram_local(risk), probabilities, options);
      EXPECT_EQ(got.count, n);
      ASSERT_EQ(got.values.size(), expected.values.size());
      for (std::size_t q = 0; q < probabilities.size(); ++q)
        EXPECT_EQ(got.values[q], expected.values[q]) << "n " << n << ", type " << type << ", p " << probabilities[q];
    }
  }
  const SampleQuantiles none = histogram_quantiles(RiskHistogram{}, probabilities);
  EXPECT_EQ(none.count, 0U);
  for (const double value : none.values) EXPECT_TRUE(std::isnan(value));
}

TEST(GlobalRisk, MergeOverAnySplitGivesTheSameBits) {
  std::mt19937 generator(4);  // test data only
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> risk(20000);
  for (auto& r : risk) r = uniform(generator) * uniform(generator);
  const std::span<const double> all(risk);
  const auto whole = global_risk_finalize(global_risk_local(all));
  for (std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{10007}}) {
    auto right = global_risk_local(all.subspan(cut));
    global_risk_merge(right, global_risk_local(all.first(cut)));
    const auto merged = global_risk_finalize(right);
    EXPECT_EQ(merged.records, whole.records);
    EXPECT_EQ(merged.expected_reidentifications, whole.expected_reidentifications);
    EXPECT_EQ(merged.risk, whole.risk);
  }
}

TEST(GlobalRisk, EmptyInputHasZeroRisk) {
  const auto global = global_risk_finalize(global_risk_local({}));
  EXPECT_EQ(global.records, 0);
  EXPECT_EQ(global.risk, 0.0);
}

TEST(MarketerRisk, ReproducesTheOracle) {
  // risk.md §11 "E marketer risks": classes (f, F) = (3,2) (1,0) (2,4) (4,10).
  const std::vector<std::int64_t> f{3, 1, 2, 4};
  const std::vector<double> F{2, 0, 4, 10};
  const auto risk = marketer_risk_finalize(marketer_risk_local(f, F));
  EXPECT_NEAR(risk.im, 0.4, 0.5e-1);
  EXPECT_NEAR(risk.cem, 0.29, 0.5e-2);
  EXPECT_NEAR(risk.orem, 0.15, 0.5e-2);
  EXPECT_NEAR(risk.arem, 0.09, 0.5e-2);
  // The oracle's inequalities.
  EXPECT_LE(risk.arem, risk.orem);
  EXPECT_LE(risk.arem, risk.cem);
  EXPECT_LE(risk.cem, risk.im);

  // Split the classes between two partials.
  auto left = marketer_risk_local(std::span(f).first(2), std::span(F).first(2));
  marketer_risk_merge(left, marketer_risk_local(std::span(f).subspan(2), std::span(F).subspan(2)));
  const auto merged = marketer_risk_finalize(left);
  EXPECT_EQ(merged.im, risk.im);
  EXPECT_EQ(merged.cem, risk.cem);
  EXPECT_EQ(merged.orem, risk.orem);
  EXPECT_EQ(merged.arem, risk.arem);
}

TEST(MarketerRisk, AllInvalidClassesGiveZeroOrem) {
  const std::vector<std::int64_t> f{2};
  const std::vector<double> F{1};
  const auto risk = marketer_risk_finalize(marketer_risk_local(f, F));
  EXPECT_EQ(risk.orem, 0.0);
  EXPECT_EQ(risk.arem, 0.0);
  EXPECT_EQ(risk.cem, 0.5);
}

}  // namespace
}  // namespace sdc
