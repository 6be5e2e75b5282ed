#pragma once
// Categorical information loss over all ranks (kernels/utility/categorical_loss.h, docs/utility.md):
// each rank counts the cells of a table over its own records (original and masked aligned by row id on
// that rank), the dense tables are summed element-wise over the ranks by an integer all-reduce (the
// same counts for any number of ranks and any reduction order), and every rank finishes the same bits
// from the same totals.
//
// Memory: tables are counted one after the other. While one is built each rank holds it once or twice
// (original and masked), 8 bytes a cell, at most 2 × 128 MiB at kMaxTableCells, plus one copy per
// thread of a table of at most 2^16 cells while it counts. A table beyond kMaxTableCells cells is
// refused before anything is counted (check_categorical_grids).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "kernels/utility/categorical_loss.h"

namespace sdc::distributed {

/// The most CTBIL tables one comparison counts (each is a pass over the records).
inline constexpr std::size_t kMaxCtbilTables = 4096;

/// One compared categorical variable: its codes in both files on this rank (the same records in the
/// same order) and its categories.
struct ComparedCategorical {
  std::string name;
  std::span<const std::int32_t> original;
  std::span<const std::int32_t> masked;
  utility::CategoryDomain domain;
};

/// What a comparison will count: the cross-tabulation of each of `variables`, the CTBIL tables of up to
/// `ctbil_order` of them, and the two-way table `rows` × `columns` (none when `columns` is empty).
/// Throws ParameterError naming the variables and the number of cells of the first table beyond
/// utility::kMaxTableCells (or naming the number of CTBIL tables beyond kMaxCtbilTables). Local: the
/// categories are the same on every rank.
void check_categorical_grids(std::span<const ComparedCategorical> variables, std::size_t ctbil_order,
                             std::span<const ComparedCategorical> rows, std::span<const ComparedCategorical> columns);

/// Collective. The counts of a table's cells over every rank's records.
std::vector<std::uint64_t> distributed_table_cells(const Communicator& comm, std::span<const utility::TableAxis> axes);

/// Collective. The cross-tabulation original × masked of one variable (categories × categories,
/// row = original category).
std::vector<std::uint64_t> distributed_cross_tabulation(const Communicator& comm, const ComparedCategorical& variable);

struct CtbilTable {
  std::vector<std::size_t> variables;  ///< indices into the compared variables
  utility::TableComparison comparison;
};

struct CategoricalTables {
  std::vector<CtbilTable> tables;  ///< by size, then in the order of the variables
  utility::Ctbil ctbil;
};

/// Collective. Every table of 1..`order` of `variables` (utility::table_subsets), counted in each file
/// and compared, and CTBIL over them.
CategoricalTables distributed_ctbil(const Communicator& comm, std::span<const ComparedCategorical> variables,
                                    std::size_t order);

/// Collective. The Shlomo & Young measures of the two-way table whose rows are the combinations of
/// `rows` and whose cells are the combinations of `columns`, in each file; `options` name columns by
/// their index in that grid (the last column variable fastest).
utility::ShlomoYoung distributed_shlomo_young(const Communicator& comm, std::span<const ComparedCategorical> rows,
                                              std::span<const ComparedCategorical> columns,
                                              const utility::ShlomoYoungOptions& options = {});

}  // namespace sdc::distributed
