#pragma once
// The `perturb-table ckm` step: the cell key method on a table file (docs/tables.md, "The cell key
// method"; docs/methods cellkey.md): every cell's published count (and value) from its count and cell
// key alone, through a p-table built from D and V or read from a file, with the utility of the
// perturbed table in the report. Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc perturb-table ckm` (docs/tables.md), one field per flag of
/// engine/cli/perturb_table_command.cpp.
struct CellKeyStepOptions {
  std::filesystem::path input;   ///< a table file with cell keys (`sdc table tabulate --record-key`)
  std::filesystem::path output;  ///< the table file with the published columns added
  std::optional<std::filesystem::path> report;
  /// A frequency p-table file (tau-Argus i;j;p;v;p_int_ub or SAS i;j;p;v;p_int_lb;p_int_ub); else one is
  /// built from the parameters below.
  std::optional<std::filesystem::path> ptable;
  std::optional<std::int64_t> max_noise;              ///< D (built p-table; default 2)
  std::optional<double> variance;                     ///< V (default 1)
  std::optional<std::int64_t> js;                     ///< no published count in 1 .. js (default 0)
  std::vector<double> pstay;                          ///< lower bounds on p(v = 0): one, or one per row
  std::optional<std::string> mono;                    ///< "true"/"false", or one per row
  std::optional<std::int64_t> optim;                  ///< 1: Σv²p <= V; 4: Σv²p = V
  std::string lookup = "tau-argus";                   ///< tau-argus (ck < ub) or sas (ck <= ub)
  std::optional<std::filesystem::path> write_ptable;  ///< the p-table used, in tau-Argus format
  // Magnitude tables (a table file with `value`): cellKey's flex perturbation.
  std::vector<double> flex;                ///< p_S, p_L, flex point [, q]
  std::vector<double> epsilon;             ///< ε_1 = 1 >= ε_2 ... (default 1)
  double mu_c = 0.0;                       ///< μ_C added for sensitive cells
  std::string magnitude_keys = "nonzero";  ///< nonzero: keys of non-zero contributors; all
  bool scramble_first_key = false;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class CellKeyStep : public Step {
 public:
  CellKeyStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<CellKeyStep> make_cell_key_step();

}  // namespace sdc::engine
