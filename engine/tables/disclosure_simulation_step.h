#pragma once
// The `perturb-table simulate` step: the exact-disclosure study of resampling (docs/tables.md,
// "Resampling protection"; docs/methods tabular.md §3, the seed paper's Table 1). For every pair of a
// quality condition S and a number M of averaged tables, a Monte Carlo estimate of P(X = k | X' = k),
// the probability that a released count k = 1, 2, 3 is the original count, under the study's prior and
// large-n limit, beside the analytic value. It reads no input and writes only its report. Its command
// only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The most trials per (S, M) pair: a standard error below 10^-4 already.
inline constexpr std::int64_t kMaxSimulationDraws = 100'000'000;

/// The options of `sdc perturb-table simulate` (docs/tables.md), one field per flag of
/// engine/cli/perturb_table_command.cpp.
struct DisclosureSimulationStepOptions {
  std::string method = "bootstrap";     ///< bootstrap (Heer) or cell (the binomial perturbation)
  std::vector<double> quality_s;        ///< S values; empty: Table 1's 3, 2, 1.5
  std::vector<std::int64_t> average_m;  ///< M values; empty: Table 1's 1, 3, 5 (bootstrap), 1 (cell)
  std::int64_t draws = 1'000'000;       ///< trials per (S, M) pair
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;
};

class DisclosureSimulationStep : public Step {
 public:
  DisclosureSimulationStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<DisclosureSimulationStep> make_disclosure_simulation_step();

}  // namespace sdc::engine
