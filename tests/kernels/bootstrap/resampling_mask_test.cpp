#include "kernels/bootstrap/resampling_mask.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <numeric>

#include "kernels/core/error.h"

namespace sdc {
namespace {

TEST(ResamplingMask, ExpectationOfTwoValuesIsOneAndAHalfAndTwoAndAHalf) {
  // bootstrap.md oracle "E resampling expectation": the first order statistic of a size-2 bootstrap
  // sample of (1, 3) is 1 with probability 3/4, so the masked values tend to (1.5, 2.5). Each order
  // statistic has variance 3/4 per sample: with t = 40 000 samples the standard error is 0.0043.
  const std::vector<double> values{3.0, 1.0};
  const std::vector<std::int64_t> rows{0, 1};
  const auto masked = resampling_mask(values, rows, {.samples = 40000, .seed = 7});
  EXPECT_NEAR(masked[1], 1.5, 0.02) << "the record holding the smaller value";
  EXPECT_NEAR(masked[0], 2.5, 0.02);
  EXPECT_NEAR(masked[0] + masked[1], 4.0, 0.03) << "the total is kept in expectation";
}

TEST(ResamplingMask, KeepsTheTotalInExpectationAndPullsExtremesInward) {
  std::vector<double> values(200);
  std::vector<std::int64_t> rows(200);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = std::pow(static_cast<double>((i * 37) % 200), 1.5);
    rows[i] = static_cast<std::int64_t>(i);
  }
  const auto masked = resampling_mask(values, rows, {.samples = 400, .seed = 11});
  const double total = std::accumulate(values.begin(), values.end(), 0.0);
  const double masked_total = std::accumulate(masked.begin(), masked.end(), 0.0);
  EXPECT_NEAR(masked_total / total, 1.0, 0.01);
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  EXPECT_GT(masked[static_cast<std::size_t>(lo - values.begin())], *lo);
  EXPECT_LT(masked[static_cast<std::size_t>(hi - values.begin())], *hi);
  // Masked values follow the order of the originals.
  for (std::size_t a = 0; a < values.size(); ++a)
    for (std::size_t b = 0; b < values.size(); ++b)
      if (values[a] < values[b]) {
        ASSERT_LE(masked[a], masked[b]);
      }
}

TEST(ResamplingMask, BreaksTiesByRowIdLeavesMissingValuesAndIsReproducible) {
  const std::vector<double> values{2.0, NAN, 2.0, 5.0, 1.0};
  const std::vector<std::int64_t> rows{10, 11, 3, 12, 13};
  const auto once = resampling_mask(values, rows, {.samples = 50, .seed = 3});
  EXPECT_TRUE(std::isnan(once[1]));
  EXPECT_LE(once[2], once[0]) << "row 3 holds the smaller of the tied values";
  const auto bits = [](const std::vector<double>& v) {
    std::vector<std::uint64_t> out;
    for (double x : v) out.push_back(std::bit_cast<std::uint64_t>(x));
    return out;
  };
  EXPECT_EQ(bits(once), bits(resampling_mask(values, rows, {.samples = 50, .seed = 3})));
  EXPECT_NE(bits(once), bits(resampling_mask(values, rows, {.samples = 50, .seed = 4})));
  EXPECT_THROW(resampling_mask(values, rows, {.samples = 0, .seed = 3}), ParameterError);
}

}  // namespace
}  // namespace sdc
