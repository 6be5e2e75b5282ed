#pragma once
// The `microaggregate` step: microaggregation of continuous variables (docs/microaggregation.md;
// docs/methods microaggregation.md). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc microaggregate` (docs/microaggregation.md), one field per flag of
/// engine/cli/microaggregate_command.cpp.
struct MicroaggregationStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;
  std::int64_t group_size = 3;
  std::string method = "mdav";
  std::string aggregation = "mean";
  Mode mode = Mode::kNative;
  std::string blocking = "none";
  std::int64_t block_max = 10'000;
  double gamma = 0.2;
  bool two_swap = false;
  std::int64_t two_swap_passes = 100'000;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class MicroaggregationStep : public Step {
 public:
  MicroaggregationStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<MicroaggregationStep> make_microaggregation_step();

}  // namespace sdc::engine
