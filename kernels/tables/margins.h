#pragma once
// The margins of a table recomputed from its leaf cells (docs/methods tabular.md §1): a protection
// method that changes only the leaf cells (a leaf of every dimension's hierarchy: resampling, §3–§4)
// publishes every subtotal and total as the sum of its published leaves, so that the published table
// is additive as the original is.
//
// Shape: global on one process over a sparse table: the given leaf cells by linear index (row-major
// over the dimensions' hierarchy positions, the last dimension fastest, as kernels/tables/tabulation.h
// stores cells). The margins are added dimension by dimension: every cell of the running table adds its
// value to the cells whose position in dimension d is one of its position's ancestors, so after the
// last dimension every cell holds the sum of the leaves below it. The sums are of integers, so the
// result does not depend on the order of the leaves or on the threads. Memory and work grow with the
// cells of the result times the hierarchies' depths, never with the cell space.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/tables/hierarchy.h"

namespace sdc::tables {

/// The indices i, increasing, of the entries of `cells` (linear indices) that are leaf cells: every
/// position a leaf of its dimension's hierarchy. ParameterError for a cell outside the cell space.
std::vector<std::size_t> find_leaf_cells(std::span<const Hierarchy> dimensions, std::span<const std::int64_t> cells);

/// For each of `cells` (linear indices, in any order), the sum of `leaf_values` over the leaf cells
/// below it: over every leaf whose position in each dimension is the cell's position or one of its
/// descendants. A leaf cell itself gets its own value; a cell with no given leaf below it gets 0.
/// ParameterError: leaf_cells and leaf_values of different lengths, a leaf cell given twice or that
/// is no leaf cell, a cell outside the cell space, a cell space or a sum beyond 64-bit integers.
std::vector<std::int64_t> aggregate_margins(std::span<const Hierarchy> dimensions,
                                            std::span<const std::int64_t> leaf_cells,
                                            std::span<const std::int64_t> leaf_values,
                                            std::span<const std::int64_t> cells);

}  // namespace sdc::tables
