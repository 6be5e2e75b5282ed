#pragma once
// The primal block-angular form a table has by itself (docs/methods tabular.md §2: "a 3-D table with
// all 2-D margins is already primal block-angular, layers = blocks"): its cells split by the codes of
// one dimension into groups of contiguous codes, so that every equation of the other dimensions stays
// inside one group and only the equations of the split dimension link the groups. No search: the
// partition is read off the table's shape, where the multilevel reordering (block_angular.h) has to
// find one.
//
// A table usually has several such splits, one per dimension with enough codes, and they differ by
// orders of magnitude in what the solver pays: the split dimension's equations become the linking
// rows, and the other dimensions' equations the blocks, whose factors are cheap when the remaining
// dimensions are flat and nearly dense per layer when two of them are hierarchical (a 2-D table of
// two 225-code cross-classified dimensions: 23 s for one layer's factor, against 0.2 s for a layer of
// one of them by a flat 200-code dimension). cheapest_layer_ordering predicts each split's work from
// CHOLMOD's symbolic analysis and keeps the cheapest.
//
// Shape: the splits are a function of the dimensions and the list of non-empty cells,
// O(cells + codes) each; the choice needs the matrix, O(nnz) plus the symbolic analyses per split.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/core/csr_matrix.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"

namespace sdc::tables {

struct LayerSplit {
  std::size_t dimension = 0;               ///< the dimension whose codes split the cells
  std::int32_t blocks = 0;                 ///< the groups (some may hold no listed cell)
  std::vector<std::int32_t> column_block;  ///< per listed cell: its group, 0 .. blocks − 1
};

/// The cells `cells` (column numbers of constraint_matrix.h, the last dimension fastest; the
/// non-empty cells of a table, or all of them) split into `blocks` groups by the codes of each
/// dimension with at least `blocks` codes: the codes in order, a new group when the cells so far reach
/// the next group's share, every group at least one code. Ordered by the fewest equations per code
/// (E_d / L_d, the fewest linking rows) first, ties to the first dimension; empty when no dimension
/// has `blocks` codes. ParameterError for blocks < 1 or a cell outside the table.
std::vector<LayerSplit> layer_splits(std::span<const DimensionEquations> dimensions,
                                     std::span<const std::int64_t> cells, std::int32_t blocks);

struct LayerOrdering {
  std::size_t dimension = 0;
  BlockAngularOrdering ordering;  ///< primal, `blocks` blocks
  double predicted_work = 0.0;    ///< predicted_block_angular_work (0 when there was no choice)
};

/// The primal ordering of `matrix` (the constraints over the listed cells, one column per cell in
/// `cells` order) by `split`: a block per group of codes, and linking rows every row whose cells lie
/// in more than one code of the split dimension (the split dimension's equations), even where those
/// codes fall in one group. Such a row left inside its block would tie the block's layers together,
/// and its factor would fill in across them (c14xc14x200 split by a 225-code cross in 8 groups: the two
/// grand-total equations of every line fall in the first group, and left there they made factoring
/// 5 times slower, 260 s against 51 s). InternalError when
/// the matrix does not have one column per listed cell.
LayerOrdering layer_ordering(const CsrView& matrix, std::span<const DimensionEquations> dimensions,
                             std::span<const std::int64_t> cells, LayerSplit split);

/// predicted_block_angular_work (additivity_adjustment.h) of `layers`, a layer_ordering, analysing one
/// layer: its blocks are independent layers, one per code of the split dimension, and the layer with
/// the most cells stands for all by its share of the cells. The linking rows' D is analysed whole: the
/// split dimension's lines share no cell, so it is as sparse as they are.
double predicted_layer_work(const CsrView& matrix, std::span<const DimensionEquations> dimensions,
                            std::span<const std::int64_t> cells, const LayerOrdering& layers);

/// The layer_ordering of the split whose solve predicted_layer_work predicts cheapest (no prediction
/// when there is one split), ties to the earlier of layer_splits; std::nullopt when there is none.
std::optional<LayerOrdering> cheapest_layer_ordering(const CsrView& matrix,
                                                     std::span<const DimensionEquations> dimensions,
                                                     std::span<const std::int64_t> cells, std::int32_t blocks);

}  // namespace sdc::tables
