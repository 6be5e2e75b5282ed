#include "kernels/bootstrap/quantiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// bootstrap.md §9, "E quantiles": exam marks.
const std::vector<double> kExamMarks{1, 40, 50, 55, 58, 58, 60, 62, 65, 66, 66, 68, 70, 71, 72, 74, 75, 75, 80, 85};
// bootstrap.md §9, "E quantiles": five values.
const std::vector<double> kFive{3.1, 0.4, 2.2, 5.0, 1.7};

std::vector<double> quartiles(const std::vector<double>& values, int type,
                              QuantileArithmetic arithmetic = QuantileArithmetic::kExact) {
  const double p[] = {0.25, 0.5, 0.75};
  return sample_quantiles(values, p, {quantile_type_from_number(type), arithmetic}).values;
}

void expect_triple(const std::vector<double>& got, double q1, double median, double q3, double tolerance) {
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NEAR(got[0], q1, tolerance);
  EXPECT_NEAR(got[1], median, tolerance);
  EXPECT_NEAR(got[2], q3, tolerance);
}

TEST(QuantileOracle, ExamMarksQuartilesOfEveryType) {
  for (const auto arithmetic : {QuantileArithmetic::kExact, QuantileArithmetic::kCompatR}) {
    SCOPED_TRACE(static_cast<int>(arithmetic));
    expect_triple(quartiles(kExamMarks, 1, arithmetic), 58, 66, 72, 0);
    expect_triple(quartiles(kExamMarks, 2, arithmetic), 58, 66, 73, 0);
    expect_triple(quartiles(kExamMarks, 3, arithmetic), 58, 66, 72, 0);
    expect_triple(quartiles(kExamMarks, 4, arithmetic), 58, 66, 72, 0);
    expect_triple(quartiles(kExamMarks, 5, arithmetic), 58, 66, 73, 1e-12);
    expect_triple(quartiles(kExamMarks, 6, arithmetic), 58, 66, 73.5, 1e-12);
    expect_triple(quartiles(kExamMarks, 7, arithmetic), 58, 66, 72.5, 1e-12);
    expect_triple(quartiles(kExamMarks, 8, arithmetic), 58, 66, 73.16667, 5e-6);
    expect_triple(quartiles(kExamMarks, 9, arithmetic), 58, 66, 73.125, 1e-12);
  }
}

TEST(QuantileOracle, ExamMarksMeanAndSd) {
  double sum = 0;
  for (const double x : kExamMarks) sum += x;
  const double mean = sum / static_cast<double>(kExamMarks.size());
  double ss = 0;
  for (const double x : kExamMarks) ss += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 62.55, 1e-12);
  EXPECT_NEAR(std::sqrt(ss / static_cast<double>(kExamMarks.size() - 1)), 17.89582, 5e-6);
}

TEST(QuantileOracle, ExamMarksTukeyHinges) {
  // Hinges: medians of the lower and upper halves (each half takes the median when n is odd).
  std::vector<double> sorted = kExamMarks;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t half = (sorted.size() + 1) / 2;
  const std::span<const double> all(sorted);
  EXPECT_EQ(quantile_of_sorted(all.first(half), 0.5), 58.0);
  EXPECT_EQ(quantile_of_sorted(all.last(half), 0.5), 73.0);
}

TEST(QuantileOracle, FiveValuesAtFourProbabilities) {
  const double p[] = {0.1, 0.25, 0.5, 0.9};
  auto at = [&](int type) { return sample_quantiles(kFive, p, {quantile_type_from_number(type)}).values; };
  auto expect = [](const std::vector<double>& got, std::vector<double> want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "p index " << i;
  };
  expect(at(2), {0.4, 1.7, 2.2, 5.0});
  expect(at(3), {0.4, 0.4, 1.7, 3.1});
  expect(at(6), {0.4, 1.05, 2.2, 5.0});
  expect(at(7), {0.92, 1.7, 2.2, 4.24});
}

TEST(QuantileOracle, FloatingPointRuleOnOneToHundred) {
  std::vector<double> x(100);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  auto q = [&](double p, int type, QuantileArithmetic arithmetic) {
    const double ps[] = {p};
    return sample_quantiles(x, ps, {quantile_type_from_number(type), arithmetic}).values[0];
  };
  EXPECT_EQ(q(0.07, 1, QuantileArithmetic::kCompatR), 8);
  EXPECT_EQ(q(0.07, 2, QuantileArithmetic::kCompatR), 8);
  EXPECT_EQ(q(0.07, 1, QuantileArithmetic::kExact), 7);
  EXPECT_EQ(q(0.07, 2, QuantileArithmetic::kExact), 7.5);
  EXPECT_EQ(q(0.57, 1, QuantileArithmetic::kCompatR), 57);
  EXPECT_EQ(q(0.57, 2, QuantileArithmetic::kCompatR), 57);
  EXPECT_EQ(q(0.57, 1, QuantileArithmetic::kExact), 57);
  EXPECT_EQ(q(0.57, 2, QuantileArithmetic::kExact), 57.5);
}

TEST(QuantileOracle, CriticalValueIsTheFlooredOrderStatistic) {
  EXPECT_EQ(critical_value_rank(200, 0.05), 190u);
  EXPECT_EQ(critical_value_rank(199, 0.05), 189u);
  std::vector<double> t(199);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<double>(t.size() - i);  // 199 .. 1
  const CriticalValue cv = bootstrap_critical_value(t, 0.05);
  EXPECT_EQ(cv.rank, 189u);
  EXPECT_EQ(cv.value, 189.0);
  // Type 1 takes the 190th here: the convention is one order statistic lower.
  const double p[] = {0.95};
  EXPECT_EQ(sample_quantiles(t, p, {QuantileType::kType1}).values[0], 190.0);
}

// Bootstrap.md §9 uniqueness counts: multisets of size n over a 7-point scale; number whose
// (Q1, median, Q3) triple no other multiset shares.
std::size_t unique_triples(std::size_t n, int type) {
  std::vector<std::vector<double>> triples;
  std::vector<double> values(n, 1.0);
  for (;;) {
    triples.push_back(quartiles(values, type));
    std::size_t i = n;  // next non-decreasing sequence
    while (i > 0 && values[i - 1] == 7.0) --i;
    if (i == 0) break;
    const double next = values[i - 1] + 1.0;
    for (std::size_t k = i - 1; k < n; ++k) values[k] = next;
  }
  std::sort(triples.begin(), triples.end());
  std::size_t unique = 0;
  for (std::size_t i = 0; i < triples.size(); ++i) {
    const bool same_before = i > 0 && triples[i - 1] == triples[i];
    const bool same_after = i + 1 < triples.size() && triples[i + 1] == triples[i];
    if (!same_before && !same_after) ++unique;
  }
  return unique;
}

TEST(QuantileOracle, QuartileUniquenessCountsOnASevenPointScale) {
  const std::size_t sizes[] = {5, 6, 8, 10};
  const std::size_t expected[][3] = {{80, 7, 7}, {440, 28, 4}, {59, 59, 16}, {3, 59, 0}};  // types 6 / 7 / 2
  for (std::size_t s = 0; s < 4; ++s) {
    SCOPED_TRACE(sizes[s]);
    EXPECT_EQ(unique_triples(sizes[s], 6), expected[s][0]);
    EXPECT_EQ(unique_triples(sizes[s], 7), expected[s][1]);
    EXPECT_EQ(unique_triples(sizes[s], 2), expected[s][2]);
  }
}

// ---- Properties ----

std::vector<double> random_values(std::size_t n, std::uint64_t seed, bool with_ties) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal(0.0, 10.0);
  std::uniform_int_distribution<int> small(-3, 3);
  std::vector<double> x(n);
  for (double& v : x) v = with_ties ? static_cast<double>(small(engine)) : normal(engine);
  return x;
}

TEST(Quantile, IsMonotoneInPForEveryType) {
  for (int type = 1; type <= 9; ++type) {
    for (const std::size_t n : {1u, 2u, 7u, 50u}) {
      const auto x = random_values(n, 17 + n, n == 50);
      std::vector<double> p;
      for (int i = 0; i <= 200; ++i) p.push_back(i / 200.0);
      for (const auto arithmetic : {QuantileArithmetic::kExact, QuantileArithmetic::kCompatR}) {
        const auto q = sample_quantiles(x, p, {quantile_type_from_number(type), arithmetic}).values;
        for (std::size_t i = 1; i < q.size(); ++i)
          EXPECT_LE(q[i - 1], q[i]) << "type " << type << " n " << n << " p " << p[i];
        EXPECT_EQ(q.front(), *std::min_element(x.begin(), x.end()));
        EXPECT_EQ(q.back(), *std::max_element(x.begin(), x.end()));
      }
    }
  }
}

TEST(Quantile, TypeSevenIsTheCommonLinearInterpolation) {
  const auto x = random_values(37, 5, false);
  std::vector<double> sorted = x;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i <= 100; ++i) {
    const double p = i / 100.0;
    const double position = p * static_cast<double>(sorted.size() - 1);  // 0-based
    const auto lo = static_cast<std::size_t>(std::floor(position));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double expected = sorted[lo] + (position - std::floor(position)) * (sorted[hi] - sorted[lo]);
    const double ps[] = {p};
    EXPECT_NEAR(sample_quantiles(x, ps).values[0], expected, 1e-12) << "p " << p;
  }
}

TEST(Quantile, MedianAgreesForTypesTwoSixAndSeven) {
  for (const std::size_t n : {5u, 6u, 11u, 20u}) {
    const auto x = random_values(n, n, false);
    const double p[] = {0.5};
    const double m7 = sample_quantiles(x, p, {QuantileType::kType7}).values[0];
    EXPECT_EQ(sample_quantiles(x, p, {QuantileType::kType2}).values[0], m7);
    EXPECT_EQ(sample_quantiles(x, p, {QuantileType::kType6}).values[0], m7);
  }
}

TEST(Quantile, ExcludesAndCountsNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x{nan, 3.0, 1.0, -nan, 2.0};
  const double p[] = {0.5};
  const auto q = sample_quantiles(x, p);
  EXPECT_EQ(q.values[0], 2.0);
  EXPECT_EQ(q.count, 3u);
  EXPECT_EQ(q.nan_count, 2u);
  const std::vector<double> all_nan{nan, nan};
  EXPECT_TRUE(std::isnan(sample_quantiles(all_nan, p).values[0]));
}

TEST(Quantile, RejectsInvalidParameters) {
  const std::vector<double> x{1.0, 2.0};
  const double bad_p[] = {1.5};
  EXPECT_THROW(sample_quantiles(x, bad_p), ParameterError);
  EXPECT_THROW(quantile_type_from_number(0), ParameterError);
  EXPECT_THROW(quantile_type_from_number(10), ParameterError);
  EXPECT_THROW(percentile_interval(x, 0.0), ParameterError);
  EXPECT_THROW(critical_value_rank(10, 0.95), ParameterError);  // ⌊0.5⌋ = 0
}

TEST(BootstrapInterval, PercentileAndBasicIntervals) {
  std::vector<double> t(1001);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<double>(i) / 1000.0;  // 0 .. 1
  const BootstrapInterval percentile = percentile_interval(t, 0.05);
  EXPECT_NEAR(percentile.lower, 0.025, 1e-15);
  EXPECT_NEAR(percentile.upper, 0.975, 1e-15);
  EXPECT_EQ(percentile.replicates, 1001u);
  const BootstrapInterval basic = basic_interval(t, 0.6, 0.05);
  EXPECT_NEAR(basic.lower, 1.2 - 0.975, 1e-15);
  EXPECT_NEAR(basic.upper, 1.2 - 0.025, 1e-15);
}

TEST(OrderKey, PreservesOrderAndRoundTrips) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v{-inf,
                              -1e300,
                              -1.0,
                              -std::numeric_limits<double>::denorm_min(),
                              -0.0,
                              0.0,
                              std::numeric_limits<double>::denorm_min(),
                              1.0,
                              1e300,
                              inf};
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(from_order_key(order_key(v[i]))), std::bit_cast<std::uint64_t>(v[i]));
    if (i > 0) {
      EXPECT_LT(order_key(v[i - 1]), order_key(v[i]));
    }
  }
}

// ---- Distributed exact quantiles, ranks simulated in-process ----

/// The driver as rank `self` sees it: the callback adds the other partitions' local counts.
SampleQuantiles distributed_on_rank(const std::vector<std::vector<double>>& parts, std::size_t self,
                                    std::span<const double> p, const QuantileOptions& options) {
  const RadixAllreduce allreduce = [&](std::span<const RadixQuery> queries, RadixCounts& counts) {
    for (std::size_t r = 0; r < parts.size(); ++r)
      if (r != self) radix_count_merge(counts, radix_count_local(parts[r], queries));
  };
  return distributed_quantiles(parts[self], p, options, allreduce);
}

TEST(DistributedQuantiles, EqualTheSortedAnswerForOneToFourPartitionsAndEveryType) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x = random_values(300, 11, false);
  const auto ties = random_values(200, 12, true);
  x.insert(x.end(), ties.begin(), ties.end());
  x.insert(x.end(), {nan, -0.0, 0.0, 1e-310, -1e308, nan});
  std::vector<double> p{0.0, 0.07, 0.1, 0.25, 0.33, 0.5, 0.57, 0.75, 0.9, 0.975, 1.0};
  std::mt19937_64 engine(99);
  for (int type = 1; type <= 9; ++type) {
    for (const auto arithmetic : {QuantileArithmetic::kExact, QuantileArithmetic::kCompatR}) {
      const QuantileOptions options{quantile_type_from_number(type), arithmetic};
      const SampleQuantiles expected = sample_quantiles(x, p, options);
      for (std::size_t ranks = 1; ranks <= 4; ++ranks) {
        std::vector<std::vector<double>> parts(ranks);
        std::uniform_int_distribution<std::size_t> pick(0, ranks - 1);
        for (const double v : x) parts[pick(engine)].push_back(v);
        for (const std::size_t self : {std::size_t{0}, ranks - 1}) {  // first and last rank
          const SampleQuantiles got = distributed_on_rank(parts, self, p, options);
          EXPECT_EQ(got.count, expected.count);
          EXPECT_EQ(got.nan_count, expected.nan_count);
          ASSERT_EQ(got.values.size(), p.size());
          for (std::size_t i = 0; i < p.size(); ++i)
            EXPECT_EQ(std::bit_cast<std::uint64_t>(got.values[i]), std::bit_cast<std::uint64_t>(expected.values[i]))
                << "type " << type << " ranks " << ranks << " p " << p[i];
        }
      }
    }
  }
}

TEST(DistributedQuantiles, HandleEmptyPartsAndAllNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> parts{{}, {nan}, {}};
  const double p[] = {0.5};
  const SampleQuantiles got = distributed_on_rank(parts, 0, p, {});
  EXPECT_EQ(got.count, 0u);
  EXPECT_EQ(got.nan_count, 1u);
  EXPECT_TRUE(std::isnan(got.values[0]));
  const std::vector<std::vector<double>> one{{}, {4.0}};
  EXPECT_EQ(distributed_on_rank(one, 0, p, {}).values[0], 4.0);
}

TEST(RadixCounts, MergeIsAssociativeAndCountsEveryKeyOnce) {
  const auto x = random_values(1000, 3, true);
  const std::vector<RadixQuery> queries{RadixQuery{}};
  const std::span<const double> all(x);
  RadixCounts left = radix_count_local(all.subspan(0, 300), queries);
  RadixCounts middle = radix_count_local(all.subspan(300, 400), queries);
  const RadixCounts right = radix_count_local(all.subspan(700), queries);
  RadixCounts a = left;
  radix_count_merge(a, middle);
  radix_count_merge(a, right);
  radix_count_merge(middle, right);
  radix_count_merge(left, middle);
  EXPECT_EQ(a.counts, left.counts);
  EXPECT_EQ(a.counts, radix_count_local(x, queries).counts);
}

}  // namespace
}  // namespace sdc
