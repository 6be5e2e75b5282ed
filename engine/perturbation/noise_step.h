#pragma once
// The `noise` step: additive, correlated and exact-moment noise on continuous variables, and the noise
// that restores the covariance a microaggregation took away (docs/noise.md; docs/methods
// perturbation.md §2–3). Its command only declares flags.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc noise` (docs/noise.md), one field per flag of engine/cli/noise_command.cpp.
struct NoiseStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  /// The restore-covariance models: the file before the first masking stage (the records of `input`,
  /// in the same order), whose covariance the noise restores.
  std::optional<std::filesystem::path> original;
  std::vector<std::string> variables;
  std::string model = "additive";
  std::optional<double> noise_percent_sd;
  std::optional<double> noise_percent_cov;
  bool orthogonal = false;
  bool restore_variance = false;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class NoiseStep : public Step {
 public:
  NoiseStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<NoiseStep> make_noise_step();

}  // namespace sdc::engine
