#pragma once
// The `perturb-table bootstrap` and `perturb-table cell` steps: resampling protection of a frequency
// table file (docs/tables.md, "Resampling protection"; docs/methods tabular.md §3–§4). The leaf cells'
// counts are redrawn, Heer's bootstrap table (the average of M tables, regenerated until it meets the
// quality condition S) or the cell-oriented binomial perturbation with compensation (the total, or the
// margins of one dimension, kept exactly); every subtotal and total is then the sum of its published
// leaves. One step serves both methods; its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/step.h"
#include "kernels/tables/resampling.h"

namespace sdc::engine {

/// The most bootstrap tables averaged: the average's sd shrinks as 1/sqrt(M), and the seed paper's M are
/// 1 to 5.
inline constexpr std::int64_t kMaxAveragedTables = 1000;
/// The most regenerations (bootstrap) or redraws of one cell (cell perturbation) a flag may allow.
inline constexpr std::int64_t kMaxResamplingAttempts = 1'000'000;

enum class ResamplingMethod : std::uint8_t {
  kBootstrap,  ///< `perturb-table bootstrap`: Heer's bootstrap table
  kCell,       ///< `perturb-table cell`: binomial perturbation with compensation
};

/// The options of `sdc perturb-table bootstrap|cell` (docs/tables.md), one field per flag of
/// engine/cli/perturb_table_command.cpp; `method` is the subcommand's.
struct ResamplingStepOptions {
  ResamplingMethod method = ResamplingMethod::kBootstrap;
  std::filesystem::path input;   ///< a frequency table file (`sdc table tabulate`)
  std::filesystem::path output;  ///< the table file with `published` and `noise` added
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;
  double quality_s = 2.0;  ///< S > 0 of the quality condition
  // Bootstrap.
  std::int64_t average_m = 1;                               ///< M >= 1 bootstrap tables averaged
  std::int64_t max_attempts = tables::kDefaultMaxAttempts;  ///< averaged tables generated before giving up
  // Cell perturbation.
  std::optional<std::string> preserve_margins;             ///< a dimension whose margins stay; else the total
  std::int64_t max_redraws = tables::kDefaultMaxAttempts;  ///< binomial draws of one cell before giving up
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class ResamplingStep : public Step {
 public:
  ResamplingStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<ResamplingStep> make_resampling_step();

}  // namespace sdc::engine
