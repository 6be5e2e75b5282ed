#pragma once
// The `table tabulate` step: a frequency or magnitude table with its subtotals and totals from the
// records of every rank, its cells' sensitivity, and its additivity equations (docs/tables.md; docs/methods
// tabular.md §1). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc table tabulate` (docs/tables.md), one field per flag of engine/cli/table_command.cpp.
struct TabulateStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;  ///< the table file (docs/tables.md, "Table files")
  std::optional<std::filesystem::path> report;
  /// Nested geography variables, coarsest first: one dimension (first). "roles": the input's
  /// geography variables by level.
  std::vector<std::string> geography;
  std::vector<std::string> dimensions;    ///< further categorical variables, one dimension each
  std::vector<std::string> hierarchies;   ///< VAR=FILE: a .hrc file or a code,parent CSV for a dimension
  std::optional<std::string> value;       ///< a magnitude table's continuous variable
  std::optional<std::string> weight;      ///< sampling weights
  std::int64_t top_contributions = 2;     ///< of a magnitude table's cells
  std::optional<std::string> record_key;  ///< the cell key method's record keys (a continuous variable in [0, 1))
  std::int64_t key_decimals = 8;          ///< the keys are multiples of 10^-D
  // Sensitivity rules (kernels/tables/sensitivity.h).
  std::optional<std::int64_t> min_frequency;
  std::optional<double> p_percent;
  std::vector<std::string> dominance;  ///< "N,K" each
  bool weighted_rules = false;
  std::int64_t max_cells = 1'000'000'000;            ///< of the cell space: the product of the dimensions' sizes
  std::optional<std::filesystem::path> constraints;  ///< Matrix Market file of the additivity matrix
  std::optional<std::filesystem::path> equations;    ///< cell list + equation list
  std::string filters = "shuffle,deflate=1";
};

class TabulateStep : public Step {
 public:
  TabulateStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<TabulateStep> make_tabulate_step();

}  // namespace sdc::engine
