#pragma once
// The `swap rank` step: rank swapping of numeric variables (docs/swapping.md; docs/methods swapping.md
// §1). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc swap rank` (docs/swapping.md), one field per flag of engine/cli/swap_command.cpp.
struct RankSwapStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;
  double top_percent = 5.0;
  double bottom_percent = 5.0;
  std::optional<double> window_fraction;
  std::optional<double> window_percent;
  std::optional<double> r0;
  std::optional<double> k0;
  Mode mode = Mode::kNative;
  std::optional<std::int64_t> reference_seed;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class RankSwapStep : public Step {
 public:
  RankSwapStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<RankSwapStep> make_rank_swap_step();

}  // namespace sdc::engine
