#pragma once
// A step: one method run on its inputs with its options, writing its outputs and its part of the
// report. The command of a method only declares flags into the step's options; `main` runs the step
// of the command it parsed, and a job runs the step of each of its entries, so a method works the
// same from the command line and from a job (docs/development.md, "Adding a method").

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/run_context.h"
#include "kernels/core/table.h"

namespace sdc::engine {

/// What a step writes. A job feeds a step's data inputs only from steps whose output is a data
/// table; the report names each output's kind (docs/report-schema.json).
enum class OutputKind {
  kData,        ///< a table of records in the HDF5 format (docs/format.md)
  kTable,       ///< a frequency or magnitude table: cells of a tabulation
  kMatrix,      ///< a sparse matrix (kernels/core/csr_matrix.h; io/hdf5_matrix.h)
  kPlot,        ///< a figure
  kCsv,         ///< records as CSV (`sdc export`)
  kSchema,      ///< a YAML schema (`sdc import --save-schema`)
  kSeed,        ///< a seed file (`sdc generate seed`)
  kCheckpoint,  ///< a masked output's step results (docs/checkpoints.md)
};

/// The report's name of `kind`: "data", "table", "matrix", "plot", "csv", "schema", "seed", "checkpoint".
std::string_view to_string(OutputKind kind);

/// For Step::check_variables: adds a problem when `name` is not among `available` ("<key>: variable
/// 'x' is not in the step's input") or is not of `type` ("<key>: variable 'x' is continuous, expected
/// categorical"); any type when `type` is nullopt.
void expect_variable(const std::vector<VariableInfo>& available, const std::string& name,
                     std::optional<VariableType> type, const std::string& key, std::vector<std::string>& problems);

class Step {
 public:
  virtual ~Step() = default;

  /// Collective: every rank runs the step. Throws the error types of kernels/core/error.h.
  virtual void run(const RunContext& context) = 0;

  // ---- what a job checks before any step runs (the options are set) ----

  /// Adds a problem for every variable the options name that `available` lacks or has another type.
  virtual void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const {
    (void)available;
    (void)problems;
  }
  /// The variables of the step's data output: its input's plus these (or only these when
  /// keeps_input_variables() is false).
  virtual std::vector<VariableInfo> added_variables() const { return {}; }
  virtual bool keeps_input_variables() const { return true; }
  /// Whether the step draws random numbers, and so needs a seed.
  virtual bool needs_seed() const { return false; }
  /// The kind of the step's --output (what a later step may read from it).
  virtual OutputKind output_kind() const { return OutputKind::kData; }
  /// The kind of file the step's --input must be: records (kData) or a table file (kTable).
  virtual OutputKind input_kind() const { return OutputKind::kData; }
};

}  // namespace sdc::engine
