#include "kernels/recoding/interval_recoding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/csv.h"
#include "kernels/bootstrap/quantiles.h"
#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::recoding {
namespace {

const std::vector<double> kValues{1, 5, 9, 10, 50, 100};

std::vector<std::int64_t> counts(std::span<const double> values, const IntervalBreaks& breaks) {
  std::vector<std::int64_t> result(breaks.breaks.size() - 1, 0);
  for (const std::int32_t code : interval_codes(values, breaks))
    if (code >= 0) ++result[static_cast<std::size_t>(code)];
  return result;
}

std::vector<double> column(const char* file, const std::string& name) {
  const auto path = testing::shared_data(file);
  if (path.empty()) return {};
  const std::vector<io::CsvRecord> records = io::read_csv_records(path, "test data");
  const auto& header = records.front().fields;
  const auto at = static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  std::vector<double> values;
  for (std::size_t r = 1; r < records.size(); ++r) values.push_back(std::stod(records[r].fields.at(at)));
  return values;
}

// recoding.md §8, E globalRecode on x = (1, 5, 9, 10, 50, 100).
TEST(AnIntervalRecoding, GivesTheReferencesEquidistantLogarithmicAndEqualAmountBreaks) {
  const IntervalBreaks equidistant = equidistant_breaks(1, 100, 3, false);
  EXPECT_EQ(equidistant.labels(), (std::vector<std::string>{"[0,34]", "(34,67]", "(67,101]"}));
  EXPECT_EQ(counts(kValues, equidistant), (std::vector<std::int64_t>{4, 1, 1}));

  const IntervalBreaks logarithmic = equidistant_breaks(1, 100, 3, true);
  EXPECT_EQ(logarithmic.labels(), (std::vector<std::string>{"[0,3]", "(3,30]", "(30,272]"}));
  EXPECT_EQ(counts(kValues, logarithmic), (std::vector<std::int64_t>{1, 3, 2}));

  const std::vector<double> probabilities{0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0};
  const IntervalBreaks equal_amount = quantile_breaks(sample_quantiles(kValues, probabilities).values);
  EXPECT_EQ(equal_amount.labels(),
            (std::vector<std::string>{"[1,7.6666667]", "(7.6666667,23.333333]", "(23.333333,100]"}));
  EXPECT_EQ(counts(kValues, equal_amount), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(equal_amount.merged_repeats, 0);

  const IntervalBreaks one = equidistant_breaks(1, 100, 1, false);
  EXPECT_EQ(one.labels(), (std::vector<std::string>{"(0,101]"}));
  EXPECT_EQ(counts(kValues, one), (std::vector<std::int64_t>{6}));
}

TEST(AnIntervalRecoding, LeavesTheLowestBreakOutOfGivenBreaksAndKeepsMissingValuesMissing) {
  const IntervalBreaks given = explicit_breaks({1, 9, 50, 100});
  EXPECT_EQ(given.labels(), (std::vector<std::string>{"(1,9]", "(9,50]", "(50,100]"}));
  EXPECT_EQ(interval_codes(kValues, given), (std::vector<std::int32_t>{-1, 0, 0, 1, 1, 2}));
  const std::vector<double> odd{std::numeric_limits<double>::quiet_NaN(), 100.5, 0.5, 9.0};
  EXPECT_EQ(interval_codes(odd, given), (std::vector<std::int32_t>{-1, -1, -1, 0}));
}

TEST(AnIntervalRecoding, KeepsUnroundedBreaksWhenRoundingWouldRepeatOneAndMergesRepeatedQuantiles) {
  // From 0 to 2.5 in 3 steps: 0, 0.833, 1.667, 2.5 round (half to even) to 0, 1, 2, 2, a repeat, so
  // the breaks stay as they are.
  const IntervalBreaks fine = equidistant_breaks(1.0, 1.5, 3, false);
  ASSERT_EQ(fine.breaks.size(), 4U);
  EXPECT_EQ(fine.breaks[3], 2.5);
  EXPECT_EQ(fine.labels(), (std::vector<std::string>{"[0,0.83333333]", "(0.83333333,1.6666667]", "(1.6666667,2.5]"}));
  const std::vector<double> quantiles{1, 1, 1, 4, 9};
  const IntervalBreaks merged = quantile_breaks(quantiles);
  EXPECT_EQ(merged.breaks, (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(merged.merged_repeats, 2);
}

TEST(AnIntervalRecoding, RefusesBreaksThatDoNotRiseAndCountsBelowOne) {
  EXPECT_THROW((void)explicit_breaks({1, 1, 2}), ParameterError);
  EXPECT_THROW((void)explicit_breaks({1}), ParameterError);
  EXPECT_THROW((void)explicit_breaks({1, std::numeric_limits<double>::infinity()}), ParameterError);
  EXPECT_THROW((void)equidistant_breaks(1, 2, 0, false), ParameterError);
  EXPECT_THROW((void)equidistant_breaks(0, 2, 3, true), ParameterError);
  EXPECT_THROW((void)equidistant_breaks(std::numeric_limits<double>::quiet_NaN(), 2, 3, false), ParameterError);
  EXPECT_THROW((void)quantile_breaks(std::vector<double>{2, 2}), ParameterError);
}

// recoding.md §8: topBotCoding(x, 50, 55, "top") → (1, 5, 9, 10, 50, 55); strict, missing untouched.
TEST(ATailCoding, ReplacesValuesStrictlyBeyondTheThresholdAndLeavesMissingValues) {
  std::vector<double> top = kValues;
  EXPECT_EQ(code_tail(top, TailSide::kTop, 50, 55), 1);
  EXPECT_EQ(top, (std::vector<double>{1, 5, 9, 10, 50, 55}));
  std::vector<double> bottom{std::numeric_limits<double>::quiet_NaN(), 1, 5, 9};
  EXPECT_EQ(code_tail(bottom, TailSide::kBottom, 5, 4), 1);
  EXPECT_TRUE(std::isnan(bottom[0]));
  EXPECT_EQ(bottom[1], 4);
  EXPECT_EQ(bottom[2], 5);
  EXPECT_THROW((void)code_tail(bottom, TailSide::kTop, std::numeric_limits<double>::infinity(), 1), ParameterError);
}

// recoding.md §8: free1 AGE with 6 equidistant and 6 logarithmic intervals, testdata age by given breaks.
TEST(AnIntervalRecoding, ReproducesTheReferenceOnTheSharedFiles) {
  const std::vector<double> age = column("free1.csv", "AGE");
  const std::vector<double> testdata_age = column("testdata.csv", "age");
  if (age.empty() || testdata_age.empty()) GTEST_SKIP() << "../shared/data is absent";
  const auto [low, high] = std::minmax_element(age.begin(), age.end());
  const IntervalBreaks equidistant = equidistant_breaks(*low, *high, 6, false);
  EXPECT_EQ(equidistant.labels(),
            (std::vector<std::string>{"[14,24]", "(24,34]", "(34,44]", "(44,55]", "(55,65]", "(65,75]"}));
  EXPECT_EQ(counts(age, equidistant), (std::vector<std::int64_t>{689, 910, 925, 551, 496, 429}));
  const IntervalBreaks logarithmic = equidistant_breaks(*low, *high, 6, true);
  EXPECT_EQ(logarithmic.labels(),
            (std::vector<std::string>{"[6,10]", "(10,18]", "(18,33]", "(33,61]", "(61,110]", "(110,201]"}));
  EXPECT_EQ(counts(age, logarithmic), (std::vector<std::int64_t>{0, 251, 1248, 1870, 631, 0}));
  EXPECT_EQ(counts(testdata_age, explicit_breaks({-1, 14, 24, 44, 64, 95})),
            (std::vector<std::int64_t>{1858, 801, 1184, 568, 169}));
}

}  // namespace
}  // namespace sdc::recoding
