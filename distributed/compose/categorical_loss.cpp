#include "distributed/compose/categorical_loss.h"

#include <limits>

#include "distributed/collective_error.h"
#include "kernels/core/error.h"

namespace sdc::distributed {
namespace {

enum class Side { kOriginal, kMasked };

utility::TableAxis axis_of(const ComparedCategorical& variable, Side side) {
  if (side == Side::kOriginal)
    return {variable.original, variable.domain.original_category, variable.domain.categories};
  return {variable.masked, variable.domain.masked_category, variable.domain.categories};
}

std::string joined_names(std::span<const ComparedCategorical> variables, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < variables.size(); ++i)
    out += (i == 0 ? "'" : std::string(separator) + "'") + variables[i].name + "'";
  return out;
}

void check_grid(const std::string& what, std::span<const std::uint32_t> categories) {
  const std::uint64_t cells = utility::grid_cells(categories);
  if (cells <= utility::kMaxTableCells) return;
  std::string counts;
  for (std::size_t i = 0; i < categories.size(); ++i) counts += (i == 0 ? "" : " x ") + std::to_string(categories[i]);
  throw ParameterError(
      what + " has " +
      (cells == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 2^64") : std::to_string(cells)) +
      " cells (" + counts + " categories, missing included), beyond the limit of " +
      std::to_string(utility::kMaxTableCells) + " (2^24) cells a table");
}

std::vector<std::uint32_t> categories_of(std::span<const ComparedCategorical> variables) {
  std::vector<std::uint32_t> out;
  for (const ComparedCategorical& variable : variables) out.push_back(variable.domain.categories);
  return out;
}

std::vector<ComparedCategorical> pick(std::span<const ComparedCategorical> variables,
                                      const std::vector<std::size_t>& indices) {
  std::vector<ComparedCategorical> out;
  for (const std::size_t i : indices) out.push_back(variables[i]);
  return out;
}

std::vector<utility::TableAxis> axes_of(std::span<const ComparedCategorical> variables, Side side) {
  std::vector<utility::TableAxis> axes;
  for (const ComparedCategorical& variable : variables) axes.push_back(axis_of(variable, side));
  return axes;
}

}  // namespace

void check_categorical_grids(std::span<const ComparedCategorical> variables, std::size_t ctbil_order,
                             std::span<const ComparedCategorical> rows, std::span<const ComparedCategorical> columns) {
  for (const ComparedCategorical& variable : variables) {
    const std::vector<std::uint32_t> square{variable.domain.categories, variable.domain.categories};
    check_grid("the cross-tabulation original x masked of '" + variable.name + "'", square);
  }
  if (!variables.empty() && ctbil_order > 0) {
    const auto subsets = utility::table_subsets(variables.size(), ctbil_order);
    if (subsets.size() > kMaxCtbilTables)
      throw ParameterError("CTBIL of order " + std::to_string(ctbil_order) + " over " +
                           std::to_string(variables.size()) + " variables counts " + std::to_string(subsets.size()) +
                           " tables, beyond the limit of " + std::to_string(kMaxCtbilTables));
    for (const auto& subset : subsets) {
      const auto chosen = pick(variables, subset);
      check_grid("the table of " + joined_names(chosen, " x "), categories_of(chosen));
    }
  }
  if (!columns.empty()) {
    std::vector<std::uint32_t> categories = categories_of(rows);
    for (const std::uint32_t count : categories_of(columns)) categories.push_back(count);
    check_grid("the table of rows " + joined_names(rows, " x ") + " by columns " + joined_names(columns, " x "),
               categories);
  }
}

std::vector<std::uint64_t> distributed_table_cells(const Communicator& comm, std::span<const utility::TableAxis> axes) {
  std::vector<std::uint64_t> counts;
  agree_on_error(comm, [&] { counts = utility::count_table_cells(axes); });
  // Integer sums: the same totals for any number of ranks and any order of the reduction.
  comm.all_reduce_sum(std::span<std::uint64_t>(counts));
  return counts;
}

std::vector<std::uint64_t> distributed_cross_tabulation(const Communicator& comm, const ComparedCategorical& variable) {
  const std::vector<std::uint32_t> square{variable.domain.categories, variable.domain.categories};
  check_grid("the cross-tabulation original x masked of '" + variable.name + "'", square);
  const std::vector<utility::TableAxis> axes{axis_of(variable, Side::kOriginal), axis_of(variable, Side::kMasked)};
  return distributed_table_cells(comm, axes);
}

CategoricalTables distributed_ctbil(const Communicator& comm, std::span<const ComparedCategorical> variables,
                                    std::size_t order) {
  check_categorical_grids(variables, order, {}, {});
  CategoricalTables out;
  for (const auto& subset : utility::table_subsets(variables.size(), order)) {
    const auto chosen = pick(variables, subset);
    const auto original = distributed_table_cells(comm, axes_of(chosen, Side::kOriginal));
    const auto masked = distributed_table_cells(comm, axes_of(chosen, Side::kMasked));
    CtbilTable table{subset, {}};
    agree_on_error(comm, [&] { table.comparison = utility::compare_tables(original, masked); });
    out.tables.push_back(std::move(table));
  }
  std::vector<utility::TableComparison> comparisons;
  for (const CtbilTable& table : out.tables) comparisons.push_back(table.comparison);
  out.ctbil = utility::ctbil(comparisons);
  return out;
}

utility::ShlomoYoung distributed_shlomo_young(const Communicator& comm, std::span<const ComparedCategorical> rows,
                                              std::span<const ComparedCategorical> columns,
                                              const utility::ShlomoYoungOptions& options) {
  SDC_CHECK(!rows.empty() && !columns.empty(), "a two-way table has row and column variables");
  check_categorical_grids({}, 0, rows, columns);
  // Row variables first: with the last axis fastest, the cell of (row r, column c) is r · columns + c.
  std::vector<ComparedCategorical> all(rows.begin(), rows.end());
  all.insert(all.end(), columns.begin(), columns.end());
  const auto original = distributed_table_cells(comm, axes_of(all, Side::kOriginal));
  const auto masked = distributed_table_cells(comm, axes_of(all, Side::kMasked));
  const auto row_count = static_cast<std::size_t>(utility::grid_cells(categories_of(rows)));
  const auto column_count = static_cast<std::size_t>(utility::grid_cells(categories_of(columns)));
  utility::ShlomoYoung measures;
  agree_on_error(
      comm, [&] { measures = utility::shlomo_young_measures(original, masked, row_count, column_count, options); });
  return measures;
}

}  // namespace sdc::distributed
