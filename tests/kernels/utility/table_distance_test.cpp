#include "kernels/utility/table_distance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::utility {
namespace {

// utility.md §9, "E Hellinger/TV": p = (0.5, 0.5, 0), q = (0.25, 0.5, 0.25).
TEST(TableDistance, UtilityOracleOnProportions) {
  const std::vector<double> p{0.5, 0.5, 0.0};
  const std::vector<double> q{0.25, 0.5, 0.25};
  const TableDistances d = table_distances(p, q);
  EXPECT_NEAR(d.hellinger, 0.382683, 5e-7);
  EXPECT_NEAR(d.total_variation, 0.25, 1e-15);
  EXPECT_NEAR(d.entropy_change, 0.346574, 5e-7);
  EXPECT_NEAR(d.kullback_leibler, 0.5 * std::log(2.0), 1e-15);
  // q has a cell p does not: the divergence of q from p is infinite.
  EXPECT_TRUE(std::isinf(table_distances(q, p).kullback_leibler));
}

// swapping.md §5, "E Karr–Sanil toy": cells (1,1) (1,2) (2,1) (2,2) (3,1) before and after swapping B of
// records 3 and 4. Counts, not proportions: the totals normalise them.
TEST(TableDistance, KarrSanilToyOracle) {
  const std::vector<double> before{2, 1, 1, 3, 1};
  const std::vector<double> after{3, 0, 0, 4, 1};
  const TableDistances d = table_distances(before, after);
  EXPECT_NEAR(d.hellinger, 0.368512, 5e-7);
  EXPECT_NEAR(d.total_variation, 0.25, 1e-15);
  EXPECT_NEAR(d.entropy_change, -0.519860, 5e-7);
}

TEST(TableDistance, BlocksMergeToTheWholeTable) {
  std::vector<double> original;
  std::vector<double> masked;
  for (int c = 0; c < 1000; ++c) {
    original.push_back(static_cast<double>((c * 7919) % 97));
    masked.push_back(static_cast<double>((c * 104729) % 89));
  }
  double original_total = 0.0;
  double masked_total = 0.0;
  for (std::size_t c = 0; c < original.size(); ++c) {
    original_total += original[c];
    masked_total += masked[c];
  }
  const TableDistances whole = table_distances(original, masked);
  TableDistancePartial merged;
  for (std::size_t begin = 0; begin < original.size(); begin += 137) {
    const std::size_t size = std::min<std::size_t>(137, original.size() - begin);
    TableDistancePartial block;
    add_table_cells(block, std::span(original).subspan(begin, size), std::span(masked).subspan(begin, size),
                    original_total, masked_total);
    merged.merge(block);
  }
  const TableDistances parts = finish_table_distances(merged);
  EXPECT_EQ(parts.hellinger, whole.hellinger);
  EXPECT_EQ(parts.total_variation, whole.total_variation);
  EXPECT_EQ(parts.entropy_change, whole.entropy_change);
  EXPECT_EQ(parts.kullback_leibler, whole.kullback_leibler);
}

TEST(TableDistance, IdenticalTablesAreAtDistanceZero) {
  const std::vector<double> counts{4, 0, 9, 1};
  const TableDistances d = table_distances(counts, counts);
  EXPECT_EQ(d.hellinger, 0.0);
  EXPECT_EQ(d.total_variation, 0.0);
  EXPECT_EQ(d.entropy_change, 0.0);
  EXPECT_EQ(d.kullback_leibler, 0.0);
}

TEST(TableDistance, RejectsMismatchedOrEmptyTables) {
  const std::vector<double> three{1, 2, 3};
  const std::vector<double> two{1, 2};
  const std::vector<double> empty{0, 0, 0};
  EXPECT_THROW(table_distances(three, two), ParameterError);
  EXPECT_THROW(table_distances(three, empty), ParameterError);
}

}  // namespace
}  // namespace sdc::utility
