#pragma once
// The `recode` step: global recoding of key variables by hierarchy files, interval recoding of
// continuous variables, top and bottom coding (docs/recoding.md; docs/methods recoding.md §1–3). Its
// command only declares flags.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc recode` (docs/recoding.md), one field per flag of engine/cli/recode_command.cpp.
struct RecodeStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> levels;  ///< VAR=L: recode VAR to level L of its hierarchy
  std::optional<std::filesystem::path> hierarchies;
  std::vector<std::string> hierarchy;    ///< VAR=FILE
  std::vector<std::string> intervals;    ///< VAR=SPEC
  std::vector<std::string> top_code;     ///< VAR=THRESHOLD:REPLACEMENT
  std::vector<std::string> bottom_code;  ///< VAR=THRESHOLD:REPLACEMENT
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class RecodeStep : public Step {
 public:
  RecodeStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<RecodeStep> make_recode_step();

}  // namespace sdc::engine
