#pragma once
// Table files (docs/tables.md, "Table files"): a table's cells stored as the records of an sdc-engine
// HDF5 file (docs/format.md), one row per non-empty cell in the order of the cells' linear index. A
// dimension is a categorical variable of role key whose levels are the dimension's codes, the total
// first, with the hierarchy as the variable's level_parents; the cells' figures are continuous
// variables with fixed names. So every tool that reads the data format reads tables (`sdc info`,
// `sdc export` for CSV, h5py), and the steps that protect tables open them as they open records.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/hdf5_table.h"
#include "kernels/core/table.h"
#include "kernels/tables/hierarchy.h"
#include "kernels/tables/sensitivity.h"
#include "kernels/tables/tabulation.h"

namespace sdc::engine {

/// The fixed names of a table file's cell variables.
namespace cell_columns {
inline constexpr const char* kCount = "count";
inline constexpr const char* kWeightedCount = "weighted_count";
inline constexpr const char* kValue = "value";
inline constexpr const char* kWeightedValue = "weighted_value";
inline constexpr const char* kContributors = "contributors";
inline constexpr const char* kTopPrefix = "top_";               ///< top_1 .. top_k
inline constexpr const char* kTopWeightPrefix = "top_weight_";  ///< top_weight_1 .. (weighted tables)
inline constexpr const char* kCellKey = "cell_key";             ///< Σ record keys mod M, as an integer
inline constexpr const char* kCellKeyNonzero = "cell_key_nonzero";
inline constexpr const char* kKeyModulus = "key_modulus";  ///< M, the same on every row
inline constexpr const char* kStatus = "status";
// Added by the steps that protect a table (`sdc perturb-table`).
inline constexpr const char* kPublished = "published";  ///< the published count
inline constexpr const char* kNoise = "noise";          ///< published − count
inline constexpr const char* kPublishedWeightedCount = "published_weighted_count";
inline constexpr const char* kPublishedValue = "published_value";
inline constexpr const char* kValueNoise = "value_noise";  ///< published_value − value
inline constexpr const char* kAdjusted = "adjusted";       ///< the perturbed figure made additive
}  // namespace cell_columns

/// A cell variable of a table file: continuous, of role other.
VariableInfo cell_variable(const std::string& name);

/// The `published` and `noise` (published − count) columns of a protected table's rows.
std::vector<Column> published_count_columns(std::span<const std::int64_t> counts,
                                            std::span<const std::int64_t> published);

/// The label of a status in a table file's `status` variable, whose levels are the statuses in
/// enum order: "safe", "empty", "frequency", "p-percent", "dominance".
std::string sensitivity_label(tables::SensitivityStatus status);
std::vector<std::string> sensitivity_labels();

/// One dimension of a table being built: its hierarchy and where the records' codes sit in it.
struct TableDimension {
  std::string name;                    ///< the variable's name in the table file
  std::vector<std::string> variables;  ///< the input variables it spans (nested geography: several)
  tables::Hierarchy hierarchy;
  std::vector<std::int32_t> position_of_code;  ///< code of the (finest) variable -> hierarchy position
  std::span<const std::int32_t> codes;         ///< the records' codes on this rank
};

struct TableLayout {
  std::vector<TableDimension> dimensions;
};

struct TableFileContents {
  const TableLayout* layout = nullptr;
  const tables::CellTable* cells = nullptr;
  const std::vector<tables::SensitivityStatus>* statuses = nullptr;  ///< none: no rules were applied
  tables::TabulationOptions options;  ///< which figures the cells carry (weights, values, keys, top count)
};

/// Writes the table file (atomically, as write_table does), on one process. InvalidInput when a
/// dimension is named like a cell variable.
void write_table_file(const TableFileContents& contents, const std::filesystem::path& output,
                      const io::Hdf5WriteOptions& options);

/// A table file's dimensions as read back: the key variables with a hierarchy or levels.
struct TableFileDimension {
  std::string name;
  tables::Hierarchy hierarchy;
};

/// The dimensions of a table file read into `table` (in file order), with their hierarchies.
/// InvalidInput naming `source` when it is no table file: no dimension, no `count` variable.
std::vector<TableFileDimension> table_file_dimensions(const Table& table, const std::string& source);

}  // namespace sdc::engine
