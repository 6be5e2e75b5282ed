#include "kernels/tables/constraint_matrix.h"

#include <Eigen/Dense>

#include <algorithm>
#include <charconv>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

std::int64_t checked_product(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) throw ParameterError(std::string("table: ") + what + " exceeds 64 bits");
  return result;
}

std::int64_t checked_sum(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) throw ParameterError(std::string("table: ") + what + " exceeds 64 bits");
  return result;
}

void append_number(std::string& line, double value) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  SDC_CHECK(error == std::errc{}, "number formatting");
  line.append(buffer, end);
}

void append_integer(std::string& line, std::int64_t value) {
  char buffer[24];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  SDC_CHECK(error == std::errc{}, "integer formatting");
  line.append(buffer, end);
}

std::string dimension_list(std::span<const DimensionEquations> dimensions) {
  std::string text;
  for (const DimensionEquations& d : dimensions) {
    if (!text.empty()) text += " x ";
    text += "'" + d.name + "' (" + std::to_string(d.code_count) + " codes, " + std::to_string(d.equations.size()) +
            " equations)";
  }
  return text;
}

// One row's entries sorted by column: the CSR and Matrix Market order.
void sorted_entries(const ConstraintRow& row, std::vector<std::pair<std::int64_t, double>>& entries) {
  entries.clear();
  entries.emplace_back(row.parent_column, -1.0);
  for (const std::int64_t column : row.child_columns) entries.emplace_back(column, 1.0);
  std::sort(entries.begin(), entries.end());
}

const char* const kMatrixMarketHeader = "%%MatrixMarket matrix coordinate real general\n";

}  // namespace

DimensionEquations equations_of(const Hierarchy& hierarchy) {
  DimensionEquations result;
  result.name = hierarchy.name;
  result.code_count = static_cast<std::int32_t>(hierarchy.size());
  for (std::size_t p = 0; p < hierarchy.size(); ++p) {
    const auto position = static_cast<std::int32_t>(p);
    if (hierarchy.is_leaf(position)) continue;
    const auto children = hierarchy.children(position);
    result.equations.push_back({position, std::vector<std::int32_t>(children.begin(), children.end())});
  }
  return result;
}

void check_dimension(const DimensionEquations& dimension) {
  const std::string where = "table dimension '" + dimension.name + "'";
  if (dimension.code_count < 1) throw ParameterError(where + " has no codes");
  std::vector<std::size_t> seen_in(static_cast<std::size_t>(dimension.code_count), SIZE_MAX);
  for (std::size_t e = 0; e < dimension.equations.size(); ++e) {
    const Equation& equation = dimension.equations[e];
    const std::string at = where + ", equation " + std::to_string(e + 1) + ": ";
    const auto in_range = [&](std::int32_t p) { return p >= 0 && p < dimension.code_count; };
    if (!in_range(equation.parent))
      throw ParameterError(at + "parent position " + std::to_string(equation.parent) + " outside the codes");
    if (equation.children.empty()) throw ParameterError(at + "no children");
    for (const std::int32_t child : equation.children) {
      if (!in_range(child)) throw ParameterError(at + "child position " + std::to_string(child) + " outside the codes");
      if (child == equation.parent)
        throw ParameterError(at + "position " + std::to_string(child) + " is its own child");
      if (seen_in[static_cast<std::size_t>(child)] == e)
        throw ParameterError(at + "child position " + std::to_string(child) + " appears twice");
      seen_in[static_cast<std::size_t>(child)] = e;
    }
  }
}

TableShapeSizes constraint_sizes(std::span<const DimensionEquations> dimensions) {
  TableShapeSizes sizes;
  sizes.cells = 1;
  for (const DimensionEquations& d : dimensions) {
    check_dimension(d);
    sizes.cells = checked_product(sizes.cells, d.code_count, "the cell count");
  }
  for (const DimensionEquations& d : dimensions) {
    const std::int64_t lines = sizes.cells / d.code_count;
    std::int64_t children = 0;
    for (const Equation& equation : d.equations) children += static_cast<std::int64_t>(equation.children.size());
    const auto equations = static_cast<std::int64_t>(d.equations.size());
    sizes.equations =
        checked_sum(sizes.equations, checked_product(equations, lines, "the equation count"), "the equation count");
    sizes.nonzeros = checked_sum(
        sizes.nonzeros, checked_product(checked_sum(equations, children, "the non-zeros"), lines, "the non-zeros"),
        "the non-zeros");
  }
  return sizes;
}

std::int64_t cell_column(std::span<const DimensionEquations> dimensions, std::span<const std::int32_t> positions) {
  SDC_CHECK(positions.size() == dimensions.size(), "a position per dimension");
  std::int64_t column = 0;
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    SDC_CHECK(positions[d] >= 0 && positions[d] < dimensions[d].code_count, "cell position outside its dimension");
    column = column * dimensions[d].code_count + positions[d];
  }
  return column;
}

void for_each_constraint_row(std::span<const DimensionEquations> dimensions,
                             const std::function<void(const ConstraintRow&)>& visit) {
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  std::vector<std::int64_t> child_columns;
  ConstraintRow row;
  std::int64_t inner = sizes.cells;  // Π of the sizes after dimension d: the stride of d
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    const DimensionEquations& dimension = dimensions[d];
    const std::int64_t length = dimension.code_count;
    inner /= length;
    const std::int64_t outer = sizes.cells / (length * inner);
    row.dimension = d;
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t base = o * length * inner + i;
        for (std::size_t e = 0; e < dimension.equations.size(); ++e) {
          const Equation& equation = dimension.equations[e];
          child_columns.clear();
          for (const std::int32_t child : equation.children) child_columns.push_back(base + child * inner);
          row.equation = e;
          row.parent_column = base + equation.parent * inner;
          row.child_columns = child_columns;
          visit(row);
          ++row.row;
        }
      }
    }
  }
}

CsrMatrix constraint_matrix(std::span<const DimensionEquations> dimensions, std::int64_t max_nonzeros) {
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  if (sizes.nonzeros > max_nonzeros) {
    throw ParameterError("table constraint matrix of " + std::to_string(sizes.equations) + " rows, " +
                         std::to_string(sizes.cells) + " columns and " + std::to_string(sizes.nonzeros) +
                         " non-zeros exceeds the limit of " + std::to_string(max_nonzeros) + " non-zeros (dimensions " +
                         dimension_list(dimensions) + "); write it with the streaming writers instead");
  }
  std::vector<std::int64_t> offsets;
  std::vector<std::int64_t> columns;
  std::vector<double> values;
  offsets.reserve(static_cast<std::size_t>(sizes.equations) + 1);
  columns.reserve(static_cast<std::size_t>(sizes.nonzeros));
  values.reserve(static_cast<std::size_t>(sizes.nonzeros));
  offsets.push_back(0);
  std::vector<std::pair<std::int64_t, double>> entries;
  for_each_constraint_row(dimensions, [&](const ConstraintRow& row) {
    sorted_entries(row, entries);
    for (const auto& [column, value] : entries) {
      columns.push_back(column);
      values.push_back(value);
    }
    offsets.push_back(static_cast<std::int64_t>(columns.size()));
  });
  return CsrMatrix(sizes.equations, sizes.cells, std::move(offsets), std::move(columns), std::move(values));
}

std::int64_t constraint_rank(const CsrView& matrix, double tolerance, std::int64_t max_dense_entries) {
  if (matrix.rows != 0 && matrix.columns > max_dense_entries / matrix.rows) {
    throw ParameterError("rank of a " + std::to_string(matrix.rows) + " x " + std::to_string(matrix.columns) +
                         " matrix: more than " + std::to_string(max_dense_entries) + " dense entries");
  }
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(matrix.rows, matrix.columns);
  for (std::int64_t r = 0; r < matrix.rows; ++r) {
    const auto columns = matrix.row_columns(r);
    const auto values = matrix.row_values(r);
    for (std::size_t e = 0; e < columns.size(); ++e) dense(r, columns[e]) = values[e];
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(dense);
  qr.setThreshold(tolerance);
  return qr.rank();
}

void write_matrix_market(std::ostream& out, const CsrView& matrix) {
  std::string line = kMatrixMarketHeader;
  append_integer(line, matrix.rows);
  line += ' ';
  append_integer(line, matrix.columns);
  line += ' ';
  append_integer(line, matrix.entry_count());
  line += '\n';
  out << line;
  for (std::int64_t r = 0; r < matrix.rows; ++r) {
    const auto columns = matrix.row_columns(r);
    const auto values = matrix.row_values(r);
    line.clear();
    for (std::size_t e = 0; e < columns.size(); ++e) {
      append_integer(line, r + 1);
      line += ' ';
      append_integer(line, columns[e] + 1);
      line += ' ';
      append_number(line, values[e]);
      line += '\n';
    }
    out << line;
  }
}

void write_constraint_matrix_market(std::ostream& out, std::span<const DimensionEquations> dimensions) {
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  std::string line = kMatrixMarketHeader;
  append_integer(line, sizes.equations);
  line += ' ';
  append_integer(line, sizes.cells);
  line += ' ';
  append_integer(line, sizes.nonzeros);
  line += '\n';
  out << line;
  std::vector<std::pair<std::int64_t, double>> entries;
  for_each_constraint_row(dimensions, [&](const ConstraintRow& row) {
    sorted_entries(row, entries);
    line.clear();
    for (const auto& [column, value] : entries) {
      append_integer(line, row.row + 1);
      line += ' ';
      append_integer(line, column + 1);
      line += ' ';
      append_number(line, value);
      line += '\n';
    }
    out << line;
  });
}

char cell_status_letter(CellStatus status) {
  switch (status) {
    case CellStatus::kSafe:
      return 's';
    case CellStatus::kSensitive:
      return 'u';
    case CellStatus::kZero:
      return 'z';
    case CellStatus::kSuppressed:
      return 'm';
  }
  SDC_CHECK(false, "unknown cell status");
  return '?';
}

void write_cell_equation_list(std::ostream& out, std::span<const DimensionEquations> dimensions,
                              const CellListView& cells) {
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  const auto n = static_cast<std::size_t>(sizes.cells);
  SDC_CHECK(cells.values.size() == n && cells.weights.size() == n && cells.statuses.size() == n &&
                cells.lower_bounds.size() == n && cells.upper_bounds.size() == n &&
                cells.lower_protection.size() == n && cells.upper_protection.size() == n &&
                cells.sliding_protection.size() == n,
            "cell list: one entry per cell in every attribute");
  std::string line = "0\n";
  append_integer(line, sizes.cells);
  line += '\n';
  out << line;
  for (std::size_t c = 0; c < n; ++c) {
    line.clear();
    append_integer(line, static_cast<std::int64_t>(c));
    line += ' ';
    append_number(line, cells.values[c]);
    line += ' ';
    append_number(line, cells.weights[c]);
    line += ' ';
    line += cell_status_letter(cells.statuses[c]);
    for (const double number : {cells.lower_bounds[c], cells.upper_bounds[c], cells.lower_protection[c],
                                cells.upper_protection[c], cells.sliding_protection[c]}) {
      line += ' ';
      append_number(line, number);
    }
    line += '\n';
    out << line;
  }
  line.clear();
  append_integer(line, sizes.equations);
  line += '\n';
  out << line;
  for_each_constraint_row(dimensions, [&](const ConstraintRow& row) {
    line = "0 ";
    append_integer(line, static_cast<std::int64_t>(row.child_columns.size()) + 1);
    line += " : ";
    append_integer(line, row.parent_column);
    line += " (-1)";
    for (const std::int64_t column : row.child_columns) {
      line += ' ';
      append_integer(line, column);
      line += " (1)";
    }
    line += '\n';
    out << line;
  });
}

}  // namespace sdc::tables
