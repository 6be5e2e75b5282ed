#include "kernels/tables/layer_split.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/instance_generator.h"

namespace sdc::tables {
namespace {

std::vector<std::int64_t> all_cells(std::int64_t count) {
  std::vector<std::int64_t> cells(static_cast<std::size_t>(count));
  std::iota(cells.begin(), cells.end(), std::int64_t{0});
  return cells;
}

// h13 has 13 codes and 7 equations (0.54 per code); a flat dimension of 20 codes has 1 (0.05): the flat
// one links fewer rows, wherever it stands.
TEST(ALayerSplit, TakesTheDimensionWithTheFewestEquationsPerCodeAndLinksOnlyItsEquations) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x20x13");
  const std::int64_t cells = 13 * 20 * 13;
  const auto split = split_by_layers(dimensions, all_cells(cells), 4);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->dimension, 1U);
  // Code c of the middle dimension sits at (cell / 13) % 20; 20 codes in 4 groups of 5 (260 cells each).
  for (std::int64_t cell = 0; cell < cells; ++cell)
    ASSERT_EQ(split->column_block[static_cast<std::size_t>(cell)], ((cell / 13) % 20) / 5) << cell;
  const CsrMatrix matrix = constraint_matrix(dimensions, 1'000'000);
  const BlockAngularOrdering ordering =
      block_angular_ordering(matrix.view(), BlockAngularForm::kPrimal, 4, split->column_block);
  EXPECT_EQ(block_pattern_problem(matrix.view(), ordering), std::nullopt);
  // The linking rows are the middle dimension's equations on lines that cross groups: one per line.
  EXPECT_EQ(ordering.linking_size, 13 * 13);
}

TEST(ALayerSplit, BalancesTheListedCellsAndGivesEveryGroupACode) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("8x6");
  // Only the cells of codes 0 and 1 of the first dimension are listed: the first group ends after
  // code 0, and the other three groups still get a code each.
  std::vector<std::int64_t> cells;
  for (std::int64_t cell = 0; cell < 12; ++cell) cells.push_back(cell);
  const auto split = split_by_layers(dimensions, cells, 4);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->dimension, 0U);
  const std::vector<std::int32_t> expected{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(split->column_block, expected);
}

TEST(ALayerSplit, HasNoneWhenNoDimensionHasTheBlocksAndRefusesCellsOutsideTheTable) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("3x4");
  EXPECT_FALSE(split_by_layers(dimensions, all_cells(12), 5).has_value());
  EXPECT_THROW((void)split_by_layers(dimensions, std::vector<std::int64_t>{0, 12}, 2), ParameterError);
  EXPECT_THROW((void)split_by_layers(dimensions, all_cells(12), 0), ParameterError);
}

}  // namespace
}  // namespace sdc::tables
