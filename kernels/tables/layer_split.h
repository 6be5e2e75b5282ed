#pragma once
// The primal block-angular form a table has by itself (docs/methods tabular.md §2: "a 3-D table with
// all 2-D margins is already primal block-angular, layers = blocks"): its cells split by the codes of
// one dimension into groups of contiguous codes, so that every equation of the other dimensions stays
// inside one group and only the equations of the split dimension link the groups. No search: the
// partition is read off the table's shape, where the multilevel reordering (block_angular.h) has to
// find one.
//
// Shape: a function of the dimensions and the list of non-empty cells, O(cells + codes).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/tables/constraint_matrix.h"

namespace sdc::tables {

struct LayerSplit {
  std::size_t dimension = 0;               ///< the dimension whose codes split the cells
  std::vector<std::int32_t> column_block;  ///< per listed cell: its group, 0 .. blocks − 1
};

/// Splits the cells `cells` (column numbers of constraint_matrix.h, the last dimension fastest; the
/// non-empty cells of a table, or all of them) into `blocks` groups by the codes of one dimension: the
/// codes in order, a new group when the cells so far reach the next group's share, every group at
/// least one code. The dimension: of those with at least `blocks` codes, the one with the fewest
/// equations per code (E_d / L_d), which links the fewest rows; ties to the first. std::nullopt when
/// no dimension has `blocks` codes. ParameterError for blocks < 1 or a cell outside the table.
std::optional<LayerSplit> split_by_layers(std::span<const DimensionEquations> dimensions,
                                          std::span<const std::int64_t> cells, std::int32_t blocks);

}  // namespace sdc::tables
