#pragma once
// The `reorder` step: a sparse matrix (a table's additivity equations, in Matrix Market form) reordered
// into dual or primal block-angular form by multilevel hypergraph bisection (docs/tables.md,
// "Block-angular reordering"; kernels/tables/block_angular.h), with the permutations, the blocks'
// sizes, the linking size and a drawing of the pattern before and after. Its command only declares
// flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc reorder` (docs/tables.md), one field per flag of engine/cli/reorder_command.cpp.
struct ReorderStepOptions {
  std::filesystem::path input;   ///< A in Matrix Market form
  std::filesystem::path output;  ///< the ordering: one CSV line per row and column
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> svg;       ///< the pattern before and after
  std::optional<std::filesystem::path> permuted;  ///< the reordered matrix in Matrix Market form
  std::int64_t blocks = 2;
  std::string form = "dual";             ///< dual (linking columns) or primal (linking rows)
  std::string algorithm = "multilevel";  ///< multilevel or single-level
  double imbalance = 0.05;
  std::int64_t partition_seed = 1;
  std::int64_t initial_partitions = 4;
  std::int64_t cycles = 0;  ///< independent multilevel bisections, the best kept; 0: 1 dual, 4 primal
};

class ReorderStep : public Step {
 public:
  ReorderStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<ReorderStep> make_reorder_step();

}  // namespace sdc::engine
