#pragma once
// The `utility` step: the information loss of a masked file against its original, for continuous
// variables (docs/utility.md; docs/methods utility.md §1–2). Its command only declares flags.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc utility` (docs/utility.md), one field per flag of engine/cli/utility_command.cpp.
struct UtilityStepOptions {
  std::filesystem::path input;   ///< the original file
  std::filesystem::path masked;  ///< the masked file: the same records in the same order
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;
  std::optional<std::string> id;  ///< identifier variable checked equal in both files
  std::vector<double> component_weights;
};

class UtilityStep : public Step {
 public:
  UtilityStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<UtilityStep> make_utility_step();

}  // namespace sdc::engine
