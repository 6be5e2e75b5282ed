#pragma once
// The `swap targeted` step: targeted record swapping of households across a geography hierarchy
// (docs/swapping.md; docs/methods swapping.md §2). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc swap targeted` (docs/swapping.md), one field per flag of engine/cli/swap_command.cpp.
struct TargetedSwapStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::string household;
  std::vector<std::string> hierarchy;  ///< coarse → fine
  std::vector<std::string> risk_variables;
  std::int64_t k_anonymity = 3;
  std::optional<double> risk_threshold;
  double swap_fraction = 0.05;
  std::vector<std::string> similar;  ///< profiles in order, each "a,b"
  std::vector<std::string> carry_along;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class TargetedSwapStep : public Step {
 public:
  TargetedSwapStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<TargetedSwapStep> make_targeted_swap_step();

}  // namespace sdc::engine
