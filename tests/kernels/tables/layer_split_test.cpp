#include "kernels/tables/layer_split.h"

#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/tables/additivity_adjustment.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"
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
  const std::vector<LayerSplit> splits = layer_splits(dimensions, all_cells(cells), 4);
  ASSERT_EQ(splits.size(), 3U);
  EXPECT_EQ(splits[1].dimension, 0U);  // the two h13 dimensions tie: the first first
  EXPECT_EQ(splits[2].dimension, 2U);
  const LayerSplit* split = &splits.front();
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
  const std::vector<LayerSplit> splits = layer_splits(dimensions, cells, 4);
  ASSERT_EQ(splits.size(), 2U);
  EXPECT_EQ(splits[0].dimension, 0U);
  const std::vector<std::int32_t> expected{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(splits[0].column_block, expected);
}

TEST(ALayerSplit, HasNoneWhenNoDimensionHasTheBlocksAndRefusesCellsOutsideTheTable) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("3x4");
  EXPECT_TRUE(layer_splits(dimensions, all_cells(12), 5).empty());
  const CsrMatrix matrix = constraint_matrix(dimensions);
  EXPECT_FALSE(cheapest_layer_ordering(matrix.view(), dimensions, all_cells(12), 5).has_value());
  EXPECT_THROW((void)layer_splits(dimensions, std::vector<std::int64_t>{0, 12}, 2), ParameterError);
  EXPECT_THROW((void)layer_splits(dimensions, all_cells(12), 0), ParameterError);
}

// Two 6 × 6 crosses (49 codes, 14 equations each) by a flat dimension of 40 codes: the flat one has
// the fewest equations per code, but its layers are 2-D tables of the two crosses, whose factors fill
// in; a layer of a cross by the flat dimension factors almost without fill. The prediction takes the
// split of a cross, which links more rows.
TEST(ALayerSplit, TakesTheSplitWhoseSolveIsPredictedCheapestNotTheFewestLinkingRows) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("c6xc6x40");
  const std::int64_t cells = 49 * 49 * 40;
  const CsrMatrix matrix = constraint_matrix(dimensions);
  const std::vector<LayerSplit> splits = layer_splits(dimensions, all_cells(cells), 4);
  ASSERT_EQ(splits.size(), 3U);
  ASSERT_EQ(splits[0].dimension, 2U);
  std::vector<double> work;
  std::vector<std::int64_t> linking;
  for (const LayerSplit& split : splits) {
    const LayerOrdering layers = layer_ordering(matrix.view(), dimensions, all_cells(cells), split);
    work.push_back(predicted_layer_work(matrix.view(), dimensions, all_cells(cells), layers));
    linking.push_back(layers.ordering.linking_size);
  }
  EXPECT_LT(linking[0], linking[1]);
  EXPECT_LT(2.0 * work[1], work[0]);
  EXPECT_LT(2.0 * work[2], work[0]);

  const std::optional<LayerOrdering> cheapest = cheapest_layer_ordering(matrix.view(), dimensions, all_cells(cells), 4);
  ASSERT_TRUE(cheapest.has_value());
  const std::size_t best = work[1] <= work[2] ? 1 : 2;
  EXPECT_EQ(cheapest->dimension, splits[best].dimension);
  EXPECT_EQ(cheapest->predicted_work, work[best]);
  EXPECT_EQ(cheapest->ordering.linking_size, linking[best]);
  EXPECT_EQ(block_pattern_problem(matrix.view(), cheapest->ordering), std::nullopt);
  // On every line of the split cross, T = R1 + … + R6 has all its codes (0 to 6) in the first group of
  // 12: linking all the same, and counted as made linking, which the pattern scan holds the ordering to.
  EXPECT_EQ(cheapest->ordering.made_linking, 49 * 40);
  BlockAngularOrdering understated = cheapest->ordering;
  --understated.made_linking;
  EXPECT_NE(block_pattern_problem(matrix.view(), understated), std::nullopt);
}

}  // namespace
}  // namespace sdc::tables
