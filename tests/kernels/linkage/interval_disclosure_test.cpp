#include "kernels/linkage/interval_disclosure.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::linkage {
namespace {

NumericData make_data(std::vector<std::vector<double>> columns) {
  NumericData data;
  for (std::size_t j = 0; j < columns.size(); ++j) data.names.push_back(j == 0 ? "a" : "b");
  data.columns = std::move(columns);
  for (std::size_t i = 0; i < data.columns.front().size(); ++i) data.row_ids.push_back(static_cast<std::int64_t>(i));
  return data;
}

TEST(AnIntervalDisclosure, MatchesTheReferenceRisksForEveryWidth) {
  const auto original = make_data({{1, 2, 3, 4}, {2, 4, 6, 9}});
  const auto masked = make_data({{1.5, 1.5, 3.5, 3.5}, {3, 3, 7.5, 7.5}});
  EXPECT_EQ(interval_disclosure_sd(original.view(), masked.view(), 0.05).risk(), 0.0);
  EXPECT_EQ(interval_disclosure_sd(original.view(), masked.view(), 0.4).risk(), 0.0);
  const auto half = interval_disclosure_sd(original.view(), masked.view(), 0.5);
  EXPECT_EQ(half.risk(), 0.5);
  EXPECT_EQ(half.record_disclosed, (std::vector<std::uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(interval_disclosure_sd(original.view(), masked.view(), 0.6).risk(), 1.0);
}

TEST(AnIntervalDisclosure, MergesSdPartialsAndCountsOfBlocks) {
  const auto original = make_data({{1, 2, 3, 4}, {2, 4, 6, 9}});
  const auto masked = make_data({{1.5, 1.5, 3.5, 3.5}, {3, 3, 7.5, 7.5}});
  const auto first = make_data({{1.5, 1.5}, {3, 3}});
  auto second = make_data({{3.5, 3.5}, {7.5, 7.5}});
  second.row_ids = {2, 3};
  auto sd = interval_sd_local(second.view());
  interval_sd_merge(sd, interval_sd_local(first.view()));
  const auto merged = interval_sd_finalize(sd);
  EXPECT_EQ(merged, interval_sd_finalize(interval_sd_local(masked.view())));
  EXPECT_DOUBLE_EQ(merged[0], std::sqrt(4.0 / 3.0));
  auto original_first = make_data({{1, 2}, {2, 4}});
  auto original_second = make_data({{3, 4}, {6, 9}});
  original_second.row_ids = {2, 3};
  auto counts = interval_disclosure_check(original_first.view(), first.view(), merged, 0.5);
  interval_disclosure_merge(counts, interval_disclosure_check(original_second.view(), second.view(), merged, 0.5));
  EXPECT_EQ(counts.records, 4);
  EXPECT_EQ(counts.disclosed, 2);
}

TEST(AnIntervalDisclosure, IgnoresMissingComparisons) {
  const double missing = std::numeric_limits<double>::quiet_NaN();
  const auto original = make_data({{1, 2, 3, missing}, {missing, 4, 100, 9}});
  const auto masked = make_data({{1, 2, 3, 4}, {5, 4, 6, missing}});
  const auto result = interval_disclosure_sd(original.view(), masked.view(), 0.05);
  // Row 0: only a compared (inside); row 1: both inside; row 2: b outside; row 3: nothing compared.
  EXPECT_EQ(result.record_disclosed, (std::vector<std::uint8_t>{1, 1, 0, 1}));
}

TEST(AnIntervalDisclosure, RejectsANegativeWidthAndMisalignedFiles) {
  const auto original = make_data({{1, 2, 3}});
  auto masked = make_data({{1, 2, 3}});
  EXPECT_THROW(interval_disclosure_sd(original.view(), masked.view(), -0.1), ParameterError);
  masked.row_ids = {0, 1, 7};
  EXPECT_THROW(interval_disclosure_sd(original.view(), masked.view()), InvalidInput);
}

TEST(ARankIntervalDisclosure, UsesAWindowOfHRanksEachSide) {
  // n = 10, p = 10 %: h = ⌈10·10/200⌉ = 1. Masked values 0 … 9 in order; originals shifted.
  std::vector<double> masked_values;
  std::vector<double> original_values;
  for (int i = 0; i < 10; ++i) {
    masked_values.push_back(i);
    original_values.push_back(i + (i % 2 == 0 ? 1.0 : 1.5));
  }
  const auto original = make_data({original_values});
  const auto masked = make_data({masked_values});
  const auto result = interval_disclosure_rank(original.view(), masked.view(), 10.0);
  // Even ranks: original at rank r + 1, inside [r − 1, r + 1]; odd: r + 1.5 outside, except the last
  // value whose window is clipped at rank 9 (original 10.5 > 9: outside).
  EXPECT_EQ(result.values_compared, 10);
  EXPECT_EQ(result.values_inside, 5);
  EXPECT_EQ(result.records_disclosed, 5);
  EXPECT_DOUBLE_EQ(result.value_rate(), 0.5);
  const auto wide = interval_disclosure_rank(original.view(), masked.view(), 60.0);  // h = 3
  EXPECT_EQ(wide.values_inside, 9);
  EXPECT_THROW(interval_disclosure_rank(original.view(), masked.view(), 0.0), ParameterError);
}

}  // namespace
}  // namespace sdc::linkage
