#pragma once
// Tables from microdata (docs/methods tabular.md §1, cellkey.md §10): the record-parallel group-by on
// the leaf cells, the merge of partial tables, and the aggregation up every dimension's hierarchy.
// Shape: a mergeable kernel. tabulate_leaves is the local step (one rank's records, on threads),
// merge_cell_tables the merge (any order, the same bits: counts and key sums are integers, sums are
// exact, top contributions are ordered by value then record id), add_margins the finish that turns
// the leaf cells into every cell of the table, subtotals and totals included.
//
// A cell is addressed by one position per dimension (0 = the dimension's total, hierarchy order) and
// stored under its linear index over the dimensions' sizes, the last dimension fastest. Only cells
// with at least one record are stored: a census hypercube is mostly empty.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"

namespace sdc::tables {

/// The most top contributions a cell keeps (the dominance rules need the n largest).
inline constexpr int kMaxTopContributions = 8;

/// One dimension as the tabulation sees it: the data's codes of its records, where each code sits in
/// the dimension's hierarchy, and the hierarchy itself.
struct TabulationDimension {
  std::span<const std::int32_t> codes;         ///< one per record: the variable's code (>= 0)
  std::vector<std::int32_t> position_of_code;  ///< code -> hierarchy position (a leaf)
  std::vector<std::int32_t> parent;            ///< per position: the parent position, -1 for the total (position 0)
};

/// A record's contribution to a magnitude cell, ordered by value (largest first), then by record id.
struct Contribution {
  double value = 0.0;
  double weight = 1.0;
  std::int64_t row_id = 0;
};

/// The mergeable summary of one cell's records.
struct CellSummary {
  std::int64_t count = 0;             ///< records
  ExactSum weighted_count;            ///< Σ w (when weights are given)
  std::uint64_t key_sum = 0;          ///< Σ record keys mod the key modulus (when keys are given)
  ExactSum value;                     ///< Σ x of the magnitude variable
  ExactSum weighted_value;            ///< Σ w·x
  std::int64_t contributors = 0;      ///< records with x != 0
  std::uint64_t key_sum_nonzero = 0;  ///< Σ keys of the records with x != 0, mod the modulus
  std::vector<Contribution> top;      ///< the largest contributions, at most top_count
};

struct TabulationOptions {
  std::span<const double> weights;             ///< empty: unweighted
  std::span<const double> values;              ///< empty: a frequency table
  std::span<const std::uint64_t> record_keys;  ///< empty: no cell keys; else in [0, key_modulus)
  std::uint64_t key_modulus = 100000000;
  int top_count = 0;              ///< contributions kept per cell, 0..kMaxTopContributions (magnitude tables)
  std::int64_t first_row_id = 0;  ///< global row id of the first record (ties among contributions)
};

/// Cells sorted by linear index, with their summaries.
struct CellTable {
  std::vector<std::int64_t> sizes;   ///< positions per dimension
  std::vector<std::uint64_t> cells;  ///< linear indices, increasing
  std::vector<CellSummary> summaries;
  std::size_t cell_count() const { return cells.size(); }
};

/// The product of `sizes`, or nothing when it exceeds `limit` (never overflows).
bool cell_space_within(std::span<const std::int64_t> sizes, std::uint64_t limit);

/// Local step: the leaf cells of the records. The result does not depend on the number of threads.
/// InvalidInput naming the row id for a code outside position_of_code or mapped to a non-leaf.
CellTable tabulate_leaves(std::span<const TabulationDimension> dimensions, const TabulationOptions& options);

/// Merge: `from`'s cells into `into` (the same sizes), in any order with the same result.
void merge_cell_tables(CellTable& into, CellTable from, const TabulationOptions& options);

/// Adds every subtotal and total cell: dimension by dimension, each cell's summary goes to the cells
/// with that dimension's position replaced by each of its ancestors. Parallel over cells.
void add_margins(CellTable& table, std::span<const TabulationDimension> dimensions, const TabulationOptions& options);

/// The positions of `cell` (its linear index) in each dimension.
std::vector<std::int32_t> cell_positions(std::uint64_t cell, std::span<const std::int64_t> sizes);

/// Adds `from` into `into`: counts, exact sums, key sums modulo `key_modulus`, top contributions.
void merge_summary(CellSummary& into, const CellSummary& from, const TabulationOptions& options);

}  // namespace sdc::tables
