#pragma once
// The `pram` step: the post-randomisation method on categorical variables (docs/pram.md; docs/methods
// perturbation.md §1). Its command only declares flags.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc pram` (docs/pram.md), one field per flag of engine/cli/pram_command.cpp.
struct PramStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;
  std::vector<std::string> strata;
  std::vector<std::string> pd{"0.8"};
  double alpha = 0.5;
  std::vector<std::string> matrix{"reference"};  ///< one SPEC for every variable, or VAR=SPEC entries
  std::vector<std::string> matrix_files;
  std::optional<double> matrix_tolerance;
  bool invariant = false;
  double risk_threshold = 100.0;
  std::vector<std::string> two_way;  ///< VAR1:VAR2 pairs
  std::optional<std::string> regression_target;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class PramStep : public Step {
 public:
  PramStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<PramStep> make_pram_step();

}  // namespace sdc::engine
