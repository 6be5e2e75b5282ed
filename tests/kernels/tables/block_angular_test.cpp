#include "kernels/tables/block_angular.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/instance_generator.h"

namespace sdc::tables {
namespace {

constexpr auto kDual = BlockAngularForm::kDual;
constexpr auto kPrimal = BlockAngularForm::kPrimal;
constexpr auto kMultilevel = ReorderingAlgorithm::kMultilevel;
constexpr auto kSingleLevel = ReorderingAlgorithm::kSingleLevel;

CsrMatrix shape_matrix(const std::string& shape) { return constraint_matrix(shape_dimensions(shape)); }

/// Three random hierarchies (3 to 5 children, a fifth of the nodes unary): of depth 3, for seed 1 a
/// table of n = 35 040 cells and m = 36 610 equations, about the size of the public bts4 instance.
CsrMatrix random_hierarchy_matrix(std::uint64_t seed, int depth = 3) {
  const RandomTreeOptions tree{.depth = depth, .branching_min = 3, .branching_max = 5, .unary_probability = 0.2};
  std::vector<DimensionEquations> dimensions;
  for (std::uint64_t d = 0; d < 3; ++d)
    dimensions.push_back(random_tree_dimension("d" + std::to_string(d + 1), tree, seed, d));
  return constraint_matrix(dimensions);
}

ReorderingOptions options_for(std::int32_t blocks, BlockAngularForm form, ReorderingAlgorithm algorithm = kMultilevel,
                              std::uint64_t seed = 1) {
  ReorderingOptions options;
  options.blocks = blocks;
  options.form = form;
  options.algorithm = algorithm;
  options.seed = seed;
  return options;
}

const std::vector<std::int32_t>& vertex_blocks(const BlockAngularOrdering& ordering) {
  return ordering.form == kDual ? ordering.row_block : ordering.column_block;
}

/// The permutations that belong to the blocks of `ordering`: by block, the linking ones last, each in
/// original order (so that a planted fault in the blocks is not also a fault in the order).
void reorder_positions(BlockAngularOrdering& ordering) {
  const auto positions = [&](const std::vector<std::int32_t>& block_of) {
    std::vector<std::int64_t> order(block_of.size());
    std::iota(order.begin(), order.end(), 0);
    const auto key = [&](std::int64_t i) {
      const std::int32_t b = block_of[static_cast<std::size_t>(i)];
      return b == BlockAngularOrdering::kLinking ? ordering.blocks : b;
    };
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return key(a) < key(b); });
    return order;
  };
  ordering.row_order = positions(ordering.row_block);
  ordering.column_order = positions(ordering.column_block);
}

/// Everything the header promises of an ordering of `matrix` under `options`.
void expect_valid(const CsrView& matrix, const ReorderingOptions& options, const BlockAngularOrdering& ordering) {
  EXPECT_EQ(block_pattern_problem(matrix, ordering), std::nullopt);
  EXPECT_EQ(ordering.form, options.form);
  EXPECT_EQ(ordering.blocks, options.blocks);
  const std::vector<std::int32_t>& blocks = vertex_blocks(ordering);
  EXPECT_EQ(ordering.linking_size, net_cut(matrix, options.form, blocks));
  // Every block within (1 + ε) × total / k, rounded up to a whole vertex, and none empty.
  const std::vector<std::int64_t>& weights = options.form == kDual ? ordering.block_rows : ordering.block_columns;
  const auto total = static_cast<double>(blocks.size());
  const double mean = total / static_cast<double>(options.blocks);
  const double limit = std::ceil((1.0 + options.imbalance) * mean);
  for (const std::int64_t weight : weights) {
    EXPECT_LE(static_cast<double>(weight), limit);
    EXPECT_GE(weight, 1);
  }
  EXPECT_LE(ordering.imbalance, limit / mean - 1.0 + 1e-12);
  // The levels of the first bisection: finest first, each coarser one smaller.
  ASSERT_FALSE(ordering.levels.empty());
  EXPECT_EQ(ordering.levels.front().vertices, static_cast<std::int64_t>(blocks.size()));
  if (options.algorithm == kSingleLevel) {
    EXPECT_EQ(ordering.levels.size(), 1U);
  }
  for (std::size_t i = 1; i < ordering.levels.size(); ++i)
    EXPECT_LT(ordering.levels[i].vertices, ordering.levels[i - 1].vertices);
  // With two blocks the first bisection is the whole reordering.
  if (options.blocks == 2) {
    EXPECT_EQ(ordering.levels.front().net_cut, ordering.linking_size);
  }
}

BlockAngularOrdering reorder_with_threads(const CsrView& matrix, const ReorderingOptions& options, int threads) {
  const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
  return reorder_block_angular(matrix, options);
}

void expect_same(const BlockAngularOrdering& a, const BlockAngularOrdering& b) {
  EXPECT_EQ(a.row_block, b.row_block);
  EXPECT_EQ(a.column_block, b.column_block);
  EXPECT_EQ(a.row_order, b.row_order);
  EXPECT_EQ(a.column_order, b.column_order);
  EXPECT_EQ(a.block_rows, b.block_rows);
  EXPECT_EQ(a.block_columns, b.block_columns);
  EXPECT_EQ(a.linking_size, b.linking_size);
  EXPECT_EQ(a.imbalance, b.imbalance);
  ASSERT_EQ(a.levels.size(), b.levels.size());
  for (std::size_t i = 0; i < a.levels.size(); ++i) {
    EXPECT_EQ(a.levels[i].vertices, b.levels[i].vertices) << "level " << i;
    EXPECT_EQ(a.levels[i].nets, b.levels[i].nets) << "level " << i;
    EXPECT_EQ(a.levels[i].net_cut, b.levels[i].net_cut) << "level " << i;
  }
}

TEST(ABlockAngularReordering, HasTheBlockPatternItReportsOnGeneratedTables) {
  const std::vector<std::pair<std::string, CsrMatrix>> instances{{"13x13x7", shape_matrix("13x13x7")},
                                                                 {"16x16x16", shape_matrix("16x16x16")},
                                                                 {"13x7x7", shape_matrix("13x7x7")},
                                                                 {"random hierarchy", random_hierarchy_matrix(5, 2)}};
  for (const auto& [name, matrix] : instances) {
    for (const BlockAngularForm form : {kDual, kPrimal}) {
      for (const std::int32_t blocks : {2, 3, 4, 8}) {
        for (const ReorderingAlgorithm algorithm : {kMultilevel, kSingleLevel}) {
          SCOPED_TRACE(name + (form == kDual ? " dual" : " primal") + " k=" + std::to_string(blocks) +
                       (algorithm == kMultilevel ? " multilevel" : " single-level"));
          const ReorderingOptions options = options_for(blocks, form, algorithm);
          const BlockAngularOrdering ordering = reorder_block_angular(matrix.view(), options);
          expect_valid(matrix.view(), options, ordering);
          EXPECT_GT(ordering.linking_size, 0);
          if (algorithm == kMultilevel && form == kDual) {
            EXPECT_GT(ordering.levels.size(), 1U);
          }
        }
      }
    }
  }
}

TEST(ABlockAngularReordering, KeepsATighterImbalance) {
  const CsrMatrix matrix = shape_matrix("16x16x16");
  for (const std::int32_t blocks : {3, 5}) {
    ReorderingOptions options = options_for(blocks, kDual);
    options.imbalance = 0.01;
    expect_valid(matrix.view(), options, reorder_block_angular(matrix.view(), options));
  }
}

// tabular.md §5, "E 2-D table": activities I–III × regions A–C with totals, n = 16 cells, m = 8
// equations, 32 non-zeros. Rows 0–3 are the column-sum equations (one per region position), rows 4–7
// the row-sum equations (one per activity position); cell (i, j) is column 4i + j and lies in rows j
// and 4 + i. Dual, two blocks of at most ⌈1.05 × 4⌉ = 5 rows: with a column-sum and b row-sum
// equations in block 0, the cells left whole are a·b + (4 − a)(4 − b), at most 8 (a = b = 2, or
// a + b = 5 with {a, b} = {2, 3}), so l = 8. Primal, two blocks of at most ⌈1.05 × 8⌉ = 9 cells: a whole
// row-sum line in one block and a whole column-sum line in the other would share a cell, so the lines
// kept whole are parallel (at most 4) or both in one block (at most 2, as 4a + 4b − ab ≤ 9), so l = 4.
TEST(ABlockAngularReordering, SplitsTheTwoWayTableOfTheOracleOptimally) {
  const CsrMatrix matrix = shape_matrix("4x4");
  ASSERT_EQ(matrix.columns(), 16);
  ASSERT_EQ(matrix.rows(), 8);
  ASSERT_EQ(matrix.entry_count(), 32);
  for (const ReorderingAlgorithm algorithm : {kMultilevel, kSingleLevel}) {
    const ReorderingOptions dual = options_for(2, kDual, algorithm);
    const BlockAngularOrdering by_rows = reorder_block_angular(matrix.view(), dual);
    expect_valid(matrix.view(), dual, by_rows);
    EXPECT_EQ(by_rows.linking_size, 8);
    const ReorderingOptions primal = options_for(2, kPrimal, algorithm);
    const BlockAngularOrdering by_columns = reorder_block_angular(matrix.view(), primal);
    expect_valid(matrix.view(), primal, by_columns);
    EXPECT_EQ(by_columns.linking_size, 4);
    EXPECT_EQ(by_columns.block_columns, (std::vector<std::int64_t>{8, 8}));
  }
}

TEST(ANetCut, CountsTheNetsSpanningTwoBlocks) {
  const CsrMatrix matrix = shape_matrix("4x4");
  // Block 0: column-sum rows 0, 1 and row-sum rows 4, 5, so cells (i, j) with i, j < 2 or i, j ≥ 2 stay
  // whole: 8 of 16 are cut.
  EXPECT_EQ(net_cut(matrix.view(), kDual, {0, 0, 1, 1, 0, 0, 1, 1}), 8);
  EXPECT_EQ(net_cut(matrix.view(), kDual, {0, 0, 0, 0, 0, 0, 0, 0}), 0);
  EXPECT_EQ(net_cut(matrix.view(), kDual, {0, 0, 0, 0, 1, 1, 1, 1}), 16);
  // Primal: cells with i < 2 in block 0 cut every column-sum line and no row-sum line.
  std::vector<std::int32_t> by_activity(16);
  for (std::size_t cell = 0; cell < 16; ++cell) by_activity[cell] = cell < 8 ? 0 : 1;
  EXPECT_EQ(net_cut(matrix.view(), kPrimal, by_activity), 4);
  EXPECT_THROW(net_cut(matrix.view(), kDual, {0, 1}), ParameterError);
  EXPECT_THROW(net_cut(matrix.view(), kDual, {0, 0, 0, 0, -1, 0, 0, 0}), ParameterError);
}

/// Two copies of the 2-D table's equations side by side (rows 0–7 on columns 0–15, rows 8–15 on
/// columns 16–31), with one more column that has a non-zero in every row when `dense_column`.
CsrMatrix two_tables(bool dense_column) {
  const CsrMatrix table = shape_matrix("4x4");
  const CsrView view = table.view();
  std::vector<MatrixEntry> entries;
  for (std::int64_t copy = 0; copy < 2; ++copy)
    for (std::int64_t row = 0; row < view.rows; ++row)
      for (const std::int64_t column : view.row_columns(row))
        entries.push_back({copy * view.rows + row, copy * view.columns + column, 1.0});
  if (dense_column)
    for (std::int64_t row = 0; row < 2 * view.rows; ++row) entries.push_back({row, 2 * view.columns, 1.0});
  return CsrMatrix::from_entries(2 * view.rows, 2 * view.columns + (dense_column ? 1 : 0), std::move(entries));
}

TEST(ABlockAngularReordering, FindsTwoObviousBlocksAndTheDenseColumnLinkingThem) {
  const CsrMatrix apart = two_tables(false);
  for (const BlockAngularForm form : {kDual, kPrimal}) {
    const ReorderingOptions options = options_for(2, form);
    const BlockAngularOrdering ordering = reorder_block_angular(apart.view(), options);
    expect_valid(apart.view(), options, ordering);
    EXPECT_EQ(ordering.linking_size, 0);
    EXPECT_EQ(ordering.block_rows, (std::vector<std::int64_t>{8, 8}));
    EXPECT_EQ(ordering.block_columns, (std::vector<std::int64_t>{16, 16}));
    // Each copy's rows in one block.
    for (std::size_t row = 1; row < 8; ++row) {
      EXPECT_EQ(ordering.row_block[row], ordering.row_block[0]);
      EXPECT_EQ(ordering.row_block[8 + row], ordering.row_block[8]);
    }
    EXPECT_NE(ordering.row_block[0], ordering.row_block[8]);
  }
  const CsrMatrix joined = two_tables(true);
  const ReorderingOptions dual = options_for(2, kDual);
  const BlockAngularOrdering ordering = reorder_block_angular(joined.view(), dual);
  expect_valid(joined.view(), dual, ordering);
  EXPECT_EQ(ordering.linking_size, 1);
  EXPECT_EQ(ordering.column_block[32], BlockAngularOrdering::kLinking);
  EXPECT_EQ(ordering.column_order.back(), 32);
}

TEST(ABlockPatternCheck, FindsPlantedFaults) {
  const CsrMatrix matrix = shape_matrix("13x13x7");
  const CsrView a = matrix.view();
  const BlockAngularOrdering good = reorder_block_angular(a, options_for(3, kDual));
  ASSERT_EQ(block_pattern_problem(a, good), std::nullopt);
  ASSERT_GT(good.linking_size, 0);
  const auto linking_column = static_cast<std::size_t>(
      std::find(good.column_block.begin(), good.column_block.end(), BlockAngularOrdering::kLinking) -
      good.column_block.begin());
  const auto inner_column = static_cast<std::size_t>(
      std::find(good.column_block.begin(), good.column_block.end(), good.row_block[0]) - good.column_block.begin());
  ASSERT_LT(inner_column, good.column_block.size());
  const std::vector<std::pair<std::string, std::function<void(BlockAngularOrdering&)>>> faults{
      {"two rows of different blocks swapped in row_order",
       [](BlockAngularOrdering& o) { std::swap(o.row_order.front(), o.row_order.back()); }},
      {"two rows of one block swapped in row_order",
       [](BlockAngularOrdering& o) { std::swap(o.row_order[0], o.row_order[1]); }},
      {"two columns swapped in column_order",
       [](BlockAngularOrdering& o) { std::swap(o.column_order[3], o.column_order[o.column_order.size() - 2]); }},
      {"a row twice in row_order", [](BlockAngularOrdering& o) { o.row_order[1] = o.row_order[0]; }},
      {"linking_size misreported", [](BlockAngularOrdering& o) { ++o.linking_size; }},
      {"block_rows misreported",
       [](BlockAngularOrdering& o) {
         ++o.block_rows[0];
         --o.block_rows[1];
       }},
      {"block_columns misreported", [](BlockAngularOrdering& o) { ++o.block_columns[2]; }},
      {"imbalance underreported", [](BlockAngularOrdering& o) { o.imbalance -= 0.01; }},
      {"a row moved to another block",
       [](BlockAngularOrdering& o) {
         o.row_block[0] = (o.row_block[0] + 1) % o.blocks;
         reorder_positions(o);
       }},
      {"a linking column put into a block",
       [&](BlockAngularOrdering& o) {
         o.column_block[linking_column] = 0;
         --o.linking_size;
         ++o.block_columns[0];
         reorder_positions(o);
       }},
      {"a column of one block called linking",
       [&](BlockAngularOrdering& o) {
         --o.block_columns[static_cast<std::size_t>(o.column_block[inner_column])];
         o.column_block[inner_column] = BlockAngularOrdering::kLinking;
         ++o.linking_size;
         reorder_positions(o);
       }},
      {"a linking row in the dual form",
       [](BlockAngularOrdering& o) {
         --o.block_rows[static_cast<std::size_t>(o.row_block[5])];
         o.row_block[5] = BlockAngularOrdering::kLinking;
         reorder_positions(o);
       }},
      {"a block outside 0 .. k - 1", [](BlockAngularOrdering& o) { o.row_block[2] = o.blocks; }},
      {"a missing row", [](BlockAngularOrdering& o) { o.row_block.pop_back(); }},
  };
  for (const auto& [name, plant] : faults) {
    BlockAngularOrdering faulty = good;
    plant(faulty);
    EXPECT_TRUE(block_pattern_problem(a, faulty).has_value()) << name;
  }
  // The same in the primal form, where rows may be linking and columns not.
  const BlockAngularOrdering primal = reorder_block_angular(a, options_for(2, kPrimal));
  ASSERT_EQ(block_pattern_problem(a, primal), std::nullopt);
  BlockAngularOrdering faulty = primal;
  faulty.column_block[0] = BlockAngularOrdering::kLinking;
  reorder_positions(faulty);
  EXPECT_TRUE(block_pattern_problem(a, faulty).has_value());
  faulty = primal;
  ++faulty.linking_size;
  EXPECT_TRUE(block_pattern_problem(a, faulty).has_value());
}

TEST(ABlockAngularReordering, GivesTheSameBitsForOneAndTwoThreadsAndForTwoRuns) {
  const CsrMatrix tables = shape_matrix("16x16x16");
  const CsrMatrix large = shape_matrix("13x13x13x13");  // 61 516 rows: several matching chunks per level
  const std::vector<std::pair<const CsrMatrix*, ReorderingOptions>> cases{
      {&tables, options_for(4, kDual)},
      {&tables, options_for(3, kPrimal)},
      {&tables, options_for(2, kDual, kSingleLevel)},
      {&large, options_for(8, kDual)},
  };
  for (const auto& [matrix, options] : cases) {
    SCOPED_TRACE(std::to_string(matrix->rows()) + " rows, k=" + std::to_string(options.blocks));
    const BlockAngularOrdering one = reorder_with_threads(matrix->view(), options, 1);
    const BlockAngularOrdering two = reorder_with_threads(matrix->view(), options, 2);
    const BlockAngularOrdering again = reorder_with_threads(matrix->view(), options, 2);
    expect_valid(matrix->view(), options, one);
    expect_same(one, two);
    expect_same(two, again);
  }
  // Another seed draws other orders and ties: a valid ordering still.
  for (const std::uint64_t seed : {2U, 3U}) {
    const ReorderingOptions options = options_for(4, kDual, kMultilevel, seed);
    expect_valid(tables.view(), options, reorder_block_angular(tables.view(), options));
  }
}

// A quality regression test, not a timing: on the random hierarchy of seed 1 (n = 35 040 columns,
// m = 36 610 rows) the multilevel reordering with seed 1 leaves 780 linking columns (2.2 % of n) and
// the single-level one 1 262.
TEST(AMultilevelReordering, LinksNoMoreColumnsThanSingleLevelOnALargeGeneratedTable) {
  const CsrMatrix matrix = random_hierarchy_matrix(1);
  ASSERT_EQ(matrix.columns(), 35040);
  ASSERT_EQ(matrix.rows(), 36610);
  const ReorderingOptions multilevel_options = options_for(2, kDual, kMultilevel, 1);
  const ReorderingOptions single_level_options = options_for(2, kDual, kSingleLevel, 1);
  const BlockAngularOrdering multilevel = reorder_block_angular(matrix.view(), multilevel_options);
  const BlockAngularOrdering single_level = reorder_block_angular(matrix.view(), single_level_options);
  expect_valid(matrix.view(), multilevel_options, multilevel);
  expect_valid(matrix.view(), single_level_options, single_level);
  EXPECT_GT(multilevel.levels.size(), 5U);
  EXPECT_LE(multilevel.linking_size, single_level.linking_size);
}

// A quality regression test of the flow refinement: on 13x13x7x7, primal, k = 2, FM refinement
// alone stopped at 982 linking rows, above single-level KL's 973 from the index-order split; the
// minimum cuts in the corridors around the cut bring the multilevel bisection to 882 (Zoltan PHG's
// figure at the same imbalance).
TEST(AMultilevelReordering, LinksNoMoreRowsThanSingleLevelWhereFmAloneStoppedAbove) {
  const CsrMatrix matrix = shape_matrix("13x13x7x7");
  const ReorderingOptions multilevel_options = options_for(2, kPrimal, kMultilevel, 1);
  const ReorderingOptions single_level_options = options_for(2, kPrimal, kSingleLevel, 1);
  const BlockAngularOrdering multilevel = reorder_block_angular(matrix.view(), multilevel_options);
  const BlockAngularOrdering single_level = reorder_block_angular(matrix.view(), single_level_options);
  expect_valid(matrix.view(), multilevel_options, multilevel);
  expect_valid(matrix.view(), single_level_options, single_level);
  EXPECT_EQ(single_level.linking_size, 973);
  EXPECT_LE(multilevel.linking_size, 900);
}

// Cycle 0 of a bisection draws as a single cycle does, so at k = 2 the best of four cycles can only
// cut fewer nets before the flow refinement of the winner. On the random hierarchy of seed 18
// (primal, seed 1) one cycle leaves 438 linking rows and four leave 384 (726 and 384 before the flow
// refinement).
TEST(ACycledReordering, LinksNoMoreThanItsFirstCycleAlone) {
  const CsrMatrix matrix = random_hierarchy_matrix(18);
  for (const BlockAngularForm form : {kDual, kPrimal}) {
    ReorderingOptions one = options_for(2, form, kMultilevel, 1);
    one.cycles = 1;
    ReorderingOptions four = one;
    four.cycles = 4;
    const BlockAngularOrdering single = reorder_block_angular(matrix.view(), one);
    const BlockAngularOrdering best = reorder_block_angular(matrix.view(), four);
    expect_valid(matrix.view(), four, best);
    EXPECT_LE(best.linking_size, single.linking_size);
  }
}

TEST(ReorderingOptions, AreRefusedNamingTheOption) {
  const CsrMatrix matrix = shape_matrix("13x7");
  const CsrView a = matrix.view();
  ASSERT_EQ(a.rows, 62);
  ASSERT_EQ(a.columns, 91);
  const auto refused = [&](const ReorderingOptions& options, const std::string& name) {
    try {
      check_reordering_options(a, options);
      ADD_FAILURE() << name << " accepted";
    } catch (const ParameterError& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
    EXPECT_THROW(reorder_block_angular(a, options), ParameterError) << name;
  };
  ReorderingOptions options = options_for(2, kDual);
  EXPECT_NO_THROW(check_reordering_options(a, options));
  options.blocks = 1;
  refused(options, "blocks");
  options.blocks = static_cast<std::int32_t>(a.rows) + 1;
  refused(options, "blocks");
  options.form = kPrimal;  // the columns are split: as many blocks as rows + 1 is fine
  EXPECT_NO_THROW(check_reordering_options(a, options));
  options.blocks = static_cast<std::int32_t>(a.columns) + 1;
  refused(options, "blocks");
  options = options_for(2, kDual);
  for (const double imbalance : {0.0, 1.0, -0.5, 2.0}) {
    options.imbalance = imbalance;
    refused(options, "imbalance");
  }
  options = options_for(2, kDual);
  options.initial_partitions = 0;
  refused(options, "initial_partitions");
  options = options_for(2, kDual);
  options.cycles = -1;
  refused(options, "cycles");
  options = options_for(2, kDual);
  options.coarsest_vertices = 1;
  refused(options, "coarsest_vertices");
  options = options_for(2, kDual);
  for (const double reduction : {0.0, 1.0}) {
    options.minimum_coarsening_reduction = reduction;
    refused(options, "minimum_coarsening_reduction");
  }
}

}  // namespace
}  // namespace sdc::tables
