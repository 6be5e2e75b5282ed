#pragma once
// The additivity constraints of a hierarchical table (docs/methods tabular.md §1): the constraint
// matrix A (m × n) with one column per cell, totals and subtotals included, and one row per relation
// "Σ children − parent = 0" on every line of the table, with its closed-form sizes, its rank for small
// tables, and the two exchange formats table-protection solvers read: Matrix Market (A alone) and the
// cell list + equation list of tau-Argus's CSP interface (the "JJ format").
//
// Shape: a function of the dimensions' equation lists, not of records. A dimension is a list of
// equations over its code positions rather than a tree, because a margin may be broken down several
// ways (total = male + female = young + adult) and the equations may be linearly dependent.
// Cells are numbered row-major over the dimensions (the last dimension fastest), as tabulation.h
// numbers them. Rows are enumerated dimension by dimension; within a dimension line by line, the lines
// row-major over the other dimensions' positions (the last fastest); within a line in equation order.
// The writers stream row by row and never build A, so they serve instances larger than memory for A.

#include <cstdint>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "kernels/core/csr_matrix.h"
#include "kernels/tables/hierarchy.h"

namespace sdc::tables {

/// One additivity relation of a dimension: Σ children − parent = 0 (positions of the dimension).
struct Equation {
  std::int32_t parent = 0;
  std::vector<std::int32_t> children;
};

/// One dimension as lists of equations over its codes 0 .. code_count − 1 (0 = the total by
/// convention). A code may be the parent of several equations (alternative breakdowns); a code that
/// is the parent of none is a leaf.
struct DimensionEquations {
  std::string name;
  std::int32_t code_count = 0;
  std::vector<Equation> equations;
};

/// One equation per internal code, in position order, children in hierarchy order.
DimensionEquations equations_of(const Hierarchy& hierarchy);

/// ParameterError naming the dimension and the equation: no codes, a position outside the codes, an
/// equation without children, a repeated child, a parent among its own children.
void check_dimension(const DimensionEquations& dimension);

struct TableShapeSizes {
  std::int64_t cells = 0;      ///< n = Π_d L_d
  std::int64_t equations = 0;  ///< m = Σ_d E_d · Π_{d' ≠ d} L_{d'}
  std::int64_t nonzeros = 0;   ///< nnz = Σ_d (E_d + C_d) · Π_{d' ≠ d} L_{d'}, C_d = child entries of d
};

/// The closed forms of §1 (L_d codes, E_d equations, C_d child entries of dimension d). Checks every
/// dimension (check_dimension); ParameterError when a size does not fit in 64 bits.
TableShapeSizes constraint_sizes(std::span<const DimensionEquations> dimensions);

/// The column of the cell with `positions` (one per dimension): row-major, the last dimension fastest.
std::int64_t cell_column(std::span<const DimensionEquations> dimensions, std::span<const std::int32_t> positions);

/// One row of A as the enumeration visits it: parent_column has coefficient −1, child_columns +1 (in
/// the equation's child order).
struct ConstraintRow {
  std::int64_t row = 0;
  std::size_t dimension = 0;  ///< the dimension whose equation this is
  std::size_t equation = 0;   ///< its index in that dimension's equations
  std::int64_t parent_column = 0;
  std::span<const std::int64_t> child_columns;
};

/// Visits the rows of A in row order without building it: O(nnz) time, O(largest equation) memory.
void for_each_constraint_row(std::span<const DimensionEquations> dimensions,
                             const std::function<void(const ConstraintRow&)>& visit);

/// The default limit of constraint_matrix: 50 million non-zeros, about 0.8 GB of entries (a column
/// index and a value each). Larger instances go through the streaming writers.
inline constexpr std::int64_t kDefaultMaxConstraintNonzeros = 50'000'000;

/// A as a CSR matrix: rows and columns as above, coefficients +1 for children and −1 for the parent,
/// columns increasing within a row. ParameterError, naming the sizes and the dimensions, when its
/// non-zeros exceed `max_nonzeros`.
CsrMatrix constraint_matrix(std::span<const DimensionEquations> dimensions,
                            std::int64_t max_nonzeros = kDefaultMaxConstraintNonzeros);

/// The default limit of constraint_rank: 4 million dense entries (rows × columns, 32 MB).
inline constexpr std::int64_t kDefaultMaxDenseRankEntries = 4'000'000;

/// The rank of a small matrix: a dense column-pivoting Householder QR (Eigen) whose pivots below
/// `tolerance` times the largest count as zero. For tests and small instances only: ParameterError
/// when rows × columns exceeds `max_dense_entries`.
std::int64_t constraint_rank(const CsrView& matrix, double tolerance = 1e-9,
                             std::int64_t max_dense_entries = kDefaultMaxDenseRankEntries);

/// Matrix Market coordinate format, 1-based:
///   %%MatrixMarket matrix coordinate real general
///   <rows> <columns> <entries>
///   <row> <column> <value>          one line per entry, in CSR order (row, then column)
/// Values in the shortest form that reads back to the same double ("1", "-1", "0.5").
void write_matrix_market(std::ostream& out, const CsrView& matrix);

/// The same bytes as write_matrix_market(out, constraint_matrix(dimensions).view()), streamed row by
/// row without building A (no size limit).
void write_constraint_matrix_market(std::ostream& out, std::span<const DimensionEquations> dimensions);

/// A cell's status for table protection, with its letter in the cell list.
enum class CellStatus : std::uint8_t {
  kSafe,        ///< 's': publishable, may be suppressed as a secondary
  kSensitive,   ///< 'u': primary unsafe, must be protected (its protection levels apply)
  kZero,        ///< 'z': fixed (an empty or zero cell, or one protected by hand): never suppressed
  kSuppressed,  ///< 'm': a secondary suppression already chosen
};
char cell_status_letter(CellStatus status);

/// Per-cell attributes of a protection instance, one entry per cell in column order.
struct CellListView {
  std::span<const double> values;
  std::span<const double> weights;  ///< cost of suppressing the cell
  std::span<const CellStatus> statuses;
  std::span<const double> lower_bounds;  ///< a-priori bounds an intruder knows
  std::span<const double> upper_bounds;
  std::span<const double> lower_protection;  ///< protection levels (used for sensitive cells)
  std::span<const double> upper_protection;
  std::span<const double> sliding_protection;
};

/// The cell list + equation list exchange format of the tau-Argus CSP solvers (the "JJ format", as
/// tau-Argus's JJFormat.cpp writes it):
///   0                                                    a fixed first line
///   <n>                                                  the number of cells
///   <i> <value> <weight> <status> <lower> <upper> <lpl> <upl> <spl>     n lines, i = 0 .. n − 1
///   <m>                                                  the number of equations
///   0 <k> : <parent> (-1) <child> (1) ... <child> (1)    m lines: right-hand side 0, k = 1 + children,
///                                                        then cell:coefficient entries, 0-based cells
/// One space between fields, no trailing blanks, '\n' line ends; status is the letter of CellStatus;
/// numbers are written in the shortest form that reads back to the same double (integers without a
/// decimal point). Cells and equations are in the order of A's columns and rows above; every
/// equation lists its parent first, then the children in equation order. InternalError when a span of
/// `cells` does not have one entry per cell.
void write_cell_equation_list(std::ostream& out, std::span<const DimensionEquations> dimensions,
                              const CellListView& cells);

}  // namespace sdc::tables
