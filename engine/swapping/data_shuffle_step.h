#pragma once
// The `swap shuffle` step: data shuffling of continuous variables with reverse mapping (docs/swapping.md;
// docs/methods swapping.md §4). Its command only declares flags.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc swap shuffle` (docs/swapping.md), one field per flag of engine/cli/swap_command.cpp.
struct DataShuffleStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;
  std::vector<std::string> given;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class DataShuffleStep : public Step {
 public:
  DataShuffleStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<DataShuffleStep> make_data_shuffle_step();

}  // namespace sdc::engine
