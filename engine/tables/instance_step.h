#pragma once
// The `table instance` step: a synthetic table-protection instance of a given shape, its additivity
// matrix A in Matrix Market form and, on request, its cell list and equation list with generated cell
// values and statuses (docs/tables.md, "Synthetic instances"; docs/methods tabular.md §1). It reads no
// input. Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc table instance` (docs/tables.md), one field per flag of engine/cli/table_command.cpp.
/// The cell-list options are optional: they describe the values of --equations and are refused without it.
struct InstanceStepOptions {
  std::string shape;                               ///< "16x16x16", "h13xf7xf7" (kernels/tables/instance_generator.h)
  std::filesystem::path output;                    ///< A in Matrix Market form
  std::optional<std::filesystem::path> equations;  ///< cell list + equation list (JJ format)
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;  ///< the cell list's draws
  std::optional<std::string> values;               ///< "counts" or "magnitudes"
  std::optional<double> mean_count;                ///< λ of a leaf's Poisson count
  std::optional<double> density;                   ///< a leaf is non-empty with this probability
  std::optional<double> log_mean;                  ///< μ of a magnitude contribution's logarithm
  std::optional<double> log_sd;                    ///< σ of a magnitude contribution's logarithm
  std::optional<std::int64_t> min_frequency;       ///< sensitive: 1 <= count < N
  std::optional<double> protection_fraction;       ///< of a sensitive cell's value
  std::int64_t max_cells = 20'000'000;             ///< of the cell list, which is held in memory
  std::int64_t max_nonzeros = 100'000'000;         ///< of A: bounds the files written
};

class InstanceStep : public Step {
 public:
  InstanceStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<InstanceStep> make_instance_step();

}  // namespace sdc::engine
