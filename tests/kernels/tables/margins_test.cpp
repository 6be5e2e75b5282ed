#include "kernels/tables/margins.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

using Cells = std::vector<std::int64_t>;

/// Every linear index of a cell space of `size` cells.
Cells all_cells(std::int64_t size) {
  Cells cells(static_cast<std::size_t>(size));
  std::iota(cells.begin(), cells.end(), 0);
  return cells;
}

/// Whether `position` is `ancestor` or lies below it.
bool at_or_below(const Hierarchy& h, std::int32_t position, std::int32_t ancestor) {
  for (std::int32_t p = position; p >= 0; p = h.parent[static_cast<std::size_t>(p)])
    if (p == ancestor) return true;
  return false;
}

// tabular.md §5 "E 2-D table": activities I–III × regions A–C with their totals.
TEST(TableMargins, ReproduceTheTotalsOfTheTwoWayOracle) {
  const std::vector<std::string> activities{"I", "II", "III"};
  const std::vector<std::string> regions{"A", "B", "C"};
  const std::vector<Hierarchy> dimensions{flat_hierarchy("activity", activities), flat_hierarchy("region", regions)};
  // Leaf (a, r) at positions a + 1, r + 1 of a 4 × 4 space.
  const std::vector<std::vector<std::int64_t>> internal{{20, 50, 10}, {8, 19, 22}, {17, 32, 12}};
  Cells leaves;
  Cells values;
  for (std::int64_t a = 0; a < 3; ++a) {
    for (std::int64_t r = 0; r < 3; ++r) {
      leaves.push_back((a + 1) * 4 + (r + 1));
      values.push_back(internal[static_cast<std::size_t>(a)][static_cast<std::size_t>(r)]);
    }
  }
  const Cells sums = aggregate_margins(dimensions, leaves, values, all_cells(16));
  const Cells expected{190, 45, 101, 44,  //
                       80,  20, 50,  10,  //
                       49,  8,  19,  22,  //
                       61,  17, 32,  12};
  EXPECT_EQ(sums, expected);
}

// Area: Total -> A -> a1, a2; B -> b1 (positions 0..5), crossed with sex: Total, M, F (0..2); cell = 3·area + sex.
std::vector<Hierarchy> nested_dimensions() {
  const std::vector<std::string> codes{"A", "a1", "a2", "B", "b1"};
  const std::vector<std::int32_t> parents{-1, 0, 0, -1, 3};
  return {hierarchy_from_tree("area", codes, parents), flat_hierarchy("sex", std::vector<std::string>{"M", "F"})};
}

TEST(TableMargins, SumEveryLeafBelowACellOfNestedHierarchies) {
  const auto dimensions = nested_dimensions();
  const std::int64_t sexes = 3;
  std::mt19937_64 generator(20261127);
  const Cells every_cell = all_cells(6 * sexes);
  std::vector<std::int64_t> leaf_cells;
  for (const std::size_t i : find_leaf_cells(dimensions, every_cell)) leaf_cells.push_back(every_cell[i]);
  ASSERT_EQ(leaf_cells, (Cells{7, 8, 10, 11, 16, 17}));  // a1, a2, b1 × M, F
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Cells leaves;
    Cells values;
    for (const std::int64_t cell : leaf_cells) {
      if (generator() % 3 == 0) continue;  // some leaves empty
      leaves.push_back(cell);
      values.push_back(static_cast<std::int64_t>(generator() % 50));
    }
    const Cells sums = aggregate_margins(dimensions, leaves, values, all_cells(6 * sexes));
    for (std::int64_t cell = 0; cell < 6 * sexes; ++cell) {
      const auto area = static_cast<std::int32_t>(cell / sexes);
      const auto sex = static_cast<std::int32_t>(cell % sexes);
      std::int64_t expected = 0;
      for (std::size_t k = 0; k < leaves.size(); ++k) {
        const auto leaf_area = static_cast<std::int32_t>(leaves[k] / sexes);
        const auto leaf_sex = static_cast<std::int32_t>(leaves[k] % sexes);
        if (at_or_below(dimensions[0], leaf_area, area) && at_or_below(dimensions[1], leaf_sex, sex))
          expected += values[k];
      }
      EXPECT_EQ(sums[static_cast<std::size_t>(cell)], expected) << "cell " << cell;
    }
  }
}

TEST(TableMargins, DoNotDependOnTheOrderOfTheLeavesOrOnTheThreads) {
  const auto dimensions = nested_dimensions();
  const Cells leaves{7, 8, 10, 11, 16, 17};  // (a1,M) (a1,F) (a2,M) (a2,F) (b1,M) (b1,F)
  const Cells values{3, 0, 9, 2, 11, 1};
  const Cells cells{17, 0, 3, 6, 9, 12, 15, 1, 2};
  const Cells sums = aggregate_margins(dimensions, leaves, values, cells);
  EXPECT_EQ(sums, (Cells{1, 26, 14, 3, 11, 12, 12, 23, 3}));

  std::vector<std::size_t> order(leaves.size());
  std::iota(order.begin(), order.end(), 0);
  std::reverse(order.begin(), order.end());
  Cells reversed_leaves;
  Cells reversed_values;
  for (const std::size_t k : order) {
    reversed_leaves.push_back(leaves[k]);
    reversed_values.push_back(values[k]);
  }
  const tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  EXPECT_EQ(aggregate_margins(dimensions, reversed_leaves, reversed_values, cells), sums);
}

TEST(TableMargins, GiveZeroToACellWithoutLeavesAndFindTheLeafCells) {
  const auto dimensions = nested_dimensions();
  EXPECT_EQ(aggregate_margins(dimensions, Cells{7}, Cells{5}, Cells{0, 6, 7, 8, 15, 17}), (Cells{5, 5, 5, 0, 0, 0}));
  EXPECT_EQ(aggregate_margins(dimensions, Cells{}, Cells{}, Cells{0, 17}), (Cells{0, 0}));
  // (a1, Total), (a1, M), (B, M), the grand total, (b1, F).
  EXPECT_EQ(find_leaf_cells(dimensions, Cells{6, 7, 13, 0, 17}), (std::vector<std::size_t>{1, 4}));
}

TEST(TableMargins, RejectMalformedArguments) {
  const auto dimensions = nested_dimensions();
  EXPECT_THROW(aggregate_margins(dimensions, Cells{7, 8}, Cells{1}, Cells{0}), ParameterError);
  EXPECT_THROW(aggregate_margins(dimensions, Cells{7, 7}, Cells{1, 2}, Cells{0}), ParameterError);
  EXPECT_THROW(aggregate_margins(dimensions, Cells{3}, Cells{1}, Cells{0}), ParameterError);  // not a leaf
  EXPECT_THROW(aggregate_margins(dimensions, Cells{18}, Cells{1}, Cells{0}), ParameterError);
  EXPECT_THROW(aggregate_margins(dimensions, Cells{7}, Cells{1}, Cells{-1}), ParameterError);
  EXPECT_THROW(find_leaf_cells(dimensions, Cells{18}), ParameterError);
  const Cells huge{std::int64_t{1} << 62, std::int64_t{1} << 62};
  EXPECT_THROW(aggregate_margins(dimensions, Cells{7, 8}, huge, Cells{0}), ParameterError);  // the sum overflows
}

}  // namespace
}  // namespace sdc::tables
