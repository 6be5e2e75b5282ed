#include "kernels/core/exact_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace sdc {
namespace {

double exact_sum_of(const std::vector<double>& terms) {
  ExactSum sum;
  for (double t : terms) sum.add(t);
  return sum.value();
}

TEST(AnExactSum, IsExactWhereNaiveSummationLosesEverything) {
  EXPECT_EQ(exact_sum_of({1e100, 1.0, -1e100}), 1.0);
  // The binary values of 0.1 + 0.2 + 0.3 - 0.6 sum to exactly 2^-55.
  EXPECT_EQ(exact_sum_of({0.1, 0.2, 0.3, -0.6}), 0x1.0p-55);
  EXPECT_EQ(exact_sum_of({}), 0.0);
  // 0.1 + 0.2 in binary is exactly 0.3000000000000000166533453693773481063544750213623046875,
  // whose nearest double is 0.30000000000000004 (the naive sum happens to agree here).
  EXPECT_EQ(exact_sum_of({0.1, 0.2}), 0.30000000000000004);
  // A million copies of 0.1 are exactly 100000.0000000000055511151231257827, nearest double 100000;
  // the naive left-to-right sum drifts by more than a millionth.
  std::vector<double> tenths(1000000, 0.1);
  EXPECT_EQ(exact_sum_of(tenths), 100000.0);
  EXPECT_NE(std::accumulate(tenths.begin(), tenths.end(), 0.0), 100000.0);
}

TEST(AnExactSum, RoundsHalfWayCasesToEven) {
  // 1 + 2^-53 is half-way between 1 and the next double; ties go to even (1.0).
  EXPECT_EQ(exact_sum_of({1.0, 0x1.0p-53}), 1.0);
  // A tiny extra term breaks the tie upwards.
  EXPECT_EQ(exact_sum_of({1.0, 0x1.0p-53, 0x1.0p-100}), 1.0 + 0x1.0p-52);
}

TEST(AnExactSum, DoesNotDependOnTheOrderOrTheMergeTree) {
  std::mt19937_64 generator(42);  // test data only
  std::lognormal_distribution<double> weights(3.0, 2.0);
  std::vector<double> terms(10000);
  for (auto& t : terms) t = weights(generator) * ((generator() & 1U) ? 1.0 : -1.0);
  const double reference = exact_sum_of(terms);

  for (int trial = 0; trial < 5; ++trial) {
    std::shuffle(terms.begin(), terms.end(), generator);
    EXPECT_EQ(exact_sum_of(terms), reference);
    // Split into uneven parts, sum each, merge in a different order.
    const std::size_t cut1 = generator() % terms.size();
    const std::size_t cut2 = cut1 + generator() % (terms.size() - cut1);
    ExactSum a, b, c;
    for (std::size_t i = 0; i < cut1; ++i) a.add(terms[i]);
    for (std::size_t i = cut1; i < cut2; ++i) b.add(terms[i]);
    for (std::size_t i = cut2; i < terms.size(); ++i) c.add(terms[i]);
    c.merge(a);
    c.merge(ExactSum::from_partials(b.partials()));
    EXPECT_EQ(c.value(), reference);
  }
}

}  // namespace
}  // namespace sdc
