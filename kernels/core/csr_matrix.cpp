#include "kernels/core/csr_matrix.h"

#include <algorithm>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc {

std::span<const std::int64_t> CsrView::row_columns(std::int64_t row) const {
  const auto r = static_cast<std::size_t>(row);
  return column_indices.subspan(static_cast<std::size_t>(row_offsets[r]),
                                static_cast<std::size_t>(row_offsets[r + 1] - row_offsets[r]));
}

std::span<const double> CsrView::row_values(std::int64_t row) const {
  const auto r = static_cast<std::size_t>(row);
  return values.subspan(static_cast<std::size_t>(row_offsets[r]),
                        static_cast<std::size_t>(row_offsets[r + 1] - row_offsets[r]));
}

std::optional<std::string> CsrView::problem() const {
  if (rows < 0 || columns < 0) return "negative dimensions";
  if (row_offsets.size() != static_cast<std::size_t>(rows) + 1) return "row offsets are not rows + 1";
  if (column_indices.size() != values.size()) return "column indices and values differ in number";
  if (row_offsets.front() != 0 || row_offsets.back() != entry_count()) return "row offsets do not span the entries";
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto begin = row_offsets[static_cast<std::size_t>(r)];
    const auto end = row_offsets[static_cast<std::size_t>(r) + 1];
    if (end < begin) return "row offsets decrease at row " + std::to_string(r);
    for (auto e = begin; e < end; ++e) {
      const std::int64_t column = column_indices[static_cast<std::size_t>(e)];
      if (column < 0 || column >= columns) return "row " + std::to_string(r) + " has a column outside the matrix";
      if (e > begin && column <= column_indices[static_cast<std::size_t>(e) - 1])
        return "row " + std::to_string(r) + " has columns out of order or repeated";
    }
  }
  return std::nullopt;
}

CsrMatrix::CsrMatrix(std::int64_t rows, std::int64_t columns, std::vector<std::int64_t> row_offsets,
                     std::vector<std::int64_t> column_indices, std::vector<double> values)
    : rows_(rows),
      columns_(columns),
      row_offsets_(std::move(row_offsets)),
      column_indices_(std::move(column_indices)),
      values_(std::move(values)) {
  const auto problem = view().problem();
  SDC_CHECK(!problem, "CSR matrix: " + problem.value_or(""));
}

CsrMatrix CsrMatrix::from_entries(std::int64_t rows, std::int64_t columns, std::vector<MatrixEntry> entries) {
  for (const MatrixEntry& entry : entries)
    SDC_CHECK(entry.row >= 0 && entry.row < rows && entry.column >= 0 && entry.column < columns,
              "matrix entry outside the matrix");
  std::sort(entries.begin(), entries.end(), [](const MatrixEntry& a, const MatrixEntry& b) {
    return a.row != b.row ? a.row < b.row : a.column < b.column;
  });
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<std::int64_t> indices;
  std::vector<double> values;
  for (std::size_t i = 0; i < entries.size();) {
    std::size_t j = i;
    ExactSum sum;
    while (j < entries.size() && entries[j].row == entries[i].row && entries[j].column == entries[i].column)
      sum.add(entries[j++].value);
    indices.push_back(entries[i].column);
    values.push_back(sum.value());
    ++offsets[static_cast<std::size_t>(entries[i].row) + 1];
    i = j;
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) offsets[r + 1] += offsets[r];
  return CsrMatrix(rows, columns, std::move(offsets), std::move(indices), std::move(values));
}

CsrView CsrMatrix::view() const noexcept { return {rows_, columns_, row_offsets_, column_indices_, values_}; }

CsrMatrix CsrMatrix::transposed() const {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(columns_) + 1, 0);
  for (const std::int64_t column : column_indices_) ++offsets[static_cast<std::size_t>(column) + 1];
  for (std::size_t c = 0; c < static_cast<std::size_t>(columns_); ++c) offsets[c + 1] += offsets[c];
  std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
  std::vector<std::int64_t> indices(column_indices_.size());
  std::vector<double> values(values_.size());
  // Rows are visited in order, so every column of the transpose gets its rows in increasing order.
  for (std::int64_t r = 0; r < rows_; ++r) {
    for (auto e = row_offsets_[static_cast<std::size_t>(r)]; e < row_offsets_[static_cast<std::size_t>(r) + 1]; ++e) {
      const auto at =
          static_cast<std::size_t>(next[static_cast<std::size_t>(column_indices_[static_cast<std::size_t>(e)])]++);
      indices[at] = r;
      values[at] = values_[static_cast<std::size_t>(e)];
    }
  }
  return CsrMatrix(columns_, rows_, std::move(offsets), std::move(indices), std::move(values));
}

void multiply(const CsrView& a, std::span<const double> x, std::span<double> y) {
  SDC_CHECK(x.size() == static_cast<std::size_t>(a.columns) && y.size() == static_cast<std::size_t>(a.rows),
            "matrix and vector sizes");
  for (std::int64_t r = 0; r < a.rows; ++r) {
    const auto columns = a.row_columns(r);
    const auto values = a.row_values(r);
    double sum = 0.0;
    for (std::size_t e = 0; e < columns.size(); ++e) sum += values[e] * x[static_cast<std::size_t>(columns[e])];
    y[static_cast<std::size_t>(r)] = sum;
  }
}

}  // namespace sdc
