#pragma once
// A sparse matrix in compressed sparse row (CSR) form: the type of step outputs that are matrices (a
// table's constraint matrix, a distance graph), of block-angular reordering and its solver. The
// arrays are plain spans, so a matrix read from a file, received from another rank or built here is
// viewed the same way, and its bytes are the same on every rank.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sdc {

/// A read-only CSR view over arrays owned elsewhere. Row r holds the entries
/// row_offsets[r] .. row_offsets[r + 1] - 1, with strictly increasing column indices.
struct CsrView {
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::span<const std::int64_t> row_offsets;     ///< rows + 1 entries, from 0 to the entry count
  std::span<const std::int64_t> column_indices;  ///< one per entry, in 0 .. columns - 1
  std::span<const double> values;                ///< one per entry

  std::int64_t entry_count() const noexcept { return static_cast<std::int64_t>(values.size()); }
  std::span<const std::int64_t> row_columns(std::int64_t row) const;
  std::span<const double> row_values(std::int64_t row) const;
  /// The first violation of the CSR rules (sizes, offsets, column order and range), or none.
  std::optional<std::string> problem() const;
};

/// One entry (row, column, value) for CsrMatrix::from_entries.
struct MatrixEntry {
  std::int64_t row = 0;
  std::int64_t column = 0;
  double value = 0.0;
};

/// A CSR matrix that owns its arrays.
class CsrMatrix {
 public:
  CsrMatrix() = default;
  /// Takes the arrays as they are; InternalError when they break the CSR rules (CsrView::problem).
  CsrMatrix(std::int64_t rows, std::int64_t columns, std::vector<std::int64_t> row_offsets,
            std::vector<std::int64_t> column_indices, std::vector<double> values);
  /// The matrix of `entries` in any order: entries at the same place are added (in the order of
  /// their values' exact sum, so the result does not depend on the order given), zeros are kept.
  /// InternalError for an entry outside rows x columns.
  static CsrMatrix from_entries(std::int64_t rows, std::int64_t columns, std::vector<MatrixEntry> entries);

  CsrView view() const noexcept;
  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t columns() const noexcept { return columns_; }
  std::int64_t entry_count() const noexcept { return static_cast<std::int64_t>(values_.size()); }

  /// The transpose, in CSR form (the CSC form of this matrix).
  CsrMatrix transposed() const;
  bool operator==(const CsrMatrix&) const = default;

 private:
  std::int64_t rows_ = 0;
  std::int64_t columns_ = 0;
  std::vector<std::int64_t> row_offsets_{0};
  std::vector<std::int64_t> column_indices_;
  std::vector<double> values_;
};

/// y = A x. InternalError when the sizes do not fit.
void multiply(const CsrView& a, std::span<const double> x, std::span<double> y);

}  // namespace sdc
