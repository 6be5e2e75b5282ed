#pragma once
// A drawing of a sparse matrix's pattern in two orders, side by side: as given, and after a
// reordering into block-angular form (kernels/tables/block_angular.h) with its block boundaries drawn.
// One self-contained SVG file, for a person to look at what a reordering did.
//
// The pattern is binned: both panels use square bins of the same number of rows and columns, at most
// `max_bins` per side, and each bin holding at least one non-zero is one <rect> (the only <rect>
// elements of the file), darker the more non-zeros it holds. The counts are exact; the shade is the
// count's power of two relative to the largest count of either panel, so equal counts look the same in
// both. The file's size is bounded by the bins, not the non-zeros: at most 2 × max_bins² rects (about
// 40 bytes each), whatever the matrix. Every number is written by std::to_chars (integers, or a fixed
// number of decimals), so the bytes depend on the matrix and the panels alone: not on the locale or the
// thread count. Memory: the bins, plus an original-index → position array per panel (8 bytes a column).
//
// The orders are given as spans rather than as a BlockAngularOrdering, so that io/ depends on no kernel
// of the methods and a panel can show any permutation.

#include <cstdint>
#include <ostream>
#include <span>
#include <string>

#include "kernels/core/csr_matrix.h"

namespace sdc::io {

/// One panel: the matrix in an order, with the blocks of that order.
struct SparsityPanel {
  std::string title;
  /// Position → original row (column), as BlockAngularOrdering::row_order (column_order) gives them;
  /// empty: the original order.
  std::span<const std::int64_t> row_order;
  std::span<const std::int64_t> column_order;
  /// The sizes of the row (column) blocks in position order; the positions after the last block are
  /// the linking part. A line is drawn between blocks, and a dashed one before a non-empty linking part.
  /// Empty: no lines.
  std::span<const std::int64_t> block_rows;
  std::span<const std::int64_t> block_columns;
};

struct SparsityDrawingOptions {
  std::int64_t max_bins = 400;      ///< bins per side of a panel, at least 1
  std::int64_t panel_pixels = 400;  ///< the longer side of a panel, in pixels, at least 16
};

/// Writes the SVG drawing of `matrix` in the orders of `before` (left) and `after` (right).
/// InternalError when an order is not a permutation of the matrix's rows (columns), a block size is
/// negative, the blocks hold more rows (columns) than the matrix, or an option is out of range.
void write_sparsity_svg(std::ostream& out, const CsrView& matrix, const SparsityPanel& before,
                        const SparsityPanel& after, const SparsityDrawingOptions& options = {});

}  // namespace sdc::io
