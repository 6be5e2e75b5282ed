#pragma once
// The `perturb-table adjust` step: a perturbed table made additive again by weighted least squares
// (docs/tables.md, "Additivity after perturbation"; kernels/tables/additivity_adjustment.h), the
// constraint matrix reordered into primal block-angular form so that its blocks are factored in
// parallel on threads and ranks. Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc perturb-table adjust` (docs/tables.md), one field per flag of
/// engine/cli/perturb_table_command.cpp.
struct AdjustStepOptions {
  std::filesystem::path input;   ///< a perturbed table file (`perturb-table ckm`, `bootstrap`, `cell`)
  std::filesystem::path output;  ///< the table file with `adjusted` added
  std::optional<std::filesystem::path> report;
  /// The additivity equations in Matrix Market form, one column per cell of the table's cell space;
  /// else the equations of the table's hierarchies.
  std::optional<std::filesystem::path> constraints;
  std::string variable = "published";  ///< the perturbed figure made additive
  std::string weights = "inverse";     ///< uniform: w = 1; inverse: w = 1 / max(1, |x~|)
  std::string solver = "block-angular";
  std::int64_t blocks = 8;  ///< k of the block-angular form
  /// table: the cells split by the codes of one dimension (the table's own block-angular form);
  /// multilevel: the equations reordered by multilevel hypergraph bisection.
  std::string ordering = "table";
  double imbalance = 0.05;
  std::int64_t partition_seed = 1;
  double tolerance = 1e-12;  ///< of the equations, relative to the largest |x~|
  std::int64_t preconditioner_terms = 0;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class AdjustStep : public Step {
 public:
  AdjustStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<AdjustStep> make_adjust_step();

}  // namespace sdc::engine
