#pragma once
// A table file's cells across the ranks (docs/tables.md, "Table files"). The steps that protect a
// table read it partitioned like records (open_table_step: each rank a consecutive range of rows, in
// rank order), but a method that needs the whole table at once (resampling, measures over every cell)
// runs on the coordinator. These collectives gather every row's cell, count and row id there, and send
// what the coordinator computed per row back to the rank holding the row, where it becomes a column of
// the step's output. The coordinator holds 24 bytes per row of the table, 16 more while it sends.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "engine/tables/table_file.h"
#include "kernels/core/table.h"

namespace sdc::engine {

/// Rows of a table file: one entry per row in each vector.
struct TableCells {
  std::vector<std::int64_t> cells;    ///< linear index: row-major over the dimensions' positions, the last fastest
  std::vector<std::int64_t> counts;   ///< the `count` variable
  std::vector<std::int64_t> row_ids;  ///< global row ids
};

/// The values of continuous cell variable `variable` of `table` as whole numbers. InvalidInput naming the
/// file, the variable and the row id for a value that is not a whole number from 0 to 2^53.
std::vector<std::int64_t> whole_cell_values(const Table& table, const std::string& variable);

/// This rank's rows of `table` (read with its `dimensions`, table_file_dimensions). InvalidInput naming
/// the file, the variable and the row id for a dimension code outside its hierarchy or a count that is
/// not a whole number from 0 to 2^53.
TableCells read_table_cells(const Table& table, const std::vector<TableFileDimension>& dimensions);

/// Collective. Every rank's rows on the coordinator, in row order; empty on the other ranks.
TableCells gather_table_cells(const distributed::Communicator& comm, const TableCells& local);

/// Collective. Every rank's `values` (one per row of the rank) on the coordinator, in row order; empty on
/// the other ranks.
std::vector<std::int64_t> gather_row_values(const distributed::Communicator& comm,
                                            std::span<const std::int64_t> values);
std::vector<double> gather_row_values(const distributed::Communicator& comm, std::span<const double> values);

/// Collective. On the coordinator, `values[i]` belongs to the row `row_ids[i]` (any order, every row of
/// the table once); the other ranks' arguments are ignored. Returns this rank's rows' values in row
/// order, for the `row_count` rows from `first_row_id` (Table::first_row_id(), Table::row_count()).
std::vector<std::int64_t> scatter_to_rows(const distributed::Communicator& comm, std::span<const std::int64_t> row_ids,
                                          std::span<const std::int64_t> values, std::int64_t first_row_id,
                                          std::int64_t row_count);
std::vector<double> scatter_to_rows(const distributed::Communicator& comm, std::span<const std::int64_t> row_ids,
                                    std::span<const double> values, std::int64_t first_row_id, std::int64_t row_count);

}  // namespace sdc::engine
